"""The manager's parts, each tested alone on a ManagerState, and the rules that compose them.

The ContextManager owns one ManagerState and hands it to its parts; a part is an
object given the state and the few parts it calls, so it can be made and driven
here without a manager around it.
"""

from __future__ import annotations

import ast
import copy
import importlib
import inspect
import pkgutil
from enum import Enum
from pathlib import Path
from typing import Any, Protocol

import pytest
from pydantic import BaseModel

import mala_tui.core
from mala_tui.core.actions import (
    ApplyMask,
    EndSession,
    EndStatus,
    Interrupt,
    RequestApproval,
    RetryMode,
    RetryTurn,
    SendPrompt,
)
from mala_tui.core.background_flow import BackgroundFlow
from mala_tui.core.checkpoint import Checkpoint, CheckpointOrigin
from mala_tui.core.manager_state import ManagerState
from mala_tui.core.masking_decisions import MaskingDecisions
from mala_tui.core.observations import (
    AgentFailed,
    Command,
    IdleTimedOut,
    MaskConfirmed,
    MessageObserved,
    OperatorCommand,
)
from mala_tui.core.operator_flow import OperatorFlow
from mala_tui.core.phases import Cause, IllegalTransition, Phase, Trigger
from mala_tui.core.projection import Projection
from mala_tui.core.prompts import PromptKind
from mala_tui.core.recovery import Recovery
from mala_tui.core.restart_flow import RestartFlow
from mala_tui.core.state_parts import StopFor
from mala_tui.core.turn_flow import TurnFlow
from mala_tui.prompt_files import load_prompts
from tests.core.phase_now import phase_now
from tests.support.factories import call, default_limits, result

PROMPTS = load_prompts()


def working_state(**limits: Any) -> ManagerState:
    """A started session, its task's turn streaming."""
    state = ManagerState(
        name="s1",
        task="Refactor the parser.",
        limits=default_limits(context_limit=100_000, **limits),
        prompts=PROMPTS,
    )
    state.started = True
    state.begin_turn(state.task)
    return state


def read_results(state: ManagerState, count: int, size: int = 8_000) -> None:
    for index in range(count):
        tool_id = f"t{index:03d}"
        state.transcript.append(call(tool_id))
        state.transcript.append(result(tool_id, "y" * size))


# -- each part alone -------------------------------------------------------------------------


def test_the_restart_flow_alone_winds_down_then_asks_for_approval() -> None:
    state = working_state(require_approval=True)
    restart_flow = RestartFlow(state)

    wound = restart_flow.wind_down(1.0, 90_000, Cause.HARD_THRESHOLD)
    (prompt,) = wound.actions
    assert isinstance(prompt, SendPrompt) and prompt.kind is PromptKind.WIND_DOWN
    assert prompt.interrupt_first, "the turn in flight is stopped first"
    assert state.phase is Phase.WINDING_DOWN
    assert state.turn.stopping is StopFor.PROMPT and state.turn.then == prompt.text

    checkpoint = Checkpoint("## Goal\nG", CheckpointOrigin.TAGGED)
    asked = restart_flow.checkpoint_ready(2.0, checkpoint)
    assert [type(action) for action in asked.actions] == [RequestApproval]
    assert phase_now(state) is Phase.AWAITING_APPROVAL and state.checkpoint == checkpoint


def test_recovery_alone_retries_a_hang_afresh_before_any_tool_ran() -> None:
    state = working_state()
    decided = Recovery(state).on_idle(IdleTimedOut(1.0, 60.0))
    retry = next(action for action in decided.actions if isinstance(action, RetryTurn))
    assert retry.mode is RetryMode.FRESH and retry.prompt == state.task
    assert state.counters.idle_retries == 1 and state.phase is Phase.RUNNING


def test_a_refused_move_leaves_the_state_as_it_was() -> None:
    state = working_state()
    recovery = Recovery(state)
    ended = recovery.on_agent_failed(AgentFailed(1.0, "gone"))
    assert isinstance(ended.actions[0], EndSession) and state.end_status is EndStatus.FAILED
    before = copy.deepcopy((state.phase, state.turn, state.counters, state.end_status))
    with pytest.raises(IllegalTransition):
        recovery.on_agent_failed(AgentFailed(2.0, "again"))
    assert (state.phase, state.turn, state.counters, state.end_status) == before


