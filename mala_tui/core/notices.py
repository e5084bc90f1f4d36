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
from dataclasses import dataclass

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.questions import ApprovalQuestion, Question, approval_id, permission_id
from mala_tui.core.text import clean, flatten, shorten

APP = "mala-tui"
SEPARATOR = " \u2014 "  # an em dash between the app's name and what it says
NAME_CHARS = 40
"""A session's name or a tool's is shortened to this in a notice: a title is a glance."""
REASON_CHARS = 100
"""A failure's reason is shortened to this in a notice."""
RESTART_APPROVAL = "waits for restart approval"


def _name(text: str) -> str:
    return shorten(flatten(clean(text, one_line=True)), NAME_CHARS)


def waiting_notice(question: Question) -> str:
    """What one question waits for: "fix-tests waits for approval", "docs asks to use Bash"."""
    session = _name(question.session)
    if isinstance(question, ApprovalQuestion):
        return f"{session} {RESTART_APPROVAL}"
    return f"{session} asks to use {_name(question.tool)}"


def _minutes(seconds: float) -> str:
    whole = max(0, round(seconds))
    return f"{whole // 60}:{whole % 60:02d}"


@dataclass(frozen=True, slots=True)
class Notice:
    """What a person is told when an event needs them: the session, what waits, the run."""

    session: str
    waits: str
    """What waits, in a word or two: "restart approval", "permission for Bash", "failure"."""
    text: str
    """The one line they read: "fix-tests asks to use Bash · run 20250101-...": the page
    title's words after the app's name, the desktop notification's, `notify_command`'s."""
    question: str = ""
    """The id of the question that waits (core.questions), so a notification can link to
    it; empty for an event that is no question (a failure)."""


def event_notice(event: ev.Event, run_id: str) -> Notice | None:
    """The notice for an event that needs a person (a restart waiting for approval, a tool
    waiting for permission, a question keeping its session's prompt cache from going
    cold, a session that failed); None for any other event."""
    session = _name(event.session)
    question = ""
    match event:
        case ev.ApprovalRequested():
            said = f"{session} {RESTART_APPROVAL}"
            waits = "restart approval"
            question = approval_id(event.session, event.checkpoint_number)
        case ev.PermissionRequested() if event.waiting:
            said = f"{session} asks to use {_name(event.tool)}"
            waits = f"permission for {_name(event.tool)}"
            question = permission_id(event.session, event.request_id)
        case ev.CacheCooling():
            what = shorten(flatten(clean(event.waiting_for, one_line=True)), REASON_CHARS)
            said = f"{session} still waits for {what}: its prompt cache goes cold in "
            said += _minutes(event.cold_in)
            waits = what
        case ev.SessionEnded() if event.status is EndStatus.FAILED:
            reason = shorten(flatten(clean(event.reason, one_line=True)), REASON_CHARS)
            said = f"{session} failed" + (f": {reason}" if reason else "")
            waits = "failure"
        case _:
            return None
    run = f" \u00b7 run {_name(run_id)}" if run_id else ""
    return Notice(event.session, waits, said + run, question)


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
