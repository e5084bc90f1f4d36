"""A session is done when its work is done: background subagents and shells keep it going."""

from __future__ import annotations

import json

from mala_tui.core import events as ev
from mala_tui.core.actions import ApplyMask, EndSession, EndStatus, RetryTurn, SendPrompt
from mala_tui.core.background import BackgroundKind, BackgroundTask, describe_tasks
from mala_tui.core.describe import summary
from mala_tui.core.manager import ContextManager
from mala_tui.core.observations import (
    BackgroundChanged,
    Command,
    IdleTimedOut,
    OperatorCommand,
    SessionIdentified,
    TurnEnded,
    UsageObserved,
)
from mala_tui.core.phases import Phase
from mala_tui.core.resume_plan import TaskRecord, plan_resume
from mala_tui.core.usage import CallUsage
from mala_tui.core.view import SessionState
from mala_tui.prompt_files import load_prompts
from tests.support.factories import default_limits
from tests.support.usage_events import usage as usage_event

PROMPTS = load_prompts()
SUB_A = BackgroundTask(id="a1", kind=BackgroundKind.SUBAGENT, description="look at logs 1-4")
SUB_B = BackgroundTask(id="b2", kind=BackgroundKind.SUBAGENT, description="look at logs 5-8")
SHELL = BackgroundTask(id="bash1", kind=BackgroundKind.SHELL, description="npm test")


def manager() -> ContextManager:
    m = ContextManager(
        name="s1",
        task="Investigate the logs.",
        limits=default_limits(context_limit=100_000),
        prompts=PROMPTS,
    )
    m.start(0.0)
    return m


def finished(at: float = 2.0) -> TurnEnded:
    return TurnEnded(at, subtype="success", is_error=False, terminal_reason="completed")


def usage(at: float, tokens: int = 20_000) -> UsageObserved:
    return UsageObserved(at, CallUsage(input_tokens=5, cache_read_input_tokens=tokens), (), True)


def background(at: float, *tasks: BackgroundTask, reports: int = 0) -> BackgroundChanged:
    return BackgroundChanged(at, tasks, reports)


def test_a_turn_that_ends_with_subagents_running_waits_instead_of_ending() -> None:
    m = manager()
    m.observe(usage(1.0))
    m.observe(background(1.5, SUB_A, SUB_B))
    out = m.observe(finished())
    assert not any(isinstance(action, EndSession) for action in out.actions)
    assert m.end_status is None and m.phase is Phase.RUNNING
    waiting = [event for event in out.events if isinstance(event, ev.BackgroundWaiting)]
    assert len(waiting) == 1 and waiting[0].tasks == (SUB_A, SUB_B)
    assert summary(waiting[0]) == "turn over; waiting for 2 subagents"
    assert m.background.waiting and not m.streaming


def test_the_clis_own_turn_for_a_report_streams_and_the_last_one_ends_the_task() -> None:
    m = manager()
    m.observe(background(1.0, SUB_A))
    m.observe(finished(2.0))
    # The subagent ends during the wait: the CLI lists nothing, then starts a turn itself.
    m.observe(background(3.0))
    assert m.end_status is None  # a changed list alone decides nothing
    m.observe(SessionIdentified(3.1, "sess-1"))
    assert m.streaming and not m.background.waiting
    m.observe(usage(3.2))
    out = m.observe(finished(4.0))
    ended = [action for action in out.actions if isinstance(action, EndSession)]
    assert ended and ended[0].status is EndStatus.DONE
    assert m.end_status is EndStatus.DONE


def test_a_report_that_came_in_during_the_turn_keeps_the_session_for_the_next_turn() -> None:
    m = manager()
    m.observe(background(1.0, reports=1))
    out = m.observe(finished(2.0))
    assert m.end_status is None
    assert [e.reports for e in out.events if isinstance(e, ev.BackgroundWaiting)] == [1]


def test_nothing_in_the_background_ends_the_session_at_the_turns_end() -> None:
    m = manager()
    m.observe(background(1.0, SUB_A))
    m.observe(background(1.5))
    m.observe(finished(2.0))
    assert m.end_status is EndStatus.DONE


def test_a_stop_while_subagents_run_journals_each_one_stopped() -> None:
    m = manager()
    m.observe(background(1.0, SUB_A, SHELL))
    m.observe(finished(2.0))
    out = m.observe(OperatorCommand(3.0, Command.STOP))
    stopped = [event for event in out.events if isinstance(event, ev.BackgroundStopped)]
    assert len(stopped) == 1 and stopped[0].tasks == (SUB_A, SHELL)
    assert "1 subagent and 1 shell" in summary(stopped[0])
    assert any(isinstance(action, EndSession) for action in out.actions)


def test_silence_with_only_reports_left_is_the_end_of_the_task() -> None:
    m = manager()
    m.observe(background(1.0, reports=1))
    m.observe(finished(2.0))
    out = m.observe(IdleTimedOut(200.0, 180.0))
    assert m.end_status is EndStatus.DONE
    assert any(isinstance(action, EndSession) for action in out.actions)


def test_silence_with_subagents_out_is_a_hang_recovered_and_they_are_said_lost() -> None:
    m = manager()
    m.observe(SessionIdentified(0.5, "sess-1"))
    m.observe(usage(1.0))
    m.observe(background(1.5, SUB_A))
    m.observe(finished(2.0))
    out = m.observe(IdleTimedOut(200.0, 180.0))
    assert m.end_status is None
    assert any(isinstance(action, RetryTurn) for action in out.actions)
    stopped = [event for event in out.events if isinstance(event, ev.BackgroundStopped)]
    assert stopped and stopped[0].tasks == (SUB_A,)
    assert not m.background.pending


