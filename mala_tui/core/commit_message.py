"""The commit message drafted for what an agent left uncommitted, and a pull request's body.

The subject is the task (its first line, at most 72 characters); the body is what the
agent's notes say it did (its latest checkpoint's "Completed Work" section when it has
one, else the whole notes: the checkpoint, or the agent's final words when it never
wrote one), then where the work came from. A person can edit the draft before it is used.
Both come from agent and task text, so both leave out its control characters (`for_git`).
"""

from __future__ import annotations

from typing import Final

from mala_tui.core import events as ev
from mala_tui.core.checkpoint import split_sections
from mala_tui.core.text import flatten, for_git, shorten
from mala_tui.core.view import SessionState

SUBJECT_LIMIT: Final = 72
#: Lines of a checkpoint kept in a commit message: a summary, not the whole notebook.
BODY_LINES: Final = 40


def session_notes(session: SessionState) -> str | None:
    """What the session says it did: its latest checkpoint, else the agent's last words
    (as the event log kept them), else None."""
    if session.checkpoints:
        return session.checkpoints[-1].text
    for event in reversed(session.log):
        if isinstance(event, ev.MessageRecorded) and (event.role, event.kind) == (
            "assistant",
            "text",
        ):
            return event.excerpt
    return None


def draft_subject(task: str) -> str:
    """The task's first non-blank line, on one line, at most 72 characters."""
    first = next((line for line in task.splitlines() if line.strip()), "")
    return shorten(flatten(first), SUBJECT_LIMIT) or "Work of an agent session"


def draft_commit_message(
    task: str, notes: str | None, *, session: str, branch: str, run_id: str
) -> str:
    """Subject, a blank line, what was done, a blank line, where it came from."""
    task, session = for_git(task), for_git(session)
    notes = None if notes is None else for_git(notes)
    paragraphs = [draft_subject(task)]
    done = _what_was_done(notes)
    if done:
        paragraphs.append(done)
    whole_task = task.strip()
    if whole_task and flatten(whole_task) != paragraphs[0]:
        paragraphs.append(f"Task: {_clipped(whole_task)}")
    paragraphs.append(f"From mala-tui run {run_id}, session {session} (branch {branch}).")
    return "\n\n".join(paragraphs) + "\n"


def pull_request_body(notes: str | None, message: str) -> str:
    """The notes (the checkpoint) as written; without any, the commit message's body."""
    notes, message = for_git(notes or ""), for_git(message)
    if notes.strip():
        return notes.strip() + "\n"
    _, _, body = message.partition("\n\n")
    return body.strip() + "\n" if body.strip() else message


def _what_was_done(notes: str | None) -> str:
    if not notes or not notes.strip():
        return ""
    completed = split_sections(notes).get("Completed Work", "").strip()
    return _clipped(completed or notes.strip())


def _clipped(text: str) -> str:
    lines = text.splitlines()
    if len(lines) <= BODY_LINES:
        return text
    return "\n".join([*lines[:BODY_LINES], f"[{len(lines) - BODY_LINES} more lines]"])
