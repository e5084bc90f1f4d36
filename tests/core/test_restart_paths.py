"""Every way into a fresh session carries the agent's work and none of mala-tui's prompts.

Each test first has the session receive every kind of prompt mala-tui sends
(an idle resume, a mask resume, an operator resume, then the wind-down and the
checkpoint request where the path has them), then takes one restart path and
reads the fresh session's first prompt.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import replace

import pytest

from mala_tui.core import events as ev
from mala_tui.core.actions import ApplyMask, RequestApproval, StartFreshSession
from mala_tui.core.manager import ContextManager, Outcome
from mala_tui.core.observations import (
    AgentFailed,
    ApprovalGiven,
    ApprovalPolicyChanged,
    Command,
    CompactionObserved,
    Decision,
    IdleTimedOut,
    ManageModeChanged,
    MaskConfirmed,
    MaskFailed,
    MessageForAgent,
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
from mala_tui.core.phases import IllegalTransition, ManageMode, Phase
from mala_tui.core.prompts import PromptKind
from mala_tui.core.usage import CallUsage
from mala_tui.prompt_files import load_prompts
from tests.support.factories import call, default_limits, result, say

PROMPTS = load_prompts()
WINDOW = 100_000

#: A line of each prompt mala-tui sends, as rendered: none may reach a fresh session's
#: carried-over steps (the continuation prompt's own text aside).
HARNESS_LINES = (
    "CONTEXT WINDOW NEARLY FULL",
    "CHECKPOINT REQUIRED",
    "The connection to you was lost",
    "replaced by short placeholders",
    "You were paused by the person supervising you",
    "Your turn was paused for a moment",
)
CHECKPOINT = "<checkpoint>\n## Goal\nG\n## Completed Work\n- Read src/t001.py\n</checkpoint>"


def ended(text: str = "", reason: str = "completed", error: bool = False) -> TurnEnded:
    return TurnEnded(
        2.0,
        subtype="error_during_execution" if error else "success",
        is_error=error,
        terminal_reason=reason,
        result_text=text,
        session_id="sess-1",
    )


def usage(tokens: int) -> UsageObserved:
    return UsageObserved(1.0, CallUsage(input_tokens=tokens))


def worked(**limits: object) -> ContextManager:
    """A session that did some work and heard every resume note mala-tui sends."""
    settings: dict[str, object] = {
        "context_limit": WINDOW,
        "soft_threshold": 0.5,
        "hard_threshold": 0.8,
        "keep_recent_observations": 1,
        "mask_min_batch_tokens": 100,
    }
    settings.update(limits)
    m = ContextManager(
        name="s",
        task="Fix the parser.",
        limits=default_limits(**settings),
        prompts=PROMPTS,
    )
    m.start(0.0)
    m.observe(SessionIdentified(0.1, "sess-1"))
    m.observe(usage(10_000))
    for index in range(3):
        tool_id = f"t{index:03d}"
        m.observe(MessageObserved(0.5, call(tool_id)))
        m.observe(MessageObserved(0.6, result(tool_id, f"def f{index}(): pass\n" * 400)))
    m.observe(IdleTimedOut(1.0, 200.0))  # resumed with the idle note
    m.observe(MessageObserved(1.1, say("Back at it: the parser needs a new rule.")))
    outcome = m.observe(OperatorCommand(1.2, Command.MASK_NOW))
    (mask,) = outcome.actions
    assert isinstance(mask, ApplyMask)
    m.observe(ended(reason="hook_stopped"))  # the turn stopped for the mask
    m.observe(MaskConfirmed(1.3, mask.plan.ids))  # resumed with the mask note
    m.observe(MessageObserved(1.4, call("t100", "Edit", file_path="/ws/src/parser.py")))
    m.observe(MessageObserved(1.5, result("t100", "The file was edited.")))
    m.observe(OperatorCommand(1.6, Command.PAUSE))
    m.observe(ended(reason="aborted_streaming", error=True))
    m.observe(OperatorCommand(1.7, Command.RESUME))  # the operator's resume note
    m.observe(MessageObserved(1.8, call("t101", "Bash", command="pytest -q")))
    m.observe(MessageObserved(1.9, result("t101", "3 passed")))
    m.observe(MessageObserved(2.0, say("Tests pass after the parser change.")))
    return m


def wound_down(**limits: object) -> ContextManager:
    m = worked(**limits)
    m.observe(usage(85_000))  # hard: the wind-down, after the turn stops
    m.observe(ended(reason="aborted_streaming", error=True))
    m.observe(MessageObserved(2.2, say("Wrapping up now as asked.")))
    m.observe(ended("Saved notes."))  # the checkpoint request goes next
    assert m.phase is Phase.CHECKPOINTING
    return m


def fresh_prompt(outcome: Outcome) -> str:
    fresh = [a for a in outcome.actions if isinstance(a, StartFreshSession)]
    assert fresh, outcome
    return fresh[0].prompt


def carried_part(prompt: str) -> str:
    """The continuation prompt past its header, without the masking notice that ends it
    (mala-tui's own text, as the header is)."""
    notice = PROMPTS.render(PromptKind.MASKING_NOTICE)
    assert prompt.endswith(notice), "a fresh session is told its output may be masked"
    return prompt.split("CONTINUING FROM A PREVIOUS SESSION", 1)[1].removesuffix(notice)


def normal() -> str:
    return fresh_prompt(wound_down().observe(ended(CHECKPOINT)))


def emergency() -> str:
    m = worked()
    return fresh_prompt(m.observe(ended("Prompt is too long", "prompt_too_long", error=True)))


def emergency_after_wind_down() -> str:
    m = wound_down()
    return fresh_prompt(m.observe(ended("Prompt is too long", "prompt_too_long", error=True)))


def by_hand() -> str:
    m = worked()
    m.observe(OperatorCommand(3.0, Command.STOP))
    return fresh_prompt(m.observe(OperatorCommand(3.1, Command.RESTART_NOW)))


def after_denial() -> str:
    m = wound_down(require_approval=True)
    asked = m.observe(ended(CHECKPOINT))
    assert any(isinstance(a, RequestApproval) for a in asked.actions)
    m.observe(ApprovalGiven(3.0, Decision.DENY))
    assert m.phase is Phase.STOPPED
    return fresh_prompt(m.observe(OperatorCommand(3.1, Command.RESTART_NOW)))


def after_edit() -> str:
    m = wound_down(require_approval=True)
    m.observe(ended(CHECKPOINT))
    edited = "## Goal\nFix the parser.\n## Remaining Tasks\n- Add the rule for lists."
    return fresh_prompt(m.observe(ApprovalGiven(3.0, Decision.EDIT, edited_text=edited)))


def operator_checkpoint() -> str:
    m = worked()
    m.observe(OperatorCommand(3.0, Command.RESTART_NOW))
    m.observe(ended(reason="aborted_streaming", error=True))
    return fresh_prompt(m.observe(ended(CHECKPOINT)))


PATHS: dict[str, Callable[[], str]] = {
    "normal": normal,
    "emergency": emergency,
    "emergency after the wind-down": emergency_after_wind_down,
    "by hand": by_hand,
    "after a denial": after_denial,
    "after an edit": after_edit,
    "operator checkpoint": operator_checkpoint,
}


@pytest.mark.parametrize("path", PATHS)
def test_the_fresh_session_gets_the_work_and_none_of_the_prompts(path: str) -> None:
    carried = carried_part(PATHS[path]())
    for line in HARNESS_LINES:
        assert line not in carried, f"{path}: {line!r} carried over"
    # The agent's own steps are there.
    assert "pytest -q" in carried
    assert "Tests pass after the parser change." in carried


# -- management modes -------------------------------------------------------------------


def test_off_watches_and_never_acts() -> None:
    m = worked(manage=ManageMode.OFF)
    for tokens in (60_000, 90_000, 120_000):
        outcome = m.observe(usage(tokens))
        assert outcome.actions == ()
        assert not [e for e in outcome.events if isinstance(e, ev.PhaseChanged | ev.MaskSkipped)]
    assert m.observe(ToolResultSeen(3.0, "t200", "Read", 900_000)).actions == ()
    assert m.phase is Phase.RUNNING


def test_mask_mode_masks_past_hard_and_never_restarts() -> None:
    m = worked(manage=ManageMode.MASK)
    m.observe(MessageObserved(2.5, call("t300")))
    m.observe(MessageObserved(2.6, result("t300", "y" * 80_000)))
    m.observe(MessageObserved(2.7, call("t301")))
    m.observe(MessageObserved(2.8, result("t301", "z" * 8_000)))
    outcome = m.observe(usage(85_000))
    assert [type(a) for a in outcome.actions] == [ApplyMask]
    assert m.phase is Phase.MASKING
    m.observe(ended(reason="hook_stopped"))
    # The window is gone for good: mask mode fails the session rather than restart it.
    m2 = worked(manage=ManageMode.MASK)
    failed = m2.observe(ended("Prompt is too long", "prompt_too_long", error=True))
    assert m2.phase is Phase.FAILED
    ends = [e for e in failed.events if isinstance(e, ev.SessionEnded)]
    assert "does not restart" in ends[0].reason


def test_the_mode_can_change_during_a_session() -> None:
    m = worked()
    changed = m.observe(ManageModeChanged(3.0, ManageMode.OFF))
    assert [type(e) for e in changed.events] == [ev.ManageModeSet]
    assert m.observe(usage(95_000)).actions == ()
    assert m.observe(ManageModeChanged(3.1, ManageMode.OFF)).events == ()


# -- decisions without per-call usage ---------------------------------------------------


def test_without_per_call_usage_the_estimate_decides_and_one_warning_says_so() -> None:
    m = ContextManager(
        name="s",
        task="Summarise the logs.",
        # Every result kept: nothing can be masked, so the estimate must wind it down.
        limits=default_limits(context_limit=20_000, keep_recent_observations=50),
        prompts=PROMPTS,
    )
    m.start(0.0)
    warnings: list[ev.WarningRecorded] = []
    wound = False
    for index in range(12):
        for message in (call(f"t{index}"), result(f"t{index}", "log line 42\n" * 1_000)):
            outcome = m.observe(MessageObserved(1.0, message))
            warnings += [e for e in outcome.events if isinstance(e, ev.WarningRecorded)]
            wound = wound or any(isinstance(e, ev.WindDownSent) for e in outcome.events)
        if wound:
            break
    assert len(warnings) == 1 and "no per-call usage" in warnings[0].message
    assert wound and m.phase is Phase.WINDING_DOWN


# -- triggers as they were ---------------------------------------------------------------


def test_a_mask_by_hand_is_journaled_as_the_operators() -> None:
    m = worked()
    outcome = m.observe(OperatorCommand(3.0, Command.MASK_NOW))
    if not outcome.actions:
        pytest.fail("nothing to mask by hand")
    (mask,) = outcome.actions
    assert isinstance(mask, ApplyMask)
    m.observe(ended(reason="hook_stopped"))
    confirmed = m.observe(MaskConfirmed(3.2, mask.plan.ids))
    (applied,) = [e for e in confirmed.events if isinstance(e, ev.MaskApplied)]
    assert applied.trigger == "operator"


def test_an_emergency_restart_is_journaled_as_one() -> None:
    m = worked()
    outcome = m.observe(ended("Prompt is too long", "prompt_too_long", error=True))
    (restart,) = [e for e in outcome.events if isinstance(e, ev.Restarted)]
    assert restart.trigger == "emergency"


# -- an illegal observation changes nothing, in every phase --------------------------------


def reach(phase: Phase) -> ContextManager:
    m = worked(require_approval=phase is Phase.AWAITING_APPROVAL)
    match phase:
        case Phase.RUNNING:
            pass
        case Phase.MASKING:
            m.observe(OperatorCommand(3.0, Command.MASK_NOW))
        case Phase.WINDING_DOWN:
            m.observe(usage(85_000))
        case Phase.CHECKPOINTING | Phase.AWAITING_APPROVAL | Phase.RESTARTING:
            m.observe(usage(85_000))
            m.observe(ended(reason="aborted_streaming", error=True))
            m.observe(ended("Saved."))
            if phase is not Phase.CHECKPOINTING:
                m.observe(ended(CHECKPOINT))
        case Phase.PAUSED:
            m.observe(OperatorCommand(3.0, Command.PAUSE))
        case Phase.DONE:
            m.observe(ended("Done."))
        case Phase.STOPPED:
            m.observe(OperatorCommand(3.0, Command.STOP))
        case Phase.FAILED:
            m.observe(AgentFailed(3.0, "gone"))
    assert m.phase is phase, (m.phase, phase)
    return m


OBSERVATIONS: list[Observation] = [
    usage(50_000),
    MessageObserved(4.0, call("t900")),
    ToolResultSeen(4.0, "t900", "Read", 10),
    SessionIdentified(4.0, "sess-9"),
    ended("Done."),
    ended("Prompt is too long", "prompt_too_long", error=True),
    # A refusal with Claude Code's report of a window smaller than believed: both the
    # report and what the refusal teaches must wait until the turn's end is legal.
    replace(ended("Prompt is too long", "prompt_too_long", error=True), context_window=150_000),
    ended(reason="api_error", error=True),
    MaskConfirmed(4.0, ("t000",)),
    MaskConfirmed(4.0, ("never-planned",)),
    MaskFailed(4.0, "no transcript"),
    ApprovalGiven(4.0, Decision.APPROVE),
    ApprovalGiven(4.0, Decision.DENY),
    ApprovalGiven(4.0, Decision.EDIT, edited_text="  "),
    ApprovalGiven(4.0, "perhaps"),  # type: ignore[arg-type]
    RestartCompleted(4.0, "sess-2"),
    IdleTimedOut(4.0, 300.0),
    SessionTimedOut(4.0, 3600.0),
    AgentFailed(4.0, "crashed"),
    CompactionObserved(4.0, "auto", True),
    *(OperatorCommand(4.0, command) for command in Command),
    ApprovalPolicyChanged(4.0, True),
    ManageModeChanged(4.0, ManageMode.MASK),
    MessageForAgent(4.0, "Use the new parser API."),
    MessageForAgent(4.0, "   "),
]


@pytest.mark.parametrize("phase", list(Phase))
def test_an_illegal_observation_leaves_the_manager_as_it_was(phase: Phase) -> None:
    refused = 0
    for observation in OBSERVATIONS:
        m = reach(phase)
        before = pickle.dumps(m)
        try:
            m.observe(observation)
        except IllegalTransition:
            refused += 1
            assert pickle.dumps(m) == before, f"{phase}: {observation} changed the manager"
    assert refused > 0 or phase is Phase.RUNNING
