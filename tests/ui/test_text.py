"""Agent text reaches the screen as the characters it is."""

from __future__ import annotations

import pytest

from mala_tui.core.text import clean
from mala_tui.ui.text import literal


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b[2J", "\u241b[2J"),  # ESC: clear-screen shows, does not run
        ("bell\x07", "bell\u2407"),
        ("back\x08space", "back\u2408space"),
        ("\r", "\u240d"),
        ("del\x7f", "del\u2421"),
        ("csi\x9b31m", "csi\\x9b31m"),  # a C1 control, the one-byte CSI
        ("tab\tand\nnewline", "tab\tand\nnewline"),
        ("[bold red]x[/]", "[bold red]x[/]"),
    ],
)
def test_clean_makes_controls_visible_and_keeps_the_rest(raw: str, shown: str) -> None:
    assert clean(raw) == shown


def test_one_line_marks_where_lines_broke() -> None:
    assert (
        clean("first\n  second\n\nthird\t!", one_line=True) == "first \u23ce second \u23ce third !"
    )


def test_literal_never_parses_markup() -> None:
    text = literal("[bold red]x[/] [link=https://example.com]y[/link] \x1b[2J")
    assert text.plain == "[bold red]x[/] [link=https://example.com]y[/link] \u241b[2J"
    assert text.spans == []
    assert "\x1b" not in text.plain


def test_literal_one_line_cuts_with_an_ellipsis() -> None:
    text = literal("a\nb", one_line=True)
    assert (text.plain, text.no_wrap, text.overflow) == ("a \u23ce b", True, "ellipsis")
