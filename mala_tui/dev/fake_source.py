"""A fake live source: the sample run as a live run the app can watch with no agent running.

`FakeLiveSource` has the shape of the real supervisor the app needs
(`ui.source.LiveSource`) but runs nothing: it plays a made-up run (by default
`dev.sample_run`) through the run's own recorder (into the view, to the listeners)
and records every command, answer and setting the app sends instead of acting on
it; what the real run would journal for an answer or a setting (the decision, the
new setting) it records too. Screenshots, snapshot tests and the UI tests use it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from mala_tui.core import events as ev
from mala_tui.core.operator_actions import (
    AddSession,
    AnswerApproval,
    AnswerPermission,
    ForkSession,
    OperatorAction,
    RequireApproval,
    SayToAgent,
    SessionCommand,
    SetBudget,
    SetManageMode,
)
from mala_tui.core.operator_messages import checked_text
from mala_tui.core.permissions import AnsweredBy
from mala_tui.core.questions import ApprovalQuestion, PermissionQuestion
from mala_tui.core.run_view import RunState
from mala_tui.core.session_records import SessionSnapshot
from mala_tui.dev.sample_run import sample_events
from mala_tui.runtime.run.landings import Landings
from mala_tui.runtime.run.profiles import Profile
from mala_tui.runtime.run.recorder import RunRecorder


class FakeLiveSource:
    """The sample run as a live source: commands and answers are recorded, no agent runs.

    It has the shape of `runtime.run.supervisor.Supervisor` the app needs
    (`ui.source.LiveSource`). `record` plays an event as the real supervisor does,
    through a `RunRecorder` with no journal: into the view, then to the listeners.
    """

    def __init__(self, events: list[ev.Event] | None = None) -> None:
        self._recorder = RunRecorder(
            journal=None, state=RunState(), on_storage_failure=lambda _exc: None
        )
        self.state = self._recorder.state
        self.listeners = self._recorder.listeners
        self.calls: list[tuple[str, ...]] = []
        """Every command, answer and setting the app sent, in order."""
        self._stopped = asyncio.Event()
        self._said: dict[str, int] = {}
        self.profiles: dict[str, Profile] = {}
        """Named profiles a new session may be given (none unless a test gives some)."""
        self.landings = Landings(self.state, self.record, self._still_running)
        """Real landings (real git) of the sessions that have a worktree, as a run's are."""
        for event in sample_events() if events is None else events:
            self.record(event)

    def record(self, event: ev.Event) -> None:
        self._recorder.record(event)

    def _still_running(self, session: str) -> str | None:
        state = self.state.sessions.get(session)
        return "still running" if state is not None and state.status is None else None

    def snapshots(self) -> dict[str, SessionSnapshot]:
        return self._recorder.snapshots()

    async def run(self) -> None:
        await self._stopped.wait()

    def act(self, action: OperatorAction) -> None:
        """Recorded in `calls`, and shown in the view as the run would journal it; what the
        run would refuse is refused alike."""
        match action:
            case SessionCommand():
                self.calls.append(("command", action.session, action.command.value))
            case AnswerApproval():
                self._decide(action)
            case RequireApproval():
                self._require_approval(action.session, action.required)
            case SetManageMode():
                self.calls.append(("manage", action.session, action.mode.value))
            case SayToAgent():
                self._say(action.session, action.text)
            case AddSession():
                self._add_task(action.name, action.task, action.cwd, action.profile)
            case ForkSession():
                self._fork(action.parent, action.name, action.instruction)
            case AnswerPermission():
                self._answer_permission(action)
            case SetBudget():
                raise ValueError("this run has no budgets to change")

    def _decide(self, action: AnswerApproval) -> None:
        session, decision, checkpoint_number = (
            action.session,
            action.decision,
            action.checkpoint_number,
        )
        edited_text, by = action.edited_text, action.by
        waiting = [
            question
            for question in self.state.questions()
            if isinstance(question, ApprovalQuestion)
            and question.session == session
            and checkpoint_number in (None, question.checkpoint_number)
        ]
        if not waiting:
            raise KeyError(f"no approval is pending for {session!r}")
        self.calls.append(("decide", session, decision, edited_text or ""))
        at = self.state.sessions[session].updated_at
        self.record(ev.ApprovalDecided(at=at, session=session, decision=decision, decided_by=by))

    def _require_approval(self, session: str | None, required: bool) -> None:
        self.calls.append(("require_approval", session or "*", str(required)))
        for name in list(self.state.sessions) if session is None else [session]:
            at = self.state.sessions[name].updated_at
            self.record(ev.ApprovalPolicySet(at=at, session=name, required=required))

    def stop_all(self) -> None:
        self.calls.append(("stop_all",))
        self._stopped.set()

    def stop_for(self, cause: str) -> None:
        self.calls.append(("stop_for", cause))
        self.stop_all()

    def hurry(self) -> None:
        self.calls.append(("hurry",))

    def alive_pids(self) -> list[int]:
        return []

    def transcript_path(self, session: str) -> Path | None:
        return Path(f"/home/dev/.claude/projects/-work-{session}/{session}-0001.jsonl")

    def _say(self, session: str, text: str) -> None:
        cleaned = checked_text(text)
        state = self.state.sessions[session]
        number = self._said[session] = self._said.get(session, 0) + 1
        self.calls.append(("say", session, cleaned))
        self.record(
            ev.MessageQueued(at=state.updated_at, session=session, number=number, text=cleaned)
        )

    def profile_names(self) -> list[str]:
        return list(self.profiles)

    def _add_task(self, name: str, task: str, cwd: Path, profile: str = "") -> None:
        """A taken name, or a profile the run does not have, is refused."""
        if name in self.state.sessions:
            raise ValueError(f"a session is already named {name!r}")
        if not task.strip():
            raise ValueError("the task is empty")
        if profile and profile not in self.profiles:
            raise ValueError(f"this run has no profile {profile!r}")
        self.calls.append(("add_task", name, task, str(cwd), profile))
        at = max((state.updated_at for state in self.state.sessions.values()), default=0.0)
        self.record(ev.SessionAdded(at=at, session=name, task=task, cwd=str(cwd), profile=profile))

    def _fork(self, parent: str, name: str, instruction: str) -> None:
        """A taken name, an unknown parent or an empty instruction is refused."""
        if parent not in self.state.sessions:
            raise ValueError(f"no session is named {parent!r}")
        if name in self.state.sessions:
            raise ValueError(f"a session is already named {name!r}")
        if not instruction.strip():
            raise ValueError("the instruction: the message is empty")
        self.calls.append(("fork", parent, name, instruction))
        at = self.state.sessions[parent].updated_at
        cwd = self.state.sessions[parent].cwd
        self.record(
            ev.SessionAdded(
                at=at,
                session=name,
                task=instruction,
                cwd=cwd,
                forked_from=parent,
                fork_of=f"{parent}-agent-session",
            )
        )

    def _answer_permission(self, action: AnswerPermission) -> None:
        session, request_id = action.session, action.request_id
        answer, reason = action.answer, action.reason
        waiting = {
            question.request_id: question
            for question in self.state.questions()
            if isinstance(question, PermissionQuestion) and question.session == session
        }
        if request_id not in waiting:
            raise KeyError(f"no permission request {request_id!r} is waiting in {session!r}")
        self.calls.append(("permission", session, request_id, answer, reason))
        self.record(
            ev.PermissionDecided(
                at=self.state.sessions[session].updated_at,
                session=session,
                request_id=request_id,
                tool=waiting[request_id].tool,
                answer=answer,
                decided_by=AnsweredBy.OPERATOR,
                reason=reason,
            )
        )
