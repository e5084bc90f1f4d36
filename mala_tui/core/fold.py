"""Folding what masks leave behind: each masked step becomes one line of a digest.

A mask replaces old results by placeholders, but the structure of every step stays: the
call, its placeholder, the resume note of each mask. That structure only grows, and each
mask rewrites all of it at the cache-write price. A summary would drop it; a fold drops it
without a model call, since the mask rewrites the transcript anyway: the masked steps'
calls and placeholders, and the resume notes of earlier masks, leave the conversation,
and each step leaves one line in a digest placed once, after the task:

    - Bash `pytest -q`, exit 1, 3.1 KB, masked

The digest is append-only: each later fold adds its lines at the end, and a line once
written is never rewritten or summarised (contexts grown by small appended entries keep
more than contexts rewritten whole).

What stays whole:
- the agent's own words (its text blocks: the facts it noted live there);
- results it fetched again (the latest fetch is never masked, so never folded);
- the newest step;
- the newest successful Read, Write or Edit of the `KEPT_FILES` newest files (newest by
  their newest such step), within `KEPT_FILE_TOKENS` for the masked ones kept.

Why those, from the bundled CLI (2.1.330): on resume Claude Code rebuilds its read-file
state from the transcript, newest entry first, taking per path the newest successful
tool_result of a Read, a Write or an Edit (no other tool), up to 5,000 paths (an LRU of
5,000 entries and 25 MiB, each entry counting at most 4 KiB). An Edit or Write to a file
not in that state is refused, with the tool error "File has not been read yet. Read it
first before writing to it." (for Sonnet 4.5 and the other models it lists; later models
may edit a file they may read without asking). Keeping every file's step would keep up
to 5,000 calls and placeholders, and on a long task they were most of what a fold left
(1,500 files read: about 141,000 tokens). After its own compaction the CLI keeps the
read-file state of the 5 files read last only (it reads them again into the context, at
most 5,000 tokens each); every other file must be read again before an edit. A fold is
such a reduction, so it keeps as few: an Edit to an older file is refused once, the
agent reads the file (whose content a mask took out anyway) and edits it. Each folded
step's digest line names its file, so the agent knows it read it.

Pure: the runtime reads the CLI's transcript into `Message`s, asks `plan_fold`, and
applies the plan to its own file format (runtime/backends/claude_fold.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from mala_tui.core.masking import PLACEHOLDER_PATTERN, is_masked, placeholder_argument
from mala_tui.core.text import flatten, shorten
from mala_tui.core.transcript import (
    Message,
    Role,
    TextBlock,
    ToolCall,
    ToolExchange,
    ToolResult,
    Transcript,
    primary_argument,
)

#: The digest's first line: how it is found again, and what it tells the agent. It names
#: no tool, so no reader takes it for a step.
DIGEST_HEADER: Final = "[Steps folded, oldest first; output masked, run one again to see it:]"
#: Tools whose newest successful call per path Claude Code reads back into its read-file
#: state on resume: these three only (MultiEdit is no tool of it; NotebookEdit is not read).
FILE_STATE_TOOLS: Final = frozenset({"Read", "Write", "Edit"})
#: Files whose newest file step stays whole: as many as the CLI keeps in its read-file
#: state after its own compaction (it restores the 5 files read last). Read at each
#: call, so a test can lower it.
KEPT_FILES: Final = 5
#: The masked file steps kept (their calls, a Write's holding the whole file, and their
#: placeholders) cost at most this many tokens (chars/4); one that does not fit folds,
#: and leaves its place to an older, smaller one. The CLI restores a file after a
#: compaction within 5,000 tokens.
KEPT_FILE_TOKENS: Final = 5_000
_TARGET_CHARS: Final = 160


def is_digest(text: str) -> bool:
    """Whether a text block is a fold's digest."""
    return text.startswith(DIGEST_HEADER)


def digest_line(call: ToolCall, masked: str) -> str:
    """One line for a folded step: its tool, its target, its size or exit status, "masked".

    The status is read off the step's placeholder (what masking saw of the result); the
    target is the call's own argument, longer than the placeholder's head of a command,
    so the line names the step exactly.
    """
    target = shorten(flatten(primary_argument(call)), _TARGET_CHARS)
    if call.name == "Bash":
        target = f"`{target}`"
    head = f"- {call.name} {target}".rstrip()
    status = _status(call, masked)
    return f"{head}, {status}, masked" if status else f"{head}, masked"


def _status(call: ToolCall, masked: str) -> str:
    """The placeholder's detail without the argument it opens with."""
    found = PLACEHOLDER_PATTERN.match(masked.strip())
    if found is None:
        return ""
    detail = found.group(2)
    argument = placeholder_argument(call)
    if argument and detail.startswith(argument):
        detail = detail[len(argument) :]
    return detail.lstrip(", ").strip()


def extend_digest(digest: str, lines: Sequence[str]) -> str:
    """The digest with `lines` added at its end (a new digest when `digest` is empty)."""
    if not lines:
        return digest
    head = digest if is_digest(digest) else DIGEST_HEADER
    return "\n".join((head, *lines))


def digest_lines(digest: str) -> tuple[str, ...]:
    """The step lines of a digest (none for a text that is not one)."""
    if not is_digest(digest):
        return ()
    return tuple(line for line in digest.splitlines()[1:] if line.strip())


