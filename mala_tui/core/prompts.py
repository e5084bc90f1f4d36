"""Prompt templates: the placeholders each needs, checked once, filled many times.

Templates are markdown with `{name}` placeholders (write `{{` and `}}` for literal
braces). The files are read by the runtime; this module only checks and fills
text, so a template with a missing or unknown placeholder fails when mala-tui
starts, not at the first restart an hour later.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final


class PromptKind(StrEnum):
    TASK = "task"
    CHECKPOINT_REQUEST = "checkpoint_request"
    CONTINUATION = "continuation"
    WIND_DOWN = "wind_down"
    IDLE_RESUME = "idle_resume"
    MASK_RESUME = "mask_resume"
    OPERATOR_RESUME = "operator_resume"
    STOPPED_RESUME = "stopped_resume"
    """After mala-tui stopped a turn at a tool result and then found nothing to do there."""
    OPERATOR_MESSAGE = "operator_message"
    """What the operator said to the agent, delivered at a clean point or with a restart."""
    RUN_RESUME = "run_resume"
    """The agent's own session, resumed by `mala-tui resume` after the run was interrupted."""
    MASKING_NOTICE = "masking_notice"
    """Added to a session's first prompt when its output may be masked: what masking does,
    and that a fact restated in the agent's own words outlives the result it came from."""


#: Placeholders each template must use; a template may use no others.
REQUIRED_FIELDS: Final[Mapping[PromptKind, frozenset[str]]] = {
    PromptKind.CHECKPOINT_REQUEST: frozenset(),
    PromptKind.CONTINUATION: frozenset({"checkpoint", "carryover"}),
    PromptKind.WIND_DOWN: frozenset(),
    PromptKind.IDLE_RESUME: frozenset(),
    PromptKind.MASK_RESUME: frozenset(),
    PromptKind.OPERATOR_RESUME: frozenset(),
    PromptKind.STOPPED_RESUME: frozenset(),
    PromptKind.OPERATOR_MESSAGE: frozenset({"messages"}),
    PromptKind.RUN_RESUME: frozenset(),
    PromptKind.MASKING_NOTICE: frozenset(),
}

#: Placeholders each template may use.
ALLOWED_FIELDS: Final[Mapping[PromptKind, frozenset[str]]] = {
    PromptKind.CHECKPOINT_REQUEST: frozenset({"percent", "tokens_used", "window"}),
    PromptKind.CONTINUATION: frozenset({"checkpoint", "carryover", "continuation_number"}),
    PromptKind.WIND_DOWN: frozenset({"percent", "tokens_left", "tokens_used", "window"}),
    PromptKind.IDLE_RESUME: frozenset({"session_name"}),
    PromptKind.MASK_RESUME: frozenset({"masked_count"}),
    PromptKind.OPERATOR_RESUME: frozenset({"session_name"}),
    PromptKind.STOPPED_RESUME: frozenset({"session_name"}),
    PromptKind.OPERATOR_MESSAGE: frozenset({"messages", "session_name"}),
    PromptKind.RUN_RESUME: frozenset({"session_name", "gap"}),
    PromptKind.MASKING_NOTICE: frozenset(),
}


class PromptTemplateError(ValueError):
    """A template that cannot be used; the message names it and the placeholder."""


def template_fields(name: str, template: str) -> set[str]:
    """The placeholder names a template uses.

    Raises:
        PromptTemplateError: unbalanced braces, or a placeholder with an index,
            attribute or format spec (only plain names are filled).
    """
    fields: set[str] = set()
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise PromptTemplateError(
            f"{name}: {exc} (write {{{{ and }}}} for literal braces)"
        ) from None
    for _literal, field_name, spec, conversion in parsed:
        if field_name is None:
            continue
        if not field_name.isidentifier() or spec or conversion:
            raise PromptTemplateError(
                f"{name}: placeholder {{{field_name}{'!' + conversion if conversion else ''}"
                f"{':' + spec if spec else ''}}} is not a plain name like {{checkpoint}}"
            )
        fields.add(field_name)
    return fields


@dataclass(frozen=True, slots=True)
class PromptSet:
    """The checked templates the manager fills in."""

    checkpoint_request: str
    continuation: str
    wind_down: str
    idle_resume: str
    mask_resume: str
    operator_resume: str
    stopped_resume: str
    operator_message: str
    run_resume: str
    masking_notice: str

    @classmethod
    def checked(cls, templates: Mapping[PromptKind, tuple[str, str]]) -> PromptSet:
        """Check every template: (kind -> (where it came from, text)).

        Raises:
            PromptTemplateError: a template missing, missing a required placeholder,
                or using one that would never be filled.
        """
        texts: dict[str, str] = {}
        for kind, required in REQUIRED_FIELDS.items():
            if kind not in templates:
                raise PromptTemplateError(f"prompt template {kind.value}.md is missing")
            origin, text = templates[kind]
            used = template_fields(origin, text)
            missing = required - used
            if missing:
                raise PromptTemplateError(
                    f"{origin}: placeholder {{{sorted(missing)[0]}}} is missing; "
                    f"this template must use {', '.join('{' + f + '}' for f in sorted(required))}"
                )
            unknown = used - ALLOWED_FIELDS[kind]
            if unknown:
                allowed = ", ".join("{" + f + "}" for f in sorted(ALLOWED_FIELDS[kind]))
                raise PromptTemplateError(
                    f"{origin}: unknown placeholder {{{sorted(unknown)[0]}}}; "
                    f"allowed here: {allowed}"
                )
            texts[kind.value] = text
        return cls(**texts)

    def render(self, kind: PromptKind, **values: object) -> str:
        template: str = getattr(self, kind.value)
        return template.format_map(_StrictValues(kind, values)).strip()


class _StrictValues(dict[str, object]):
    def __init__(self, kind: PromptKind, values: Mapping[str, object]) -> None:
        super().__init__(values)
        self._kind = kind

    def __missing__(self, key: str) -> object:
        raise PromptTemplateError(f"{self._kind.value}: no value given for {{{key}}}")
