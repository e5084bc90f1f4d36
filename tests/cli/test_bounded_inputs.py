"""Inputs, bounded and honest: a number too large, an input with no end, a name no folder
can take. Each runs the real command as a user would: one line, the documented status."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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


# -- smaller ----------------------------------------------------------------------------------


def test_a_config_file_of_dev_null_means_no_config_file(tmp_path: Path) -> None:
    env = dict(os.environ, MALA_TUI_CONFIG_FILE=os.devnull)
    shown = mala("config", "show", env=env)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0] == "# config file: none (MALA_TUI_CONFIG_FILE=/dev/null)"
    assert (
        json.loads(mala("config", "show", "--json", env=env).stdout)["context.soft_threshold"][
            "source"
        ]
        == "default"
    )
    assert mala("config", "path", env=env).stdout == "/dev/null\n"
    listed = mala("runs", "--data-dir", str(tmp_path), env=env)
    assert listed.returncode == 0


@pytest.mark.parametrize("source", ["/dev/zero", "/dev/urandom"])
def test_an_endless_tasks_file_is_read_up_to_a_limit(tmp_path: Path, source: str) -> None:
    done = mala("run", "--tasks", source, "--headless", "--data-dir", str(tmp_path / "d"))
    assert done.returncode == 2
    assert one_line(done) == (
        f"mala-tui run: tasks file {source}: cannot be read: larger than 16 MiB"
    )
    assert not (tmp_path / "d" / "runs").exists()


def test_an_endless_config_file_is_read_up_to_a_limit(tmp_path: Path) -> None:
    big = tmp_path / "config.toml"
    with big.open("w") as out:
        out.write("# " + "x" * (17 * 2**20) + "\n")
    done = mala("config", "show", env=dict(os.environ, MALA_TUI_CONFIG_FILE=str(big)))
    assert done.returncode == 2
    assert one_line(done) == (
        f"mala-tui: config error: config file {big}: cannot be read: larger than 16 MiB"
    )


def sdk_without_its_cli(tmp_path: Path, cli: bytes | None) -> dict[str, str]:
    """An environment whose claude-agent-sdk (a copy, first on the path) has `cli` as its
    bundled CLI (None: none), with no `claude` on PATH either."""
    import shutil

    import claude_agent_sdk

    site = tmp_path / "site"
    shutil.copytree(
        Path(claude_agent_sdk.__file__).parent,
        site / "claude_agent_sdk",
        ignore=shutil.ignore_patterns("claude", "__pycache__"),
    )
    if cli is not None:
        (site / "claude_agent_sdk" / "_bundled" / "claude").write_bytes(cli)  # not executable
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    return dict(os.environ, PYTHONPATH=str(site), PATH=f"{bin_dir}:/usr/bin:/bin")


@pytest.mark.parametrize("cli", [None, b"#!/bin/sh\n"], ids=["missing", "not-executable"])
def test_a_missing_or_unusable_cli_is_one_line_before_the_run(
    tmp_path: Path, cli: bytes | None
) -> None:
    env = sdk_without_its_cli(tmp_path, cli)
    done = mala("run", "a task", "--headless", "--data-dir", str(tmp_path / "d"), env=env)
    assert done.returncode == 2
    bundled = tmp_path / "site" / "claude_agent_sdk" / "_bundled" / "claude"
    fix = "pip install --force-reinstall claude-agent-sdk"
    assert one_line(done) == (
        f"mala-tui run: Claude Code's CLI is missing: not at {bundled}, and no `claude` on "
        f"PATH (reinstall it: {fix})"
        if cli is None
        else f"mala-tui run: Claude Code's CLI is not executable: {bundled} (chmod +x it, or "
        f"reinstall it: {fix})"
    )
    assert not (tmp_path / "d" / "runs").exists()


SPY = """
import sys
from mala_tui import cli
from mala_tui.runtime.journal import reader as journal_reader

real = journal_reader.read_events

def spy(path):
    print(f"read {path.parent.name}", file=sys.stderr)
    return real(path)

journal_reader.read_events = spy
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.parametrize(
    "command",
    [
        ["show", "20261123-101010-abcd", "--json"],
        ["show", "20261123-1010", "--json"],
        ["show", "latest", "--json"],
        ["resume", "20261123-101010-abcd", "--headless"],
    ],
    ids=["id", "prefix", "latest", "resume"],
)
def test_show_and_resume_of_one_run_read_no_other_journal(
    tmp_path: Path, command: list[str]
) -> None:
    data = tmp_path / "data"
    for n in range(3):
        finished_run(data, f"20261120-0000{n:02d}-beef")
    finished_run(data)
    done = subprocess.run(
        [sys.executable, "-c", SPY, *command, "--data-dir", str(data)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )
    assert done.returncode == (0 if command[0] == "show" else 2), done.stderr
    assert "beef" not in done.stderr, "another run's journal was read"
    assert "20261123-101010-abcd" in done.stdout + done.stderr


def test_a_huge_prompt_template_or_theme_is_read_up_to_a_limit(tmp_path: Path) -> None:
    from mala_tui.core.prompts import PromptTemplateError
    from mala_tui.prompt_files import load_prompts
    from mala_tui.ui.themes import load_themes

    for folder in ("prompts", "themes"):
        (tmp_path / folder).mkdir()
    huge = 17 * 2**20  # sparse: nothing is written, and the file is that long
    with (tmp_path / "prompts" / "wind_down.md").open("wb") as template:
        template.truncate(huge)
    with pytest.raises(
        PromptTemplateError, match=r"wind_down\.md: cannot be read: larger than 16 MiB"
    ):
        load_prompts(tmp_path / "prompts")
    with (tmp_path / "themes" / "endless.toml").open("wb") as theme:
        theme.truncate(huge)
    assert load_themes([tmp_path / "themes"]).errors == [
        f"{tmp_path / 'themes' / 'endless.toml'}: larger than 16 MiB"
    ]
