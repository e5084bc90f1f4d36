"""Which old tool results to replace, and with what ("observation masking" in the literature).

Only tool *results* are masked; the agent's calls and its own words stay, so it
still knows what it did (published research on coding agents finds this keeps
performance while roughly halving tokens). Messages are never removed, only
their result content replaced, so the call/result structure the API requires
survives. Oldest first, never the most recent few, never twice, and only in
batches big enough to pay for the prompt-cache miss that rewriting an old block
causes from that block on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from mala_tui.core.text import flatten, shorten
from mala_tui.core.transcript import ToolCall, ToolExchange, ToolResult, primary_argument
from mala_tui.core.usage import estimate_tokens

#: What every placeholder looks like; also how a masked result is recognised.
PLACEHOLDER_PATTERN: Final = re.compile(r"^\[(\w+) result masked -- (.*)\]$", re.DOTALL)

_EXIT_CODE = re.compile(r"\bexit code[: ]+(-?\d+)", re.IGNORECASE)
_FOUND_COUNT = re.compile(r"^Found (\d+) (?:files?|lines?|matches|match|results?)", re.IGNORECASE)
_HEAD_CHARS: Final = 48
#: Characters of a placeholder besides its argument, at most ("[Bash result masked -- `…`,
#: exit 127, 1023.9 KB]" and the like).
_PLACEHOLDER_OVERHEAD: Final = 64


def is_masked(content: str) -> bool:
    # Cheap look at the head first: most results are large and not placeholders,
    # and stripping each of them whole would dominate a masking pass.
    if " result masked -- " not in content[:200] or not content[:64].lstrip().startswith("["):
        return False
    return PLACEHOLDER_PATTERN.match(content.strip()) is not None


def human_size(characters: int) -> str:
    """Sizes as people read them: `812 B`, `3.1 KB`, `2.4 MB` (1024-based)."""
    if characters < 1024:
        return f"{characters} B"
    if characters < 1024 * 1024:
        return f"{characters / 1024:.1f} KB"
    return f"{characters / (1024 * 1024):.1f} MB"


def _head(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return shorten(flatten(first), _HEAD_CHARS)


def _count_lines(content: str) -> int:
    return sum(1 for line in content.splitlines() if line.strip())


def placeholder_argument(call: ToolCall) -> str:
    """How a placeholder names its call's argument, at its start ("" when it names none)."""
    # One line, bounded: a path or pattern with newlines must not break the placeholder.
    argument = shorten(flatten(primary_argument(call)), 160)
    if call.name in ("Read", "Edit", "Write", "MultiEdit", "NotebookEdit"):
        return argument
    if call.name == "Bash":
        return f"`{_head(argument)}`"
    if call.name in ("Grep", "Glob"):
        return repr(_head(argument))
    return ""


def placeholder(call: ToolCall, result: ToolResult) -> str:
    """A short line saying what was there, specific to the tool that produced it."""
    content = result.content
    size = human_size(len(content))
    argument = placeholder_argument(call)
    if call.name == "Read":
        lines = len(content.splitlines())
        detail = f"{argument}, {lines} lines"
    elif call.name == "Bash":
        detail = f"{argument}, {_exit_status(result)}, {size}"
    elif call.name in ("Grep", "Glob"):
        noun = "files" if call.name == "Glob" else "matches"
        detail = f"{argument}, {_match_count(content)} {noun}"
    elif call.name in ("Edit", "Write", "MultiEdit", "NotebookEdit"):
        detail = argument or size
    else:
        detail = size
    if result.is_error and call.name != "Bash":
        detail += ", error"
    return f"[{call.name} result masked -- {detail}]"


def _exit_status(result: ToolResult) -> str:
    if not result.is_error:
        return "exit 0"
    found = _EXIT_CODE.search(result.content[:200])
    return f"exit {found.group(1)}" if found else "failed"


def _match_count(content: str) -> int:
    found = _FOUND_COUNT.match(content.strip())
    if found:
        return int(found.group(1))
    if content.strip().startswith("No files found") or content.strip().startswith("No matches"):
        return 0
    return _count_lines(content)


