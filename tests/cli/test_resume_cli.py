"""`mala-tui resume` refusing what it cannot resume: one line, exit status 2, nothing changed."""

from __future__ import annotations

import json
from pathlib import Path

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.runtime.journal.writer import RunJournal
from tests.cli.test_cli import run

RUN_ID = "20260101-000000-beef"


def journaled(data: Path, *events: ev.Event, meta: dict[str, object] | None = None) -> Path:
    journal = RunJournal.create(data, RUN_ID, meta or {"mode": "run", "tasks": []})
    for event in events:
        journal.write(event)
    journal.close()
    return journal.events_path


def test_a_missing_run_is_named(tmp_path: Path) -> None:
    done = run(
        *("resume", "nope", "--headless", "--permissions", "deny", "--max-turns", "9"),
        *("--data-dir", str(tmp_path)),
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"mala-tui resume: no run 'nope' under {tmp_path / 'runs'}; `mala-tui runs` lists them\n"
    )


def test_without_a_terminal_the_app_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    done = run("resume", "latest", "--data-dir", str(tmp_path))
    assert done.returncode == 2
    assert "needs a terminal" in done.stderr and "--headless" in done.stderr


def test_a_journal_without_its_start_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    path = journaled(tmp_path)
    path.write_bytes(b'{"type": "run_sta')  # torn by a kill before the first line was whole
    done = run("resume", RUN_ID, "--headless", "--data-dir", str(tmp_path))
    assert done.returncode == 2
    assert "no run_started event: not a journal that can be resumed" in done.stderr
    assert "Traceback" not in done.stderr
    assert path.read_bytes() == b'{"type": "run_sta'


def test_a_finished_run_has_nothing_to_resume_and_show_says_none(tmp_path: Path) -> None:
    path = journaled(
        tmp_path,
        ev.RunStarted(at=1, run_id=RUN_ID, sessions=("a",), mode=ev.RunMode.RUN),
        ev.SessionEnded(at=2, session="a", status=EndStatus.DENIED, reason="restart denied"),
        ev.RunEnded(at=3, run_id=RUN_ID, ok=False),
    )
    before = path.read_bytes()
    done = run("resume", RUN_ID, "--headless", "--data-dir", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr == (
        f"mala-tui resume: run {RUN_ID} has nothing to resume (a: ended denied: restart denied)\n"
    )
    assert path.read_bytes() == before
    shown = run("show", RUN_ID, "--json", "--data-dir", str(tmp_path))
    assert json.loads(shown.stdout)["resume"] is None


def test_show_names_the_command_for_a_run_that_was_cut_off(tmp_path: Path) -> None:
    journaled(
        tmp_path,
        ev.RunStarted(at=1, run_id=RUN_ID, sessions=("a",), mode=ev.RunMode.RUN),
        ev.AgentSessionNamed(at=2, session="a", session_id="abc"),
        meta={"mode": "run", "tasks": [{"name": "a", "task": "t", "cwd": str(tmp_path)}]},
    )
    shown = run("show", RUN_ID, "--json", "--data-dir", str(tmp_path))
    assert shown.returncode == 0, shown.stderr
    hint = json.loads(shown.stdout)["resume"]
    assert hint["command"] == f"mala-tui resume {RUN_ID} --data-dir {tmp_path}"
    assert hint["sessions"] == {"a": "session_id"}
    assert hint["reasons"] == {"a": "had not ended; resumes agent session abc"}
