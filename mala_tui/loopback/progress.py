"""Which steps of a scenario are visible as done in one request: the scripted agent's memory.

A step is done when the request shows it done, and only then:
- its tool call is in the conversation (same tool, same primary argument, paths compared
  relative to the workspace) with a result that is not an error, intact or masked; or
- a line of user text (a checkpoint, a continuation or compaction summary, a harness-written
  checkpoint) names the step's tool and its primary argument, e.g. ``- Read src/mod_07.py``
  or ``Bash: pytest -q``. Lines under a heading such as "Goal", "Remaining Tasks", "Pending"
  or "Next Step" are aims and plans, not records, and do not count; or
- for an Edit, the latest visible Read of its file already shows the new text and not the
  old one (the edit happened, even if the call that made it is gone).
Work it cannot see as done, the agent does again.

An operator's message (operator_requests.py) is instructions, not a record: its lines never
count. An extra step it asks for is done once its call succeeds, or a record line names it,
after the message; a scripted step it skips is neither done nor remaining, but skipped.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mala_tui.loopback.operator_requests import (
    START,
    OperatorStep,
    Position,
    read_requests,
    text_pieces,
)
from mala_tui.loopback.request_view import RequestedCall, RequestView
from mala_tui.loopback.scenario_steps import TOOL_NAMES, PlannedStep

_HEADING = re.compile(
    r"^\s*(?:#{1,6}\s+(?P<markdown>.+?)|(?:\d+\.\s*)?(?P<label>[A-Za-z][\w /&-]{2,60}):)\s*$"
)
_PLAN_HEADING = re.compile(
    r"remaining|pending|to ?do|next|not (?:yet )?done|outstanding|planned|goal|task|objective",
    re.IGNORECASE,
)
_RECORD_START = {
    name: re.compile(
        rf"^\s*(?:[-*+•]\s*|\d+[.)]\s*)?(?:tool call:\s*)?(?:(?:called|ran|used)\s+)?[`*]*{name}\b",
        re.IGNORECASE,
    )
    for name in TOOL_NAMES
}
_ANY_TOOL = re.compile(r"\b(?:" + "|".join(TOOL_NAMES) + r")\b", re.IGNORECASE)
# A record line in its plain form: a bullet, the tool, an optional colon, the argument.
_PLAIN_RECORD = re.compile(
    r"^\s*(?:[-*+\u2022]\s*|\d+[.)]\s*)?(?P<tool>" + "|".join(TOOL_NAMES) + r"):?\s+"
    r"`?(?P<argument>.+?)`?\s*$"
)
_BEFORE_OK = frozenset(" \t`'\"(:[,=<>*")


def record_lines(texts: Iterable[str]) -> list[str]:
    """Lines that may record done work: those naming a tool, outside plan sections."""
    lines: list[str] = []
    for text in texts:
        in_plan = False
        for line in text.splitlines():
            heading = _HEADING.match(line)
            if heading:
                title = heading.group("markdown") or heading.group("label") or ""
                in_plan = bool(_PLAN_HEADING.search(title))
                continue
            if not in_plan and _ANY_TOOL.search(line):
                lines.append(line)
    return lines


def _mentions(line: str, argument: str, workspace: Path | None) -> bool:
    """``argument`` occurs in ``line`` as a whole token (not inside a longer path or word)."""
    absolute_prefix = f"{workspace}/" if workspace is not None else None
    start = line.find(argument)
    while start >= 0:
        end = start + len(argument)
        before = line[start - 1] if start > 0 else " "
        before_ok = before in _BEFORE_OK or (
            before == "/" and absolute_prefix is not None and line[:start].endswith(absolute_prefix)
        )
        after = line[end : end + 2]
        after_ok = not after or not (
            after[0].isalnum() or after[0] in "_/-" or (after[0] == "." and after[1:].isalnum())
        )
        if before_ok and after_ok:
            return True
        start = line.find(argument, start + 1)
    return False


def line_records_step(line: str, step: PlannedStep, workspace: Path | None) -> bool:
    """Whether one line of text lists this step as done: it opens with the tool's name
    (after a bullet, a number or "Tool call:") and names the step's primary argument.

    Narration such as "Next: read a.py again before edit a.py" names a tool in passing
    and records nothing.
    """
    return bool(_RECORD_START[step.tool].match(line)) and _mentions(line, step.primary, workspace)


@functools.lru_cache(maxsize=8)
def _contained_keys(plan: tuple[PlannedStep, ...]) -> frozenset[tuple[str, str]]:
    """Steps whose argument another step of the same tool holds (worked out once a plan)."""
    by_tool: dict[str, list[str]] = {}
    for step in plan:
        by_tool.setdefault(step.tool, []).append(step.primary)
    return frozenset(
        step.key
        for step in plan
        if any(step.primary in other and step.primary != other for other in by_tool[step.tool])
    )


@dataclass(frozen=True)
class StepStatus:
    """What the request shows about one step."""

    step: PlannedStep
    done_by_call: bool
    done_by_text: bool
    done_by_content: bool
    failed_at: tuple[int, ...]
    """Message indexes of visible attempts whose result was an error."""

    @property
    def done(self) -> bool:
        return self.done_by_call or self.done_by_text or self.done_by_content


class Progress:
    """The scenario's steps as one request shows them."""

    def __init__(self, plan: Sequence[PlannedStep], view: RequestView) -> None:
        self._plan = tuple(plan)
        self._view = view
        self._calls: dict[tuple[str, str], list[RequestedCall]] = {}
        for call in view.calls:
            self._calls.setdefault(self.call_key(call), []).append(call)
        pieces = text_pieces(view)
        self._lines: list[tuple[Position, str]] = [
            (piece.position, line)
            for piece in pieces
            if not piece.from_operator
            for line in record_lines([piece.text])
        ]
        self._requests = read_requests(pieces, self._plan, view)
        self._contained_set: frozenset[tuple[str, str]] | None = None
        self._recorded, self._irregular = self._read_records()
        self._statuses = {step.key: self._status(step) for step in self._plan}

    def call_key(self, call: RequestedCall) -> tuple[str, str]:
        """The (tool, primary argument) a call is recognised by."""
        return (call.name, self._view.primary_argument(call))

    def calls_for(self, key: tuple[str, str]) -> list[RequestedCall]:
        return list(self._calls.get(key, ()))

    def status(self, step: PlannedStep) -> StepStatus:
        return self._statuses.get(step.key) or self._status(step)

    def done_steps(self) -> list[PlannedStep]:
        return [step for step in self._plan if self._statuses[step.key].done]

    def remaining_steps(self) -> list[PlannedStep]:
        """Steps not visible as done, except those the operator asked to skip."""
        return [
            step
            for step in self._plan
            if not self._statuses[step.key].done and not self.is_skipped(step)
        ]

    def is_skipped(self, step: PlannedStep) -> bool:
        """The operator asked not to do this step (a step already done stays done)."""
        return step.id in self._requests.skipped and not self._statuses[step.key].done

    def skipped_steps(self) -> list[PlannedStep]:
        return [step for step in self._plan if self.is_skipped(step)]

    def operator_steps(self) -> tuple[OperatorStep, ...]:
        """The extra steps the operator's messages ask for, in order (done or not)."""
        return self._requests.steps

    def status_since(self, step: PlannedStep, position: Position) -> StepStatus:
        """What the request shows about ``step`` after ``position`` (an operator's ask)."""
        return self._status(step, after=position)

    def read_succeeded_after(self, path: str, message_index: int) -> bool:
        """A Read of ``path`` after ``message_index`` shows its content, or shows it is absent;
        or a Write or Edit of it succeeded then: the agent knows what it wrote, and Claude
        Code says so ("file state is current in your context -- no need to Read it back")."""
        if any(
            (call.succeeded or call.found_nothing) and call.message_index > message_index
            for call in self._calls.get(("Read", path), ())
        ):
            return True
        return any(
            call.succeeded and call.message_index > message_index
            for tool in ("Write", "Edit")
            for call in self._calls.get((tool, path), ())
        )

    def _read_records(self) -> tuple[set[tuple[str, str]], list[str]]:
        """The steps the record lines name, read at once: each line in the plain form
        (``- Read src/a.py``, ``- Bash: pytest -q``) is looked up by its argument and
        checked by the one rule (`line_records_step`); the other lines are returned, to
        be matched step by step. A summary lists every step done, one a line: matching
        every line against every step would cost steps x lines a request.
        """
        workspace = self._view.workspace
        prefix = f"{workspace}/" if workspace is not None else None
        by_key = {step.key: step for step in self._plan}
        recorded: set[tuple[str, str]] = set()
        irregular: list[str] = []
        for position, line in self._lines:
            del position
            plain = _PLAIN_RECORD.match(line)
            argument = plain.group("argument") if plain else ""
            if prefix is not None and argument.startswith(prefix):
                argument = argument[len(prefix) :]
            step = by_key.get((plain.group("tool"), argument)) if plain else None
            if step is not None and line_records_step(line, step, workspace):
                recorded.add(step.key)
            else:
                irregular.append(line)
        return recorded, irregular

    def _contained(self, step: PlannedStep) -> bool:
        """Another step of the same tool has an argument that holds this one's: a line
        recording that step may record this one too, so its lines are matched too."""
        if self._contained_set is None:
            self._contained_set = _contained_keys(self._plan)
        return step.key in self._contained_set

    def _status(self, step: PlannedStep, *, after: Position = START) -> StepStatus:
        calls = [call for call in self._calls.get(step.key, []) if call.message_index > after[0]]
        workspace = self._view.workspace
        if after == START:
            # Read at once; only lines in another form (and, rarely, a step whose
            # argument another's holds) are matched one by one.
            lines = self._irregular
            recorded = step.key in self._recorded
            if not recorded and self._recorded and self._contained(step):
                lines = [line for _, line in self._lines]
        else:
            lines = [line for position, line in self._lines if position > after]
            recorded = False
        return StepStatus(
            step=step,
            done_by_call=any(call.succeeded for call in calls),
            done_by_text=recorded
            or any(line_records_step(line, step, workspace) for line in lines),
            done_by_content=step.tool == "Edit"
            and after == START
            and self._edit_visible_in_file(step),
            failed_at=tuple(call.message_index for call in calls if call.failed),
        )

    def _edit_visible_in_file(self, step: PlannedStep) -> bool:
        reads = [
            call
            for call in self._calls.get(("Read", step.primary), [])
            if call.succeeded and not call.result_masked
        ]
        if not reads:
            return False
        shown = reads[-1].result_text or ""
        old, new = str(step.param("old")), str(step.param("new"))
        return new in shown and old not in shown
