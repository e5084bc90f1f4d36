"""`mala-tui open RUN SESSION` refused in one line when a session cannot be opened by hand.

Opening one for real (the interactive Claude Code in a terminal) is the terminal test's
(tests/integration/test_by_hand_terminal.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.runtime.journal import RunJournal, read_events
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
    events: list[ev.Event] = [ev.RunStarted(at=1.0, run_id=RUN_ID, sessions=names, mode="run")]
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
