"""What waits for a person, said in one line: for a page's title and notifications.

A browser tab on `mala-tui serve` shows its title even when the tab is in the
background, so the title says what the run needs: which session waits for what
(a restart approval, permission for which tool), and the run. The same words
serve a notification, so a person reads one phrase wherever they are told.

Names and tools come from the agent's side (a task's name, a tool an MCP server
offers): each is cleaned to one line, its control characters made visible, so a
name cannot retitle a window or break a line.
"""

from __future__ import annotations

from collections.abc import Sequence

from mala_tui.core.questions import ApprovalQuestion, Question
from mala_tui.core.text import clean, flatten, shorten

APP = "mala-tui"
SEPARATOR = " \u2014 "  # an em dash between the app's name and what it says
NAME_CHARS = 40
"""A session's name or a tool's is shortened to this in a notice: a title is a glance."""


def _name(text: str) -> str:
    return shorten(flatten(clean(text, one_line=True)), NAME_CHARS)


def waiting_notice(question: Question) -> str:
    """What one question waits for: "fix-tests waits for approval", "docs asks to use Bash"."""
    session = _name(question.session)
    if isinstance(question, ApprovalQuestion):
        return f"{session} waits for approval"
    return f"{session} asks to use {_name(question.tool)}"


def page_title(run_id: str, questions: Sequence[Question], *, ended: bool = False) -> str:
    """A console's title: the app, what waits (oldest first) and the run.

    "mala-tui — fix-tests waits for approval · run 20250101-120000-ab12"; with several
    questions the oldest is named and the rest counted; with none, only the run.
    """
    run = f"run {_name(run_id)}"
    if ended:
        return f"{APP}{SEPARATOR}{run} (ended)"
    if not questions:
        return f"{APP}{SEPARATOR}{run}"
    said = waiting_notice(questions[0])
    if len(questions) > 1:
        said += f" (+{len(questions) - 1} more)"
    return f"{APP}{SEPARATOR}{said} \u00b7 {run}"
