"""Checkpoints: what an agent writes before its session ends, and what we make of it.

Agents do not always follow the format: the block may sit in a code fence, be
repeated, be nested, be missing its tags or be empty. Extraction takes the last
complete block (the agent's final word), strips fences and inner tags, and falls
back to the whole answer when there are no tags. An empty answer is
an error the manager answers with a checkpoint of its own, built from the
transcript and marked as harness-made. Everything here is linear in the text,
so a megabyte answer costs milliseconds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from mala_tui.core.fold import task_and_digest
from mala_tui.core.masking import is_masked
from mala_tui.core.text import flatten, shorten
from mala_tui.core.transcript import (
    FILE_WRITING_TOOLS,
    Message,
    Role,
    Transcript,
    describe_call,
    render_messages,
)

SECTION_TITLES: Final = (
    "Goal",
    "Completed Work",
    "Remaining Tasks",
    "Do Not Redo",
    "Key Decisions",
)

_TAG = re.compile(r"<(/?)checkpoint\b[^>]*>", re.IGNORECASE)
_FENCE = re.compile(r"^[ \t]*(```|~~~)[^\n]*$", re.MULTILINE)
_HEADING = re.compile(
    r"^[ \t]{0,3}(?:#{1,6}[ \t]*|\*\*)?[ \t]*("
    + "|".join(title.replace(" ", r"[ \t]+") for title in SECTION_TITLES)
    + r")[ \t]*(?:\*\*)?[ \t]*:?[ \t]*(?:\*\*)?[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)
_CANONICAL = {title.lower(): title for title in SECTION_TITLES}


class CheckpointOrigin(StrEnum):
    TAGGED = "tagged"
    """Inside <checkpoint> tags, as asked."""
    FENCED = "fenced"
    """Inside tags that were wrapped in a code fence."""
    UNTAGGED = "untagged"
    """No tags: the whole answer is used."""
    HARNESS = "harness"
    """Built by mala-tui from the transcript because the agent could not write one."""
    EDITED = "edited"
    """Rewritten by a person at the approval step."""


class CheckpointError(ValueError):
    """An answer that holds no usable checkpoint."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    text: str
    origin: CheckpointOrigin

    @property
    def harness_made(self) -> bool:
        return self.origin is CheckpointOrigin.HARNESS

    @property
    def sections(self) -> dict[str, str]:
        return split_sections(self.text)


def extract_checkpoint(answer: str) -> Checkpoint:
    """Find the checkpoint in an agent's answer.

    Raises:
        CheckpointError: the answer, or the block in it, is empty.
    """
    tags = list(_TAG.finditer(answer))
    if not tags:
        body = _unfence(answer).strip()
        if not body:
            raise CheckpointError("the agent's answer is empty: no checkpoint to use")
        return Checkpoint(body, CheckpointOrigin.UNTAGGED)
    start, end = _last_block(answer, tags)
    inner = _TAG.sub("", answer[start:end])
    body = _unfence(inner).strip()
    if not body:
        raise CheckpointError("the <checkpoint> block is empty")
    fenced = _inside_fence(answer, start)
    return Checkpoint(body, CheckpointOrigin.FENCED if fenced else CheckpointOrigin.TAGGED)


def _last_block(text: str, tags: Sequence[re.Match[str]]) -> tuple[int, int]:
    """Span of the content of the last outermost block, tolerating nesting and missing tags."""
    depth = 0
    block_start: int | None = None
    last: tuple[int, int] | None = None
    for tag in tags:
        closing = tag.group(1) == "/"
        if not closing:
            if depth == 0:
                block_start = tag.end()
            depth += 1
        elif depth > 0:
            depth -= 1
            if depth == 0 and block_start is not None:
                last = (block_start, tag.start())
        elif last is None:
            # A closing tag with no opening one: everything before it is the block.
            last = (0, tag.start())
    if depth > 0 and block_start is not None:
        # Opened and never closed (the answer was cut off): take it to the end.
        return block_start, len(text)
    assert last is not None
    return last


def _inside_fence(text: str, position: int) -> bool:
    fences = sum(1 for fence in _FENCE.finditer(text, 0, position))
    return fences % 2 == 1


def _unfence(text: str) -> str:
    """Drop fence lines that wrap the whole text (```xml ... ```), keep inner ones."""
    stripped = text.strip()
    fences = list(_FENCE.finditer(stripped))
    if len(fences) >= 2 and fences[0].start() == 0 and fences[-1].end() == len(stripped):
        return stripped[fences[0].end() : fences[-1].start()]
    if len(fences) == 1 and (fences[0].start() == 0 or fences[0].end() == len(stripped)):
        # A lone fence left over once the tags were cut out of a fenced block.
        return stripped[: fences[0].start()] + stripped[fences[0].end() :]
    return stripped


def split_sections(text: str) -> dict[str, str]:
    """The five sections by title, in text order; text before the first heading is "Preamble".

    Headings may be `## Goal`, `**Goal**`, `Goal:` and any case. A section that
    appears twice keeps both parts.
    """
    found = list(_HEADING.finditer(text))
    sections: dict[str, str] = {}
    preamble = text[: found[0].start()].strip() if found else text.strip()
    if preamble:
        sections["Preamble"] = preamble
    for index, heading in enumerate(found):
        title = _CANONICAL[" ".join(heading.group(1).lower().split())]
        end = found[index + 1].start() if index + 1 < len(found) else len(text)
        body = text[heading.end() : end].strip()
        sections[title] = f"{sections[title]}\n\n{body}".strip() if title in sections else body
    return sections


