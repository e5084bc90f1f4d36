"""The scripted agent: decides one reply from one request, as a real model would.

It reads the latest user text to know what is being asked:
- the CLI's compaction request (``CRITICAL: Respond with TEXT ONLY`` ... ``<summary>``):
  answer with ``<analysis>``/``<summary>`` listing what it sees done;
- a continuation prompt (``CONTINUING FROM A PREVIOUS SESSION``): carry on with the steps;
- a checkpoint request (``<checkpoint>`` and the word checkpoint): answer with a checkpoint,
  no tool call;
- a wind-down (``wrap up``): optionally save progress notes, then a short answer;
- anything else (the task, "Continue ..." resume prompts, tool results): play the first
  step not visible as done (see progress.py), or give the final answer when none is left.
An operator's message (operator_requests.py) comes first: each extra step it asks for is
played before the scripted steps that remain, once, and marked as the operator's in the
reply; a step it skips is left out, and the checkpoint, summary and final answer list it.
Before an Edit (or a retried Write) it re-reads the file unless a good Read of it is
visible after the last failed attempt: the CLI refuses to change a file it has not read in
the current session, and a model would read it again too.
Before a step that needs facts (``needs``), it checks that each fact's line is visible
somewhere in the request; when one is not (masked, cleared by the API, summarised away),
it runs the fact's source step again first: a re-read, marked as such in the reply.
An Agent step starts a subagent (in the background by default). Before a step with
``after`` and before its final answer the agent waits for the subagents named (every one it
started, for the final answer): while a report (``REPORT <name>:``) is not
visible, it answers with text only, "Waiting for N subagent(s) to report.", and the turn
ends, as a model's does; Claude Code starts the next turn when a background subagent
finishes, with its report in a ``<task-notification>``. The final answer ends with each
report's first line. A task notification is news, not an instruction: it is never read
as a request for a checkpoint or a wind-down.

Pure: no I/O, no clock; the server records what it played and whether that was a redo.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from mala_tui.loopback import replies
from mala_tui.loopback.progress import Progress
from mala_tui.loopback.request_view import RequestView
from mala_tui.loopback.scenario import Scenario
from mala_tui.loopback.scenario_sections import Fact
from mala_tui.loopback.scenario_steps import PlannedStep, report_marker

ResponseKind = Literal[
    "tool_use", "checkpoint", "wind_down", "final", "compaction_summary", "waiting", "error"
]
StopReason = Literal["end_turn", "tool_use"]

# A step whose call failed this many times (visible) is given up rather than looped on.
MAX_ATTEMPTS = 3

_WRAP_UP = re.compile(r"\bwrap[\s-]*up\b", re.IGNORECASE)
_CHECKPOINT_WORD = re.compile(r"\bcheckpoint\b", re.IGNORECASE)
_CHECKPOINT_TAG = re.compile(r"</?checkpoint>", re.IGNORECASE)
_PLACEHOLDER = re.compile(r"\bplaceholders?\b", re.IGNORECASE)
_RESTATE = re.compile(r"\brestate\b", re.IGNORECASE)
# How Claude Code brings a background subagent's end to the main agent.
TASK_NOTIFICATION = "<task-notification>"


def waiting_text(missing: int) -> str:
    """What the main agent says while ``missing`` subagents have not reported."""
    return f"Waiting for {missing} subagent(s) to report."


def is_compaction_request(text: str) -> bool:
    """The CLI's own summarisation request."""
    head = text.lstrip()[:400].lower()
    return "critical: respond with text only" in head and "<summary>" in text.lower()


def is_continuation(text: str) -> bool:
    """The first prompt of a fresh session seeded with a checkpoint."""
    return "continuing from a previous session" in text.lower()


def is_checkpoint_request(text: str) -> bool:
    """mala-tui's checkpoint request: the <checkpoint> form and the word checkpoint."""
    return "<checkpoint>" in text.lower() and bool(
        _CHECKPOINT_WORD.search(_CHECKPOINT_TAG.sub(" ", text))
    )


def asked_to_restate(view: RequestView) -> bool:
    """Whether the agent was told its old output is masked, and asked to restate what it
    will need (mala-tui's masking notice, with its first prompt)."""
    return any(
        _PLACEHOLDER.search(entry.own_text) and _RESTATE.search(entry.own_text)
        for entry in view.user_texts
    )


def is_wind_down(text: str) -> bool:
    """mala-tui's wind-down message."""
    return bool(_WRAP_UP.search(text))


