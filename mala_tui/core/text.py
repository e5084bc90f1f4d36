"""Text as mala-tui shows it, in the app and on a terminal alike.

Four things every layer needs the same way:

- agent text made safe (`clean`): tasks, checkpoints, tool output and error
  messages come from agents and their tools, and must reach a screen or a log
  as the characters they are. An ESC would let a tool's output move the cursor,
  clear the screen or retitle the window, so every C0/C1 control character but
  newline and tab is replaced by a visible stand-in;
- agent text made safe for git (`for_git`): a commit message, a reflog line or a pull
  request's body outlives the session and is printed by `git log` on terminals that
  mala-tui never sees, so there the control characters are removed, not pictured;
- long text shortened (`shorten`): cut to a limit, the cut marked with "…"
  (`excerpt`: flattened to one line and shortened, for the event log);
- figures in short form (`tokens`, `percent`), for narrow cards and log lines.

Pure string work: the app wraps `clean`'s result in `rich.text.Text` itself
(`ui.text.literal`), so markup such as `[bold]` stays text there too.
"""

from __future__ import annotations

import re
from typing import Final

ELLIPSIS: Final = "\u2026"  # "…"
_CONTROL: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_NEWLINES: Final = re.compile(r"\s*\n\s*")
_EXCERPT: Final = 300


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # the Control Pictures block: ESC shows as "␛"
    if code == 0x7F:
        return "\u2421"  # "␡"
    return f"\\x{code:02x}"  # C1 controls have no pictures; show their code


def clean(text: str, *, one_line: bool = False) -> str:
    """`text` with every control character (but newline and tab) made visible.

    With `one_line`, line breaks become " ⏎ " so a single line shows where the
    text broke instead of hiding everything after the first line.
    """
    if one_line:
        text = _NEWLINES.sub(" \u23ce ", text.strip())
        text = text.replace("\t", " ")
    return _CONTROL.sub(_visible, text)


def for_git(text: str) -> str:
    """`text` without its control characters (but newline and tab): what may go into git.

    A carriage return goes too: a Windows line end becomes a plain newline, and a lone one
    cannot send `git log`'s cursor back over the start of its line.
    """
    return _CONTROL.sub("", text)


def flatten(text: str) -> str:
    """Every run of whitespace, line breaks included, as one space: one line."""
    return " ".join(text.split())


def shorten(text: str, limit: int) -> str:
    """`text` if it fits in `limit` characters, else its start and "…", `limit` in all."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 1)] + ELLIPSIS


def safe_line(text: str, limit: int = 160) -> str:
    """Agent text as one safe line (control characters made visible), cut at `limit`."""
    return shorten(clean(text, one_line=True), limit)


def excerpt(text: str) -> str:
    """Text as one line of the event log, shortened."""
    return shorten(flatten(text), _EXCERPT)


def tokens(count: int) -> str:
    """12, 9.8k, 123k, 1.2M: at most four significant characters, for narrow cards."""
    if count < 1_000:
        return str(count)
    if count < 10_000:
        return f"{count / 1_000:.1f}k"
    if count < 1_000_000:
        return f"{count // 1_000}k"
    return f"{count / 1_000_000:.1f}M"


def plural(count: float, noun: str) -> str:
    """ "1 commit", "3 commits", "0.5 minutes": a count and its noun, agreeing."""
    shown = f"{count:g}" if isinstance(count, float) else str(count)
    return f"{shown} {noun}{'s' if count != 1 else ''}"


def percent(fraction: float) -> str:
    return f"{fraction * 100:.0f}%"
