"""A fake live source: a fixed, made-up run the app can watch with no agent running.

`FakeLiveSource` has the shape of the real supervisor the app needs
(`ui.source.LiveSource`) but runs nothing: it plays a made-up run through the
run's own recorder (into the view, to the listeners) and records every command,
answer and setting the app sends instead of acting on it; what the real run would
journal for an answer or a setting (the decision, the new setting) it records too.
Screenshots, snapshot tests and the UI tests use it. Every time is an offset from
one fixed instant and nothing is random, so the screens it produces are the same on
every machine. `sample_events()` is that run, with a session in each state worth
showing; `sample_state()` is it read back as `mala-tui show` would.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.checkpoint import CheckpointOrigin
from mala_tui.core.observations import Decision
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
from mala_tui.core.phases import Phase, Trigger
from mala_tui.core.questions import ApprovalQuestion, PermissionQuestion
from mala_tui.core.retry import RetryDecision
from mala_tui.core.transcript import Role
from mala_tui.core.usage import CallUsage, UsageSource
from mala_tui.core.view import RunState, SessionSnapshot
from mala_tui.runtime.run.landings import Landings
from mala_tui.runtime.run.profiles import Profile
from mala_tui.runtime.run.recorder import RunRecorder

T0 = 1_750_000_000.0
"""The sample run's start, seconds since the epoch."""
WINDOW = 200_000

CHECKPOINT_1 = """\
## Goal
Move the settings screen to the new form widgets without changing what is saved.

## Completed Work
- Read src/settings/form.py and src/settings/store.py
- Replaced the three text inputs with `FormField` (tests pass)

## Remaining Tasks
- Port the colour picker
- Port the keyboard shortcuts table

## Key Decisions
- Keep the store's JSON format: older versions read it.
"""

CHECKPOINT_2 = """\
## Goal
Move the settings screen to the new form widgets without changing what is saved.

## Completed Work
- Read src/settings/form.py and src/settings/store.py
- Replaced the three text inputs with `FormField` (tests pass)
- Ported the colour picker; see [link=https://example.com]docs[/link] for the palette

## Remaining Tasks
- Port the keyboard shortcuts table

## Do Not Redo
- The colour picker port (commit 4f2a9c1)

## Key Decisions
- Keep the store's JSON format: older versions read it.
"""


