"""Planning a resume: from a run's journal, how each of its sessions continues, if at all.

A run can end without its sessions ending: mala-tui was killed (`kill -9`, a crash),
or the whole run was stopped (a quit, a signal) while they worked. Each session is
then picked up where its journal leaves it:

- it had ended on its own (done, denied, failed, or stopped by itself): left alone;
- its agent named a session after its latest checkpoint and restart, and that
  session's transcript is still on disk: resumed by that id, told it was interrupted;
- else it has a checkpoint: a fresh session seeded with the latest one, as a restart;
- else: its task, from the start.

What the session had counted (restarts, checkpoints, masked results, its measured
token density) carries over, so its history continues instead of starting at 1.
Whether a transcript is still there is the caller's question to answer (a file):
this module only reads events.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.background import BackgroundTask
from mala_tui.core.checkpoint import Checkpoint, CheckpointOrigin
from mala_tui.core.operator_messages import QueuedMessage
from mala_tui.core.permissions import PermissionAnswer
from mala_tui.core.phases import ManageMode

#: Answers "is the transcript of this agent session still there?" for (session, agent id).
TranscriptCheck = Callable[[str, str], bool]
#: How a session host begins the reason it stopped its session for: its driver was gone
#: too long (`cluster.orphan_minutes`). Stopped for the run's sake, not its own: resumable.
ORPHANED = "its driver has been gone"


class ResumeFrom(StrEnum):
    SESSION_ID = "session_id"
    """The agent's own session, by its id: its transcript is intact."""
    CHECKPOINT = "checkpoint"
    """A fresh agent session seeded with the latest checkpoint."""
    TASK = "task"
    """A fresh agent session on the task: nothing else is left to start from."""


@dataclass(frozen=True, slots=True)
class TaskRecord:
    """One task as the run was started with it (run.json's `tasks`)."""

    name: str
    task: str
    cwd: str


@dataclass(frozen=True, slots=True)
class Carried:
    """What a session had counted, for its history to go on from."""

    restarts: int = 0
    checkpoints: int = 0
    """The highest checkpoint number saved: the next one is numbered after it."""
    masked_total: int = 0
    density: float | None = None
    """Tokens per chars/4 token, when the session had measured it."""
    messages: tuple[QueuedMessage, ...] = ()
    """What the operator said that had not reached the agent: it goes with the resume."""
    messages_said: int = 0
    """The highest message number so far: the next message is numbered after it."""
    manage: ManageMode | None = None
    """The management mode the session last ran under (the operator may have switched it)."""
    refusal: tuple[int, int] | None = None
    """(accepted, refused): the bounds of the latest window learnt from an API refusal
    (core.window), if one was: a model that took less than Claude Code believed still
    takes less after the resume."""
    lost_background: tuple[BackgroundTask, ...] = ()
    """Background work (subagents, shells) that was running when the run stopped or was
    killed: it ended with the agent process, and the agent is told so."""


@dataclass(frozen=True, slots=True)
class SessionResume:
    """How one session continues, or why it does not."""

    name: str
    task: str
    cwd: str
    how: ResumeFrom | None
    """None: the session had ended and is left alone."""
    reason: str
    """Why this way, in words (for `resume` and `show`)."""
    session_id: str | None = None
    checkpoint: Checkpoint | None = None
    checkpoint_number: int = 0
    carried: Carried = field(default_factory=Carried)
    ended: EndStatus | None = None
    awaiting_approval: str | None = None
    """The restart from `checkpoint` was waiting for a person's approval: why it was asked."""
    lost_host: str | None = None
    """The session goes on because its host was lost (`--engine ray`), and how it was: the
    restart from `checkpoint` is a `node_lost` one, approved as any restart is."""

    @property
    def resumes(self) -> bool:
        return self.how is not None


@dataclass(frozen=True, slots=True)
class ResumePlan:
    run_id: str
    sessions: tuple[SessionResume, ...]
    last_event_at: float | None
    """When the journal's last event happened: the gap runs from here."""
    ended: bool
    """The run's journal ends with its `run_ended` (a clean stop, not a kill)."""

    @property
    def resuming(self) -> tuple[SessionResume, ...]:
        return tuple(s for s in self.sessions if s.resumes)

    def gap(self, now: float) -> float:
        return max(0.0, now - self.last_event_at) if self.last_event_at is not None else 0.0