def harness_checkpoint(
    transcript: Transcript,
    *,
    reason: str,
    carryover_turns: int,
    goal: str | None = None,
    previous: Checkpoint | None = None,
    before: int | None = None,
    carryover_chars: int | None = None,
) -> Checkpoint:
    """A checkpoint built from the transcript when the agent cannot write one.

    Goal: the task (or the first prompt). Completed work: what the previous
    checkpoint of this task listed, then every tool call of this session, in
    order, one line each in the `Tool argument` form a reader (or a model)
    recognises, after the steps a fold put in the digest (core.fold), which came first.
    Do not redo: files written. Key decisions: the agent's last words.
    With `before`, what follows that message (a wind-down and the answer to it) is
    not the agent's work and is left out; mala-tui's own prompts never count.
    """
    work = Transcript(transcript.messages[:before]) if before is not None else transcript
    earlier = previous.sections if previous is not None else {}
    completed: list[str] = [earlier["Completed Work"]] if earlier.get("Completed Work") else []
    touched: list[str] = [earlier["Do Not Redo"]] if earlier.get("Do Not Redo") else []
    task, folded = task_and_digest(work.messages)
    completed += folded
    seen: set[str] = set()
    for obs in work.exchanges():
        if obs.result is None:
            continue
        line = describe_call(obs.call)
        failed = obs.result.is_error and not is_masked(obs.result.content)
        entry = f"- {line}" + (" (failed)" if failed else "")
        if entry not in seen:
            seen.add(entry)
            completed.append(entry)
        if obs.call.name in FILE_WRITING_TOOLS and not failed:
            path = f"- {describe_call(obs.call).split(' ', 1)[-1]}"
            if path not in touched:
                touched.append(path)
    remarks = [
        message.text.strip()
        for message in work
        if message.role is Role.ASSISTANT and not message.from_harness and message.text.strip()
    ][-3:]
    goal = (goal or task).strip() or "(the first prompt was not seen)"
    parts = [
        f"(Written by mala-tui, not by the agent: {reason}.)",
        "## Goal",
        goal,  # whole: cut, the fresh session would work on part of its task
        "## Completed Work",
        "\n".join(completed) or "- (no tool call finished)",
        "## Remaining Tasks",
        "- Not known: the agent could not say. Compare the goal with the files on disk and "
        "the work above, then finish what is missing.",
        "## Do Not Redo",
        "\n".join(touched) or "- (no file was written)",
        "## Key Decisions",
        "\n".join(f"- {shorten(flatten(text), 600)}" for text in remarks)
        or "- (the agent said nothing outside tool calls)",
    ]
    last_turns = render_messages(work.carryover(carryover_turns))
    if carryover_chars is not None:
        last_turns = keep_newest(last_turns, carryover_chars)
    if last_turns:
        parts += ["", "Last complete steps:", last_turns]
    return Checkpoint("\n".join(parts), CheckpointOrigin.HARNESS)


def keep_newest(text: str, max_chars: int) -> str:
    """The end of a rendering of steps, cut at a line, when it is over the bound."""
    if len(text) <= max_chars:
        return text
    tail = text[len(text) - max_chars :]
    newline = tail.find("\n")
    if 0 <= newline < len(tail) - 1:
        tail = tail[newline + 1 :]
    dropped = len(text) - len(tail)
    return f"[earlier steps left out: {dropped} characters]\n{tail}"


def carryover_text(messages: Sequence[Message], *, max_chars: int | None = None) -> str:
    text = render_messages(messages)
    if max_chars is not None:
        text = keep_newest(text, max_chars)
    return text or "(none: the previous session had no complete step)"


def checkpoint_for_prompt(checkpoint: Checkpoint, max_chars: int) -> str:
    """The checkpoint as it goes into the continuation prompt, cut to a bound.

    The full text is journaled and saved; only the prompt copy is shortened, with
    a note saying so, so a runaway answer cannot fill the fresh window. The goal of a
    checkpoint mala-tui wrote is the task itself, word for word: it is never cut (the
    task was checked to fit the window before it ran), and the rest gets half the bound.
    """
    if checkpoint.harness_made:
        goal_ends = checkpoint.text.find("\n## Completed Work")
        max_chars = max(max_chars, goal_ends + max_chars // 2)
    if len(checkpoint.text) <= max_chars:
        return checkpoint.text
    dropped = len(checkpoint.text) - max_chars
    return (
        checkpoint.text[:max_chars] + f"\n\n[checkpoint shortened: {dropped} characters left out]"
    )


def section_changes(previous: Mapping[str, str], current: Mapping[str, str]) -> dict[str, str]:
    """Per section: "added", "removed", "changed" or "same", for the checkpoint viewer."""
    changes = {}
    for title in (*SECTION_TITLES, "Preamble"):
        before, after = previous.get(title), current.get(title)
        if before is None and after is None:
            continue
        if before is None:
            changes[title] = "added"
        elif after is None:
            changes[title] = "removed"
        else:
            changes[title] = "same" if before.strip() == after.strip() else "changed"
    return changes
