"""What fills a session's window: system and tools, conversation, the digest of folded
steps, tool results, free space.

The API gives one number per call, the whole prompt; the parts can only be
estimated from the conversation's text. The session's calibration (see
core.calibration) fits measured = overhead + density x chars/4 over its calls:
the overhead is what the transcript does not hold (the system prompt and the
tool definitions), and the density turns each block's characters into the
tokens the gauge counts. So every part here is a calibrated estimate, and what
they add up to is compared with the measured figure: `unattributed` is the
difference, kept in view rather than spread over the parts.

Masked results cost their placeholder in the window; what they would cost
shown again is what masking freed (the manager's own calibrated estimate).

A fold (core.fold) puts a digest of the folded steps after the task, in the first prompt:
it is its own part, not the task's. When the conversation held here does not have it (a
mirror that only follows the agent's stream), the digest's size as the fold reported it
stands in, so the part is shown whenever a fold is known.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Final

from mala_tui.core.calibration import Density
from mala_tui.core.fold import digest_lines, is_digest
from mala_tui.core.masking import is_masked
from mala_tui.core.transcript import (
    PRIMARY_ARGUMENT,
    Role,
    TextBlock,
    ToolCall,
    ToolResult,
    Transcript,
)
from mala_tui.core.usage import CHARS_PER_TOKEN

#: Tools whose primary argument names a file: their calls and results count towards it.
_FILE_ARGUMENTS: Final = frozenset({"file_path", "notebook_path"})


@dataclass(frozen=True, slots=True)
class WindowContents:
    """What the breakdown needs from a live session: its conversation and its calibration."""

    transcript: Transcript
    density: Density
    root: str = ""
    """The session's folder, for showing file paths relative to it."""


@dataclass(frozen=True, slots=True)
class KnownDigest:
    """The digest of folded steps as the latest fold reported it."""

    lines: int = 0
    estimate: int = 0
    """Its size, characters / 4 (uncalibrated, as the fold measures it)."""


@dataclass(frozen=True, slots=True)
class Share:
    """One line of a breakdown: a tool, a file or a kind of block, and its tokens."""

    label: str
    tokens: int
    count: int = 0
    """Tool calls (for a tool or a file), or blocks (for a kind)."""


@dataclass(frozen=True, slots=True)
class WindowBreakdown:
    """A session's window by what fills it, in calibrated tokens."""

    measured: int
    """The gauge: the latest call's prompt plus output, as the API counted it."""
    window: int
    system_and_tools: int
    """The calibration's overhead: what the API counts that the transcript does not hold."""
    conversation: int
    """Prompts, the agent's own text and its tool calls (their inputs, such as written files)."""
    results_shown: int
    results_masked: int
    """Placeholders of masked results, as they sit in the window now."""
    masked_count: int
    masked_would_cost: int
    """What the masked results would take if they were shown again (estimate)."""
    by_tool: tuple[Share, ...]
    """Calls and shown results per tool, largest first."""
    by_file: tuple[Share, ...]
    """Calls and results per file, largest first (Read, Write, Edit and the like)."""
    density: float
    density_measured: bool
    digest: int = 0
    """The digest of folded steps after the task (not counted in `conversation`)."""
    digest_lines: int = 0
    """Its lines: one per folded step."""

    @property
    def attributed(self) -> int:
        return (
            self.system_and_tools
            + self.conversation
            + self.digest
            + self.results_shown
            + self.results_masked
        )

    @property
    def unattributed(self) -> int:
        """Measured minus the parts: positive when the parts fall short of the gauge."""
        return self.measured - self.attributed

    @property
    def error_fraction(self) -> float:
        """How far the parts are from the gauge, as a share of it."""
        return abs(self.unattributed) / self.measured if self.measured > 0 else 0.0

    @property
    def free(self) -> int:
        return max(0, self.window - self.measured)

    def parts(self) -> tuple[Share, ...]:
        """The top-level parts in the order a bar shows them, free space last."""
        return (
            Share("system and tools", self.system_and_tools),
            Share("conversation", self.conversation),
            Share("digest of folded steps", self.digest, self.digest_lines),
            Share("tool results shown", self.results_shown),
            Share("tool results masked", self.results_masked, self.masked_count),
            Share("free", self.free),
        )