@dataclass
class _Seen:
    """One session as its events leave it (positions are event indexes, -1 for never)."""

    task: str = ""
    cwd: str = ""
    status: EndStatus | None = None
    end_reason: str = ""
    stopped_with_run: bool = False
    session_id: str | None = None
    named_at: int = -1
    restarted_at: int = -1
    checkpoint: ev.CheckpointSaved | None = None
    checkpoint_at: int = -1
    restarts: int = 0
    checkpoints: int = 0
    masked_total: int = 0
    density: float | None = None
    waiting: dict[int, QueuedMessage] = field(default_factory=dict)
    said: int = 0
    manage: ManageMode | None = None
    refusal: tuple[int, int] | None = None
    asked: ev.ApprovalRequested | None = None
    asked_at: int = -1
    concluded: str = ""
    """Why the person is done with it, though it never ended: its work landed or thrown away."""
    answered_at: int = -1
    background: tuple[BackgroundTask, ...] = ()
    """What ran in the background as of the latest event that said."""
    stopped_background: tuple[BackgroundTask, ...] = ()
    """What a stop ended (its `background_stopped`), until the session runs again."""

    def carried(self) -> Carried:
        return Carried(
            self.restarts,
            self.checkpoints,
            self.masked_total,
            self.density,
            tuple(self.waiting[number] for number in sorted(self.waiting)),
            self.said,
            self.manage,
            self.refusal,
            self.background or self.stopped_background,
        )


def plan_resume(
    events: Sequence[ev.Event],
    tasks: Iterable[TaskRecord],
    transcript_exists: TranscriptCheck,
    run_id: str = "",
) -> ResumePlan:
    """How each session of the run continues; sessions in the order the run named them."""
    seen: dict[str, _Seen] = {}
    for task in tasks:
        seen[task.name] = _Seen(task=task.task, cwd=task.cwd)
    ended = False
    for index, event in enumerate(events):
        ended = _take(seen, index, event, ended)
        if isinstance(event, ev.RunStarted | ev.RunResumed) and not run_id:
            run_id = event.run_id
    sessions = tuple(_decide(name, state, transcript_exists) for name, state in seen.items())
    last = events[-1].at if events else None
    return ResumePlan(run_id, sessions, last, ended)


def _take(seen: dict[str, _Seen], index: int, event: ev.Event, ended: bool) -> bool:
    """Fold one event in; returns whether the run now counts as ended."""
    match event:
        case ev.RunStarted():
            for name in event.sessions:
                seen.setdefault(name, _Seen())
            return False
        case ev.RunResumed():
            for name in event.resumed:
                state = seen.setdefault(name, _Seen())
                state.status, state.end_reason, state.stopped_with_run = None, "", False
                state.background = state.stopped_background = ()  # told on that resume
            return False
        case ev.RunEnded():
            for state in seen.values():
                state.stopped_with_run = state.stopped_with_run or _stopped_by(state, event.reason)
            return True
    if not event.session:
        return ended
    state = seen.setdefault(event.session, _Seen())
    match event:
        case ev.SessionStarted() | ev.SessionAdded():
            state.task, state.cwd = event.task, event.cwd
            if isinstance(event, ev.SessionStarted):
                state.manage = event.manage
        case ev.ManageModeSet():
            state.manage = event.mode
        case ev.ApprovalRequested():
            state.asked, state.asked_at = event, index
        case ev.ApprovalDecided():
            state.answered_at = index
        case ev.MessageQueued():
            state.waiting[event.number] = QueuedMessage(event.number, event.text, event.at)
            state.said = max(state.said, event.number)
        case ev.MessageDelivered():
            for number in event.numbers:
                state.waiting.pop(number, None)
        case ev.AgentSessionNamed():
            state.session_id, state.named_at = event.session_id, index
        case ev.Restarted():
            state.restarts, state.restarted_at = max(state.restarts, event.continuation), index
        case ev.CheckpointSaved():
            state.checkpoint, state.checkpoint_at = event, index
            state.checkpoints = max(state.checkpoints, event.number)
        case ev.MaskApplied():
            state.masked_total = max(state.masked_total, event.total_masked)
        case ev.UsageRecorded() if event.density_measured:
            state.density = event.density
        case ev.WindowLearned():
            state.refusal = (event.accepted, event.refused)
        case ev.SessionEnded():
            state.status, state.end_reason = event.status, event.reason
            state.masked_total = max(state.masked_total, event.masked_total)
        case ev.BackgroundListed() | ev.BackgroundWaiting():
            state.background, state.stopped_background = event.tasks, ()
        case ev.BackgroundStopped():
            state.background, state.stopped_background = (), event.tasks
        case ev.WorktreeLanded():
            state.concluded = "its work was landed"
        case ev.WorktreeDiscarded():
            state.concluded = "its worktree was discarded"
        case _:
            pass
    return ended


