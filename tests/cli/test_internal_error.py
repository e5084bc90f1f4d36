"""The last line of defence: an unexpected exception is one line, exit 70, details saved."""

from __future__ import annotations

import io
import os
import stat
import tempfile
from pathlib import Path

import pytest

from mala_tui import cli
from mala_tui.commands import runs_cmd
from mala_tui.commands.internal_error import report_internal_error
from mala_tui.core import events as ev
from mala_tui.runtime.journal.writer import EVENTS_FILE, forget_opened_runs, list_runs, read_events
from mala_tui.runtime.run import slots as slots_module


def open_files() -> set[str]:
    return {os.path.realpath(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")}


def test_an_unexpected_error_in_runs_is_one_line_and_exit_70(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*_args: object) -> int:
        raise RuntimeError("the listing broke\nacross lines")

    monkeypatch.setattr(runs_cmd, "runs", broken)
    data = tmp_path / "data"
    data.mkdir()
    assert cli.main(["runs", "--data-dir", str(data)]) == 70
    err = capsys.readouterr().err
    assert err == (
        "mala-tui: internal error: RuntimeError: the listing broke \u23ce across lines "
        f"(details in {data / 'error.log'})\n"
    )
    log = (data / "error.log").read_text()
    assert "Traceback" in log and "the listing broke" in log


def test_an_error_inside_a_run_is_logged_in_its_folder_and_the_journal_is_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def broken(*_args: object) -> None:
        raise RuntimeError("a bug in the supervisor")

    monkeypatch.setattr(slots_module.Slots, "_run_in_slot", broken)
    data = tmp_path / "data"
    code = cli.main(
        ["run", "a task", "--headless", "--cwd", str(tmp_path), "--data-dir", str(data)]
    )
    assert code == 70
    (run,) = list_runs(data)
    err = capsys.readouterr().err
    assert err.startswith("mala-tui: internal error: ")
    assert err.endswith(f"(details in {run.directory / 'error.log'})\n")
    assert err.count("\n") == 1
    assert "a bug in the supervisor" in (run.directory / "error.log").read_text()
    events = read_events(run.directory / EVENTS_FILE).events
    assert isinstance(events[-1], ev.RunEnded) and not events[-1].ok
    assert str(run.directory / EVENTS_FILE) not in open_files()  # the journal was closed


def test_without_a_run_folder_the_details_go_to_the_users_own_log_not_a_planted_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forget_opened_runs()
    shared = tmp_path / "shared-tmp"  # stands for /tmp, where anyone may plant a link
    shared.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (shared / "mala-tui-error.log").symlink_to(victim)
    err = io.StringIO()
    assert report_internal_error(RuntimeError("boom"), None, err) == 70
    assert victim.read_text() == "precious\n"
    log = tmp_path / "state" / "mala-tui" / "log" / "error.log"
    assert err.getvalue().endswith(f"(details in {log})\n")
    assert "RuntimeError: boom" in log.read_text()
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert stat.S_IMODE(log.parent.stat().st_mode) == 0o700


def test_links_planted_where_the_log_goes_are_refused_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forget_opened_runs()
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    own = tmp_path / "state" / "mala-tui" / "log"
    own.mkdir(parents=True)
    (own / "error.log").symlink_to(victim)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (shared / f"mala-tui-{os.getuid()}").symlink_to(elsewhere)
    err = io.StringIO()
    assert report_internal_error(RuntimeError("boom"), None, err) == 70
    assert err.getvalue().endswith("(the details could not be saved)\n")
    assert victim.read_text() == "precious\n"
    assert list(elsewhere.iterdir()) == []
