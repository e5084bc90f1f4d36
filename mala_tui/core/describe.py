"""One line per event, the same everywhere: the app's event log and the headless output.

`summary` says what an event means in a few words, with figures in short form
(`core.text.tokens`). The text is raw: it may hold agent text (a task, a
reason, an excerpt), so whoever shows it makes it safe first (`core.text.clean`).
"""

from __future__ import annotations

from mala_tui.core import events as ev
from mala_tui.core.background import describe_tasks
from mala_tui.core.session_records import BranchStatus
from mala_tui.core.text import percent, plural, tokens


def summary(event: ev.Event) -> str:
    """What the event says, in a few words (agent text made safe by the caller)."""
    match event:
        case ev.SessionStarted():
            return f"task: {event.task} (in {event.cwd}, window {tokens(event.window)})"
        case ev.PhaseChanged():
            return f"{event.before} -> {event.after} ({event.trigger})"
        case ev.UsageRecorded():
            used = f"{tokens(event.tokens)} / {tokens(event.window)}"
            how = "measured" if event.density_measured else "assumed"
            return (
                f"{used} ({percent(event.pressure)}) {event.source}, window from "
                f"{event.window_source}, density {event.density:.2f}x ({how})"
            )
        case ev.MessageRecorded():
            what = f"{event.role} {event.kind}" + (f" {event.tool}" if event.tool else "")
            error = " error" if event.is_error else ""
            return f"{what}{error}: {event.excerpt}"
        case ev.MaskApplied():
            projected = (
                f", projected {tokens(event.projected_tokens)}"
                if event.projected_tokens is not None
                else ""
            )
            free = (
                f"; free: the prompt cache had gone cold ({gap(event.idle_seconds)} since the "
                "last request)"
                if event.free and event.idle_seconds is not None
                else ""
            )
            return (
                f"masked {plural(event.count, 'result')} (~{tokens(event.estimated_tokens)}, "
                f"{event.trigger}{projected}), {event.total_masked} in all{free}"
            )
        case ev.MaskMeasured():
            change = f"{tokens(event.tokens_before)} -> {tokens(event.tokens_after)}"
            return f"reclaimed {tokens(event.reclaimed)}: {change}"
        case ev.MaskSkipped():
            return f"{event.reason} at {tokens(event.tokens)}"
        case ev.TranscriptFolded():
            notes = f" and {plural(event.notes, 'resume note')}" if event.notes else ""
            return (
                f"folded {plural(event.steps, 'masked step')}{notes} into the digest "
                f"({plural(event.digest_lines, 'line')}, ~{tokens(event.digest_tokens)}): "
                f"~{tokens(event.tokens_before)} -> ~{tokens(event.tokens_after)}"
            )
        case ev.WindDownSent():
            return f"at {tokens(event.tokens)} / {tokens(event.window)} ({event.trigger})"
        case ev.CheckpointRequested():
            return f"at {tokens(event.tokens)}"
        case ev.CheckpointSaved():
            return (
                f"#{event.number} ({event.origin}, {plural(len(event.text), 'char')}) {event.path}"
            )
        case ev.ApprovalRequested():
            return f"checkpoint #{event.checkpoint_number}: {event.reason}"
        case ev.ApprovalDecided():
            return f"{event.decision} by {event.decided_by}"
        case ev.ApprovalPolicySet():
            return (
                "approval required before restarts"
                if event.required
                else "restarts without approval"
            )
        case ev.Restarted():
            return (
                f"continuation {event.continuation} from checkpoint #{event.checkpoint_number} "
                f"({event.reason}, {tokens(event.tokens_before)} before, by {event.approved_by})"
            )
        case ev.IdleTimeoutSeen():
            silent = f"silent {event.idle_seconds:.0f} s, retry {event.retry}"
            return f"{silent}: {event.decision} {event.reason}"
        case ev.ApiErrorSeen():
            status = f" {event.status}" if event.status is not None else ""
            return f"{event.terminal_reason}{status}, retry {event.retry} {event.decision}"
        case ev.CompactionSeen():
            return f"{event.trigger}, {'blocked' if event.blocked else 'NOT blocked'}"
        case ev.ProcessStarted():
            return f"pid {event.pid} for {event.purpose}" + (" (resume)" if event.resume else "")
        case ev.ProcessEnded():
            return f"pid {event.pid} {event.how} after {event.seconds:.1f} s"
        case ev.SessionEnded():
            return f"{event.status}: {event.reason}"
        case ev.CliCostReported():
            cost = f"${event.cost_usd:.4f}"
            return f"Claude Code's own figure: {cost} for agent session {event.session_id}"
        case ev.SubagentStarted():
            how = "background" if event.background else "foreground"
            nested = f", nested in {event.parent}" if event.parent else ""
            kind = event.agent_type or "subagent"
            return f"{event.agent_id} ({kind}, {how}{nested}): {event.description}"
        case ev.SubagentCall():
            window = tokens(event.call.context_tokens)
            return (
                f"{event.agent_id}: {window} in its window, {plural(event.tool_uses, 'tool use')}"
            )
        case ev.SubagentCompacted():
            before = tokens(event.pre_tokens) if event.pre_tokens is not None else "?"
            after = tokens(event.post_tokens) if event.post_tokens is not None else "?"
            return f"{event.agent_id}: compacted by Claude Code, {before} -> {after}"
        case ev.SubagentWoundDown():
            tool = f" with its {event.tool} result" if event.tool else ""
            return (
                f"{event.agent_id}: told to return its findings now{tool}, "
                f"~{tokens(event.estimate)} of {tokens(event.window)} in its window"
            )
        case ev.SubagentResultWithheld():
            return (
                f"{event.agent_id}: {event.tool or 'a'} result of ~{tokens(event.result_tokens)} "
                f"withheld, it would have overflowed its window "
                f"({tokens(event.tokens)} of {tokens(event.window)} already)"
            )
        case ev.SubagentEnded():
            reason = f": {event.reason}" if event.reason else ""
            return f"{event.agent_id} {event.how}{reason}"
        case ev.BackgroundListed():
            return f"in the background: {describe_tasks(event.tasks)}"
        case ev.BackgroundWaiting():
            return f"turn over; waiting for {describe_tasks(event.tasks, event.reports)}"
        case ev.BackgroundStopped():
            return f"stopped with the agent: {describe_tasks(event.tasks)} ({event.reason})"
        case ev.ErrorRecorded() if event.mask_not_applied:
            return f"mask not applied, the window stays as it is: {event.message}"
        case ev.ErrorRecorded() | ev.WarningRecorded():
            return f"{event.where}: {event.message}"
        case ev.WindowLearned():
            return (
                f"the API refused ~{tokens(event.refused)}, less than the {tokens(event.believed)} "
                f"window believed ({event.believed_source}): window ~{tokens(event.window)}, "
                f"an estimate between {tokens(event.accepted)} accepted and "
                f"~{tokens(event.refused)} refused"
            )
        case ev.CacheCooling():
            return (
                f"waiting for {event.waiting_for} past half the prompt cache's lifetime "
                f"({gap(event.ttl)}): it goes cold in {gap(event.cold_in)}"
            )
        case ev.ManageModeSet():
            return f"management mode {event.mode}"
        case ev.TakenOver():
            return "taken over by hand: its process ended, the person's Claude Code has it"
        case ev.HandedBack():
            window = f", window {tokens(event.tokens)}" if event.tokens is not None else ""
            goes = "goes on supervised" if event.went_on else "ends"
            return f"handed back after {plural(event.prompts, 'prompt')} by hand{window}: it {goes}"
        case ev.SessionAdded():
            profile = f", profile {event.profile}" if event.profile else ""
            if event.forked_from:
                return (
                    f"forked from {event.forked_from} (agent session {event.fork_of}): "
                    f"{event.task} (in {event.cwd})"
                )
            return f"added to the run: {event.task} (in {event.cwd}{profile})"
        case ev.MessageQueued():
            return f"message #{event.number} from the operator: {event.text}"
        case ev.MessageDelivered():
            numbers = ", ".join(f"#{number}" for number in event.numbers)
            return f"message {numbers} sent to the agent ({event.how.value.replace('_', ' ')})"
        case ev.PermissionRequested():
            return f"#{event.request_id} {event.tool}: {event.summary}"
        case ev.PermissionDecided():
            said = f": {event.reason}" if event.reason else ""
            return f"#{event.request_id} {event.tool}: {event.answer} by {event.decided_by}{said}"
        case ev.WorktreeCreated():
            source = f" of {event.base}" if event.base else ""
            return f"branch {event.branch} at {event.base_commit[:10]}{source} in {event.path}"
        case ev.WorktreeChanged():
            return event.error or changes_summary(event.files) + _to_land(event)
        case ev.WorktreeLanded():
            return (
                f"landed {plural(event.commits, 'commit')} of {event.branch} on {event.into} "
                f"({event.how}, now {event.commit[:10]}){_committed(event.committed)}"
            )
        case ev.WorktreePushed():
            pr = f"draft PR {event.pr_url}" if event.pr_url else f"open the PR: {event.pr_command}"
            at = f"{event.commit[:10]}{_committed(event.committed)}"
            return f"pushed {event.branch} to {event.remote} at {at}; {pr}"
        case ev.WorktreeDiscarded():
            dropped = []
            if event.unmerged_commits:
                dropped.append(f"{plural(event.unmerged_commits, 'unmerged commit')}")
            if event.uncommitted:
                dropped.append("uncommitted edits")
            lost = f", dropping {' and '.join(dropped)}" if dropped else ""
            return f"discarded worktree {event.path} and branch {event.branch}{lost}"
        case ev.RunStarted():
            return f"run {event.run_id} ({event.mode})"
        case ev.RunEnded():
            return f"run {event.run_id} {'ok' if event.ok else 'not ok'} {event.reason}"
        case ev.AgentSessionNamed():
            return f"agent session {event.session_id}"
        case ev.ModelLearned():
            was = f"started as {event.was}" if event.was else "started with Claude Code's default"
            return f"the API answers as {event.model} ({was})"
        case ev.RunResumed():
            how = ", ".join(f"{name} from its {way}" for name, way in event.resumed.items())
            return f"run {event.run_id} resumed after {gap(event.gap_seconds)}: {how or 'nothing'}"
        case ev.HostPlaced():
            again = "found again" if event.reattached else f"host #{event.attempt}"
            return f"{again} on node {event.node[:12]} ({event.address})"
        case ev.WorktreeSnapshot():
            if event.restored:
                return f"worktree made again from its snapshot {event.commit[:10]} ({event.ref})"
            return f"work in progress kept as {event.commit[:10]} at {event.ref}"
        case ev.HostLost():
            then = "restarts on another host" if event.restart else "ends here"
            where = f"node {event.node[:12]} ({event.address})"
            return f"host lost with {where}: {event.reason}; {then}"


def gap(seconds: float) -> str:
    """A pause in a run, as a person says it: "42 s", "7 min 5 s", "3 h 12 min"."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {secs} s"
    return f"{secs} s"


def _committed(commit: str) -> str:
    return f", its edits committed as {commit[:10]}" if commit else ""


def _to_land(event: ev.WorktreeChanged) -> str:
    """ ", 2 commits + uncommitted edits to land" once measured; "" before."""
    if event.commits_ahead is None:
        return ""
    return f", {BranchStatus(event.commits_ahead, bool(event.uncommitted)).label}"


def changes_summary(files: tuple[ev.ChangedFile, ...]) -> str:
    """ "2 files changed, +14 -3" (binary files count as files, without lines)."""
    if not files:
        return "no files changed"
    added = sum(f.added or 0 for f in files)
    deleted = sum(f.deleted or 0 for f in files)
    return f"{plural(len(files), 'file')} changed, +{added} -{deleted}"
