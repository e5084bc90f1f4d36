"""The commit message drafted for an agent's uncommitted work, and a pull request's body."""

from __future__ import annotations

from mala_tui.core import events as ev
from mala_tui.core.checkpoint import CheckpointOrigin
from mala_tui.core.commit_message import (
    BODY_LINES,
    draft_commit_message,
    draft_subject,
    pull_request_body,
    session_notes,
)
from mala_tui.core.run_view import RunState
from mala_tui.core.transcript import Role

CHECKPOINT = """## Goal
Fix the parser.

## Completed Work
- fixed the off-by-one in tokenize()
- added a test for empty input

## Remaining Tasks
- none
"""


def test_the_subject_is_the_tasks_first_line_on_one_line_and_short() -> None:
    assert draft_subject("\n  Fix the   failing tests\nin tests/parser") == "Fix the failing tests"
    long = draft_subject("x" * 100)
    assert len(long) == 72 and long.endswith("\u2026")
    assert draft_subject("   ") == "Work of an agent session"


def test_the_body_is_the_checkpoints_completed_work_then_the_task_and_its_origin() -> None:
    message = draft_commit_message(
        "Fix the parser\nand its tests", CHECKPOINT, session="p", branch="mala/r/p", run_id="r"
    )
    assert message == (
        "Fix the parser\n\n"
        "- fixed the off-by-one in tokenize()\n- added a test for empty input\n\n"
        "Task: Fix the parser\nand its tests\n\n"
        "From mala-tui run r, session p (branch mala/r/p).\n"
    )


def test_notes_without_sections_are_kept_whole_and_long_ones_clipped() -> None:
    short = draft_commit_message("Do it", "Did it.", session="s", branch="b", run_id="r")
    assert short == "Do it\n\nDid it.\n\nFrom mala-tui run r, session s (branch b).\n"
    notes = "\n".join(f"line {n}" for n in range(BODY_LINES + 5))
    clipped = draft_commit_message("Do it", notes, session="s", branch="b", run_id="r")
    assert f"line {BODY_LINES - 1}\n[5 more lines]" in clipped
    assert f"line {BODY_LINES}\n" not in clipped
    bare = draft_commit_message("Do it", None, session="s", branch="b", run_id="r")
    assert bare == "Do it\n\nFrom mala-tui run r, session s (branch b).\n"


def test_a_pull_requests_body_is_the_checkpoint_else_the_messages_body() -> None:
    message = "Subject\n\nWhat was done.\n"
    assert pull_request_body(CHECKPOINT, message) == CHECKPOINT
    assert pull_request_body(None, message) == "What was done.\n"
    assert pull_request_body("  ", "Subject only\n") == "Subject only\n"


def test_notes_are_the_latest_checkpoint_else_the_agents_last_words() -> None:
    said = [
        ev.MessageRecorded(at=1.0, session="s", role=Role.ASSISTANT, kind="text", excerpt="first"),
        ev.MessageRecorded(at=2.0, session="s", role=Role.ASSISTANT, kind="text", excerpt="Done."),
        ev.MessageRecorded(at=3.0, session="s", role=Role.USER, kind="tool_result", excerpt="out"),
    ]
    run = RunState().apply_all(said)
    assert session_notes(run.sessions["s"]) == "Done."
    run.apply(
        ev.CheckpointSaved(
            at=4.0, session="s", number=1, origin=CheckpointOrigin.TAGGED, text="cp 1"
        )
    )
    run.apply(
        ev.CheckpointSaved(
            at=5.0, session="s", number=2, origin=CheckpointOrigin.TAGGED, text="cp 2"
        )
    )
    assert session_notes(run.sessions["s"]) == "cp 2"
    assert session_notes(RunState().apply_all([said[2]]).sessions["s"]) is None