@dataclass(frozen=True)
class ScriptedReply:
    """One assistant message: its content blocks, why it stops, and the step it plays."""

    kind: ResponseKind
    content: tuple[Mapping[str, Any], ...]
    stop_reason: StopReason
    step: PlannedStep | None = None
    note: str = ""
    done_count: int = 0
    reread: str | None = None
    """The fact this call fetches again, when it is a re-read."""
    operator: bool = False
    """The step played is an extra one an operator's message asked for."""


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _new_tool_use_id() -> str:
    return f"toolu_{uuid.uuid4().hex[:24]}"


class ScriptedAgent:
    """Plays one scenario. ``reply`` maps a request to the agent's answer."""

    def __init__(
        self,
        scenario: Scenario,
        *,
        fallback_workspace: Path | None = None,
        new_tool_use_id: Callable[[], str] = _new_tool_use_id,
    ) -> None:
        self.scenario = scenario
        self._plan = scenario.plan()
        self._by_key = {step.key: step for step in self._plan}
        self._fallback_workspace = fallback_workspace
        self._new_id = new_tool_use_id

    def workspace_of(self, view: RequestView) -> Path | None:
        """The workspace the CLI states, else the configured one."""
        return view.workspace or self._fallback_workspace

    def step_for(self, key: tuple[str, str]) -> PlannedStep | None:
        return self._by_key.get(key)

    def compaction_summary(self, view: RequestView) -> str:
        """The summary the API's server-side compaction writes of this request: what a
        summary keeps (the steps done and pending, the facts decided or current)."""
        progress = Progress(self._plan, view)
        done = progress.done_steps()
        return replies.compaction_block_text(
            self.scenario,
            done,
            progress.remaining_steps(),
            self.workspace_of(view),
            replies.facts_a_summary_keeps(self.scenario, view, done),
            skipped=progress.skipped_steps(),
        )

    def reply(self, view: RequestView) -> ScriptedReply:
        progress = Progress(self._plan, view)
        done, remaining = progress.done_steps(), progress.remaining_steps()
        workspace = self.workspace_of(view)
        if is_compaction_request(view.final_user_text):
            kept = replies.facts_a_summary_keeps(self.scenario, view, done)
            text = replies.compaction_summary_text(
                self.scenario, done, remaining, kept, skipped=progress.skipped_steps()
            )
            return ScriptedReply(
                "compaction_summary", (_text(text),), "end_turn", done_count=len(done)
            )
        latest = view.latest_user_text
        asked = latest.own_text if latest is not None else ""
        if not is_continuation(asked) and TASK_NOTIFICATION not in asked:
            if is_checkpoint_request(asked):
                text = replies.checkpoint_text(
                    self.scenario,
                    done,
                    remaining,
                    workspace,
                    self.scenario.checkpoint_style,
                    facts=replies.facts_a_summary_keeps(self.scenario, view, done),
                    skipped=progress.skipped_steps(),
                )
                return ScriptedReply("checkpoint", (_text(text),), "end_turn", done_count=len(done))
            if is_wind_down(asked):
                since = latest.message_index if latest is not None else -1
                return self._wind_down(progress, since, workspace, done, remaining)
        return self._next_step(progress, view, workspace, len(done))

    def _next_step(
        self, progress: Progress, view: RequestView, workspace: Path | None, done_count: int
    ) -> ScriptedReply:
        for asked in progress.operator_steps():
            status = progress.status_since(asked.step, asked.asked_at)
            if status.done or len(status.failed_at) >= MAX_ATTEMPTS:
                continue
            reply = self._tool_reply("tool_use", asked.step, workspace, done_count)
            return replace(reply, operator=True)
        for step in self._plan:
            status = progress.status(step)
            if status.done or len(status.failed_at) >= MAX_ATTEMPTS or progress.is_skipped(step):
                continue
            awaited = [name for name in step.after if view.line_from(report_marker(name)) is None]
            if awaited:
                # One subagent after another: the turn ends until the reports come.
                text = waiting_text(len(awaited))
                return ScriptedReply("waiting", (_text(text),), "end_turn", done_count=done_count)
            noted = self._just_seen(step, view)
            missing = self._missing_fact(step, progress, view)
            if missing is not None:
                note = f"{missing.source.label} again for {missing.id} (needed by {step.id})"
                reply = self._tool_reply(
                    "tool_use", missing.source, workspace, done_count, note, noted=noted
                )
                return replace(reply, reread=missing.id)
            last_failure = status.failed_at[-1] if status.failed_at else -1
            needs_read = step.tool == "Edit" or (step.tool == "Write" and status.failed_at)
            if needs_read and not progress.read_succeeded_after(step.primary, last_failure):
                read = self._by_key.get(("Read", step.primary)) or PlannedStep(
                    number=0,
                    id=f"{step.id}-reread",
                    label=f"read {step.primary} before changing it",
                    tool="Read",
                    primary=step.primary,
                )
                note = f"read {step.primary} again before {step.label}"
                return self._tool_reply("tool_use", read, workspace, done_count, note, noted=noted)
            return self._tool_reply("tool_use", step, workspace, done_count, noted=noted)
        reports, unreported = self._reports(progress, view)
        if unreported:
            text = waiting_text(len(unreported))
            return ScriptedReply("waiting", (_text(text),), "end_turn", done_count=done_count)
        text = self.scenario.final_answer + replies.skipped_note(progress.skipped_steps())
        if reports:
            text += "\n\n" + "\n".join(reports)
        return ScriptedReply("final", (_text(text),), "end_turn", done_count=done_count)

    def _reports(self, progress: Progress, view: RequestView) -> tuple[list[str], list[str]]:
        """The first line of each report of a subagent this agent started (an Agent step
        done), and the names of those whose report is not visible yet."""
        reports: list[str] = []
        missing: list[str] = []
        for step in self._plan:
            if step.tool != "Agent" or not progress.status(step).done:
                continue
            line = view.line_from(report_marker(step.primary))
            if line is None:
                missing.append(step.primary)
            else:
                reports.append(line)
        return reports, missing

    def _just_seen(self, step: PlannedStep, view: RequestView) -> list[Fact]:
        """Facts the latest result shows that the agent says in its next message, and then
        has in its own words, not only in a result that may be masked or cleared again.

        Those ``step`` needs, as a model notes what it went back to find; and, once it was
        asked to restate what it will need (mala-tui's masking notice), every fact the
        result shows that it has not said yet: the salient details of that output, needed
        later or not, as a summary of it would keep them.
        """
        if not view.calls or not view.calls[-1].result_intact:
            return []
        latest = view.calls[-1].result_text or ""
        facts = [self.scenario.fact(need) for need in step.needs]
        if asked_to_restate(view):
            said = view.assistant_texts
            facts += [
                fact
                for fact in self.scenario.fact_list
                if fact not in facts and not any(fact.text in text for text in said)
            ]
        return [fact for fact in facts if fact.text in latest]

    def _missing_fact(
        self, step: PlannedStep, progress: Progress, view: RequestView
    ) -> Fact | None:
        """The first fact ``step`` needs that the request does not show.

        A source whose latest result is here in full counts as seen even if the line is not
        in it (the CLI cut a long output short), and so does one already fetched again
        MAX_ATTEMPTS times: the agent looked, and does not loop on it.
        """
        for need in step.needs:
            fact = self.scenario.fact(need)
            if view.shows(fact.text):
                continue
            calls = progress.calls_for(fact.source.key)
            if calls and (calls[-1].result_intact or len(calls) > MAX_ATTEMPTS):
                continue
            return fact
        return None

    def _wind_down(
        self,
        progress: Progress,
        since: int,
        workspace: Path | None,
        done: list[PlannedStep],
        remaining: list[PlannedStep],
    ) -> ScriptedReply:
        notes = self.scenario.wind_down_notes
        if notes is not None:
            attempts = [c for c in progress.calls_for(("Write", notes)) if c.message_index > since]
            failures = [c.message_index for c in attempts if c.result_is_error]
            if not any(c.succeeded for c in attempts) and len(failures) < MAX_ATTEMPTS:
                last_failure = failures[-1] if failures else since
                if failures and not progress.read_succeeded_after(notes, last_failure):
                    read = PlannedStep(0, "wind-down-notes-read", f"read {notes}", "Read", notes)
                    return self._tool_reply("wind_down", read, workspace, len(done))
                content = replies.progress_notes_text(self.scenario, done, remaining)
                write = PlannedStep(
                    0,
                    "wind-down-notes",
                    "save progress notes",
                    "Write",
                    notes,
                    (("content", content),),
                )
                return self._tool_reply("wind_down", write, workspace, len(done))
        text = replies.wind_down_text(done, remaining)
        return ScriptedReply("wind_down", (_text(text),), "end_turn", done_count=len(done))

    def _tool_reply(
        self,
        kind: ResponseKind,
        step: PlannedStep,
        workspace: Path | None,
        done_count: int,
        note: str = "",
        *,
        noted: Sequence[Fact] = (),
    ) -> ScriptedReply:
        call = {
            "type": "tool_use",
            "id": self._new_id(),
            "name": step.tool,
            "input": step.tool_input(workspace),
        }
        intro = _text(replies.step_intro_text(step, note, noted))
        return ScriptedReply(
            kind, (intro, call), "tool_use", step=step, note=note, done_count=done_count
        )
