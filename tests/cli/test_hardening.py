"""Bad input, damaged runs, no terminal: one clear line and the documented exit status.

Each case runs the real command as a user would; none may print a traceback.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.runtime.journal.writer import RunJournal


def mala(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "mala_tui", *args],
        capture_output=True,
        text=True,
        env=env or dict(os.environ),
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    return done


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def finished_run(data: Path, run_id: str = "20261123-101010-abcd", **names: str) -> Path:
    sessions = tuple(names) or ("s1",)
    with RunJournal.create(data, run_id, {"mode": "run"}) as journal:
        journal.write(ev.RunStarted(at=1.0, run_id=run_id, sessions=sessions, mode=ev.RunMode.RUN))
        for name in sessions:
            journal.write(ev.SessionEnded(at=2.0, session=name, status=EndStatus.DONE, reason="ok"))
        journal.write(ev.RunEnded(at=3.0, run_id=run_id, ok=True))
    return journal.directory


def no_runs_under(data: Path) -> bool:
    return not (data / "runs").exists() or not any((data / "runs").iterdir())


# -- 1. a poisoned journal line -----------------------------------------------------------------


@pytest.mark.parametrize("poison", ['{"type":["x"]}', '{"type":{}}', '{"type":null}'])
def test_a_poisoned_line_is_skipped_by_runs_and_show(tmp_path: Path, poison: str) -> None:
    data = tmp_path / "data"
    folder = finished_run(data)
    with (folder / "events.jsonl").open("a") as journal:
        journal.write(poison + "\n")
    listed = mala("runs", "--data-dir", str(data))
    assert listed.returncode == 0
    assert "20261123-101010-abcd" in listed.stdout and " ok " in listed.stdout
    shown = mala("show", "latest", "--json", "--data-dir", str(data))
    assert shown.returncode == 0
    assert json.loads(shown.stdout)["skipped_lines"] == [
        "line 4: `type` is not a string: " + (json.dumps(json.loads(poison)["type"]))
    ]


# -- 2. a data dir that cannot hold a run -------------------------------------------------------


@pytest.mark.parametrize("command", [["demo", "--headless"], ["run", "a task", "--headless"]])
def test_a_data_dir_that_is_a_file_is_one_line_and_exit_74(command: list[str]) -> None:
    done = mala(*command, "--data-dir", "/dev/null")
    assert done.returncode == 74
    assert one_line(done) == (
        f"mala-tui {command[0]}: cannot keep a run under /dev/null: Not a directory (/dev/null)"
    )


def test_runs_and_show_on_a_data_dir_that_is_a_file() -> None:
    assert mala("runs", "--data-dir", "/dev/null").stdout == "no runs under /dev/null/runs\n"
    shown = mala("show", "latest", "--data-dir", "/dev/null")
    assert shown.returncode == 2
    assert one_line(shown) == "mala-tui show: no runs under /dev/null/runs"


# -- 5. secrets on headless output, 6. escapes in names -----------------------------------------


def test_runs_prints_session_names_literally(tmp_path: Path) -> None:
    data = tmp_path / "data"
    finished_run(data, **{"evil\x1b]0;owned\x07": "", "plain": ""})
    listed = mala("runs", "--data-dir", str(data))
    assert "\x1b" not in listed.stdout and "\x07" not in listed.stdout
    assert "evil\u241b]0;owned\u2407, plain" in listed.stdout  # control pictures


# -- 8. tasks on the command line get the tasks file's checks ----------------------------------


def test_an_empty_task_on_the_command_line_is_refused(tmp_path: Path) -> None:
    done = mala("run", "   ", "--headless", "--data-dir", str(tmp_path / "data"))
    assert done.returncode == 2
    assert one_line(done) == "mala-tui run: task 1 on the command line is empty"
    assert no_runs_under(tmp_path / "data")


def test_a_cwd_that_is_not_a_folder_is_refused_before_any_journal(tmp_path: Path) -> None:
    done = mala(
        "run", "a task", "--cwd", "/nonexistent", "--headless", "--data-dir", str(tmp_path / "d")
    )
    assert done.returncode == 2
    assert one_line(done) == "mala-tui run: --cwd: '/nonexistent' is not a folder"
    assert no_runs_under(tmp_path / "d")


# -- 9. more bad input --------------------------------------------------------------------------


def test_a_tasks_file_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.toml"
    tasks.write_bytes(b'[[task]]\ntask = "caf\xe9"\n')
    done = mala("run", "--tasks", str(tasks), "--headless")
    assert done.returncode == 2
    assert one_line(done) == (
        f"mala-tui run: tasks file {tasks}: not UTF-8 text (byte 20: invalid continuation byte)"
    )


def test_a_nul_in_a_json_cwd_is_one_line(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps([{"task": "t", "cwd": "a\u0000b"}]))
    done = mala("run", "--tasks", str(tasks), "--headless")
    assert done.returncode == 2
    assert one_line(done) == (
        f"mala-tui run: tasks file {tasks}, task 1: cwd: '{tmp_path}/a\\x00b' is not a folder"
    )


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--port", "99999", "99999 is not a port: 0 to 65535"),
        ("--port", "-1", "-1 is not a port: 0 to 65535"),
        ("--window", "0", "0: must be more than 0"),
        ("--delay", "nan", "nan: must be 0 or more seconds"),
        ("--delay", "-1", "-1: must be 0 or more seconds"),
    ],
)
def test_loopback_serve_refuses_impossible_numbers(option: str, value: str, says: str) -> None:
    done = mala("loopback", "serve", "--scenario", "quickstart", option, value)
    assert done.returncode == 2
    assert done.stderr.strip().endswith(f"argument {option}: {says}")


def test_loopback_serve_refuses_a_log_it_cannot_write_before_serving(tmp_path: Path) -> None:
    log = tmp_path / "missing" / "log.jsonl"
    done = mala("loopback", "serve", "--scenario", "quickstart", "--log", str(log))
    assert done.returncode == 2
    assert one_line(done) == f"mala-tui: --log {log}: cannot be written: No such file or directory"
    assert done.stdout == ""  # refused before it started serving


def test_loopback_serve_blames_the_workspace_not_the_port() -> None:
    done = mala("loopback", "serve", "--scenario", "quickstart", "--workspace", "/dev/null/ws")
    assert done.returncode == 1
    assert one_line(done) == "mala-tui: /dev/null/ws: Not a directory"


def test_a_scenario_file_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    scenario = tmp_path / "bad.toml"
    scenario.write_bytes(b'name = "\xff"\n')
    done = mala("loopback", "serve", "--scenario", str(scenario))
    assert done.returncode == 2
    assert one_line(done) == (f"mala-tui: {scenario}: not UTF-8 text (byte 8: invalid start byte)")


# -- 10. no terminal ----------------------------------------------------------------------------


def test_show_without_a_terminal_says_so_and_exits_2(tmp_path: Path) -> None:
    data = tmp_path / "data"
    finished_run(data)
    done = mala("show", "latest", "--data-dir", str(data))
    assert done.returncode == 2
    assert one_line(done) == (
        "mala-tui show: the app needs a terminal (stdin and stdout); without one, use --json"
    )


@pytest.mark.parametrize("command", [["run", "a task"], ["demo"]])
def test_the_app_without_a_terminal_says_so_before_any_journal(
    command: list[str], tmp_path: Path
) -> None:
    done = mala(*command, "--data-dir", str(tmp_path / "data"))
    assert done.returncode == 2
    assert one_line(done) == (
        f"mala-tui {command[0]}: the app needs a terminal (stdin and stdout); "
        "without one, use --headless"
    )
    assert no_runs_under(tmp_path / "data")


# -- 12. smaller --------------------------------------------------------------------------------


def test_approve_ask_without_a_terminal_leaves_no_orphan_run(tmp_path: Path) -> None:
    done = mala("run", "a task", "--headless", "--approve", "ask", "--data-dir", str(tmp_path))
    assert done.returncode == 2
    assert "no terminal to ask on" in one_line(done)
    assert no_runs_under(tmp_path)


def test_a_config_file_that_is_a_folder_is_an_error(tmp_path: Path) -> None:
    env = dict(os.environ, MALA_TUI_CONFIG_FILE=str(tmp_path))
    done = mala("config", "show", env=env)
    assert done.returncode == 2
    assert one_line(done) == (
        f"mala-tui: config error: config file {tmp_path}: not a file "
        "(MALA_TUI_CONFIG_FILE or the default)"
    )


def test_an_empty_model_is_refused() -> None:
    done = mala("run", "a task", "--model", "", "--headless")
    assert done.returncode == 2
    assert done.stderr.strip().endswith(
        "argument --model: must not be empty (leave --model out for the default)"
    )


def test_sessions_have_a_default_timeout() -> None:
    shown = json.loads(mala("config", "show", "--json").stdout)
    assert shown["idle.session_timeout_seconds"]["value"] == 4 * 3600


async def test_the_demos_files_are_private(tmp_path: Path) -> None:
    from mala_tui.config_loading import load_settings
    from mala_tui.runtime.run.demo import demo_run

    loaded = load_settings(overrides=[("storage.data_dir", tmp_path / "data", "test")])
    async with demo_run(loaded, scenarios=("quickstart",)) as started:
        folder = started.journal.directory
    loose = [
        str(path.relative_to(folder))
        for path in folder.rglob("*")
        if stat.S_IMODE(path.lstat().st_mode) & 0o077
    ]
    assert loose == []
    assert (folder / "loopback-requests.jsonl").is_file()


def test_the_final_summary_prints_names_and_reasons_literally() -> None:
    import io

    from mala_tui.core.actions import EndStatus
    from mala_tui.runtime.run.run_types import RunResult
    from mala_tui.ui.headless import exit_status

    out = io.StringIO()
    result = RunResult(
        statuses={"t\x1b]0;owned\x07": EndStatus.FAILED},
        reasons={"t\x1b]0;owned\x07": "boom\x1b[2J x-api-key: sk-ant-api03-abcdefghijkl"},
        pids=[],
    )
    assert exit_status(result, out) == 1
    assert out.getvalue() == "t\u241b]0;owned\u2407: failed - boom\u241b[2J x-api-key: [redacted]\n"
