"""Resume planning: how each session of an interrupted run continues, from its events alone."""

from __future__ import annotations

from collections.abc import Sequence

from mala_tui.core import events as ev
from mala_tui.core.actions import (
    EndSession,
    EndStatus,
    RequestApproval,
    SendPrompt,
    StartFreshSession,
)
from mala_tui.core.checkpoint import CheckpointOrigin
from mala_tui.core.describe import gap, summary
from mala_tui.core.manager import ContextManager
from mala_tui.core.observations import ApprovalGiven, Decision, MessageForAgent
from mala_tui.core.operator_messages import Delivery
from mala_tui.core.permissions import AnsweredBy
from mala_tui.core.phases import ManageMode, Phase
from mala_tui.core.prompts import PromptKind
from mala_tui.core.resume_plan import ResumeFrom, ResumePlan, TaskRecord, plan_resume
from mala_tui.core.run_view import RunState
from mala_tui.core.usage import UsageSource
from mala_tui.core.window import WindowSource
from mala_tui.prompt_files import load_prompts
from tests.support.factories import default_limits, with_notice

PROMPTS = load_prompts()
TASKS = (TaskRecord("a", "task a", "/w/a"), TaskRecord("b", "task b", "/w/b"))


def started(*names: str, at: float = 100.0) -> list[ev.Event]:
    events: list[ev.Event] = [
        ev.RunStarted(at=at, run_id="r1", sessions=names, mode=ev.RunMode.RUN)
    ]
    for name in names:
        events.append(
            ev.SessionStarted(
                at=at,
                session=name,
                task=f"task {name}",
                cwd=f"/w/{name}",
                window=200_000,
                soft_threshold=0.3,
                hard_threshold=0.8,
                max_restarts=5,
                require_approval=False,
            )
        )
    return events


def named(session: str, session_id: str, at: float = 110.0) -> ev.AgentSessionNamed:
    return ev.AgentSessionNamed(at=at, session=session, session_id=session_id)


def checkpoint(session: str, number: int, at: float = 120.0) -> ev.CheckpointSaved:
    return ev.CheckpointSaved(
        at=at,
        session=session,
        number=number,
        origin=CheckpointOrigin.TAGGED,
        text=f"cp {number} of {session}",
    )


def restarted(session: str, continuation: int, at: float = 130.0) -> ev.Restarted:
    return ev.Restarted(
        at=at,
        session=session,
        continuation=continuation,
        reason="hard",
        tokens_before=160_000,
        checkpoint_number=continuation,
        approved_by=AnsweredBy.AUTO,
    )


def ended(session: str, status: EndStatus, reason: str = "", at: float = 140.0) -> ev.SessionEnded:
    return ev.SessionEnded(at=at, session=session, status=status, reason=reason)


def plan(events: Sequence[ev.Event], gone: frozenset[str] = frozenset()) -> ResumePlan:
    """The plan (run.json's tasks: those of the sessions the run named) when every
    transcript is there but those of the agent ids in `gone`."""
    names = {n for e in events if isinstance(e, ev.RunStarted) for n in e.sessions}
    tasks = [t for t in TASKS if t.name in names]
    return plan_resume(events, tasks, lambda _name, session_id: session_id not in gone)


def how(result: ResumePlan) -> dict[str, ResumeFrom | None]:
    return {s.name: s.how for s in result.sessions}


def test_an_unfinished_session_resumes_by_its_id_and_a_finished_one_is_left_alone() -> None:
    events = [*started("a", "b"), named("a", "id-a"), named("b", "id-b")]
    events.append(ended("b", EndStatus.DONE, "the agent finished its task"))
    result = plan(events)
    assert how(result) == {"a": ResumeFrom.SESSION_ID, "b": None}
    a, b = result.sessions
    assert a.session_id == "id-a" and a.task == "task a" and a.cwd == "/w/a"
    assert "resumes agent session id-a" in a.reason
    assert b.ended is EndStatus.DONE and b.reason == "ended done: the agent finished its task"
    assert [s.name for s in result.resuming] == ["a"]
    assert not result.ended and result.last_event_at == 140.0


