"""In a real terminal (tmux): quit a run mid-way with `q`, open it with `show`, resume it with `R`."""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.loopback import LoopbackServer, load_scenario, materialize_workspace, offline_cli_env
from tests.integration.test_resume import MODEL, both_under_way, journal_events
from tests.integration.test_terminal import screen, tmux

pytestmark = pytest.mark.integration


async def wait_for(predicate: Callable[[], object], timeout: float, what: str, name: str) -> None:
    """Until `predicate` holds: the app is another process, so its screen and its journal
    are read again until they show what is expected; only `timeout` ends the wait."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; the screen:\n{screen(name)}")
        await asyncio.sleep(0.2)


def in_terminal(name: str, env: dict[str, str], args: list[str], status: Path) -> None:
    """Run `mala-tui ARGS` in the tmux session `name`; its exit status goes to `status`."""
    exports = " ".join(f"{key}={shlex.quote(value)}" for key, value in env.items())
    mala = " ".join(shlex.quote(part) for part in [sys.executable, "-m", "mala_tui", *args])
    command = (
        f"cd {shlex.quote(os.getcwd())} && unset COLUMNS LINES && "
        f"env {exports} {mala}; echo $? > {shlex.quote(str(status))}"
    )
    tmux("send-keys", "-t", name, command, "Enter")


async def test_a_quit_run_is_resumed_from_show_with_r(tmp_path: Path) -> None:
    assert shutil.which("tmux"), "tmux is needed for this test (.ci/run installs it)"
    scenario = load_scenario("quickstart")
    tasks = tmp_path / "tasks.toml"
    entries = []
    for task in ("a", "b"):
        materialize_workspace(scenario, tmp_path / task)
        entries.append(f'[[task]]\nname = "{task}"\ntask = "{scenario.task}"\ncwd = "{task}"\n')
    tasks.write_text("\n".join(entries))
    data = tmp_path / "data"
    name = f"mala-tui-resume-{os.getpid()}"
    tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "48")
    try:
        async with LoopbackServer(scenario, response_delay_s=0.3) as server:
            env = offline_cli_env(server.base_url, tmp_path / "claude-home")
            env["MALA_TUI_STORAGE__DATA_DIR"] = str(data)
            ran, shown = tmp_path / "ran", tmp_path / "shown"
            in_terminal(name, env, [*MODEL, "run", "--tasks", str(tasks)], ran)
            await wait_for(lambda: both_under_way(data), 120, "both sessions under way", name)
            tmux("send-keys", "-t", name, "q")
            await wait_for(ran.exists, 60, "the app to quit", name)
            assert ran.read_text().strip() == "1"  # quit mid-run: not every session finished
            quit_events = journal_events(data)
            assert isinstance(quit_events[-1], ev.RunEnded)
            assert not any(
                isinstance(e, ev.SessionEnded) and e.status == "done" for e in quit_events
            )

            in_terminal(name, env, [*MODEL, "show", "latest"], shown)
            await wait_for(lambda: "R resumes it" in screen(name), 60, "the offer", name)
            tmux("send-keys", "-t", name, "R")

            def finished() -> bool:
                events = journal_events(data)
                return any(isinstance(e, ev.RunResumed) for e in events) and isinstance(
                    events[-1], ev.RunEnded
                )

            await wait_for(finished, 120, "the resumed run to finish", name)
            await wait_for(lambda: "Every session has ended" in screen(name), 30, "it", name)
            tmux("send-keys", "-t", name, "q")
            await wait_for(shown.exists, 60, "the app to exit", name)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True, check=False)
    assert shown.read_text().strip() == "0"
    events = journal_events(data)
    assert events[: len(quit_events)] == quit_events
    (resumed,) = [e for e in events if isinstance(e, ev.RunResumed)]
    assert resumed.resumed == {"a": "session_id", "b": "session_id"}
    after = events[events.index(resumed) :]
    assert {e.session: e.status for e in after if isinstance(e, ev.SessionEnded)} == {
        "a": "done",
        "b": "done",
    }
    assert isinstance(events[-1], ev.RunEnded) and events[-1].ok