def test_masking_alone_masks_by_hand_and_applies_what_is_confirmed() -> None:
    state = working_state(keep_recent_observations=2)
    state.turn.streaming = False
    read_results(state, 5)
    masking = MaskingDecisions(state, RestartFlow(state))

    decided = masking.mask(1.0, 30_000, Trigger.OPERATOR_MASK, Cause.OPERATOR)
    (apply,) = decided.actions
    assert isinstance(apply, ApplyMask) and set(apply.plan.ids) == {"t000", "t001", "t002"}
    assert state.phase is Phase.MASKING

    before = state.transcript.characters
    masking.on_mask_confirmed(MaskConfirmed(2.0, apply.plan.ids))
    assert phase_now(state) is Phase.RUNNING and state.counters.masked_total == 3
    assert before - state.transcript.characters > 2 * 8_000, "three results became placeholders"


def test_operator_handling_alone_pauses_a_streaming_turn() -> None:
    state = working_state()
    restart_flow = RestartFlow(state)
    operator = OperatorFlow(state, MaskingDecisions(state, restart_flow), restart_flow)
    paused = operator.on_command(OperatorCommand(1.0, Command.PAUSE))
    assert [type(action) for action in paused.actions] == [Interrupt]
    assert state.phase is Phase.PAUSED and state.turn.stopping is StopFor.PAUSE
    with pytest.raises(IllegalTransition):
        operator.on_command(OperatorCommand(2.0, Command.MASK_NOW))


def test_the_turn_flow_alone_takes_the_agents_messages() -> None:
    state = working_state()
    restart_flow = RestartFlow(state)
    recovery = Recovery(state)
    masking = MaskingDecisions(state, restart_flow)
    projection = Projection(state, masking, restart_flow)
    background = BackgroundFlow(state, recovery)
    turns = TurnFlow(
        state,
        masking=masking,
        projection=projection,
        restart_flow=restart_flow,
        recovery=recovery,
        background=background,
    )
    turns.on_message(MessageObserved(1.0, call("t000")))
    turns.on_message(MessageObserved(1.1, result("t000", "y" * 800)))
    assert state.turn.tool_calls == 1
    assert state.transcript.has_result("t000") and not state.transcript.open_calls


# -- how the parts are composed --------------------------------------------------------------

CORE_MODULES = sorted(
    f"mala_tui.core.{info.name}" for info in pkgutil.iter_modules(mala_tui.core.__path__)
)


def _inheritable(base: type) -> bool:
    """Bases a core class may take from another module: vocabulary, not behaviour."""
    return (
        issubclass(base, (Enum, BaseException, BaseModel))
        or getattr(base, "_is_protocol", False)
        or base is Protocol
    )


@pytest.mark.parametrize("module_name", CORE_MODULES)
def test_no_core_class_inherits_behaviour_from_another_module(module_name: str) -> None:
    module = importlib.import_module(module_name)
    for _, cls in inspect.getmembers(module, inspect.isclass):
        if cls.__module__ != module_name:
            continue
        for base in cls.__mro__[1:]:
            if base.__module__.startswith("mala_tui.") and base.__module__ != module_name:
                assert _inheritable(base), f"{cls.__qualname__} inherits {base.__qualname__}"


#: Which of the manager's modules each may import: its calls run one way, down this list.
PARTS: dict[str, set[str]] = {
    "manager": {
        "manager_state",
        "state_parts",
        "decision_figures",
        "turn_flow",
        "operator_flow",
        "projection",
        "masking_decisions",
        "restart_flow",
        "recovery",
        "background_flow",
        "session_start",
    },
    "turn_flow": {
        "manager_state",
        "state_parts",
        "decision_figures",
        "masking_decisions",
        "projection",
        "restart_flow",
        "restart_prompts",
        "recovery",
        "background_flow",
    },
    "operator_flow": {"manager_state", "state_parts", "masking_decisions", "restart_flow"},
    "projection": {
        "manager_state",
        "state_parts",
        "decision_figures",
        "masking_decisions",
        "restart_flow",
    },
    "masking_decisions": {"manager_state", "state_parts", "decision_figures", "restart_flow"},
    "restart_flow": {"manager_state", "state_parts", "decision_figures", "restart_prompts"},
    "session_start": {"manager_state", "state_parts", "restart_prompts"},
    "background_flow": {"manager_state", "recovery"},
    "restart_prompts": {"manager_state"},
    "recovery": {"manager_state"},
    "decision_figures": {"manager_state"},
    "manager_state": {"state_parts"},
    "state_parts": set(),
}


@pytest.mark.parametrize("part", list(PARTS))
def test_the_parts_call_one_way(part: str) -> None:
    source = Path(mala_tui.core.__file__).with_name(f"{part}.py").read_text()
    imported = {
        node.module.removeprefix("mala_tui.core.")
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom) and node.module
    }
    assert imported & set(PARTS) == PARTS[part]
