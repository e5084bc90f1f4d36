"""`mala-tui open RUN SESSION` refused in one line when a session cannot be opened by hand.

Opening one for real (the interactive Claude Code in a terminal) is the terminal test's
(tests/integration/test_by_hand_terminal.py); here a shell script stands in for it, to
fail or to leave a prompt in the transcript.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shlex
import sys
from pathlib import Path

import pytest

from mala_tui.commands import open_cmd
from mala_tui.config_loading import load_settings
from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.runtime.journal.writer import RunJournal, read_events
from mala_tui.runtime.session import by_hand
from tests.cli.test_cli import run

RUN_ID = "20260101-000000-beef"


def started(name: str, cwd: Path) -> ev.SessionStarted:
    return ev.SessionStarted(
        at=2.0,
        session=name,
        task=f"task {name}",
        cwd=str(cwd),
        window=200_000,
        soft_threshold=0.3,
        hard_threshold=0.8,
        max_restarts=1,
        require_approval=False,
    )


@pytest.fixture
def finished(tmp_path: Path) -> Path:
    """A run that is over: `named` has an agent session (its transcript under the config dir
    the test gives), `unnamed` never got one, `gone` had one whose transcript is gone, and
    `remote` ran on a cluster's host."""
    work = tmp_path / "work"
    work.mkdir()
    project = tmp_path / "config" / "projects" / "-work"
    project.mkdir(parents=True)
    (project / "s-named.jsonl").write_text(json.dumps({"type": "user"}) + "\n")
    journal = RunJournal.create(tmp_path / "data", RUN_ID, {"mode": "run", "tasks": []})
    names = ("named", "unnamed", "gone", "remote")
    events: list[ev.Event] = [
        ev.RunStarted(at=1.0, run_id=RUN_ID, sessions=names, mode=ev.RunMode.RUN)
    ]
    events += [started(name, work) for name in names]
    events += [
        ev.AgentSessionNamed(at=2.5, session="named", session_id="s-named"),
        ev.AgentSessionNamed(at=2.5, session="gone", session_id="s-gone"),
        ev.AgentSessionNamed(at=2.5, session="remote", session_id="s-remote"),
        ev.HostPlaced(at=2.1, session="remote", node="n1", address="10.0.0.2"),
    ]
    events += [ev.SessionEnded(at=4.0, session=n, status=EndStatus.DONE) for n in names]
    events.append(ev.RunEnded(at=5.0, run_id=RUN_ID, ok=True))
    with journal:
        for event in events:
            journal.write(event)
    return tmp_path


def open_cli(root: Path, session: str) -> tuple[int, str, str]:
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(root / "config"))
    done = run("open", RUN_ID, session, "--data-dir", str(root / "data"), env=env)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize(
    ("session", "said"),
    [
        (
            "nope",
            f"run {RUN_ID} has no session 'nope' (its sessions: named, unnamed, gone, remote)",
        ),
        ("unnamed", "unnamed has no agent session to open: it never got as far"),
        ("gone", "gone: the transcript of agent session s-gone is gone"),
        (
            "remote",
            "remote ran on a host of the cluster, which keeps its transcript: it cannot be "
            "opened by hand from here",
        ),
        # Everything holds but this: the test's stdin and stdout are pipes.
        ("named", "Claude Code needs a terminal (stdin and stdout)"),
    ],
)
def test_a_session_that_cannot_be_opened_is_refused_in_one_line(
    finished: Path, session: str, said: str
) -> None:
    before = read_events(finished / "data" / "runs" / RUN_ID / "events.jsonl").events
    code, out, err = open_cli(finished, session)
    assert (code, out, err) == (2, "", f"mala-tui open: {said}\n")
    after = read_events(finished / "data" / "runs" / RUN_ID / "events.jsonl").events
    assert after == before  # nothing journaled


def test_a_browser_tab_cannot_open_a_session_by_hand(finished: Path) -> None:
    env = dict(
        os.environ,
        CLAUDE_CONFIG_DIR=str(finished / "config"),
        TEXTUAL_DRIVER="textual.drivers.web_driver:WebDriver",
    )
    done = run("open", RUN_ID, "named", "--data-dir", str(finished / "data"), env=env)
    assert (done.returncode, done.stderr) == (
        2,
        "mala-tui open: a session can be opened by hand only from a terminal on the run's "
        "machine, not from a browser tab\n",
    )


def open_in_a_terminal(
    root: Path, cli: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str, list[ev.Event]]:
    """`open` on `named` with a terminal (a pseudo-terminal for stdin and stdout) and
    `cli` (a shell script's body) standing in for Claude Code; its exit status, what it
    printed, and the events journaled meanwhile."""
    script = root / "claude"
    script.write_text(f"#!/bin/sh\n{cli}\n")
    script.chmod(0o755)
    monkeypatch.setattr(by_hand, "bundled_cli", lambda: script)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(root / "config"))
    journal = root / "data" / "runs" / RUN_ID / "events.jsonl"
    before = len(read_events(journal).events)
    args = argparse.Namespace(run=RUN_ID, session="named", data_dir=root / "data")
    out = io.StringIO()
    primary, secondary = os.openpty()
    try:
        with (
            open(secondary, encoding="utf-8") as tty_in,
            open(os.dup(secondary), "w", encoding="utf-8") as tty_out,
        ):
            monkeypatch.setattr(sys, "stdin", tty_in)
            monkeypatch.setattr(sys, "stdout", tty_out)
            code = open_cmd.open_session(args, load_settings(), out)
    finally:
        os.close(primary)
    return code, out.getvalue(), read_events(journal).events[before:]


def test_a_claude_code_that_fails_is_reported_and_nothing_is_handed_back(
    finished: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, journaled = open_in_a_terminal(finished, "exit 1", monkeypatch)
    assert code == 1
    assert out == "named: opening Claude Code (claude --resume s-named)\n"
    assert capsys.readouterr().err == (
        "mala-tui open: Claude Code failed (exit status 1); named was left as it was\n"
    )
    assert journaled == []


def test_a_claude_code_that_exits_cleanly_hands_the_session_back(
    finished: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prompt = json.dumps({"type": "user", "message": {"content": "carry on"}})
    transcript = finished / "config" / "projects" / "-work" / "s-named.jsonl"
    code, out, journaled = open_in_a_terminal(
        finished, f"echo {shlex.quote(prompt)} >> {shlex.quote(str(transcript))}", monkeypatch
    )
    assert code == 0
    assert out.endswith("named: 1 prompt by hand\n")
    (back,) = journaled
    assert isinstance(back, ev.HandedBack) and (back.session, back.prompts) == ("named", 1)