def test_denied_failed_and_individually_stopped_sessions_are_left_alone() -> None:
    events = [*started("a", "b")]
    events += [ended("a", EndStatus.DENIED, "restart denied"), ended("b", EndStatus.FAILED, "x")]
    assert how(plan(events)) == {"a": None, "b": None}
    stopped = [*started("a"), ended("a", EndStatus.STOPPED, "stopped by the operator")]
    stopped.append(ev.RunEnded(at=150, run_id="r1", ok=False, reason=""))
    result = plan(stopped)
    assert result.sessions[0].how is None and result.ended


def test_a_session_whose_work_was_landed_or_discarded_is_not_resumed() -> None:
    events = [*started("a", "b", "c"), named("a", "id-a"), named("b", "id-b"), named("c", "id-c")]
    events.append(ev.RunEnded(at=150, run_id="r1", ok=False, reason="SIGTERM"))
    events += [
        ev.WorktreeLanded(
            at=160,
            session="a",
            branch="mala/r1/a",
            into="main",
            how="fast-forward",
            commit="c" * 40,
            commits=1,
        ),
        ev.WorktreeDiscarded(at=161, session="b", branch="mala/r1/b", path="/w/b"),
    ]
    result = plan(events)
    assert how(result) == {"a": None, "b": None, "c": ResumeFrom.SESSION_ID}
    assert [s.reason for s in result.sessions[:2]] == [
        "its work was landed",
        "its worktree was discarded",
    ]


def test_a_session_stopped_because_the_whole_run_stopped_resumes() -> None:
    events = [*started("a", "b"), named("a", "id-a")]
    events.append(ended("a", EndStatus.STOPPED, "SIGTERM"))
    events.append(ended("b", EndStatus.STOPPED, "SIGTERM (it was queued, never started)"))
    events.append(ev.RunEnded(at=150, run_id="r1", ok=False, reason="SIGTERM"))
    result = plan(events)
    assert how(result) == {"a": ResumeFrom.SESSION_ID, "b": ResumeFrom.TASK}
    assert result.sessions[0].reason.startswith("stopped with the run")


def test_a_gone_transcript_falls_back_to_the_latest_checkpoint_then_to_the_task() -> None:
    events = [*started("a", "b"), named("a", "id-a1"), checkpoint("a", 1), restarted("a", 1)]
    events += [named("a", "id-a2", at=131), checkpoint("a", 2, at=132), restarted("a", 2, at=133)]
    events += [named("a", "id-a3", at=134), named("b", "id-b")]
    result = plan(events, gone=frozenset({"id-a3", "id-b"}))
    assert how(result) == {"a": ResumeFrom.CHECKPOINT, "b": ResumeFrom.TASK}
    a, b = result.sessions
    assert a.checkpoint is not None and a.checkpoint.text == "cp 2 of a"
    assert a.checkpoint.origin is CheckpointOrigin.TAGGED
    assert a.checkpoint_number == 2 and a.carried.restarts == 2 and a.carried.checkpoints == 2
    assert "transcript of agent session id-a3 is gone" in a.reason
    assert "no checkpoint: from its task" in b.reason


def test_an_id_named_before_the_latest_restart_is_stale_so_the_checkpoint_is_used() -> None:
    # Killed between the restart and the fresh session naming itself: the id left is the
    # wound-down session's, whose window is full; the checkpoint is where work goes on.
    events = [*started("a"), named("a", "old"), checkpoint("a", 1), restarted("a", 1)]
    (a,) = plan(events).sessions
    assert a.how is ResumeFrom.CHECKPOINT and a.checkpoint_number == 1
    assert "latest checkpoint is newer than its agent session" in a.reason


def test_a_checkpoint_awaiting_approval_is_resumed_from() -> None:
    events = [*started("a"), named("a", "id-a"), checkpoint("a", 1)]
    events.append(ev.ApprovalRequested(at=121, session="a", checkpoint_number=1, reason="hard"))
    (a,) = plan(events).sessions
    assert a.how is ResumeFrom.CHECKPOINT


