"""Inputs, bounded and honest: a number too large, an input with no end, a name no folder
can take. Each runs the real command as a user would: one line, the documented status."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.cli.test_hardening import finished_run, mala, one_line

HUGE = "9" * 5000
"""More digits than Python turns into an integer without being told to."""
LARGE = "9" * 400
"""Few enough digits to be read, far too many to be any real count."""


# -- a huge integer ------------------------------------------------------------------------------


@pytest.mark.parametrize("number", [HUGE, LARGE, "1e999"], ids=["huge", "large", "inf"])
def test_a_huge_number_in_a_journal_line_is_skipped_by_runs_show_and_resume(
    tmp_path: Path, number: str
) -> None:
    data = tmp_path / "data"
    folder = finished_run(data)
    with (folder / "events.jsonl").open("a") as journal:
        journal.write('{"type":"usage","at":' + number + "}\n")
    listed = mala("runs", "--data-dir", str(data))
    assert listed.returncode == 0, listed.stderr
    assert "20261123-101010-abcd" in listed.stdout and " ok " in listed.stdout
    shown = mala("show", "latest", "--json", "--data-dir", str(data))
    assert shown.returncode == 0, shown.stderr
    (skipped,) = json.loads(shown.stdout)["skipped_lines"]
    assert skipped.startswith("line 4: number ")
    assert len(skipped) < 120
    resumed = mala("resume", "latest", "--headless", "--data-dir", str(data))
    assert resumed.returncode == 2
    assert "Traceback" not in resumed.stderr
    said = resumed.stderr.splitlines()
    assert said[0].startswith("mala-tui resume: skipped line 4: number ")
    assert said[1].endswith("has nothing to resume (s1: ended done: ok)")


@pytest.mark.parametrize("number", [HUGE, LARGE], ids=["huge", "large"])
def test_a_huge_number_in_a_set_is_one_line_and_exit_2(number: str) -> None:
    done = mala("--set", f"context.max_restarts={number}", "config", "show")
    assert done.returncode == 2
    line = one_line(done)
    assert line.startswith("mala-tui: config error: --set context.max_restarts: number too large")
    assert len(line) < 200


@pytest.mark.parametrize("number", [HUGE, LARGE], ids=["huge", "large"])
def test_a_huge_number_in_the_environment_is_one_line_and_exit_2(number: str) -> None:
    env = dict(os.environ, MALA_TUI_CONTEXT__MAX_RESTARTS=number)
    done = mala("config", "show", env=env)
    assert done.returncode == 2
    line = one_line(done)
    assert "MALA_TUI_CONTEXT__MAX_RESTARTS: number too large" in line
    assert len(line) < 200


@pytest.mark.parametrize("number", [HUGE, LARGE], ids=["huge", "large"])
def test_a_huge_number_in_the_config_file_is_one_line_and_exit_2(
    tmp_path: Path, number: str
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f"[context]\nmax_restarts = {number}\n")
    done = mala("config", "show", env=dict(os.environ, MALA_TUI_CONFIG_FILE=str(config)))
    assert done.returncode == 2
    line = one_line(done)
    assert line.startswith(f"mala-tui: config error: config file {config}: number too large")
    assert len(line) < 300


@pytest.mark.parametrize("suffix", [".toml", ".json"])
@pytest.mark.parametrize("number", [HUGE, LARGE], ids=["huge", "large"])
def test_a_huge_number_in_a_tasks_file_is_one_line_and_exit_2(
    tmp_path: Path, suffix: str, number: str
) -> None:
    tasks = tmp_path / f"tasks{suffix}"
    if suffix == ".toml":
        tasks.write_text(f'[[task]]\ntask = "t"\nmax_turns = {number}\n')
    else:
        tasks.write_text('[{"task": "t", "max_turns": ' + number + "}]")
    done = mala("run", "--tasks", str(tasks), "--headless", "--data-dir", str(tmp_path / "d"))
    assert done.returncode == 2
    line = one_line(done)
    assert line.startswith(f"mala-tui run: tasks file {tasks}: number too large")
    assert len(line) < 300
    assert not (tmp_path / "d" / "runs").exists()


# -- a task larger than the window -------------------------------------------------------------


def test_a_task_larger_than_its_window_is_refused_before_the_run(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.json"
    big = "Summarise this. " + "lorem ipsum " * 75_000  # about 229,000 tokens
    tasks.write_text(json.dumps([{"name": "small", "task": "t"}, {"name": "big", "task": big}]))
    done = mala(
        *("--set", "agent.model=claude-sonnet-4-5", "run", "--tasks", str(tasks)),
        *("--headless", "--data-dir", str(tmp_path / "d")),
    )
    assert done.returncode == 2
    assert one_line(done) == (
        f"mala-tui run: task 'big' is about {-(-len(big) // 4):,} tokens ({len(big):,} "
        "characters at 4 a token): more than the 160,000 of its 200,000-token window a session "
        "may fill before it restarts (hard threshold 0.8); shorten it, or put its bulk in a "
        "file the agent reads"
    )
    assert not (tmp_path / "d" / "runs").exists()


def test_a_profiles_window_and_thresholds_are_the_ones_a_task_is_held_to(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.toml"
    big = "x" * 700_000  # 175,000 tokens: past a 200K window's hard threshold, not a 1M one's
    tasks.write_text(
        '[profile.wide]\nmodel = "claude-sonnet-4-5[1m]"\n\n'
        f'[[task]]\nname = "wide"\nprofile = "wide"\ntask = "{big}"\n\n'
        f'[[task]]\nname = "unmanaged"\nmanage = "off"\ntask = "{"y" * 900_000}"\n'
    )
    done = mala(
        *("--set", "agent.model=claude-sonnet-4-5", "run", "--tasks", str(tasks)),
        *("--headless", "--data-dir", str(tmp_path / "d")),
    )
    assert done.returncode == 2
    assert one_line(done).startswith(
        "mala-tui run: task 'unmanaged' is about 225,000 tokens (900,000 characters at 4 a "
        "token): more than its 200,000-token window;"
    )
