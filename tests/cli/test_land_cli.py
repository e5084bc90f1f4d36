"""`mala-tui land` and `mala-tui discard` as a user runs them, on a journaled worktree run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.checkpoint import CheckpointOrigin
from mala_tui.runtime.git.worktree import Worktree, create
from mala_tui.runtime.journal.writer import RunJournal, read_events
from tests.cli.test_cli import run

RUN_ID = "20260101-000000-cafe"
CHECKPOINT = "## Goal\nShip it.\n\n## Completed Work\n- wrote NOTES.md\n"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def started(at: float, name: str, worktree: Worktree) -> list[ev.Event]:
    return [
        ev.SessionStarted(
            at=at,
            session=name,
            task=f"Write the notes for {name}\nin NOTES.md",
            cwd=str(worktree.cwd),
            window=200_000,
            soft_threshold=0.3,
            hard_threshold=0.8,
            max_restarts=1,
            require_approval=False,
        ),
        ev.WorktreeCreated(
            at=at,
            session=name,
            path=str(worktree.path),
            branch=worktree.branch,
            base_commit=worktree.base_commit,
            repository=str(worktree.repository),
            base_branch=worktree.base_branch,
        ),
    ]


class Run:
    """A finished worktree run of two sessions, `a` (with a checkpoint) and `b`, and `plain`
    without a worktree."""

    def __init__(self, root: Path) -> None:
        self.data = root / "data"
        self.repo = root / "repo"
        self.repo.mkdir()
        (self.repo / "README.md").write_text("# demo\n")
        git(self.repo, "init", "-q", "-b", "main")
        git(self.repo, "config", "user.name", "Land Test")
        git(self.repo, "config", "user.email", "land@example.com")
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-q", "-m", "start")
        journal = RunJournal.create(self.data, RUN_ID, {"mode": "run", "tasks": []})
        self.folder = journal.directory
        self.trees = {
            name: create(self.repo, RUN_ID, name, self.folder / "worktrees") for name in "ab"
        }
        events: list[ev.Event] = [
            ev.RunStarted(at=1.0, run_id=RUN_ID, sessions=("a", "b", "plain"), mode=ev.RunMode.RUN)
        ]
        for name, tree in self.trees.items():
            events += started(2.0, name, tree)
        events.append(
            ev.CheckpointSaved(
                at=3.0, session="a", number=1, origin=CheckpointOrigin.TAGGED, text=CHECKPOINT
            )
        )
        for name in ("a", "b", "plain"):
            events.append(ev.SessionEnded(at=4.0, session=name, status=EndStatus.DONE))
        events.append(ev.RunEnded(at=5.0, run_id=RUN_ID, ok=True))
        for event in events:
            journal.write(event)
        journal.close()

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run(*args, "--data-dir", str(self.data))

    def journaled(self) -> list[ev.Event]:
        return read_events(self.folder / "events.jsonl").events

    def show(self) -> dict[str, dict[str, object]]:
        done = self.cli("show", RUN_ID, "--json")
        assert done.returncode == 0, done.stderr
        sessions = json.loads(done.stdout)["sessions"]
        return {name: session["worktree"] for name, session in sessions.items()}


@pytest.fixture
def finished(tmp_path: Path) -> Run:
    return Run(tmp_path)


def test_land_commits_the_edits_with_a_drafted_message_and_journals_it(finished: Run) -> None:
    tree = finished.trees["a"]
    (tree.path / "NOTES.md").write_text("notes\n")
    assert finished.show()["a"]["to_land"] == "uncommitted edits to land"

    done = finished.cli("land", "latest", "a")

    assert done.returncode == 0, done.stderr
    head = git(finished.repo, "rev-parse", "main")
    assert done.stdout == (
        f"a: landed 1 commit of {tree.branch} on main (fast-forward, now {head[:10]}), "
        f"its edits committed as {head[:10]}\n"
    )
    assert git(finished.repo, "log", "-1", "--format=%B", "main") == (
        "Write the notes for a\n\n- wrote NOTES.md\n\nTask: Write the notes for a\nin NOTES.md\n\n"
        f"From mala-tui run {RUN_ID}, session a (branch {tree.branch})."
    )
    assert (finished.repo / "NOTES.md").read_text() == "notes\n"
    landed = finished.journaled()[-1]
    assert isinstance(landed, ev.WorktreeLanded) and landed.commit == head
    shown = finished.show()
    assert (shown["a"]["merged"], shown["a"]["commits_ahead"], shown["a"]["to_land"]) == (
        True,
        0,
        "merged",
    )
    landed_shown = shown["a"]["landed"]
    assert isinstance(landed_shown, dict) and landed_shown["how"] == "fast-forward"
    assert shown["b"]["to_land"] == "nothing to land"


def test_a_message_given_is_used_as_it_is(finished: Run) -> None:
    (finished.trees["b"].path / "B.md").write_text("b\n")
    done = finished.cli("land", RUN_ID[:10], "b", "--message", "Add B")
    assert done.returncode == 0, done.stderr
    assert git(finished.repo, "log", "-1", "--format=%B", "main") == "Add B"


def test_while_the_run_is_written_land_and_discard_are_refused(finished: Run) -> None:
    (finished.trees["a"].path / "NOTES.md").write_text("notes\n")
    before = (finished.folder / "events.jsonl").read_bytes()
    with RunJournal.reopen(finished.folder):  # as a live run (or a resume) holds it
        for verb in ("land", "discard"):
            done = finished.cli(verb, RUN_ID, "a")
            assert done.returncode == 2 and done.stdout == ""
            assert done.stderr == (
                f"mala-tui {verb}: run {RUN_ID} is still running "
                f"({finished.folder / 'events.jsonl'} is being written by another mala-tui "
                "process); its sessions can be landed or discarded once it has ended\n"
            )
    assert git(finished.repo, "rev-parse", "main") == finished.trees["a"].base_commit
    assert finished.trees["a"].path.is_dir()
    assert (finished.folder / "events.jsonl").read_bytes() == before


def test_discard_asks_for_force_while_work_is_unlanded(finished: Run) -> None:
    tree = finished.trees["b"]
    git(tree.path, "commit", "-q", "--allow-empty", "-m", "work")
    done = finished.cli("discard", RUN_ID, "b")
    assert done.returncode == 2
    assert done.stderr == (
        f"mala-tui discard: b: {tree.branch} has 1 commit not in main; land it first, "
        "or discard --force to drop them (nothing was removed)\n"
    )
    assert tree.path.is_dir()

    done = finished.cli("discard", RUN_ID, "b", "--force")

    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        f"b: discarded worktree {tree.path} and branch {tree.branch}, dropping 1 unmerged commit\n"
    )
    assert not tree.path.exists() and git(finished.repo, "branch", "--list", tree.branch) == ""
    assert finished.show()["b"]["to_land"] == "discarded"
    again = finished.cli("discard", RUN_ID, "b")
    assert again.returncode == 2
    assert again.stderr == "mala-tui discard: b: its worktree and branch were discarded already\n"


def test_sessions_that_cannot_be_landed_are_refused_in_one_line(finished: Run) -> None:
    cases = {
        (
            "land",
            RUN_ID,
            "nobody",
        ): f"run {RUN_ID} has no session 'nobody' (its sessions: a, b, plain)",
        (
            "land",
            RUN_ID,
            "plain",
        ): "plain has no worktree of its own: its run was not started with --worktree",
        (
            "land",
            RUN_ID,
            "b",
        ): f"b: nothing to land: {finished.trees['b'].branch} is already in main",
        (
            "land",
            RUN_ID,
            "a",
            "--message",
            " ",
        ): "--message must not be empty (leave it out for the draft)",
        (
            "land",
            "zzz",
            "a",
        ): f"no run 'zzz' under {finished.data / 'runs'}; `mala-tui runs` lists them",
    }
    for args, said in cases.items():
        done = finished.cli(*args)
        assert (done.returncode, done.stdout, done.stderr) == (
            2,
            "",
            f"mala-tui {args[0]}: {said}\n",
        )


def test_land_pr_without_a_remote_is_refused_and_changes_nothing(finished: Run) -> None:
    tree = finished.trees["a"]
    (tree.path / "NOTES.md").write_text("notes\n")
    done = finished.cli("land", RUN_ID, "a", "--pr")
    assert done.returncode == 2
    assert "has no remote to push to" in done.stderr
    assert git(tree.path, "status", "--porcelain") == "?? NOTES.md"


def test_show_tells_each_worktree_sessions_branch_and_how_to_land_it(finished: Run) -> None:
    from mala_tui.commands.runs_cmd import worktree_lines
    from mala_tui.config import Settings
    from mala_tui.core.run_view import RunState
    from mala_tui.runtime.git.landing import refresh_statuses

    git(finished.trees["a"].path, "commit", "-q", "--allow-empty", "-m", "work")
    (finished.trees["a"].path / "x.md").write_text("x\n")
    state = RunState().apply_all(finished.journaled())
    refresh_statuses(state)
    assert worktree_lines(state, RUN_ID, Settings()) == [
        f"a: branch {finished.trees['a'].branch}, 1 commit + uncommitted edits to land "
        f"(mala-tui land {RUN_ID} a)",
        f"b: branch {finished.trees['b'].branch}, nothing to land",
    ]