def test_a_queued_session_that_never_started_resumes_from_its_task_in_run_json() -> None:
    events: list[ev.Event] = [
        ev.RunStarted(at=1, run_id="r1", sessions=("a", "b"), mode=ev.RunMode.RUN)
    ]
    result = plan(events)
    assert how(result) == {"a": ResumeFrom.TASK, "b": ResumeFrom.TASK}
    assert result.sessions[1].task == "task b" and result.sessions[1].cwd == "/w/b"


def test_a_session_whose_task_is_nowhere_is_not_resumed() -> None:
    events: list[ev.Event] = [
        ev.RunStarted(at=1, run_id="r1", sessions=("zz",), mode=ev.RunMode.RUN)
    ]
    result = plan_resume(events, (), lambda *_: True)
    assert result.sessions[0].how is None
    assert "task is not in the journal" in result.sessions[0].reason


def test_counts_carry_over_masks_and_measured_density() -> None:
    events = [*started("a"), named("a", "id-a")]
    usage = ev.UsageRecorded(
        at=111,
        session="a",
        tokens=50_000,
        window=200_000,
        source=UsageSource.PER_CALL,
        density=1.37,
        density_measured=True,
    )
    events.append(usage)
    events.append(usage.model_copy(update={"density": 1.1, "density_measured": False}))
    events.append(
        ev.MaskApplied(
            at=112,
            session="a",
            count=3,
            tool_use_ids=("t1", "t2", "t3"),
            placeholders=("p",) * 3,
            estimated_tokens=9000,
            tokens_before=60_000,
            total_masked=7,
        )
    )
    carried = plan(events).sessions[0].carried
    assert (carried.masked_total, carried.density) == (7, 1.37)


def test_a_session_resumed_once_and_interrupted_again_resumes_again() -> None:
    events = [*started("a"), named("a", "id-a"), ended("a", EndStatus.STOPPED, "SIGHUP")]
    events.append(ev.RunEnded(at=150, run_id="r1", ok=False, reason="SIGHUP"))
    events.append(
        ev.RunResumed(at=500, run_id="r1", gap_seconds=350, resumed={"a": "session_id"}, pid=1)
    )
    events.append(named("a", "id-a", at=501))
    result = plan(events)
    assert how(result) == {"a": ResumeFrom.SESSION_ID}
    assert not result.ended and result.run_id == "r1"
    assert result.gap(560.5) == 59.5


def test_the_manager_resumes_by_id_with_the_interrupted_prompt_and_its_counts() -> None:
    events = [*started("a"), named("a", "id-a"), checkpoint("a", 3), restarted("a", 2)]
    events.append(named("a", "id-b", at=140))
    (session,) = plan(events).sessions
    manager = ContextManager(name="a", task="task a", limits=default_limits(), prompts=PROMPTS)
    manager.resume_from(session, 754)
    outcome = manager.start(1000)
    (action,) = outcome.actions
    assert isinstance(action, SendPrompt) and action.kind is PromptKind.RUN_RESUME
    assert "interrupted" in action.text and "12 min 34 s" in action.text
    assert manager.session_id == "id-b"
    assert manager.continuation_count == 2 and manager.counters.checkpoints == 3
    assert outcome.events == ()


def test_the_manager_resumes_from_a_checkpoint_as_the_next_restart() -> None:
    events = [*started("a"), named("a", "id-a"), checkpoint("a", 1), restarted("a", 1)]
    events.append(checkpoint("a", 2, at=150))
    (session,) = plan(events).sessions
    manager = ContextManager(name="a", task="task a", limits=default_limits(), prompts=PROMPTS)
    manager.resume_from(session, 30)
    outcome = manager.start(1000)
    (action,) = outcome.actions
    assert isinstance(action, SendPrompt) and action.kind is PromptKind.CONTINUATION
    assert "cp 2 of a" in action.text and "CONTINUING FROM A PREVIOUS SESSION" in action.text
    assert manager.session_id is None  # a fresh agent session
    (restart,) = outcome.events
    assert isinstance(restart, ev.Restarted)
    assert (restart.continuation, restart.checkpoint_number, restart.trigger) == (2, 2, "resume")
    assert manager.counters.checkpoints == 2  # the next checkpoint is #3