def _stopped_by(state: _Seen, run_reason: str) -> bool:
    """Stopped because the whole run stopped (its cause is the session's reason), not itself."""
    if state.status is not EndStatus.STOPPED or not run_reason:
        return False
    return state.end_reason == run_reason or state.end_reason.startswith(f"{run_reason} (")


def _decide(name: str, state: _Seen, transcript_exists: TranscriptCheck) -> SessionResume:
    carried = state.carried()
    base = SessionResume(name, state.task, state.cwd, None, "", carried=carried)
    orphaned = state.status is EndStatus.STOPPED and state.end_reason.startswith(ORPHANED)
    if state.status is not None and not state.stopped_with_run and not orphaned:
        reason = f"ended {state.status.value}" + (
            f": {state.end_reason}" if state.end_reason else ""
        )
        return _with(base, how=None, reason=reason, ended=state.status)
    if state.concluded:
        return _with(base, how=None, reason=state.concluded)
    if not state.task:
        return _with(base, how=None, reason="its task is not in the journal or run.json")
    why = "stopped with the run" if state.status is not None else "had not ended"
    if orphaned:
        why = "wound down by its host while no driver was there"
    checkpoint = _checkpoint_of(state)
    fresh_id = state.named_at > max(state.restarted_at, state.checkpoint_at)
    if state.session_id is not None and fresh_id:
        if transcript_exists(name, state.session_id):
            return _with(
                base,
                how=ResumeFrom.SESSION_ID,
                reason=f"{why}; resumes agent session {state.session_id}",
                session_id=state.session_id,
            )
        why += f"; the transcript of agent session {state.session_id} is gone"
    elif state.session_id is not None and checkpoint is not None:
        why += "; its latest checkpoint is newer than its agent session"
    if checkpoint is not None and state.checkpoint is not None:
        number = state.checkpoint.number
        waiting = state.asked is not None and state.asked_at > max(
            state.answered_at, state.restarted_at, state.checkpoint_at
        )
        return _with(
            base,
            how=ResumeFrom.CHECKPOINT,
            reason=f"{why}; a fresh session from checkpoint #{number}"
            + (", once its restart is approved" if waiting else ""),
            checkpoint=checkpoint,
            checkpoint_number=number,
            awaiting_approval=state.asked.reason if waiting and state.asked else None,
        )
    return _with(base, how=ResumeFrom.TASK, reason=f"{why}; no checkpoint: from its task")


def _checkpoint_of(state: _Seen) -> Checkpoint | None:
    saved = state.checkpoint
    if saved is None or not saved.text.strip():
        return None
    try:
        origin = saved.origin
    except ValueError:
        origin = CheckpointOrigin.EDITED
    return Checkpoint(saved.text, origin)


def _with(base: SessionResume, **changes: object) -> SessionResume:
    return replace(base, **changes)  # type: ignore[arg-type]


def permission_history(events: Iterable[ev.Event], session: str) -> tuple[int, frozenset[str]]:
    """What a resumed session keeps of its permission requests: how many it made (the ids of
    new ones go on from there, so the journal never has two of one id) and the tools it was
    allowed for the session (still allowed after the resume, as after a restart)."""
    asked = 0
    tools: set[str] = set()
    for event in events:
        if event.session != session:
            continue
        if isinstance(event, ev.PermissionRequested) and event.request_id.isdigit():
            asked = max(asked, int(event.request_id))
        elif (
            isinstance(event, ev.PermissionDecided)
            and event.answer is PermissionAnswer.ALLOW_SESSION
        ):
            tools.add(event.tool)
    return asked, frozenset(tools)
