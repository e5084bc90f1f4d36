"""What the person supervising the agent asked of it, read from mala-tui's message prompt.

mala-tui delivers an operator's message as a user prompt that opens with a fixed marker
line, "A message from the person supervising you (sent through mala-tui):", and closes with
"Take it into account, then carry on with your task." (the block may also end a
continuation prompt; without the closing line it runs to the end of the text). Inside it,
the scripted agent obeys two kinds of line, as a model follows instructions:
- ``Tool: argument`` for Read, Bash, Grep or Glob, optionally bulleted or numbered
  (``- Bash: echo hi > operator.txt``, ``Read: src/mod_03.py``): an extra step, played
  next, before the scripted steps that remain, once. Several lines: in order.
- ``Skip: <step id>`` or ``Skip: Tool: argument``: a scripted step not to be done.
Anything else in a message is read and left alone. A message's lines are instructions,
not records of done work, so progress.py looks for records only outside these blocks.

Skips outlive the conversation they were asked in: the agent's checkpoints, compaction
summaries and final answer list them under a heading "Skipped at the Operator's Request",
one ``- Skip: <step id> (<label>)`` a line, and those lines hold in a fresh session too.

Where things are in a request is a ``Position``: (message index, piece number), the pieces
being a user text cut at its message blocks, so "after the message" can be told even when
a continuation prompt carries a message and the steps that followed it in one text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mala_tui.loopback.request_view import RequestView
from mala_tui.loopback.scenario_steps import TOOL_NAMES, PlannedStep, ToolName

MARKER = "A message from the person supervising you"
CLOSING = "Take it into account, then carry on with your task"
SKIPPED_HEADING = "Skipped at the Operator's Request"

Position = tuple[int, int]
"""(message index, piece number within that message's text): orders text in a request."""
START: Position = (-1, -1)
"""Before everything in a request."""

# A rendered prompt may carry a prefix on the marker's line ("User: A message from ..."),
# as a continuation prompt's "last complete steps" do: the block starts at that line.
_BLOCK = re.compile(
    rf"^[^\n]*{re.escape(MARKER)}[^\n]*(?:\n|\Z)"
    r"(?P<body>.*?)"
    rf"(?:^[^\n]*{re.escape(CLOSING)}[^\n]*(?:\n|\Z)|(?=^[^\n]*{re.escape(MARKER)})|\Z)",
    re.IGNORECASE | re.MULTILINE | re.DOTALL,
)
_SYSTEM_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
_BULLET = r"^\s*(?:[-*+•]\s*|\d+[.)]\s*)?"
_EXTRA_TOOLS: tuple[ToolName, ...] = ("Read", "Bash", "Grep", "Glob")
_EXTRA = re.compile(
    _BULLET + rf"(?P<tool>{'|'.join(_EXTRA_TOOLS)})\s*:\s*(?P<argument>\S.*?)\s*$",
    re.IGNORECASE,
)
_SKIP = re.compile(_BULLET + r"skip\s*:\s*(?P<target>\S.*?)\s*$", re.IGNORECASE)
_SKIP_TARGET = re.compile(
    rf"^(?P<tool>{'|'.join(TOOL_NAMES)})(?:\s*:\s*|\s+)(?P<argument>\S.*)$", re.IGNORECASE
)
_SKIPPED_SECTION = re.compile(
    r"^\s*(?:#{1,6}\s*|\d+\.\s*)?[*_]*skipped at the operator['\u2019]?s request[*_]*:?\s*$",
    re.IGNORECASE,
)
_CANONICAL: Mapping[str, ToolName] = {name.lower(): name for name in TOOL_NAMES}
_PATH_TOOLS = frozenset({"Read", "Write", "Edit"})


@dataclass(frozen=True)
class TextPiece:
    """A stretch of one user text: an operator's message block, or text around it."""

    position: Position
    text: str
    from_operator: bool


@dataclass(frozen=True)
class OperatorStep:
    """An extra step the operator asked for, and where in the request they asked."""

    step: PlannedStep
    asked_at: Position


@dataclass(frozen=True)
class OperatorRequests:
    """Everything the operator's messages in one request ask for."""

    steps: tuple[OperatorStep, ...]
    """Extra steps, in the order asked."""
    skipped: frozenset[str]
    """Ids of scripted steps not to be done."""


def text_pieces(view: RequestView) -> list[TextPiece]:
    """Every user text of the request, cut at the operator's message blocks, in order."""
    pieces: list[TextPiece] = []
    for entry in view.user_texts:
        parts: list[tuple[str, bool]] = []
        cursor = 0
        for block in _BLOCK.finditer(entry.text):
            parts.append((entry.text[cursor : block.start()], False))
            parts.append((_SYSTEM_REMINDER.sub("", block.group("body")), True))
            cursor = block.end()
        parts.append((entry.text[cursor:], False))
        pieces += [
            TextPiece((entry.message_index, number), text, from_operator)
            for number, (text, from_operator) in enumerate(parts)
        ]
    return pieces


def without_messages(text: str) -> str:
    """``text`` with the operator's message blocks left out."""
    return _BLOCK.sub("", text)


def _argument(raw: str) -> str:
    """The argument as typed, without one pair of backticks around it."""
    value = raw.strip()
    if len(value) > 1 and value.startswith("`") and value.endswith("`"):
        value = value[1:-1].strip()
    return value


def _extra_step(tool: ToolName, argument: str, number: int, view: RequestView) -> PlannedStep:
    primary = view.relative_path(argument) if tool in _PATH_TOOLS else argument
    said = f"Bash: {primary}" if tool == "Bash" else f"{tool} {primary}"
    label = f"{said} (asked by the operator)"
    params: tuple[tuple[str, str], ...] = (("description", label),) if tool == "Bash" else ()
    return PlannedStep(0, f"operator-{number}", label, tool, primary, params)


def _skip_target(target: str, plan: Sequence[PlannedStep], view: RequestView) -> str | None:
    """The id of the scripted step a skip names, or None when it names none."""
    ids = {step.id for step in plan}
    if target in ids:
        return target
    # The agent's own carried-over lines: "s004 (run pytest -q)".
    head = target.split(" (", 1)[0].strip()
    if head in ids:
        return head
    named = _SKIP_TARGET.match(target)
    if named is None:
        return None
    tool = _CANONICAL[named.group("tool").lower()]
    argument = _argument(named.group("argument"))
    if tool in _PATH_TOOLS:
        argument = view.relative_path(argument)
    for step in plan:
        if step.key == (tool, argument):
            return step.id
    return None


def _carried_skips(text: str) -> list[str]:
    """Skip lines under a "Skipped at the Operator's Request" heading the agent wrote."""
    targets: list[str] = []
    in_section = False
    for line in text.splitlines():
        if _SKIPPED_SECTION.match(line):
            in_section = True
            continue
        skip = _SKIP.match(line) if in_section else None
        if skip is None:
            in_section = False
            continue
        targets.append(skip.group("target"))
    return targets


def read_requests(
    pieces: Sequence[TextPiece], plan: Sequence[PlannedStep], view: RequestView
) -> OperatorRequests:
    """The extra steps and skips the request's operator messages (and the agent's own
    carried-over skip lists) ask for."""
    steps: list[OperatorStep] = []
    skipped: set[str] = set()
    for piece in pieces:
        if not piece.from_operator:
            targets = _carried_skips(piece.text)
        else:
            targets = []
            asked: set[tuple[str, str]] = set()
            for line in piece.text.splitlines():
                skip = _SKIP.match(line)
                if skip is not None:
                    targets.append(skip.group("target"))
                    continue
                extra = _EXTRA.match(line)
                argument = _argument(extra.group("argument")) if extra else ""
                if extra is None or not argument:
                    continue
                tool = _CANONICAL[extra.group("tool").lower()]
                step = _extra_step(tool, argument, len(steps) + 1, view)
                if step.key not in asked:
                    asked.add(step.key)
                    steps.append(OperatorStep(step, piece.position))
        for target in targets:
            step_id = _skip_target(_argument(target), plan, view)
            if step_id is not None:
                skipped.add(step_id)
    return OperatorRequests(tuple(steps), frozenset(skipped))