@dataclass
class _Session:
    name: str
    task: str
    max_restarts: int = 3
    require_approval: bool = False
    events: list[ev.Event] = field(default_factory=list)
    phase: Phase = Phase.RUNNING

    def add(self, event: ev.Event) -> None:
        self.events.append(event)

    def start(self, at: float) -> None:
        self.add(
            ev.SessionStarted(
                at=T0 + at,
                session=self.name,
                task=self.task,
                cwd=f"/work/{self.name}",
                model="claude-sonnet-4-5",
                window=WINDOW,
                soft_threshold=0.4,
                hard_threshold=0.8,
                max_restarts=self.max_restarts,
                require_approval=self.require_approval,
            )
        )

    def usage(self, at: float, pressure: float, source: UsageSource = UsageSource.PER_CALL) -> None:
        tokens = round(pressure * WINDOW)
        # A per-call figure carries its split, as the API reports it: most of the prompt
        # read from the cache, a little written to it, a short answer (the cost estimate).
        split = (
            CallUsage(
                input_tokens=3,
                cache_creation_input_tokens=tokens - 3 - int(tokens * 0.9) - 300,
                cache_read_input_tokens=int(tokens * 0.9),
                output_tokens=300,
            )
            if source is UsageSource.PER_CALL and tokens > 3_000
            else CallUsage()
        )
        self.add(
            ev.UsageRecorded(
                at=T0 + at,
                session=self.name,
                tokens=tokens,
                window=WINDOW,
                source=source,
                input_tokens=split.input_tokens,
                cache_creation_input_tokens=split.cache_creation_input_tokens,
                cache_read_input_tokens=split.cache_read_input_tokens,
                output_tokens=split.output_tokens,
            )
        )

    def climb(
        self,
        start: float,
        end: float,
        low: float,
        high: float,
        *,
        steps: int,
        source: UsageSource = UsageSource.PER_CALL,
    ) -> None:
        for step in range(steps):
            fraction = step / max(1, steps - 1)
            self.usage(start + (end - start) * fraction, low + (high - low) * fraction, source)

    def subagent(
        self, at: float, agent_id: str, kind: str, description: str, *, background: bool = True
    ) -> None:
        self.add(
            ev.SubagentStarted(
                at=T0 + at,
                session=self.name,
                agent_id=agent_id,
                agent_type=kind,
                description=description,
                background=background,
                model="claude-sonnet-4-5",
            )
        )

    def subagent_calls(
        self, start: float, end: float, agent_id: str, low: float, high: float, *, steps: int
    ) -> None:
        """A subagent's calls, its window growing from `low` to `high` of the session's."""
        for step in range(steps):
            fraction = step / max(1, steps - 1)
            tokens = round((low + (high - low) * fraction) * WINDOW)
            self.add(
                ev.SubagentCall(
                    at=T0 + start + (end - start) * fraction,
                    session=self.name,
                    agent_id=agent_id,
                    input_tokens=3,
                    cache_creation_input_tokens=tokens - 3 - int(tokens * 0.85) - 400,
                    cache_read_input_tokens=int(tokens * 0.85),
                    output_tokens=400,
                    model="claude-sonnet-4-5",
                    tool_uses=1 + step % 2,
                )
            )

    def phase_to(self, at: float, after: Phase, trigger: Trigger) -> None:
        self.add(
            ev.PhaseChanged(
                at=T0 + at, session=self.name, before=self.phase, after=after, trigger=trigger
            )
        )
        self.phase = after

    def mask(self, at: float, count: int, before: float, total: int, reclaimed: int) -> None:
        placeholders = tuple(
            f"[Read result masked -- src/module_{total - count + index:02d}.py, "
            f"{120 + 7 * index} lines]"
            for index in range(count)
        )
        self.add(
            ev.MaskApplied(
                at=T0 + at,
                session=self.name,
                count=count,
                tool_use_ids=tuple(f"toolu_{index:03d}" for index in range(count)),
                placeholders=placeholders,
                estimated_tokens=reclaimed + 1_500,
                tokens_before=round(before * WINDOW),
                total_masked=total,
            )
        )
        self.add(
            ev.MaskMeasured(
                at=T0 + at + 4,
                session=self.name,
                tokens_before=round(before * WINDOW),
                tokens_after=round(before * WINDOW) - reclaimed,
                reclaimed=reclaimed,
            )
        )

    def message(
        self, at: float, kind: ev.MessageKind, tool: str, excerpt: str, *, error: bool = False
    ) -> None:
        role = Role.ASSISTANT if kind == "tool_call" else Role.USER
        self.add(
            ev.MessageRecorded(
                at=T0 + at,
                session=self.name,
                role=role,
                kind=kind,
                tool=tool,
                excerpt=excerpt,
                size=len(excerpt) * 40,
                is_error=error,
            )
        )


def _normal() -> _Session:
    s = _Session("parser-fix", "Fix the off-by-one in the tokenizer's line counting (issue 42).")
    s.start(0)
    s.message(5, "tool_call", "Read", "src/tokenizer.py")
    s.message(6, "tool_result", "Read", "def count_lines(text): ...")
    s.climb(10, 600, 0.05, 0.33, steps=24)
    s.message(610, "tool_call", "Bash", "pytest tests/test_tokenizer.py -q")
    s.message(640, "tool_result", "Bash", "1 failed, 41 passed", error=True)
    return s


