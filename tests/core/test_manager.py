"""The ContextManager: its transition table walked entry by entry, then each behaviour."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable

import pytest

from mala_tui.core import events as ev
from mala_tui.core.actions import (
    ApplyMask,
    Disconnect,
    EndSession,
    EndStatus,
    Interrupt,
    RequestApproval,
    RetryMode,
    RetryTurn,
    SendPrompt,
    StartFreshSession,
    StopTurn,
)
from mala_tui.core.checkpoint import CheckpointOrigin
from mala_tui.core.fold import digest_lines
from mala_tui.core.manager import ContextManager, Outcome
from mala_tui.core.observations import (
    AgentFailed,
    ApprovalGiven,
    ApprovalPolicyChanged,
    Command,
    CompactionObserved,
    Decision,
    IdleTimedOut,
    MaskConfirmed,
    MaskFailed,
    MessageObserved,
    Observation,
    OperatorCommand,
    RestartCompleted,
    SessionIdentified,
    SessionTimedOut,
    ToolResultSeen,
    TurnEnded,
    UsageObserved,
)
from mala_tui.core.permissions import AnsweredBy
from mala_tui.core.phases import TRANSITIONS, IllegalTransition, ManageMode, Phase, Trigger
from mala_tui.core.prompts import PromptKind
from mala_tui.core.rewrite_state import current_digest
from mala_tui.core.usage import CallUsage, UsageSource
from mala_tui.prompt_files import load_prompts
from tests.core.phase_now import phase_now
from tests.support.factories import call, default_limits, result, with_notice

WINDOW = 100_000
PROMPTS = load_prompts()
CHECKPOINT_ANSWER = "<checkpoint>\n## Goal\nG\n## Completed Work\n- Read src/a.py\n</checkpoint>"


def manager(**limits: object) -> ContextManager:
    # The zone figures below were chosen for these thresholds, not for the shipped defaults.
    settings: dict[str, object] = {
        "context_limit": WINDOW,
        "soft_threshold": 0.7,
        "mask_target_threshold": 0.6,
        "keep_recent_observations": 4,
        "mask_min_batch_tokens": 1000,
    }
    settings.update(limits)
    m = ContextManager(
        name="s1", task="Refactor the parser.", limits=default_limits(**settings), prompts=PROMPTS
    )
    m.start(0.0)
    return m


def usage(tokens: int) -> UsageObserved:
    return UsageObserved(1.0, CallUsage(input_tokens=5, cache_read_input_tokens=tokens - 5))


def done(text: str = "All done.", context_window: int | None = None) -> TurnEnded:
    return TurnEnded(
        2.0,
        subtype="success",
        is_error=False,
        terminal_reason="completed",
        result_text=text,
        context_window=context_window,
    )


INTERRUPTED = TurnEnded(
    2.0, subtype="error_during_execution", is_error=True, terminal_reason="aborted_streaming"
)
HOOK_STOPPED = TurnEnded(
    2.0, subtype="success", is_error=False, terminal_reason="hook_stopped", session_id="sess-1"
)
TOO_LONG = TurnEnded(
    2.0,
    subtype="error_during_execution",
    is_error=True,
    terminal_reason="prompt_too_long",
    result_text="Prompt is too long",
)


def feed_reads(m: ContextManager, count: int = 12, size: int = 16_000) -> None:
    for index in range(count):
        tool_id = f"t{index:03d}"
        m.observe(MessageObserved(0.5, call(tool_id)))
        m.observe(MessageObserved(0.5, result(tool_id, "y" * size)))


def actions(outcome: Outcome) -> list[type]:
    return [type(action) for action in outcome.actions]


# -- getting a manager into each phase -------------------------------------------------------


def in_running(**limits: object) -> ContextManager:
    return manager(**limits)


def in_masking(**limits: object) -> ContextManager:
    m = manager(**limits)
    feed_reads(m)
    m.observe(usage(75_000))
    assert m.phase is Phase.MASKING
    return m


def in_winding_down(**limits: object) -> ContextManager:
    m = manager(**limits)
    feed_reads(m)
    m.observe(usage(92_000))
    m.observe(INTERRUPTED)  # the interrupted turn; the wind-down prompt goes next
    assert m.phase is Phase.WINDING_DOWN
    return m


def in_checkpointing(**limits: object) -> ContextManager:
    m = in_winding_down(**limits)
    m.observe(done("Wrapped up."))
    assert m.phase is Phase.CHECKPOINTING
    return m


def in_awaiting_approval(**limits: object) -> ContextManager:
    m = in_checkpointing(require_approval=True, **limits)
    m.observe(done(CHECKPOINT_ANSWER))
    assert m.phase is Phase.AWAITING_APPROVAL
    return m


def in_restarting(**limits: object) -> ContextManager:
    m = in_checkpointing(**limits)
    m.observe(done(CHECKPOINT_ANSWER))
    assert m.phase is Phase.RESTARTING
    return m


def in_paused(**limits: object) -> ContextManager:
    m = manager(**limits)
    m.observe(OperatorCommand(1.0, Command.PAUSE))
    m.observe(INTERRUPTED)
    return m


def in_done(**limits: object) -> ContextManager:
    m = manager(**limits)
    m.observe(done())
    return m


def in_stopped(**limits: object) -> ContextManager:
    m = manager(**limits)
    m.observe(OperatorCommand(1.0, Command.STOP))
    return m


def in_failed(**limits: object) -> ContextManager:
    m = manager(**limits)
    m.observe(AgentFailed(1.0, "the CLI exited with status 1"))
    return m


REACH: dict[Phase, Callable[..., ContextManager]] = {
    Phase.RUNNING: in_running,
    Phase.MASKING: in_masking,
    Phase.WINDING_DOWN: in_winding_down,
    Phase.CHECKPOINTING: in_checkpointing,
    Phase.AWAITING_APPROVAL: in_awaiting_approval,
    Phase.RESTARTING: in_restarting,
    Phase.PAUSED: in_paused,
    Phase.DONE: in_done,
    Phase.STOPPED: in_stopped,
    Phase.FAILED: in_failed,
}

#: Limits a trigger needs to be the one that fires (approval on, no restarts left...).
TRIGGER_LIMITS: dict[Trigger, dict[str, object]] = {
    Trigger.CHECKPOINT_FOR_APPROVAL: {"require_approval": True},
    Trigger.CHECKPOINT_AT_LIMIT: {"max_restarts": 0},
}


def fire(m: ContextManager, phase: Phase, trigger: Trigger) -> None:
    """Make `trigger` happen the way the runtime would."""
    if trigger is Trigger.SOFT_PRESSURE:
        feed_reads(m)
        m.observe(usage(75_000))
    elif trigger is Trigger.OPERATOR_MASK:
        feed_reads(m)
        m.observe(OperatorCommand(3.0, Command.MASK_NOW))
    elif trigger is Trigger.PROJECTION:
        feed_reads(m)
        m.observe(usage(50_000))
        m.observe(MessageObserved(2.4, call("t900")))
        stop = m.observe(ToolResultSeen(2.5, "t900", "Read", 100_000))
        assert actions(stop) == [StopTurn]
        m.observe(MessageObserved(2.6, result("t900", "z" * 100_000)))
        m.observe(HOOK_STOPPED)
    elif trigger is Trigger.MASK_APPLIED:
        pending = m._state.pending.mask
        assert pending is not None
        m.observe(MaskConfirmed(3.0, pending.plan.ids))
    elif trigger is Trigger.MASK_FAILED:
        m.observe(MaskFailed(3.0, "transcript not found"))
    elif trigger is Trigger.HARD_PRESSURE:
        if phase is Phase.MASKING:
            m.observe(INTERRUPTED)  # decisions wait until the interrupt has landed
        m.observe(usage(95_000))
    elif trigger in (Trigger.OPERATOR_CHECKPOINT, Trigger.RESTART_BY_HAND):
        m.observe(OperatorCommand(3.0, Command.RESTART_NOW))
    elif trigger in (Trigger.WIND_DOWN_DONE, Trigger.TASK_DONE):
        m.observe(done())
    elif trigger in (
        Trigger.CHECKPOINT_FOR_APPROVAL,
        Trigger.CHECKPOINT_ACCEPTED,
        Trigger.CHECKPOINT_AT_LIMIT,
    ):
        if phase is Phase.CHECKPOINTING:
            m.observe(done(CHECKPOINT_ANSWER))
        else:
            feed_reads(m, count=1, size=400)  # a first prompt refused fails: see test_task_size
            m.observe(TOO_LONG)
    elif trigger is Trigger.APPROVED:
        m.observe(ApprovalGiven(3.0, Decision.APPROVE))
    elif trigger is Trigger.DENIED:
        m.observe(ApprovalGiven(3.0, Decision.DENY))
    elif trigger is Trigger.RESTARTED:
        m.observe(RestartCompleted(3.0, "sess-2"))
    elif trigger is Trigger.PAUSE:
        m.observe(OperatorCommand(3.0, Command.PAUSE))
    elif trigger is Trigger.RESUME:
        m.observe(OperatorCommand(3.0, Command.RESUME))
    elif trigger is Trigger.STOP:
        m.observe(OperatorCommand(3.0, Command.STOP))
    elif trigger is Trigger.FAIL:
        m.observe(AgentFailed(3.0, "boom"))
    else:  # pragma: no cover - the coverage test below fails first
        raise AssertionError(f"no way to fire {trigger}")


TABLE = [
    (phase, trigger, target)
    for phase, row in TRANSITIONS.items()
    for trigger, target in row.items()
]


@pytest.mark.parametrize(
    ("phase", "trigger", "target"), TABLE, ids=[f"{p}-{t}" for p, t, _ in TABLE]
)
def test_every_legal_transition(phase: Phase, trigger: Trigger, target: Phase) -> None:
    m = REACH[phase](**TRIGGER_LIMITS.get(trigger, {}))
    assert m.phase is phase
    fire(m, phase, trigger)
    assert m.phase is target


@pytest.mark.parametrize("phase", list(Phase))
def test_every_trigger_outside_the_table_is_illegal(phase: Phase) -> None:
    m = REACH[phase]()
    for trigger in set(Trigger) - set(TRANSITIONS[phase]):
        with pytest.raises(
            IllegalTransition, match=f"{trigger.value} is not allowed while {phase.value}"
        ):
            m._state.check(trigger)


def _state(m: ContextManager) -> tuple[object, ...]:
    return (
        m.phase,
        m.checkpoint,
        m.session_id,
        copy.deepcopy(m.counters),
        copy.deepcopy(m._state.turn),
        m.transcript.messages,
        m.usage,
        m.end_status,
    )


ILLEGAL: list[tuple[Phase, Observation]] = [
    (Phase.RUNNING, ApprovalGiven(9.0, Decision.APPROVE)),
    (Phase.RUNNING, MaskConfirmed(9.0, ("t000",))),
    (Phase.RUNNING, RestartCompleted(9.0, "x")),
    (Phase.RUNNING, OperatorCommand(9.0, Command.RESUME)),
    (Phase.MASKING, OperatorCommand(9.0, Command.PAUSE)),
    (Phase.MASKING, MaskConfirmed(9.0, ("never-planned",))),
    (Phase.WINDING_DOWN, ApprovalGiven(9.0, Decision.DENY)),
    (Phase.AWAITING_APPROVAL, IdleTimedOut(9.0, 60.0)),
    (Phase.AWAITING_APPROVAL, done()),
    (Phase.AWAITING_APPROVAL, ApprovalGiven(9.0, Decision.EDIT, edited_text="   ")),
    (Phase.AWAITING_APPROVAL, ApprovalGiven(9.0, "maybe")),  # type: ignore[arg-type]
    (Phase.PAUSED, IdleTimedOut(9.0, 60.0)),
    (Phase.DONE, done()),
    (Phase.DONE, OperatorCommand(9.0, Command.STOP)),
    (Phase.DONE, OperatorCommand(9.0, Command.RESTART_NOW)),
    (Phase.STOPPED, SessionTimedOut(9.0, 600.0)),
    (Phase.FAILED, AgentFailed(9.0, "again")),
]


@pytest.mark.parametrize(
    ("phase", "observation"), ILLEGAL, ids=[f"{p}-{type(o).__name__}" for p, o in ILLEGAL]
)
def test_illegal_observation_raises_and_changes_nothing(
    phase: Phase, observation: Observation
) -> None:
    m = REACH[phase]()
    before = _state(m)
    with pytest.raises(IllegalTransition):
        m.observe(observation)
    assert _state(m) == before


def test_observe_before_start_is_illegal() -> None:
    m = ContextManager(name="s", task="t", limits=default_limits(), prompts=PROMPTS)
    with pytest.raises(IllegalTransition, match="before start"):
        m.observe(usage(10))


# -- usage -------------------------------------------------------------------------------------


def test_start_sends_the_task_and_the_masking_notice() -> None:
    m = ContextManager(name="s", task="Do it.", limits=default_limits(), prompts=PROMPTS)
    sent = with_notice("Do it.")
    assert m.start(0.0).actions == (SendPrompt(PromptKind.TASK, sent),)
    assert m.transcript.first_prompt() == sent


@pytest.mark.parametrize("masks", [False, True])
def test_no_notice_where_nothing_is_masked_or_the_notice_is_emptied(masks: bool) -> None:
    # Watching only, nothing is masked: nothing to say. An empty notice file says nothing.
    limits = default_limits(manage=ManageMode.FULL if masks else ManageMode.OFF)
    prompts = dataclasses.replace(PROMPTS, masking_notice="\n") if masks else PROMPTS
    m = ContextManager(name="s", task="Do it.", limits=limits, prompts=prompts)
    assert m.start(0.0).actions == (SendPrompt(PromptKind.TASK, "Do it."),)


def test_usage_is_recorded_with_its_source_and_split() -> None:
    m = manager()
    outcome = m.observe(
        UsageObserved(1.0, CallUsage(3, 400, 20_000, 150), ("usage field x clamped",))
    )
    (event,) = outcome.events
    assert isinstance(event, ev.UsageRecorded)
    assert (event.tokens, event.window, event.source) == (20_553, WINDOW, "per_call")
    assert event.cache_read_input_tokens == 20_000 and event.notes == ("usage field x clamped",)
    assert outcome.actions == ()


def test_window_comes_from_the_model_once_reported() -> None:
    m = manager()
    m.observe(MessageObserved(0.5, call("a")))
    m.observe(MessageObserved(0.5, result("a", "x")))
    m2 = in_winding_down()
    m2.observe(done("ok", context_window=1_000_000))
    assert m2.window == 1_000_000 and m2.window_reported


# -- masking -----------------------------------------------------------------------------------


def test_soft_zone_mid_turn_interrupts_masks_oldest_and_resumes() -> None:
    m = manager(keep_recent_observations=4)
    feed_reads(m, count=12)
    outcome = m.observe(usage(75_000))
    (mask,) = outcome.actions
    assert isinstance(mask, ApplyMask)
    assert mask.interrupt_first
    assert mask.resume_prompt is not None and "1 older tool calls" not in mask.resume_prompt
    # Down to the 60% target: 75,000 - 60,000 = 15,000 tokens to free; each result frees ~3,990.
    assert mask.plan.ids == ("t000", "t001", "t002", "t003")
    assert all(
        text.startswith("[Read result masked -- /ws/src/t00")
        for text in mask.plan.placeholders.values()
    )

    m.observe(INTERRUPTED)  # absorbed: the mask goes on
    confirmed = m.observe(MaskConfirmed(3.0, mask.plan.ids))
    applied = next(e for e in confirmed.events if isinstance(e, ev.MaskApplied))
    assert (applied.count, applied.total_masked, applied.tokens_before) == (4, 4, 75_000)
    assert m.phase is Phase.RUNNING and m.streaming
    # The first mask rewrites the whole conversation anyway (no breakpoint is kept yet),
    # so it folds too: the masked steps leave it, one digest line each after the task.
    assert [obs.call.id for obs in m.transcript.exchanges()][:1] == ["t004"]
    assert digest_lines(current_digest(m.transcript.messages)) == tuple(
        f"- Read /ws/src/t00{n}.py, 1 lines, masked" for n in range(4)
    )

    measured = m.observe(usage(59_100))
    (measure,) = [e for e in measured.events if isinstance(e, ev.MaskMeasured)]
    assert (measure.tokens_before, measure.tokens_after, measure.reclaimed) == (
        75_000,
        59_100,
        15_900,
    )


def test_a_mask_is_planned_again_over_the_results_seen_before_the_turn_stopped() -> None:
    # Decided as an API call began; that call read one more file before the turn stopped.
    # Planned as decided, keep_recent=1 would keep two results and pay to rewrite both.
    m = manager(keep_recent_observations=1, mask_target_threshold=0.05)
    feed_reads(m, count=6)
    (first,) = m.observe(usage(75_000)).actions
    assert isinstance(first, ApplyMask) and first.interrupt_first
    assert first.plan.ids == ("t000", "t001", "t002", "t003", "t004")
    m.observe(MessageObserved(2.0, call("t006")))
    m.observe(MessageObserved(2.0, result("t006", "y" * 16_000)))

    (again,) = m.observe(HOOK_STOPPED).actions  # a stop after the tool, not a finished task
    assert isinstance(again, ApplyMask) and not again.interrupt_first
    assert again.plan.ids == (*first.plan.ids, "t005")
    assert again.resume_prompt == PROMPTS.render(PromptKind.MASK_RESUME, masked_count=6)
    assert m.phase is Phase.MASKING
    confirmed = m.observe(MaskConfirmed(3.0, again.plan.ids))
    (applied,) = [e for e in confirmed.events if isinstance(e, ev.MaskApplied)]
    assert applied.count == 6 and phase_now(m) is Phase.RUNNING and m.streaming


def test_masking_continues_in_batches_while_in_the_soft_zone() -> None:
    m = manager(keep_recent_observations=2)
    feed_reads(m, count=12)
    first = m.observe(usage(75_000)).actions[0]
    assert isinstance(first, ApplyMask)
    m.observe(INTERRUPTED)
    m.observe(MaskConfirmed(3.0, first.plan.ids))
    second = m.observe(usage(74_000)).actions[0]  # measured, still soft: next batch
    assert isinstance(second, ApplyMask)
    assert set(first.plan.ids).isdisjoint(second.plan.ids)


def test_mask_skipped_is_said_once_per_reason() -> None:
    m = manager(mask_min_batch_tokens=50_000)
    feed_reads(m, count=6)
    first = m.observe(usage(75_000))
    again = m.observe(usage(76_000))
    assert [type(e) for e in first.events] == [ev.UsageRecorded, ev.MaskSkipped]
    assert [type(e) for e in again.events] == [ev.UsageRecorded]
    assert m.phase is Phase.RUNNING


def test_mask_failures_twice_stop_masking_for_the_session() -> None:
    m = manager()
    feed_reads(m)
    for _ in range(2):
        m.observe(usage(75_000))
        m.observe(INTERRUPTED)
        m.observe(MaskFailed(3.0, "transcript missing"))
    outcome = m.observe(usage(75_500))
    assert outcome.actions == ()
    assert any(isinstance(e, ev.MaskSkipped) and "failed twice" in e.reason for e in outcome.events)


def test_operator_mask_now_masks_everything_but_the_recent() -> None:
    m = manager(keep_recent_observations=3)
    feed_reads(m, count=5, size=4000)
    (mask,) = m.observe(OperatorCommand(1.0, Command.MASK_NOW)).actions
    assert isinstance(mask, ApplyMask)
    assert mask.plan.ids == ("t000", "t001")


def test_task_finishing_while_the_mask_interrupt_lands_ends_the_session() -> None:
    m = in_masking()
    outcome = m.observe(done())
    assert m.phase is Phase.DONE
    assert outcome.actions == (EndSession(EndStatus.DONE, "the agent finished its task"),)


def test_hard_pressure_during_masking_winds_down_instead() -> None:
    m = manager()
    feed_reads(m)
    m.observe(usage(75_000))
    m.observe(INTERRUPTED)  # interrupt landed, mask not yet confirmed
    outcome = m.observe(usage(91_000))
    assert m.phase is Phase.WINDING_DOWN
    assert isinstance(outcome.actions[0], SendPrompt)


# -- wind-down, checkpoint, approval, restart -------------------------------------------------


def test_hard_zone_winds_down_then_asks_for_a_checkpoint_then_restarts() -> None:
    m = manager(carryover_turns=2)
    feed_reads(m, count=4, size=400)
    wind = m.observe(usage(91_000))
    (send,) = wind.actions
    assert (
        isinstance(send, SendPrompt) and send.kind is PromptKind.WIND_DOWN and send.interrupt_first
    )
    assert "91% full" in send.text and "9000 tokens remain" in send.text

    assert m.observe(INTERRUPTED).actions == ()
    asked = m.observe(done("Saved notes."))
    (request,) = asked.actions
    assert isinstance(request, SendPrompt) and request.kind is PromptKind.CHECKPOINT_REQUEST
    assert not request.interrupt_first

    restart = m.observe(done(CHECKPOINT_ANSWER))
    (fresh,) = restart.actions
    assert isinstance(fresh, StartFreshSession)
    assert fresh.continuation_number == 1
    assert fresh.checkpoint.origin is CheckpointOrigin.TAGGED
    assert "## Completed Work\n- Read src/a.py" in fresh.prompt
    assert "continuation 1" in fresh.prompt
    # The last complete cycles are carried over, never a call without its result.
    assert "Tool call: Read /ws/src/t003.py" in fresh.prompt
    # ...the work, not the wind-down and checkpoint exchange that followed it.
    carried = fresh.prompt.split("for orientation:")[1]
    assert "WRAP UP" not in carried and "Saved notes." not in carried
    saved = [e for e in restart.events if isinstance(e, ev.CheckpointSaved)]
    assert saved[0].number == 1 and saved[0].origin == "tagged"
    restarted = [e for e in restart.events if isinstance(e, ev.Restarted)]
    assert restarted[0].reason == "hard threshold: 91000 of 100000 tokens (91%)"
    assert restarted[0].approved_by == "auto" and restarted[0].tokens_before == 91_000

    m.observe(RestartCompleted(5.0, "sess-2"))
    assert m.phase is Phase.RUNNING
    assert m.continuation_count == 1
    assert m.usage.source is UsageSource.ESTIMATE  # the old session's figures are gone
    assert m.usage.tokens < 2000
    assert m.transcript.first_prompt() == fresh.prompt
    assert m.session_id == "sess-2"


def test_untagged_checkpoint_answer_is_used_whole() -> None:
    m = in_checkpointing()
    (fresh,) = m.observe(done("Goal: parser. Done: reading.")).actions
    assert isinstance(fresh, StartFreshSession)
    assert fresh.checkpoint.origin is CheckpointOrigin.UNTAGGED


def test_empty_checkpoint_answer_falls_back_to_a_harness_checkpoint() -> None:
    m = in_checkpointing()
    (fresh,) = m.observe(done("   ")).actions
    assert isinstance(fresh, StartFreshSession)
    assert fresh.checkpoint.harness_made
    assert "(included in the checkpoint above)" in fresh.prompt


def test_approval_is_requested_then_approved() -> None:
    m = in_checkpointing(require_approval=True)
    asked = m.observe(done(CHECKPOINT_ANSWER))
    (request,) = asked.actions
    assert isinstance(request, RequestApproval) and request.checkpoint_number == 1
    approved = m.observe(ApprovalGiven(4.0, Decision.APPROVE, decided_by=AnsweredBy.OPERATOR))
    assert isinstance(approved.actions[0], StartFreshSession)
    decided = next(e for e in approved.events if isinstance(e, ev.ApprovalDecided))
    assert (decided.decision, decided.decided_by) == ("approve", "operator")
    assert next(e for e in approved.events if isinstance(e, ev.Restarted)).approved_by == "operator"


def test_denied_stops_with_the_checkpoint_kept_and_restartable_by_hand() -> None:
    m = in_awaiting_approval()
    outcome = m.observe(ApprovalGiven(4.0, Decision.DENY))
    assert outcome.actions == (EndSession(EndStatus.DENIED, "restart denied by operator"),)
    assert m.phase is Phase.STOPPED and m.checkpoint is not None
    by_hand = m.observe(OperatorCommand(5.0, Command.RESTART_NOW))
    (fresh,) = by_hand.actions
    assert isinstance(fresh, StartFreshSession) and "- Read src/a.py" in fresh.prompt


def test_edited_checkpoint_is_the_one_restarted_with() -> None:
    m = in_awaiting_approval()
    outcome = m.observe(ApprovalGiven(4.0, Decision.EDIT, edited_text="## Goal\nOnly this."))
    (fresh,) = outcome.actions
    assert isinstance(fresh, StartFreshSession)
    assert fresh.checkpoint.origin is CheckpointOrigin.EDITED
    assert (
        "## Goal\nOnly this." in fresh.prompt
        and "src/a.py" not in fresh.prompt.split("last complete")[0]
    )
    saved = [e for e in outcome.events if isinstance(e, ev.CheckpointSaved)]
    assert [(s.number, s.origin) for s in saved] == [(2, "edited")]


def test_approval_can_be_switched_on_at_run_time() -> None:
    m = in_checkpointing()
    switched = m.observe(ApprovalPolicyChanged(3.0, required=True))
    assert switched.events == (ev.ApprovalPolicySet(at=3.0, session="s1", required=True),)
    assert m.observe(ApprovalPolicyChanged(3.5, required=True)).events == ()
    assert isinstance(m.observe(done(CHECKPOINT_ANSWER)).actions[0], RequestApproval)


def test_max_restarts_stops_with_the_checkpoint_kept() -> None:
    m = in_checkpointing(max_restarts=0)
    outcome = m.observe(done(CHECKPOINT_ANSWER))
    assert outcome.actions == (
        EndSession(EndStatus.STOPPED, "max restarts (0) reached; checkpoint kept"),
    )
    assert m.checkpoint is not None and m.phase is Phase.STOPPED
    assert [type(e) for e in outcome.events] == [
        ev.CheckpointSaved,
        ev.PhaseChanged,
        ev.SessionEnded,
    ]


def test_restarts_count_up_to_the_limit() -> None:
    m = manager(max_restarts=2)
    for expected in (1, 2):
        feed_reads(m, count=3, size=400)
        m.observe(usage(95_000))
        m.observe(INTERRUPTED)
        m.observe(done("ok"))
        m.observe(done(CHECKPOINT_ANSWER))
        m.observe(RestartCompleted(1.0, f"s{expected}"))
        assert m.continuation_count == expected
    feed_reads(m, count=1, size=400)  # the fresh session works before it fills up
    m.observe(usage(95_000))
    m.observe(INTERRUPTED)
    m.observe(done("ok"))
    m.observe(done(CHECKPOINT_ANSWER))
    assert m.phase is Phase.STOPPED


# -- emergencies ---------------------------------------------------------------------------------


def test_prompt_too_long_restarts_from_a_harness_checkpoint() -> None:
    m = manager()
    feed_reads(m, count=3, size=400)
    outcome = m.observe(TOO_LONG)
    (fresh,) = outcome.actions
    assert isinstance(fresh, StartFreshSession)
    assert fresh.checkpoint.harness_made
    assert "## Goal\nRefactor the parser." in fresh.prompt
    assert "- Read /ws/src/t002.py" in fresh.prompt
    assert next(e for e in outcome.events if isinstance(e, ev.Restarted)).reason.startswith(
        "emergency:"
    )


def test_usage_past_the_window_mid_turn_interrupts_and_restarts() -> None:
    m = manager()
    outcome = m.observe(usage(WINDOW + 10))
    assert actions(outcome) == [Interrupt, StartFreshSession]
    assert m.phase is Phase.RESTARTING
    assert m.observe(INTERRUPTED).actions == ()


def test_prompt_too_long_while_winding_down_uses_a_harness_checkpoint() -> None:
    m = in_winding_down()
    outcome = m.observe(TOO_LONG)
    assert (
        isinstance(outcome.actions[0], StartFreshSession)
        and outcome.actions[0].checkpoint.harness_made
    )


# -- idle timeouts: resume, fresh, fail fast, give up -----------------------------------------


def test_idle_timeout_retries_and_recovers() -> None:
    m = manager()
    m.observe(SessionIdentified(0.1, "sess-1"))
    outcome = m.observe(IdleTimedOut(5.0, 180.0))
    assert outcome.actions == (
        Disconnect(10.0),
        RetryTurn(
            RetryMode.RESUME,
            0.0,
            PROMPTS.render(PromptKind.IDLE_RESUME, session_name="s1"),
            "sess-1",
        ),
    )
    (event,) = outcome.events
    assert isinstance(event, ev.IdleTimeoutSeen) and (event.retry, event.decision) == (1, "resume")
    m.observe(done())
    assert m.phase is Phase.DONE


def test_idle_timeout_gives_up_after_max_retries() -> None:
    m = manager(max_idle_retries=2)
    m.observe(SessionIdentified(0.1, "sess-1"))
    m.observe(IdleTimedOut(5.0, 180.0))
    m.observe(IdleTimedOut(6.0, 180.0))
    final = m.observe(IdleTimedOut(7.0, 180.0))
    assert final.actions == (
        Disconnect(10.0),
        EndSession(EndStatus.FAILED, "idle for 180 s: max retries (2) exceeded"),
    )
    assert m.phase is Phase.FAILED


def test_idle_timeout_always_disconnects_first_even_on_final_failure() -> None:
    m = manager(max_idle_retries=0)
    outcome = m.observe(IdleTimedOut(5.0, 30.0))
    assert isinstance(outcome.actions[0], Disconnect)
    assert isinstance(outcome.actions[-1], EndSession)


def test_idle_timeout_first_turn_no_side_effects_starts_fresh_with_the_original_prompt() -> None:
    m = manager()
    outcome = m.observe(IdleTimedOut(5.0, 30.0))
    assert outcome.actions == (
        Disconnect(10.0),
        RetryTurn(RetryMode.FRESH, 0.0, with_notice("Refactor the parser."), None),
    )


def test_idle_timeout_first_turn_with_tool_calls_fails_fast() -> None:
    m = manager()
    m.observe(MessageObserved(1.0, call("a", "Bash", command="rm -rf build")))
    outcome = m.observe(IdleTimedOut(5.0, 30.0))
    assert outcome.actions == (
        Disconnect(10.0),
        EndSession(
            EndStatus.FAILED,
            "idle for 30 s: cannot retry: 1 tool calls occurred without session context",
        ),
    )
    assert (
        isinstance(outcome.events[0], ev.IdleTimeoutSeen)
        and outcome.events[0].decision == "fail_fast"
    )


def test_idle_timeout_is_illegal_when_no_query_is_in_flight() -> None:
    # Seed 002's "non-query phases skip the query block": waiting for a person, or paused,
    # nothing is streaming, so there is nothing to time out and nothing is re-sent.
    for m in (in_awaiting_approval(), in_paused()):
        with pytest.raises(IllegalTransition):
            m.observe(IdleTimedOut(9.0, 60.0))


@pytest.mark.parametrize(
    ("retries", "expected"),
    [(2, [0.0, 5.0]), (3, [0.0, 5.0, 15.0]), (5, [0.0, 5.0, 15.0, 15.0, 15.0])],
)
def test_idle_timeout_backoff_delays(retries: int, expected: list[float]) -> None:
    m = manager(max_idle_retries=retries)
    m.observe(SessionIdentified(0.1, "sess-1"))
    delays = []
    for attempt in range(retries):
        outcome = m.observe(IdleTimedOut(float(attempt), 60.0))
        delays += [a.delay for a in outcome.actions if isinstance(a, RetryTurn)]
    assert delays == expected


def test_a_completed_turn_resets_the_retry_count() -> None:
    m = manager(max_idle_retries=1)
    m.observe(SessionIdentified(0.1, "sess-1"))
    m.observe(IdleTimedOut(1.0, 60.0))
    m.observe(usage(80_000))  # soft zone, nothing to mask: stays running
    m2 = in_checkpointing(max_idle_retries=1)
    m2.observe(SessionIdentified(0.1, "sess-1"))
    m2.observe(IdleTimedOut(1.0, 60.0))
    assert m2.counters.idle_retries == 1
    m2.observe(done(CHECKPOINT_ANSWER))
    assert m2.counters.idle_retries == 0


def test_api_error_result_is_retried_then_fails_with_the_reason() -> None:
    m = manager(max_idle_retries=1)
    m.observe(SessionIdentified(0.1, "sess-1"))
    error = TurnEnded(
        2.0,
        subtype="error_during_execution",
        is_error=True,
        terminal_reason="api_error",
        api_error_status=529,
        result_text="Overloaded",
    )
    first = m.observe(error)
    assert actions(first) == [Disconnect, RetryTurn]
    seen = first.events[0]
    assert isinstance(seen, ev.ApiErrorSeen) and (seen.status, seen.decision) == (529, "resume")
    second = m.observe(error)
    assert actions(second) == [Disconnect, EndSession]
    assert m.phase is Phase.FAILED


def test_non_retryable_error_result_fails_at_once() -> None:
    m = manager()
    outcome = m.observe(
        TurnEnded(2.0, subtype="error_max_turns", is_error=True, terminal_reason="max_turns")
    )
    assert outcome.actions == (EndSession(EndStatus.FAILED, "the turn ended with max_turns: "),)


def test_session_timeout_fails_the_session() -> None:
    m = manager()
    m.observe(SessionTimedOut(9.0, 3600.0))
    assert m.phase is Phase.FAILED and m.end_status is EndStatus.FAILED


# -- the operator ---------------------------------------------------------------------------


def test_pause_interrupts_and_resume_sends_the_resume_prompt() -> None:
    m = manager()
    paused = m.observe(OperatorCommand(1.0, Command.PAUSE))
    assert paused.actions == (Interrupt(),)
    assert m.observe(INTERRUPTED).actions == ()
    resumed = m.observe(OperatorCommand(2.0, Command.RESUME))
    (send,) = resumed.actions
    assert isinstance(send, SendPrompt) and send.kind is PromptKind.OPERATOR_RESUME
    assert m.phase is Phase.RUNNING and m.streaming


def test_checkpoint_and_restart_now() -> None:
    m = manager()
    outcome = m.observe(OperatorCommand(1.0, Command.RESTART_NOW))
    (send,) = outcome.actions
    assert (
        isinstance(send, SendPrompt)
        and send.kind is PromptKind.CHECKPOINT_REQUEST
        and send.interrupt_first
    )
    m.observe(INTERRUPTED)
    restart = m.observe(done(CHECKPOINT_ANSWER))
    assert (
        next(e for e in restart.events if isinstance(e, ev.Restarted)).reason
        == "asked by the operator"
    )


def test_stop_ends_the_session() -> None:
    m = manager()
    outcome = m.observe(OperatorCommand(1.0, Command.STOP))
    assert outcome.actions == (EndSession(EndStatus.STOPPED, "stopped by the operator"),)
    assert isinstance(outcome.events[-1], ev.SessionEnded)


def test_restart_by_hand_after_failure_builds_a_harness_checkpoint() -> None:
    m = manager()
    feed_reads(m, count=2, size=400)
    m.observe(AgentFailed(1.0, "crashed"))
    outcome = m.observe(OperatorCommand(2.0, Command.RESTART_NOW))
    (fresh,) = outcome.actions
    assert isinstance(fresh, StartFreshSession) and fresh.checkpoint.harness_made
    assert m.phase is Phase.RESTARTING and m.end_status is None


def test_compaction_is_recorded() -> None:
    m = manager()
    outcome = m.observe(CompactionObserved(1.0, "auto", blocked=True, pre_tokens=150_000))
    assert outcome.events == (
        ev.CompactionSeen(at=1.0, session="s1", trigger="auto", blocked=True, pre_tokens=150_000),
    )
    assert m.counters.compactions == 1


def test_messages_become_short_log_events() -> None:
    m = manager()
    outcome = m.observe(MessageObserved(1.0, result("a", "z" * 5000)))
    (event,) = outcome.events
    assert isinstance(event, ev.MessageRecorded)
    assert (event.kind, event.size, len(event.excerpt)) == ("tool_result", 5000, 300)
