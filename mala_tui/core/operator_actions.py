"""What a person does to a live run, as one typed value from the console to the session.

A key press in a console becomes one of these values. The console sends it, the control
channel carries it (as JSON, validated here on the way in), the supervisor routes it
(answers to its desk, new sessions to its own parts, the rest to the session's runner)
and a cluster's wire carries it to the host whose runner applies it. No layer between
has a method per action, and an enum stays an enum on every wire: pydantic serializes
the value and validates it back, so a bad one is refused where it enters, saying what
it may be (`invalid_action`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from mala_tui.core.budget import BudgetLimits
from mala_tui.core.observations import Command, Decision
from mala_tui.core.permissions import AnsweredBy, PermissionAnswer
from mala_tui.core.phases import ManageMode
from mala_tui.core.text import clean, shorten

CONSOLE_NAME_CHARS = 80
"""A console's name as others are told it (who answered a question) is cut to this."""


class _Action(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SessionCommand(_Action):
    """Stop, pause, resume, mask now, restart now, cancel, or take over one session."""

    kind: Literal["command"] = "command"
    session: str
    command: Command
    reason: str = ""
    """Why, when it is not the operator's own doing (a signal, a full disk, an orphaned
    host): shown and journaled."""


class SetManageMode(_Action):
    """How much of one session's window mala-tui manages: full, mask or off."""

    kind: Literal["manage_mode"] = "manage_mode"
    session: str
    mode: ManageMode


class RequireApproval(_Action):
    """Approval before restarts, on or off, for one session or (None) every session."""

    kind: Literal["require_approval"] = "require_approval"
    session: str | None
    required: bool


class SayToAgent(_Action):
    """A message for the session's agent, delivered at its next clean point."""

    kind: Literal["say"] = "say"
    session: str
    text: str


class _Answer(_Action):
    console: str = ""
    """Which console answered, when not the run's own: told to whoever answers too late."""

    @field_validator("console")
    @classmethod
    def _one_short_line(cls, name: str) -> str:
        return shorten(clean(name, one_line=True), CONSOLE_NAME_CHARS)


class AnswerApproval(_Answer):
    """Approve, deny or edit (approve `edited_text` instead) a restart's checkpoint."""

    kind: Literal["approval"] = "approval"
    session: str
    decision: Decision
    edited_text: str | None = None
    by: AnsweredBy = AnsweredBy.OPERATOR
    checkpoint_number: int | None = None
    """The checkpoint answered; None: the session's latest asked."""


class AnswerPermission(_Answer):
    """Allow or deny a tool use waiting for permission."""

    kind: Literal["permission"] = "permission"
    session: str
    request_id: str
    answer: PermissionAnswer
    reason: str = ""


class SetBudget(_Action):
    """New budget limits for one session or (None) the whole run."""

    kind: Literal["budget"] = "budget"
    session: str | None
    limits: BudgetLimits


class AddSession(_Action):
    """A new session in the running run, with one of its named profiles ("": none)."""

    kind: Literal["add"] = "add"
    name: str
    task: str
    cwd: Path
    profile: str = ""


class ForkSession(_Action):
    """A new session from `parent`'s conversation as it stands, told `instruction`."""

    kind: Literal["fork"] = "fork"
    parent: str
    name: str
    instruction: str


SessionAction = SessionCommand | SetManageMode | RequireApproval | SayToAgent
"""What a session's runner applies itself (the rest is the supervisor's)."""

OperatorAction = Annotated[
    SessionCommand
    | SetManageMode
    | RequireApproval
    | SayToAgent
    | AnswerApproval
    | AnswerPermission
    | SetBudget
    | AddSession
    | ForkSession,
    Field(discriminator="kind"),
]

_ACTIONS: TypeAdapter[OperatorAction] = TypeAdapter(OperatorAction)
_KINDS = tuple(
    model.model_fields["kind"].default for model in get_args(get_args(OperatorAction)[0])
)


def action_json(action: OperatorAction) -> str:
    """The action as one JSON object (its `kind` says which)."""
    return _ACTIONS.dump_json(action).decode()


def action_from_json(data: str | bytes | dict[str, object]) -> OperatorAction:
    """An action from JSON or from a decoded JSON object.

    Raises:
        ValueError: it is not one, saying what is wrong in one line (`invalid_action`).
    """
    # Strict, and always from JSON text: `true` is not a number nor "50" a count, while an
    # enum is still read from its string (a decoded dict is read back as the JSON it was).
    text = json.dumps(data) if isinstance(data, dict) else data
    try:
        return _ACTIONS.validate_json(text, strict=True)
    except ValidationError as exc:
        raise ValueError(invalid_action(exc)) from None


def invalid_action(exc: ValidationError) -> str:
    """The first thing wrong with an action, on one line: the field and what it may be."""
    error = exc.errors(include_url=False)[0]
    kinds = ", ".join(_KINDS)
    if error["type"] == "union_tag_not_found":
        return f"kind: an action needs one (one of {kinds})"
    if error["type"] == "union_tag_invalid":
        given = error["input"].get("kind", "") if isinstance(error["input"], dict) else ""
        shown = repr(shorten(given, 40)) if isinstance(given, str) else shorten(str(given), 40)
        return f"kind: {shown} is not one of {kinds}"
    where = ".".join(str(part) for part in error["loc"][1:] or error["loc"])
    given = error.get("input")
    allowed = _enum_values(error)
    if allowed and isinstance(given, str):
        return f"{where}: {shorten(given, 40)!r} is not one of {allowed}"
    message = error["msg"].removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def _enum_values(error: object) -> str:
    context = error.get("ctx", {}) if isinstance(error, dict) else {}
    expected = context.get("expected", "") if isinstance(context, dict) else ""
    if not isinstance(expected, str) or not expected:
        return ""
    return ", ".join(part.strip(" '") for part in expected.replace(" or ", ", ").split(","))