def _soft() -> _Session:
    s = _Session("api-docs", "Write reference docs for every public endpoint in api/routes.")
    s.start(0)
    s.climb(10, 300, 0.08, 0.43, steps=16, source=UsageSource.CUMULATIVE)
    s.phase_to(305, Phase.MASKING, Trigger.SOFT_PRESSURE)
    s.mask(310, 9, 0.43, 9, 54_000)
    s.phase_to(316, Phase.RUNNING, Trigger.MASK_APPLIED)
    s.climb(320, 640, 0.16, 0.46, steps=14, source=UsageSource.CUMULATIVE)
    # It delegates: one subagent mapped the routes and is done, two document them still,
    # the second compacted once by Claude Code.
    s.subagent(20, "a3f9e01c", "Explore", "Map the routes under api/routes", background=False)
    s.subagent_calls(24, 110, "a3f9e01c", 0.02, 0.17, steps=6)
    s.add(
        ev.SubagentEnded(
            at=T0 + 115, session=s.name, agent_id="a3f9e01c", how=ev.SubagentEnd.COMPLETED
        )
    )
    s.subagent(330, "b71c2d4e", "general-purpose", "Document the orders endpoints")
    s.subagent_calls(334, 630, "b71c2d4e", 0.03, 0.31, steps=10)
    s.subagent(332, "c0d5e6f7", "general-purpose", "Document the users and auth endpoints")
    s.subagent_calls(336, 470, "c0d5e6f7", 0.04, 0.88, steps=8)
    s.add(
        ev.SubagentCompacted(
            at=T0 + 480,
            session=s.name,
            agent_id="c0d5e6f7",
            pre_tokens=176_000,
            post_tokens=31_000,
        )
    )
    s.subagent_calls(490, 636, "c0d5e6f7", 0.17, 0.44, steps=6)
    return s


def _hard() -> _Session:
    s = _Session("migrate-db", "Migrate the orders tables to the new schema and backfill them.")
    s.start(0)
    s.climb(10, 300, 0.1, 0.42, steps=14)
    s.phase_to(305, Phase.MASKING, Trigger.SOFT_PRESSURE)
    s.mask(306, 4, 0.42, 4, 6_000)
    s.phase_to(312, Phase.RUNNING, Trigger.MASK_APPLIED)
    s.climb(320, 630, 0.39, 0.82, steps=12)
    s.phase_to(632, Phase.WINDING_DOWN, Trigger.HARD_PRESSURE)
    s.add(ev.WindDownSent(at=T0 + 632, session=s.name, tokens=164_000, window=WINDOW))
    return s


def _awaiting() -> _Session:
    s = _Session(
        "settings-form", "Move the settings screen to the new form widgets.", require_approval=True
    )
    s.start(0)
    s.climb(10, 200, 0.05, 0.41, steps=10)
    s.phase_to(201, Phase.MASKING, Trigger.SOFT_PRESSURE)
    s.mask(202, 5, 0.41, 5, 12_000)
    s.phase_to(208, Phase.RUNNING, Trigger.MASK_APPLIED)
    s.climb(210, 300, 0.35, 0.81, steps=6)
    s.phase_to(301, Phase.WINDING_DOWN, Trigger.HARD_PRESSURE)
    s.phase_to(320, Phase.CHECKPOINTING, Trigger.WIND_DOWN_DONE)
    s.add(
        ev.CheckpointSaved(
            at=T0 + 330,
            session=s.name,
            number=1,
            origin=CheckpointOrigin.TAGGED,
            text=CHECKPOINT_1,
            path="/runs/sample/settings-form-1.md",
        )
    )
    s.phase_to(331, Phase.AWAITING_APPROVAL, Trigger.CHECKPOINT_FOR_APPROVAL)
    s.add(
        ev.ApprovalRequested(
            at=T0 + 331, session=s.name, checkpoint_number=1, reason="hard threshold reached (81%)"
        )
    )
    s.add(
        ev.ApprovalDecided(
            at=T0 + 350, session=s.name, decision=Decision.APPROVE, decided_by=AnsweredBy.OPERATOR
        )
    )
    s.phase_to(350, Phase.RESTARTING, Trigger.APPROVED)
    s.add(
        ev.Restarted(
            at=T0 + 352,
            session=s.name,
            continuation=1,
            reason="hard threshold reached (81%)",
            tokens_before=162_000,
            checkpoint_number=1,
            approved_by=AnsweredBy.OPERATOR,
        )
    )
    s.phase_to(353, Phase.RUNNING, Trigger.RESTARTED)
    s.climb(360, 600, 0.12, 0.82, steps=12)
    s.phase_to(601, Phase.WINDING_DOWN, Trigger.HARD_PRESSURE)
    s.phase_to(615, Phase.CHECKPOINTING, Trigger.WIND_DOWN_DONE)
    s.add(
        ev.CheckpointSaved(
            at=T0 + 625,
            session=s.name,
            number=2,
            origin=CheckpointOrigin.TAGGED,
            text=CHECKPOINT_2,
            path="/runs/sample/settings-form-2.md",
        )
    )
    s.phase_to(626, Phase.AWAITING_APPROVAL, Trigger.CHECKPOINT_FOR_APPROVAL)
    s.add(
        ev.ApprovalRequested(
            at=T0 + 626, session=s.name, checkpoint_number=2, reason="hard threshold reached (82%)"
        )
    )
    return s


