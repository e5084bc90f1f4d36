"""In a real terminal (tmux): quit a run mid-way with `q`, open it with `show`, resume it with `R`."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.loopback import LoopbackServer, load_scenario, materialize_workspace, offline_cli_env
from tests.integration.test_resume import MODEL, both_under_way, journal_events
from tests.support.polling import eventually
from tests.support.terminal import screen, tmux

pytestmark = pytest.mark.integration


def in_terminal(name: str, env: dict[str, str], args: list[str], status: Path) -> None:
    """Run `mala-tui ARGS` in the tmux session `name`; its exit status goes to `status`."""
    exports = " ".join(f"{key}={shlex.quote(value)}" for key, value in env.items())
    mala = " ".join(shlex.quote(part) for part in [sys.executable, "-m", "mala_tui", *args])
    command = (
        f"cd {shlex.quote(os.getcwd())} && unset COLUMNS LINES && "
        f"env {exports} {mala}; echo $? > {shlex.quote(str(status))}"
    )
    tmux("send-keys", "-t", name, command, "Enter")


@pytest.mark.usefixtures("tmux_installed")
async def test_a_quit_run_is_resumed_from_show_with_r(tmp_path: Path) -> None:
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
            await eventually(
                lambda: both_under_way(data),
                timeout=120,
                what="both sessions under way",
                seen=lambda: screen(name),
                every=0.2,
            )
            tmux("send-keys", "-t", name, "q")
            await eventually(
                lambda: "Leave run" in screen(name),
                timeout=30,
                what="the question at q",
                seen=lambda: screen(name),
                every=0.2,
            )
            tmux("send-keys", "-t", name, "s")  # stop the run (not detach)
            await eventually(
                ran.exists, timeout=60, what="the app to quit", seen=lambda: screen(name), every=0.2
            )
            assert ran.read_text().strip() == "1"  # quit mid-run: not every session finished
            quit_events = journal_events(data)
            assert isinstance(quit_events[-1], ev.RunEnded)
            assert not any(
                isinstance(e, ev.SessionEnded) and e.status == "done" for e in quit_events
            )

            in_terminal(name, env, [*MODEL, "show", "latest"], shown)
            await eventually(
                lambda: "R resumes it" in screen(name),
                timeout=60,
                what="the offer",
                seen=lambda: screen(name),
                every=0.2,
            )
            tmux("send-keys", "-t", name, "R")

            def finished() -> bool:
                events = journal_events(data)
                return any(isinstance(e, ev.RunResumed) for e in events) and isinstance(
                    events[-1], ev.RunEnded
                )

            await eventually(
                finished,
                timeout=120,
                what="the resumed run to finish",
                seen=lambda: screen(name),
                every=0.2,
            )
            await eventually(
                lambda: "Every session has ended" in screen(name),
                timeout=30,
                what="it",
                seen=lambda: screen(name),
                every=0.2,
            )
            tmux("send-keys", "-t", name, "q")
            await eventually(
                shown.exists,
                timeout=60,
                what="the app to exit",
                seen=lambda: screen(name),
                every=0.2,
            )
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
