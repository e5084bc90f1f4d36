"""A session opened by hand in the interactive Claude Code, in a real terminal (tmux).

`mala-tui run` on the loopback, inside tmux. While its agent is at work, `h` ends the
supervised Claude Code process and opens the session in the interactive Claude Code in
a new tmux window. A prompt is typed there and answered by the loopback; the person
exits; mala-tui asks what becomes of the session, it is handed back, and it goes on to
its end. The gauge then counts the person's turn: its window is the latest call the
loopback answered in that window.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.loopback import MODEL, load_scenario
from mala_tui.loopback.env import DUMMY_API_KEY
from mala_tui.runtime.journal.writer import list_runs, read_events
from tests.integration.harness import alive
from tests.integration.test_permission_terminal import serve
from tests.support.polling import wait_until
from tests.support.terminal import screen, tmux

pytestmark = pytest.mark.integration

PROMPT = "Say hello, then carry on."
FINAL = load_scenario("quickstart").final_answer


def wait_for(condition: Callable[[], object], timeout: float, what: str, target: str) -> None:
    """Wait for what the terminal `target` shows (it is in the message when it never does)."""
    wait_until(condition, what=what, timeout=timeout, seen=lambda: screen(target))


def set_up_once(config: Path, workspace: Path) -> None:
    """What a person does once in their own Claude Code: its first-run screens, trusting
    the folder, approving the API key. This config dir is the test's, not mala-tui's."""
    config.mkdir(parents=True, exist_ok=True)
    (config / ".claude.json").write_text(
        json.dumps(
            {
                "hasCompletedOnboarding": True,
                "theme": "dark",
                "projects": {
                    str(workspace): {
                        "hasTrustDialogAccepted": True,
                        "hasCompletedProjectOnboarding": True,
                    }
                },
                "customApiKeyResponses": {"approved": [DUMMY_API_KEY[-20:]], "rejected": []},
            }
        )
    )


def ready(shown: str) -> bool:
    """Claude Code waits for a prompt: its input box's footer is drawn."""
    return "? for shortcuts" in shown or "shift+tab to cycle" in shown


def type_in(pane: str, text: str, config: Path | None = None) -> None:
    """Type `text` into Claude Code's input and send it. With `config`, wait until the
    session's transcript there holds it as a prompt with an answer after it: what the
    terminal shows cannot tell a prompt sent from one still in the input box."""
    tmux("send-keys", "-t", pane, "-l", text)
    wait_for(lambda: text in screen(pane), 30, "the text typed", pane)
    tmux("send-keys", "-t", pane, "Enter")
    if config is not None:
        wait_for(lambda: answered(config, text), 90, "the prompt answered", pane)


def answered(config: Path, prompt: str) -> bool:
    """Some transcript under `config` has `prompt` as a prompt, then the agent's final
    words: the whole turn is written, every call of it (the loopback's agent carries its
    task on to its end, as a model would)."""
    for path in config.glob("projects/*/*.jsonl"):
        entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        asked = [
            index
            for index, entry in enumerate(entries)
            if entry.get("type") == "user" and entry.get("message", {}).get("content") == prompt
        ]
        if asked and any(
            entry.get("type") == "assistant" and FINAL in json.dumps(entry.get("message"))
            for entry in entries[asked[-1] :]
        ):
            return True
    return False


def windows(name: str) -> dict[str, str]:
    """The session's tmux windows: name -> index."""
    listed = tmux("list-windows", "-t", name, "-F", "#{window_index}\t#{window_name}")
    return {line.split("\t", 1)[1]: line.split("\t", 1)[0] for line in listed.splitlines()}


