"""The `mala-tui` command as a user runs it: a real process, its output and exit status."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mala_tui", *args],
        capture_output=True,
        text=True,
        env=env or dict(os.environ),
        timeout=60,
    )


def test_help_lists_the_commands() -> None:
    done = run("--help")
    assert done.returncode == 0
    assert "config" in done.stdout


def test_config_show_prints_values_sources_and_descriptions() -> None:
    done = run("--set", "context.max_restarts=7", "config", "show")
    assert done.returncode == 0, done.stderr
    assert "soft_threshold = 0.15    # from default" in done.stdout
    assert "max_restarts = 7    # from command line --set context.max_restarts" in done.stdout
    assert (
        "# Fraction of the window from which old tool results are masked: at once when a mask"
        in done.stdout
    )


def test_config_show_json_round_trips() -> None:
    done = run("config", "show", "--json")
    data = json.loads(done.stdout)
    assert data["context.hard_threshold"] == {
        "value": 0.8,
        "source": "default",
        "description": data["context.hard_threshold"]["description"],
    }
    assert data["context.hard_threshold"]["description"].startswith(
        "Fraction of the window at which the agent is wound down, checkpointed and restarted."
    )


def test_config_path_prints_the_file_read() -> None:
    assert run("config", "path").stdout.strip() == os.environ["MALA_TUI_CONFIG_FILE"]


def test_broken_config_exits_2_with_one_message(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[context]\nsoft_threshold = 0.95\n")
    done = run("config", "show", env=dict(os.environ, MALA_TUI_CONFIG_FILE=str(path)))
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        f"mala-tui: config error: context.soft_threshold = 0.95 (file {path}) must be below "
        "context.hard_threshold = 0.8 (default)\n"
    )


def test_toml_syntax_error_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[idle\n")
    done = run("config", "show", env=dict(os.environ, MALA_TUI_CONFIG_FILE=str(path)))
    assert done.returncode == 2
    assert done.stderr.startswith(f"mala-tui: config error: config file {path}: TOML syntax error")
    assert done.stderr.count("\n") == 1


def test_the_command_line_loads_neither_the_sdk_nor_textual_until_a_command_needs_them() -> None:
    """`mala-tui --help`, `runs`, `stop` and the like answer at once: the agent SDK (with
    its MCP types) and textual are imported by the commands that run agents or the app."""
    probe = "import json, sys, mala_tui.cli; print(json.dumps(sorted(sys.modules)))"
    loaded = json.loads(
        subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True
        ).stdout
    )
    heavy = {"claude_agent_sdk", "mcp", "textual", "rich", "ray", "playwright"}
    assert sorted(name for name in loaded if name.split(".")[0] in heavy) == []
