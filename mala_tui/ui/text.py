"""Agent text made safe to show: literal, with control characters made visible.

Tasks, checkpoints, tool output and error messages come from agents and their
tools. They must reach the screen as the characters they are: Rich markup such
as `[bold]` stays text (we build `rich.text.Text`, never markup strings) and no
escape sequence reaches the terminal (an ESC would let a tool's output move the
cursor, clear the screen or retitle the window). Rich strips only a few control
codes itself, so every C0/C1 control character except newline and tab is
replaced by a visible stand-in here.
"""

from __future__ import annotations

import re
from typing import Final

from rich.style import Style
from rich.text import Text

_CONTROL: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_NEWLINES: Final = re.compile(r"\s*\n\s*")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # the Control Pictures block: ESC shows as "␛"
    if code == 0x7F:
        return "\u2421"  # "␡"
    return f"\\x{code:02x}"  # C1 controls have no pictures; show their code


def clean(text: str, *, one_line: bool = False) -> str:
    """`text` with every control character (but newline and tab) made visible.

    With `one_line`, line breaks become " ⏎ " so a card's single line shows
    where the text broke instead of hiding everything after the first line.
    """
    if one_line:
        text = _NEWLINES.sub(" \u23ce ", text.strip())
        text = text.replace("\t", " ")
    return _CONTROL.sub(_visible, text)


def literal(text: str, style: str | Style = "", *, one_line: bool = False) -> Text:
    """A `Text` showing `text` exactly: never parsed as markup, controls made visible."""
    if one_line:
        return Text(
            clean(text, one_line=True), style=style, no_wrap=True, overflow="ellipsis", end=""
        )
    return Text(clean(text), style=style, end="")