def task_and_digest(messages: Sequence[Message]) -> tuple[str, tuple[str, ...]]:
    """The first prompt's own text (the task) and the step lines of the digest a fold put
    after it: a checkpoint lists those steps as done, and the task without them."""
    for message in messages:
        if message.is_prompt and message.text.strip():
            texts = [b.text for b in message.blocks if isinstance(b, TextBlock)]
            task = "\n".join(text for text in texts if not is_digest(text))
            lines = tuple(line for text in texts for line in digest_lines(text))
            return task, lines
    return "", ()


@dataclass(frozen=True, slots=True)
class FoldPlan:
    """What a fold removes, and the digest it leaves."""

    folded: tuple[str, ...] = ()
    """Tool-use ids whose call and result leave the conversation, oldest first."""
    notes: tuple[int, ...] = ()
    """Indices (in the messages planned on) of earlier masks' resume notes, which leave too."""
    digest: str = ""
    """The whole digest after the fold: the earlier one and the new lines."""
    new_lines: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.folded or self.notes)


@dataclass(frozen=True, slots=True)
class FoldReport:
    """What a fold did: steps and notes folded, the digest's lines, and the conversation's
    estimated size (chars/4) before and after it, and the digest's."""

    steps: int
    notes: int
    digest_lines: int
    tokens_before: int
    tokens_after: int
    digest_tokens: int


def plan_fold(
    messages: Sequence[Message], *, digest: str = "", notes: frozenset[str] = frozenset()
) -> FoldPlan:
    """Which steps fold, given the conversation as the mask left it (placeholders in).

    `digest` is the one an earlier fold left (empty if none); `notes` are the texts of the
    resume notes mala-tui sent after earlier masks, found by their exact text.
    """
    exchanges = [obs for obs in Transcript(messages).exchanges() if obs.result is not None]
    if not exchanges:
        return FoldPlan(digest=digest)
    kept = _file_state_steps(exchanges) | {exchanges[-1].call.id}
    folded = [
        obs
        for obs in exchanges
        if obs.call.id not in kept and obs.result is not None and is_masked(obs.result.content)
    ]
    note_indices = tuple(
        index
        for index, message in enumerate(messages)
        if message.role is Role.USER
        and not message.tool_results
        and message.text.strip()
        and message.text.strip() in notes
    )
    lines = tuple(digest_line(obs.call, obs.result.content) for obs in folded if obs.result)
    return FoldPlan(
        folded=tuple(obs.call.id for obs in folded),
        notes=note_indices,
        digest=extend_digest(digest, lines),
        new_lines=lines,
    )


def _file_state_steps(exchanges: Sequence[ToolExchange]) -> set[str]:
    """The file steps the CLI's read-file state is rebuilt from on resume and that stay:
    the newest successful one of each of the `KEPT_FILES` newest files, newest first.

    A step that stays anyway (not masked, or the newest) takes a file's place and costs
    nothing; a masked one is kept while it fits in `KEPT_FILE_TOKENS`."""
    newest: dict[str, ToolExchange] = {}
    for obs in exchanges:
        if obs.call.name not in FILE_STATE_TOOLS or obs.result is None or obs.result.is_error:
            continue
        path = primary_argument(obs.call)
        if path:
            newest.pop(path, None)  # re-inserted last: the dict runs oldest to newest
            newest[path] = obs
    kept: set[str] = set()
    budget = KEPT_FILE_TOKENS
    last = exchanges[-1].call.id if exchanges else ""
    for obs in reversed(newest.values()):
        if len(kept) >= KEPT_FILES:
            break
        result = obs.result.content if obs.result is not None else ""
        if obs.call.id != last and is_masked(result):
            cost = _step_tokens(obs.call, result)
            if cost > budget:
                continue
            budget -= cost
        kept.add(obs.call.id)
    return kept


def _step_tokens(call: ToolCall, result: str) -> int:
    """What a step costs in the conversation, estimated as elsewhere (chars/4)."""
    characters = len(call.name) + sum(len(str(value)) for value in call.input.values())
    return (characters + len(result)) // 4


def apply_fold(messages: Sequence[Message], plan: FoldPlan) -> list[Message]:
    """The conversation after `plan`: folded calls and results and old notes out, the
    digest in the first prompt (after the task), every other block as it was."""
    gone = set(plan.folded)
    notes = set(plan.notes)
    folded: list[Message] = []
    digest_placed = not plan.digest
    for index, message in enumerate(messages):
        if index in notes:
            continue
        blocks = tuple(block for block in message.blocks if not _folded_block(block, gone))
        if not digest_placed and message.is_prompt and message.text.strip():
            blocks = (
                *(b for b in blocks if not (isinstance(b, TextBlock) and is_digest(b.text))),
                TextBlock(plan.digest),
            )
            digest_placed = True
        if blocks:
            folded.append(Message(message.role, blocks, message.from_harness))
    return folded


def _folded_block(block: TextBlock | ToolCall | ToolResult, gone: set[str]) -> bool:
    if isinstance(block, ToolCall):
        return block.id in gone
    if isinstance(block, ToolResult):
        return block.tool_use_id in gone
    return False
