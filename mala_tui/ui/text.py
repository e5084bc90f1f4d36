"""Agent text on screen: literal `rich.text.Text`, never parsed as markup.

Tasks, checkpoints, tool output and error messages come from agents and their
tools. We build `Text` objects, never markup strings, so `[bold]` stays text;
control characters are made visible by `core.text.clean`, the one sanitiser
the app and the headless output share. Plain output (headless lines, what the
commands print) takes agent text as `core.text.safe_line`, without rich.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text

from mala_tui.core.text import clean


def literal(text: str, style: str | Style = "", *, one_line: bool = False) -> Text:
    """A `Text` showing `text` exactly: never parsed as markup, controls made visible."""
    if one_line:
        return Text(
            clean(text, one_line=True), style=style, no_wrap=True, overflow="ellipsis", end=""
        )
    return Text(clean(text), style=style, end="")