def breakdown(
    transcript: Transcript,
    *,
    measured: int,
    window: int,
    density: float,
    overhead: int,
    density_measured: bool = True,
    masked_would_cost: int = 0,
    root: str | None = None,
    known_digest: KnownDigest | None = None,
) -> WindowBreakdown:
    """Split the window measured at `measured` tokens into its parts.

    Args:
        transcript: the session's conversation as the manager holds it (masked results
            already replaced by their placeholders).
        measured: the gauge's figure.
        window: the window's size in tokens.
        density: tokens per chars/4 token, from the session's calibration.
        overhead: the calibration's fixed part (system prompt and tool definitions).
        masked_would_cost: what masking freed in this session (calibrated tokens).
        root: the session's folder; file paths under it are shown relative to it.
        known_digest: the digest the latest fold left, for a transcript without it.
    """
    tokens = _calibrated(density)
    conversation = shown = masked = masked_count = 0
    tool_chars: dict[str, int] = defaultdict(int)
    tool_calls: dict[str, int] = defaultdict(int)
    file_chars: dict[str, int] = defaultdict(int)
    file_calls: dict[str, int] = defaultdict(int)
    calls: dict[str, ToolCall] = {}
    for message in transcript:
        for block in message.blocks:
            if isinstance(block, TextBlock):
                conversation += 0 if is_digest(block.text) else len(block.text)
            elif isinstance(block, ToolCall):
                size = _call_characters(block)
                conversation += size
                calls[block.id] = block
                tool_chars[block.name] += size
                tool_calls[block.name] += 1
                path = _file_of(block, root)
                if path is not None:
                    file_chars[path] += size
                    file_calls[path] += 1
            elif isinstance(block, ToolResult):
                size = len(block.content)
                call = calls.get(block.tool_use_id)
                if is_masked(block.content):
                    masked += size
                    masked_count += 1
                else:
                    shown += size
                    if call is not None:
                        tool_chars[call.name] += size
                if call is not None:
                    path = _file_of(call, root)
                    if path is not None:
                        file_chars[path] += size
                elif message.role is Role.USER and not is_masked(block.content):
                    tool_chars["(unknown tool)"] += size
    digest, lines = _digest(transcript, known_digest, tokens)
    return WindowBreakdown(
        measured=measured,
        window=window,
        system_and_tools=max(0, overhead),
        conversation=tokens(conversation),
        results_shown=tokens(shown),
        results_masked=tokens(masked),
        masked_count=masked_count,
        masked_would_cost=max(0, masked_would_cost) + tokens(masked),
        by_tool=_ranked(tool_chars, tool_calls, tokens),
        by_file=_ranked(file_chars, file_calls, tokens),
        density=density,
        density_measured=density_measured,
        digest=digest,
        digest_lines=lines,
    )


def _calibrated(density: float) -> Callable[[int], int]:
    """Characters to calibrated tokens at `density`."""

    def tokens(characters: int) -> int:
        return round(characters / CHARS_PER_TOKEN * density)

    return tokens


def _digest(
    transcript: Transcript, known: KnownDigest | None, tokens: Callable[[int], int]
) -> tuple[int, int]:
    """The digest's calibrated tokens and its lines: as the transcript holds it, else as
    the latest fold reported it (its chars/4 estimate, calibrated alike)."""
    held = [
        block.text
        for message in transcript
        for block in message.blocks
        if isinstance(block, TextBlock) and is_digest(block.text)
    ]
    if held:
        return tokens(sum(map(len, held))), sum(len(digest_lines(text)) for text in held)
    if known is None or known.estimate <= 0:
        return 0, 0
    return tokens(known.estimate * CHARS_PER_TOKEN), known.lines


def _call_characters(call: ToolCall) -> int:
    # As Transcript counts it, so the parts add up to the characters the calibration saw.
    return len(call.name) + sum(len(str(value)) for value in call.input.values())


def _file_of(call: ToolCall, root: str | None) -> str | None:
    key = PRIMARY_ARGUMENT.get(call.name)
    if key not in _FILE_ARGUMENTS:
        return None
    value = call.input.get(key)
    if not isinstance(value, str) or not value:
        return None
    if root:
        path, base = PurePosixPath(value), PurePosixPath(root)
        if path.is_relative_to(base):
            return str(path.relative_to(base))
    return value


def _ranked(
    characters: dict[str, int], counts: dict[str, int], tokens: Callable[[int], int]
) -> tuple[Share, ...]:
    shares = [
        Share(label, tokens(size), counts.get(label, 0)) for label, size in characters.items()
    ]
    return tuple(sorted(shares, key=lambda share: (-share.tokens, share.label)))


def masked_since_restart(freed: Iterable[tuple[float, int]], restarted_at: float | None) -> int:
    """What the masks of the current fresh session freed: (time, tokens) of each batch."""
    return sum(tokens for at, tokens in freed if restarted_at is None or at >= restarted_at)


def digest_since_restart(
    folds: Iterable[tuple[float, int, int]], restarted_at: float | None
) -> KnownDigest | None:
    """The digest of the current fresh session: (time, lines, chars/4 estimate) of each
    mask's fold, 0 lines for a mask that did not fold. The digest is append-only, so the
    newest fold's figures are all of it; a restart starts a session without one."""
    current = [
        KnownDigest(lines, estimate)
        for at, lines, estimate in folds
        if lines > 0 and (restarted_at is None or at >= restarted_at)
    ]
    return current[-1] if current else None


def breakdown_of(
    contents: WindowContents,
    *,
    measured: int,
    window: int,
    masked_would_cost: int = 0,
    known_digest: KnownDigest | None = None,
) -> WindowBreakdown:
    """`breakdown` with the session's calibration as it stands."""
    return breakdown(
        contents.transcript,
        measured=measured,
        window=window,
        density=contents.density.ratio,
        overhead=contents.density.overhead,
        density_measured=contents.density.measured,
        masked_would_cost=masked_would_cost,
        root=contents.root or None,
        known_digest=known_digest,
    )