def test_no_mask_while_background_work_runs_since_it_would_end_with_the_process() -> None:
    m = manager()
    m.observe(usage(1.0, 10_000))
    m.observe(background(1.5, SUB_A))
    out = m.observe(usage(2.0, 60_000))  # well into the soft zone
    assert not any(isinstance(action, ApplyMask) for action in out.actions)
    skipped = [event for event in out.events if isinstance(event, ev.MaskSkipped)]
    assert skipped and "1 subagent" in skipped[0].reason


def test_the_view_says_what_a_session_waits_for_until_the_next_turn() -> None:
    state = SessionState("s1")
    state.apply(ev.BackgroundWaiting(at=1.0, session="s1", tasks=(SUB_A, SHELL), reports=0))
    assert state.waiting_for == "1 subagent and 1 shell"
    next_call = usage_event("s1", 2.0, CallUsage(input_tokens=10))
    state.apply(next_call.model_copy(update={"call_started": True}))
    assert state.waiting_for == ""


def test_describe_tasks_counts_each_kind_and_reports() -> None:
    other = BackgroundTask(id="w", kind=BackgroundKind.of("workflow"), description="")
    unknown = BackgroundTask(id="x", kind=BackgroundKind.of("teleport"), description="")
    assert BackgroundKind.of("local_agent") is BackgroundKind.SUBAGENT
    assert BackgroundKind.of("local_bash") is BackgroundKind.SHELL
    assert describe_tasks((SUB_A, SUB_B, other, unknown), 2) == (
        "2 subagents, 1 workflow, 1 background task and 2 reports"
    )
    assert describe_tasks(()) == "nothing"


def test_background_events_read_back_from_the_journal_unchanged() -> None:
    event = ev.BackgroundWaiting(at=1.0, session="s1", tasks=(SUB_A,), reports=1)
    assert ev.parse_event(json.loads(ev.event_json(event))) == event


def _started_run() -> list[ev.Event]:
    return [
        ev.RunStarted(at=100.0, run_id="r1", sessions=("s1",), mode=ev.RunMode.RUN),
        ev.SessionStarted(
            at=100.0,
            session="s1",
            task="Investigate the logs.",
            cwd="/w",
            window=200_000,
            soft_threshold=0.3,
            hard_threshold=0.8,
            max_restarts=5,
            require_approval=False,
        ),
        ev.AgentSessionNamed(at=101.0, session="s1", session_id="id-1"),
    ]


def _resumed(events: list[ev.Event]) -> tuple[SendPrompt, tuple[ev.Event, ...]]:
    plan = plan_resume(events, [TaskRecord("s1", "Investigate the logs.", "/w")], lambda *_: True)
    (session,) = plan.sessions
    m = ContextManager(
        name="s1", task="Investigate the logs.", limits=default_limits(), prompts=PROMPTS
    )
    m.resume_from(session, 60)
    outcome = m.start(200.0)
    (action,) = outcome.actions
    assert isinstance(action, SendPrompt)
    return action, outcome.events


def test_a_resume_after_a_kill_during_subagent_work_tells_the_agent_what_was_lost() -> None:
    events = _started_run()
    # Killed (-9) while both subagents ran: the journal's last word on them is their list.
    events.append(ev.BackgroundListed(at=102.0, session="s1", tasks=(SUB_A, SUB_B)))
    action, said = _resumed(events)
    assert "lost when the run stopped" in action.text
    assert "look at logs 1-4" in action.text and "look at logs 5-8" in action.text
    stopped = [event for event in said if isinstance(event, ev.BackgroundStopped)]
    assert stopped and stopped[0].tasks == (SUB_A, SUB_B)


def test_a_resume_after_the_subagents_had_reported_says_nothing_of_them() -> None:
    events = _started_run()
    events.append(ev.BackgroundListed(at=102.0, session="s1", tasks=(SUB_A,)))
    events.append(ev.BackgroundListed(at=103.0, session="s1", tasks=()))
    action, said = _resumed(events)
    assert "Background work" not in action.text
    assert not any(isinstance(event, ev.BackgroundStopped) for event in said)


def test_a_stop_that_ended_subagents_is_told_on_resume_too() -> None:
    events = _started_run()
    events.append(ev.BackgroundListed(at=102.0, session="s1", tasks=(SUB_A,)))
    events.append(ev.BackgroundStopped(at=103.0, session="s1", tasks=(SUB_A,), reason="stop"))
    action, _ = _resumed(events)
    assert "look at logs 1-4" in action.text


def test_a_change_in_the_background_list_is_journaled_once() -> None:
    m = manager()
    first = m.observe(background(1.0, SUB_A))
    assert [type(e) for e in first.events] == [ev.BackgroundListed]
    assert m.observe(background(1.5, SUB_A, reports=1)).events == ()


def test_a_result_with_no_call_after_background_work_waits_for_the_turn_that_follows() -> None:
    m = manager()
    m.observe(background(1.0, SUB_A, SUB_B))
    m.observe(finished(2.0))
    m.observe(background(3.0))  # both reported at once
    m.observe(SessionIdentified(3.1, "sess-1"))
    no_call = TurnEnded(
        3.2, subtype="success", is_error=False, terminal_reason="completed", api_calls=0
    )
    m.observe(no_call)
    assert m.end_status is None and m.background.waiting
    m.observe(SessionIdentified(3.3, "sess-1"))
    m.observe(usage(3.4))
    m.observe(finished(4.0))
    assert m.end_status is EndStatus.DONE


def test_a_result_with_no_call_in_a_session_that_never_delegated_ends_it() -> None:
    m = manager()
    no_call = TurnEnded(
        2.0, subtype="success", is_error=False, terminal_reason="completed", api_calls=0
    )
    m.observe(no_call)
    assert m.end_status is EndStatus.DONE