@dataclass(frozen=True, slots=True)
class MaskPlan:
    """Results to mask now, their placeholders, and what masking them should free."""

    placeholders: Mapping[str, str] = field(default_factory=dict)
    estimated_tokens: int = 0
    skipped_reason: str | None = None

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(self.placeholders)

    def __bool__(self) -> bool:
        return bool(self.placeholders)


def call_key(call: ToolCall) -> tuple[str, str]:
    """What a call fetched, e.g. ("Read", "src/app.py"): a second call with the same key
    fetches the same thing again."""
    return call.name, " ".join(primary_argument(call).split())


def maskable(
    exchanges: Sequence[ToolExchange],
    keep_recent: int,
    never_mask: frozenset[str] = frozenset(),
    needed: frozenset[tuple[str, str]] = frozenset(),
    needed_chars: int | None = None,
) -> list[ToolExchange]:
    """Results that may be masked: complete, not already masked, not among the newest few,
    not from a tool whose results are always kept (as the API's own tool-result clearing
    keeps its `exclude_tools`), and not the latest fetch of something the agent has shown
    it needs (it fetched it again after it was masked), newest first, while those kept
    for that reason stay within `needed_chars`: kept without a bound, they would become a
    floor no mask can go below."""
    complete = [obs for obs in exchanges if obs.result is not None]
    older = complete[: max(0, len(complete) - keep_recent)]
    latest_needed: set[str] = set()
    if needed:
        newest = {call_key(obs.call): obs for obs in complete}
        kept = sorted(
            (newest[key] for key in needed if key in newest),
            key=lambda obs: obs.call_index,
            reverse=True,
        )
        room = needed_chars
        for obs in kept:
            size = len(obs.result.content) if obs.result is not None else 0
            if room is not None and size > room:
                break
            latest_needed.add(obs.call.id)
            if room is not None:
                room -= size
    return [
        obs
        for obs in older
        if obs.result is not None
        and obs.call.name not in never_mask
        and obs.call.id not in latest_needed
        and not is_masked(obs.result.content)
    ]


def plan_masking(
    exchanges: Sequence[ToolExchange],
    *,
    tokens_to_free: int,
    keep_recent: int,
    min_batch_tokens: int,
    density: float = 1.0,
    never_mask: frozenset[str] = frozenset(),
    needed: frozenset[tuple[str, str]] = frozenset(),
    needed_chars: int | None = None,
) -> MaskPlan:
    """Choose the oldest results whose masking frees at least `tokens_to_free`.

    Sizes are chars/4 estimates scaled by `density`, the session's measured
    tokens per estimated token, so every figure here is in the tokens the API
    counts. The batch is at least `min_batch_tokens` when that much is
    available, and nothing is masked when it is not: a small batch would break
    the prompt cache for little gain.
    """
    goal = max(tokens_to_free, min_batch_tokens, 1)
    chosen: dict[str, str] = {}
    freed = 0
    available = 0
    for obs in maskable(exchanges, keep_recent, never_mask, needed, needed_chars):
        assert obs.result is not None
        # Judge by an upper bound of the placeholder's size; build the real one only
        # for results chosen (building it means counting lines of large outputs).
        bound = estimate_tokens(_PLACEHOLDER_OVERHEAD + min(len(primary_argument(obs.call)), 160))
        saving = round((estimate_tokens(len(obs.result.content)) - bound) * density)
        bound = round(bound * density)
        if saving < bound:
            continue  # Under twice its placeholder's size: masking it would gain next to nothing.
        available += saving
        if freed < goal:
            chosen[obs.call.id] = placeholder(obs.call, obs.result)
            freed += saving
        elif available >= min_batch_tokens:
            break
    if not chosen:
        return MaskPlan(skipped_reason="no tool result old enough to mask")
    if freed < min_batch_tokens:
        return MaskPlan(
            skipped_reason=(
                f"only ~{available} tokens maskable, "
                f"below the {min_batch_tokens}-token batch minimum"
            )
        )
    return MaskPlan(chosen, freed)