def _done() -> _Session:
    s = _Session("flaky-tests", "Find why test_upload is flaky and fix it.")
    s.start(0)
    s.climb(10, 250, 0.04, 0.31, steps=12)
    s.phase_to(260, Phase.DONE, Trigger.TASK_DONE)
    s.add(
        ev.SessionEnded(at=T0 + 260, session=s.name, status=EndStatus.DONE, reason="task finished")
    )
    return s


def _failed() -> _Session:
    s = _Session(
        "release-notes", "Draft the release notes from the merged pull requests.", max_restarts=2
    )
    s.start(0)
    s.climb(10, 120, 0.03, 0.22, steps=6, source=UsageSource.ESTIMATE)
    s.add(
        ev.IdleTimeoutSeen(
            at=T0 + 180,
            session=s.name,
            idle_seconds=120,
            retry=1,
            decision=RetryDecision.RESUME,
            delay=0,
        )
    )
    s.add(
        ev.IdleTimeoutSeen(
            at=T0 + 320,
            session=s.name,
            idle_seconds=120,
            retry=2,
            decision=RetryDecision.RESUME,
            delay=5,
        )
    )
    s.add(
        ev.ErrorRecorded(
            at=T0 + 330,
            session=s.name,
            where=ev.Where.AGENT,
            message="FileNotFoundError: [Errno 2] No such file or directory: 'CHANGES.md'",
        )
    )
    s.phase_to(331, Phase.FAILED, Trigger.FAIL)
    s.add(
        ev.SessionEnded(
            at=T0 + 331,
            session=s.name,
            status=EndStatus.FAILED,
            reason="idle timeout: max retries (2) exceeded",
        )
    )
    return s


def _starting() -> _Session:
    s = _Session("new-endpoint", "Add a /health endpoint with a test.")
    s.start(630)
    return s


def sample_events() -> list[ev.Event]:
    """The sample run's events, in time order: seven sessions, one in each state worth showing."""
    sessions = [_normal(), _soft(), _hard(), _awaiting(), _done(), _failed(), _starting()]
    events: list[ev.Event] = [
        ev.RunStarted(
            at=T0,
            run_id="20250615-sample",
            sessions=tuple(s.name for s in sessions),
            mode=ev.RunMode.SAMPLE,
        )
    ]
    merged = sorted((e for s in sessions for e in s.events), key=lambda e: e.at)
    return events + merged


def sample_permission_request() -> ev.PermissionRequested:
    """parser-fix asking to run a command outside its allowed tools (not in the sample run:
    the screenshot and the tests of the permission screen add it)."""
    command = "uv run pytest -q tests/tokenizer --snapshot-update && git diff --stat"
    return ev.PermissionRequested(
        at=T0 + 700,
        session="parser-fix",
        request_id="1",
        tool="Bash",
        summary=command,
        input_text=(
            "{\n"
            f'  "command": "{command}",\n'
            '  "description": "Regenerate the tokenizer snapshots and show what changed"\n'
            "}"
        ),
    )


def sample_state() -> RunState:
    """The sample run as `mala-tui show` would read it back."""
    return RunState().apply_all(sample_events())


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
