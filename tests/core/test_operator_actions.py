"""What a person does to a live run, as one typed value: it crosses every wire as JSON
and comes back the same value, enums intact; anything else is refused where it enters,
in one line naming what is wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mala_tui.core.budget import BudgetLimits
from mala_tui.core.observations import Command, Decision
from mala_tui.core.operator_actions import (
    CONSOLE_NAME_CHARS,
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
    action_from_json,
    action_json,
)
from mala_tui.core.permissions import AnsweredBy, PermissionAnswer
from mala_tui.core.phases import ManageMode

EVERY_KIND: list[OperatorAction] = [
    SessionCommand(session="a", command=Command.TAKE_OVER, reason="the disk is full"),
    SetManageMode(session="a", mode=ManageMode.MASK),
    RequireApproval(session=None, required=True),
    SayToAgent(session="a", text="look at b.py too"),
    AnswerApproval(
        session="a",
        decision=Decision.EDIT,
        edited_text="## Goal\nOnly the edited plan.",
        by=AnsweredBy.TIMEOUT,
        checkpoint_number=3,
        console="console one",
    ),
    AnswerPermission(session="a", request_id="7", answer=PermissionAnswer.DENY, reason="not today"),
    SetBudget(session=None, limits=BudgetLimits(max_cost_usd=2.5, max_turns=50)),
    AddSession(name="b", task="task b", cwd=Path("/tmp/work"), profile="review"),
    ForkSession(parent="a", name="a-fork1", instruction="Do it another way."),
]


@pytest.mark.parametrize("action", EVERY_KIND, ids=lambda action: action.kind)
def test_an_action_comes_back_from_its_json_the_same_value_enums_and_all(
    action: OperatorAction,
) -> None:
    text = action_json(action)
    assert json.loads(text)["kind"] == action.kind
    back = action_from_json(text)
    assert back == action and type(back) is type(action)
    # The same from the decoded object a channel's request body is.
    assert action_from_json(json.loads(text)) == action


def test_an_enum_crosses_the_wire_as_its_value_and_comes_back_an_enum() -> None:
    sent = AnswerApproval(session="a", decision=Decision.DENY, by=AnsweredBy.POLICY)
    assert json.loads(action_json(sent))["decision"] == "deny"
    back = action_from_json(action_json(sent))
    assert isinstance(back, AnswerApproval)
    assert back.decision is Decision.DENY and back.by is AnsweredBy.POLICY
    mode = action_from_json({"kind": "manage_mode", "session": "a", "mode": "off"})
    assert isinstance(mode, SetManageMode) and mode.mode is ManageMode.OFF


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"session": "a", "command": "stop"},
         "kind: an action needs one (one of command, manage_mode, require_approval, say, "
         "approval, permission, budget, add, fork)"),
        ({"kind": "dance", "session": "a"},
         "kind: 'dance' is not one of command, manage_mode, require_approval, say, approval, "
         "permission, budget, add, fork"),
        ({"kind": "approval", "session": "a", "decision": "maybe"},
         "decision: 'maybe' is not one of approve, deny, edit"),
        ({"kind": "permission", "session": "a", "request_id": "1", "answer": "sometimes"},
         "answer: 'sometimes' is not one of allow_once, allow_session, deny"),
        ({"kind": "approval", "session": "a", "decision": "approve", "by": "nobody"},
         "by: 'nobody' is not one of operator, "),
        ({"kind": "manage_mode", "session": "a", "mode": "loud"},
         "mode: 'loud' is not one of full, mask, off"),
        ({"kind": "say", "session": "a", "text": "hi", "loud": True},
         "loud: Extra inputs are not permitted"),
        ({"kind": "say", "session": "a"}, "text: Field required"),
        ({"kind": "command", "session": 5, "command": "stop"}, "session: "),
        ({"kind": "budget", "session": None, "limits": {"max_turns": -1}},
         "limits: max_turns = -1: a limit must be a number above 0"),
        ({"kind": "budget", "session": None, "limits": {"max_tokens": 3}}, "limits.max_tokens: "),
        # Strict: what only looks like a number, a count or a yes is not taken for one.
        ({"kind": "budget", "session": None, "limits": {"max_turns": True}},
         "limits.max_turns: Input should be a valid integer"),
        ({"kind": "budget", "session": None, "limits": {"max_turns": "50"}},
         "limits.max_turns: Input should be a valid integer"),
        ({"kind": "budget", "session": None, "limits": {"max_cost_usd": "2"}},
         "limits.max_cost_usd: Input should be a valid number"),
        ({"kind": "require_approval", "session": None, "required": "yes"},
         "required: Input should be a valid boolean"),
        ({"kind": "approval", "session": "a", "decision": "approve", "checkpoint_number": True},
         "checkpoint_number: Input should be a valid integer"),
        ({"kind": 5, "session": "a"}, "kind: 5 is not one of command, "),
    ],
)  # fmt: skip
def test_what_is_not_an_action_is_refused_in_one_line_naming_the_field(
    data: dict[str, object], error: str
) -> None:
    for given in (data, json.dumps(data)):
        with pytest.raises(ValueError) as refused:
            action_from_json(given)
        message = str(refused.value)
        assert message.startswith(error), message
        assert "\n" not in message


def test_text_that_is_not_json_is_refused_in_one_line() -> None:
    for text in ("not json", "[1, 2]", '{"kind": "say", "session": "a", "text": '):
        with pytest.raises(ValueError) as refused:
            action_from_json(text)
        assert str(refused.value) and "\n" not in str(refused.value)


def test_a_console_name_with_control_characters_is_one_clean_short_line() -> None:
    named = "console\x1b[31m one\nsecond line\x07\r" + "z" * 200
    for action in (
        AnswerApproval(session="a", decision=Decision.APPROVE, console=named),
        action_from_json(
            {
                "kind": "permission",
                "session": "a",
                "request_id": "1",
                "answer": "deny",
                "console": named,
            }
        ),
    ):
        assert isinstance(action, AnswerApproval | AnswerPermission)
        console = action.console
        assert console.startswith("console")
        assert not any(ord(char) < 32 or ord(char) == 127 for char in console)
        assert len(console) <= CONSOLE_NAME_CHARS
        # Cleaned once as it enters: the same name again on the next wire.
        assert action_from_json(action_json(action)) == action


def test_an_action_is_a_frozen_value() -> None:
    action = SayToAgent(session="a", text="hi")
    with pytest.raises(ValueError, match="frozen"):
        action.text = "changed"  # type: ignore[misc]