def test_the_manager_resumes_from_the_task_when_nothing_else_is_left() -> None:
    (_, session) = plan([*started("a", "b")], gone=frozenset()).sessions
    manager = ContextManager(name="b", task="task b", limits=default_limits(), prompts=PROMPTS)
    manager.resume_from(session, 5)
    (action,) = manager.start(1000).actions
    assert isinstance(action, SendPrompt) and action.kind is PromptKind.TASK
    assert action.text == with_notice("task b")


def test_the_view_shows_the_resumed_session_as_going_on_with_its_history() -> None:
    events = [*started("a"), named("a", "id-a")]
    events.append(
        ev.UsageRecorded(
            at=111,
            session="a",
            tokens=50_000,
            window=200_000,
            source=UsageSource.PER_CALL,
            input_tokens=50_000,
        )
    )
    events += [ended("a", EndStatus.STOPPED, "SIGTERM")]
    events.append(ev.RunEnded(at=150, run_id="r1", ok=False, reason="SIGTERM"))
    resumed = ev.RunResumed(
        at=450, run_id="r1", gap_seconds=300, resumed={"a": "session_id"}, pid=7
    )
    state = RunState().apply_all(events)
    calls_before = state.sessions["a"].spend.calls
    state.apply_all([resumed, *started("a", at=451)[1:]])
    a = state.sessions["a"]
    assert a.status is None and a.phase is Phase.RUNNING and state.ended_at is None
    assert a.spend.calls == calls_before == 1  # what it spent before the gap still counts
    assert state.resumed == [resumed] and resumed in a.log
    assert summary(resumed) == "run r1 resumed after 5 min 0 s: a from its session_id"


def test_gaps_read_as_a_person_says_them() -> None:
    assert [gap(s) for s in (0.4, 42, 425, 3 * 3600 + 12 * 60 + 5)] == [
        "0 s",
        "42 s",
        "7 min 5 s",
        "3 h 12 min",
    ]


def test_what_the_operator_said_that_never_reached_the_agent_goes_with_the_resume() -> None:
    events = [*started("a", "b"), named("a", "id-a")]
    events.append(ev.SessionAdded(at=105, session="c", task="task c", cwd="/w/c"))
    for number, text in ((1, "use tabs"), (2, "also run the linter"), (3, "and the tests")):
        events.append(ev.MessageQueued(at=110 + number, session="a", number=number, text=text))
    events.append(ev.MessageDelivered(at=114, session="a", numbers=(1,), how=Delivery.CLEAN_POINT))
    result = plan(events)
    a, _, c = result.sessions
    assert (c.name, c.task, c.cwd, c.how) == ("c", "task c", "/w/c", ResumeFrom.TASK)
    assert [m.number for m in a.carried.messages] == [2, 3] and a.carried.messages_said == 3
    manager = ContextManager(name="a", task="task a", limits=default_limits(), prompts=PROMPTS)
    manager.resume_from(a, 60)
    outcome = manager.start(1000)
    (action,) = outcome.actions
    assert isinstance(action, SendPrompt) and action.kind is PromptKind.RUN_RESUME
    assert "interrupted" in action.text
    assert "also run the linter" in action.text and "and the tests" in action.text
    (delivered,) = outcome.events
    assert isinstance(delivered, ev.MessageDelivered)
    assert (delivered.numbers, delivered.how) == ((2, 3), Delivery.RESUME)
    # The next message is number 4: the journal never has two messages numbered alike.
    said = manager.observe(MessageForAgent(1001, "one more"))
    assert [e.number for e in said.events if isinstance(e, ev.MessageQueued)] == [4]