@pytest.mark.usefixtures("tmux_installed")
def test_a_session_opened_by_hand_in_a_tmux_window_is_handed_back(tmp_path: Path) -> None:
    workspace, data, home = tmp_path / "workspace", tmp_path / "data", tmp_path / "home"
    log = tmp_path / "requests.jsonl"
    # Slow enough to catch its agent at work.
    server, env_lines = serve(workspace, home, "quickstart", delay=1.5, log=log)
    set_up_once(home / "claude-config", workspace)
    name = f"mala-tui-by-hand-{os.getpid()}"
    status_file, pid_file = tmp_path / "status", tmp_path / "pid"
    task = load_scenario("quickstart").task
    run = (
        f"exec {shlex.quote(sys.executable)} -m mala_tui --set agent.model={MODEL} "
        f"run {shlex.quote(task)} --cwd {shlex.quote(str(workspace))}"
    )
    inner = "; ".join([*env_lines, f"echo $$ > {shlex.quote(str(pid_file))}", run])
    command = (
        f"cd {shlex.quote(os.getcwd())} && unset COLUMNS LINES && "
        f"MALA_TUI_STORAGE__DATA_DIR={shlex.quote(str(data))} "
        f"sh -c {shlex.quote(inner)}; echo $? > {shlex.quote(str(status_file))}"
    )
    by_hand = "task-1 (by hand)"
    try:
        tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "48", command)
        wait_for(lambda: "k / 200k" in screen(name), 90, "the agent at work", name)
        tmux("send-keys", "-t", name, "h")
        wait_for(lambda: by_hand in windows(name), 60, "the window by hand", name)
        pane = f"{name}:{windows(name)[by_hand]}"
        wait_for(lambda: ready(screen(pane)), 60, "Claude Code's prompt", pane)
        # The loopback's agent takes the prompt as a model would: it carries on its task.
        type_in(pane, PROMPT, home / "claude-config")
        type_in(pane, "/exit")
        wait_for(lambda: by_hand not in windows(name), 60, "Claude Code to exit", name)
        wait_for(lambda: "back from Claude Code" in screen(name), 60, "the question", name)
        tmux("send-keys", "-t", name, "b")
        wait_for(lambda: "done" in screen(name), 90, "the session to finish", name)
        tmux("send-keys", "-t", name, "q")
        wait_for(status_file.exists, 60, "the app to exit", name)
        assert status_file.read_text().strip() == "0"
        (found,) = list_runs(data)
        events = read_events(found.directory / "events.jsonl").events
        # Now the run is over: `mala-tui open` gives the same session to a person again.
        printed = opened_after_the_run(tmp_path, env_lines, found.run_id)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True, check=False)
        if pid_file.exists() and not status_file.exists():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
        server.send_signal(signal.SIGTERM)  # the request log is written as it stops
        server.communicate(timeout=30)

    last = read_events(found.directory / "events.jsonl").events[-1]
    assert isinstance(last, ev.HandedBack)
    assert (last.session, last.prompts, last.went_on) == ("task-1", 1, False)
    assert last.tokens is not None and last.tokens > 0
    assert f"task-1: opening Claude Code (claude --resume {named(events)})" in printed
    assert f"task-1: 1 prompt by hand, window {last.tokens:,} tokens" in printed
    the_app_counted_the_turn(events, log)


def named(events: list[ev.Event]) -> str:
    (session_id,) = {e.session_id for e in events if isinstance(e, ev.AgentSessionNamed)}
    return session_id


def opened_after_the_run(tmp_path: Path, env_lines: list[str], run_id: str) -> str:
    """`mala-tui open` in a terminal of its own: a prompt, then /exit; what the terminal
    shows once it has exited (it stays open for that)."""
    name = f"mala-tui-open-{os.getpid()}"
    status_file = tmp_path / "open-status"
    opened = (
        f"{shlex.quote(sys.executable)} -m mala_tui open {run_id} task-1 "
        f"--data-dir {shlex.quote(str(tmp_path / 'data'))}"
    )
    inner = "; ".join([*env_lines, opened])
    command = (
        f"cd {shlex.quote(os.getcwd())} && unset COLUMNS LINES && sh -c {shlex.quote(inner)}; "
        f"echo $? > {shlex.quote(str(status_file))}; sleep 600"
    )
    try:
        tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "48", command)
        wait_for(lambda: ready(screen(name)), 60, "Claude Code's prompt", name)
        type_in(name, "Say hello again.", tmp_path / "home" / "claude-config")
        type_in(name, "/exit")
        wait_for(status_file.exists, 60, "`open` to exit", name)
        assert status_file.read_text().strip() == "0"
        return tmux("capture-pane", "-t", name, "-p", "-S", "-")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True, check=False)


def the_app_counted_the_turn(events: list[ev.Event], log: Path) -> None:
    """What the app journaled of the session opened by hand, against the model's log."""
    (taken,) = [e for e in events if isinstance(e, ev.TakenOver)]
    (back,) = [e for e in events if isinstance(e, ev.HandedBack)]
    assert (back.prompts, back.went_on) == (1, True)
    # The supervised process had ended before the person's CLI started: one writer.
    started = [e for e in events if isinstance(e, ev.ProcessStarted)]
    ended_pids = {e.pid for e in events if isinstance(e, ev.ProcessEnded)}
    before = [e.pid for e in started if e.at <= taken.at]
    assert before and all(pid in ended_pids for pid in before)
    assert not [e for e in started if taken.at < e.at < back.at]
    # The gauge counts the person's turn: the window of the last call answered by hand.
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    by_hand_calls = [r for r in records if taken.at < r["time"] < back.at]
    assert by_hand_calls, "the person's prompt reached the model"
    last = by_hand_calls[-1]
    window = sum(
        last[key]
        for key in (
            "input_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
            "output_tokens",
        )
    )
    assert back.tokens == window
    usage = [e for e in events if isinstance(e, ev.UsageRecorded) and "by hand" in e.notes]
    assert [e.tokens for e in usage] == [window]
    (end,) = [e for e in events if isinstance(e, ev.SessionEnded)]
    assert end.status is EndStatus.DONE
    pids = [e.pid for e in started if e.pid is not None]
    assert [pid for pid in pids if alive(pid)] == []
