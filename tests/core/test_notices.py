"""A page's title says what waits, for whom, in which run: one line whatever the names hold."""

from __future__ import annotations

from mala_tui.core.notices import page_title, waiting_notice
from mala_tui.core.questions import ApprovalQuestion, PermissionQuestion


def approval(session: str, at: float = 1.0) -> ApprovalQuestion:
    return ApprovalQuestion(f"{session}/approval/1", session, at, 1, "text", "hard threshold")


def permission(session: str, tool: str, at: float = 2.0) -> PermissionQuestion:
    return PermissionQuestion(f"{session}/permission/1", session, at, "1", tool, "ls", "ls")


def test_a_title_names_what_waits_and_the_run() -> None:
    assert page_title("r1", [approval("fix-tests")]) == (
        "mala-tui \u2014 fix-tests waits for restart approval \u00b7 run r1"
    )
    assert page_title("r1", [permission("docs", "Bash")]) == (
        "mala-tui \u2014 docs asks to use Bash \u00b7 run r1"
    )


def test_the_oldest_question_is_named_and_the_others_counted() -> None:
    title = page_title("r1", [approval("a"), permission("b", "Bash"), permission("c", "Edit")])
    assert title == "mala-tui \u2014 a waits for restart approval (+2 more) \u00b7 run r1"


def test_nothing_waiting_and_ended_runs() -> None:
    assert page_title("r1", []) == "mala-tui \u2014 run r1"
    assert page_title("r1", [approval("a")], ended=True) == "mala-tui \u2014 run r1 (ended)"


def test_names_cannot_break_the_line_or_run_on() -> None:
    said = waiting_notice(permission("evil\x1b]0;PWNED\x07\nname", "T" * 200))
    assert "\x1b" not in said and "\x07" not in said and "\n" not in said
    assert said.startswith("evil\u241b]0;PWNED\u2407")
    assert len(said) < 100 and said.endswith("\u2026")