def test_a_management_mode_switched_by_the_operator_stays_switched() -> None:
    events = [*started("a"), named("a", "id-a")]
    events.append(ev.ManageModeSet(at=111, session="a", mode=ManageMode.OFF))
    (a,) = plan(events).sessions
    assert a.carried.manage is ManageMode.OFF
    manager = ContextManager(name="a", task="task a", limits=default_limits(), prompts=PROMPTS)
    before = manager.manage
    manager.resume_from(a, 1)
    assert (before, manager.manage) == (ManageMode.FULL, ManageMode.OFF)


def awaiting_events() -> list[ev.Event]:
    events = [*started("a"), named("a", "id-a"), checkpoint("a", 1), restarted("a", 1)]
    events += [named("a", "id-b", at=131), checkpoint("a", 2, at=140)]
    events.append(
        ev.ApprovalRequested(at=141, session="a", checkpoint_number=2, reason="hard threshold")
    )
    return events


def test_a_restart_that_waited_for_approval_is_asked_again_and_restarts_on_the_answer() -> None:
    (a,) = plan(awaiting_events()).sessions
    assert a.awaiting_approval == "hard threshold" and a.how is ResumeFrom.CHECKPOINT
    assert a.reason.endswith("a fresh session from checkpoint #2, once its restart is approved")
    limits = default_limits(require_approval=True)
    manager = ContextManager(name="a", task="task a", limits=limits, prompts=PROMPTS)
    manager.resume_from(a, 60)
    asked = manager.start(1000)
    (request,) = asked.actions
    assert isinstance(request, RequestApproval) and request.checkpoint_number == 2
    assert request.checkpoint.text == "cp 2 of a"
    assert [type(e) for e in asked.events] == [ev.PhaseChanged, ev.ApprovalRequested]
    assert manager.phase is Phase.AWAITING_APPROVAL and not manager.streaming
    approved = manager.observe(ApprovalGiven(1010, Decision.APPROVE, None, AnsweredBy.OPERATOR))
    (fresh,) = approved.actions
    assert isinstance(fresh, StartFreshSession) and fresh.continuation_number == 2
    assert "cp 2 of a" in fresh.prompt
    (restart,) = [e for e in approved.events if isinstance(e, ev.Restarted)]
    assert (restart.continuation, restart.checkpoint_number) == (2, 2)
    assert restart.approved_by == "operator"


def test_a_denied_answer_ends_it_and_without_approval_required_it_just_restarts() -> None:
    (a,) = plan(awaiting_events()).sessions
    limits = default_limits(require_approval=True)
    manager = ContextManager(name="a", task="task a", limits=limits, prompts=PROMPTS)
    manager.resume_from(a, 60)
    manager.start(1000)
    denied = manager.observe(ApprovalGiven(1010, Decision.DENY, None, AnsweredBy.OPERATOR))
    assert denied.actions == (EndSession(EndStatus.DENIED, "restart denied by operator"),)
    auto = ContextManager(name="a", task="task a", limits=default_limits(), prompts=PROMPTS)
    auto.resume_from(a, 60)
    (action,) = auto.start(1000).actions
    assert isinstance(action, SendPrompt) and action.kind is PromptKind.CONTINUATION


def test_a_window_learnt_from_a_refusal_is_kept_by_the_resume() -> None:
    events = [*started("a"), named("a", "id-a")]
    events.append(
        ev.WindowLearned(
            at=130,
            session="a",
            window=70_500,
            accepted=60_000,
            refused=81_000,
            believed=200_000,
            believed_source=WindowSource.CLI,
        )
    )
    (session,) = plan(events).sessions
    assert session.carried.refusal == (60_000, 81_000)
    manager = ContextManager(name="a", task="task a", limits=default_limits(), prompts=PROMPTS)
    manager.resume_from(session, 60)
    manager.start(1000)
    assert manager.window == 70_500 and manager.window_source is WindowSource.REFUSAL
    # Its bounds came back whole: a later refusal below the estimate still lowers it.
    assert manager.refusal is not None and manager.refusal.refusing(65_000).window == 62_500
    # A session that never met a refusal resumes with the window it was told.
    (plain,) = plan([*started("a"), named("a", "id-a")]).sessions
    assert plain.carried.refusal is None
