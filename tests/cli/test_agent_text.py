"""Text that came from a model or a task, on the terminal and in git.

On the terminal it is shown literally, on its own one line: an escape is made visible
(`core.text.clean`), never interpreted (an OSC 52 writing the clipboard, an OSC 0
retitling the window), and a newline cannot forge a line. In git (a commit message, a
pull request's body, a reflog) its control characters are removed (`core.text.for_git`):
`git log` prints the history to terminals mala-tui never sees.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.checkpoint import CheckpointOrigin
from mala_tui.core.text import clean
from mala_tui.core.transcript import Role
from mala_tui.runtime.git.worktree import Worktree, create
from mala_tui.runtime.journal.writer import RunJournal
from tests.cli.test_cli import run
from tests.cli.test_land_cli import RUN_ID, Run, git, started

CLIPBOARD = "\x1b]52;c;aGVsbG8=\x07"  # OSC 52: writes the terminal's clipboard
TITLE = "\x1b]0;pwned\x07"  # OSC 0: retitles the window


def controls(text: str) -> list[str]:
    """The control characters in `text` but newline and tab: C0, DEL and C1."""
    return [c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F]


def git_bytes(cwd: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True).stdout


def safe_for_git(raw: bytes) -> bool:
    """No byte below 0x20 but newline and tab, no DEL, and no C1 control either."""
    text = raw.decode("utf-8")
    return (
        not any(b < 0x20 and b not in b"\n\t" for b in raw)
        and b"\x7f" not in raw
        and (not controls(text))
    )


@pytest.fixture
def finished(tmp_path: Path) -> Run:
    return Run(tmp_path)


def test_a_conflict_names_its_files_literally_on_one_line(finished: Run) -> None:
    names = [f"clip{CLIPBOARD}.txt", f"title{TITLE}.txt", "two\nlines.txt"]
    tree = finished.trees["a"]
    for name in names:  # the agent's files, left uncommitted, and main's of the same names
        (tree.path / name).write_text("the agent's\n")
        (finished.repo / name).write_text("main's\n")
    git(finished.repo, "add", "-A")
    git(finished.repo, "commit", "-q", "-m", "main's files")
    before = git(finished.repo, "rev-parse", "main")

    done = finished.cli("land", RUN_ID, "a")

    assert (done.returncode, done.stdout) == (2, "")
    assert not controls(done.stderr.removesuffix("\n")), repr(done.stderr)
    assert done.stderr.count("\n") == 1
    assert done.stderr.endswith("nothing was changed (merge it by hand, or discard it)\n")
    for name in names:
        assert clean(name, one_line=True) in done.stderr
    assert "clip\u241b]52;c;aGVsbG8=\u2407.txt" in done.stderr  # ESC and BEL as pictures
    assert "two \u23ce lines.txt" in done.stderr
    assert git(finished.repo, "rev-parse", "main") == before  # nothing changed


class HostileRun:
    """A finished worktree run whose session names, tasks, checkpoint and last words hold
    escapes and control characters: `noted` wrote a checkpoint, `said` only final words,
    `pushed` is for a pull request."""

    NOTED = f"noted{TITLE}"
    SAID = "said\x1b[2J\x7f"
    PUSHED = f"pushed{CLIPBOARD}"
    TASK = "Fix\x1b[31m the \x00bug\x08 now\r\nsecond \x1b]8;;http://x\x07line\x9b"
    CHECKPOINT = (
        "## Goal\nFix it.\n\n## Completed Work\n"
        f"- wrote {CLIPBOARD}NOTES.md\r\n- \x9b31mdone\x1b[0m\x0c\n"
    )
    LAST_WORDS = "All \x1b[1mdone\x1b[0m\x07, see \x1b]0;x\x07OUT.md"

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
        self.remote = root / "remote.git"
        git(root, "init", "-q", "--bare", str(self.remote))
        git(self.repo, "remote", "add", "origin", str(self.remote))
        journal = RunJournal.create(self.data, RUN_ID, {"mode": "run", "tasks": []})
        self.folder = journal.directory
        names = (self.NOTED, self.SAID, self.PUSHED)
        self.trees: dict[str, Worktree] = {
            name: create(self.repo, RUN_ID, name, self.folder / "worktrees") for name in names
        }
        events: list[ev.Event] = [
            ev.RunStarted(at=1.0, run_id=RUN_ID, sessions=names, mode=ev.RunMode.RUN)
        ]
        for name, tree in self.trees.items():
            first, *rest = started(2.0, name, tree)
            assert isinstance(first, ev.SessionStarted)
            events += [first.model_copy(update={"task": self.TASK}), *rest]
        for name in (self.NOTED, self.PUSHED):
            events.append(
                ev.CheckpointSaved(
                    at=3.0,
                    session=name,
                    number=1,
                    origin=CheckpointOrigin.TAGGED,
                    text=self.CHECKPOINT,
                )
            )
        events.append(
            ev.MessageRecorded(
                at=3.0, session=self.SAID, role=Role.ASSISTANT, kind="text", excerpt=self.LAST_WORDS
            )
        )
        events += [ev.SessionEnded(at=4.0, session=n, status=EndStatus.DONE) for n in names]
        events.append(ev.RunEnded(at=5.0, run_id=RUN_ID, ok=True))
        with journal:
            for event in events:
                journal.write(event)
        for number, tree in enumerate(self.trees.values()):
            (tree.path / f"file{number}.md").write_text("work\n")  # uncommitted: to land

    def cli(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return run(*args, "--data-dir", str(self.data), env=env)


def test_commit_messages_and_a_pull_requests_body_reach_git_without_control_characters(
    tmp_path: Path,
) -> None:
    hostile = HostileRun(tmp_path)
    for name in (HostileRun.NOTED, HostileRun.SAID):  # a fast-forward, then a merge commit
        done = hostile.cli("land", RUN_ID, name)
        assert done.returncode == 0, done.stderr
        assert not controls(done.stdout.removesuffix("\n")), repr(done.stdout)
    history = git_bytes(hostile.repo, "log", "--format=%B", "main")
    assert safe_for_git(history), history
    # What was said is kept, only its control characters went.
    merge = git_bytes(hostile.repo, "log", "-1", "--format=%B", "main").decode()
    assert merge.startswith("Merge branch 'mala/")
    assert "Fix[31m the bug now" in merge and "All [1mdone[0m, see ]0;xOUT.md" in merge
    assert f"session said[2J (branch {hostile.trees[HostileRun.SAID].branch})" in merge
    first = git_bytes(hostile.repo, "log", "-1", "--format=%B", "main^1").decode()
    assert "- wrote ]52;c;aGVsbG8=NOTES.md\n- 31mdone[0m\n" in first
    assert "session noted]0;pwned (branch" in first
    reflog = git_bytes(hostile.repo, "reflog", "show", "--format=%gs", "main")
    assert safe_for_git(reflog)

    # Without gh: pushed, and the command to open the pull request is printed.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    git_path = shutil.which("git")
    assert git_path is not None
    (bin_dir / "git").symlink_to(git_path)
    done = hostile.cli(
        "land", RUN_ID, HostileRun.PUSHED, "--pr", env=dict(os.environ, PATH=str(bin_dir))
    )
    assert done.returncode == 0, done.stderr
    assert not controls(done.stdout.removesuffix("\n")), repr(done.stdout)
    assert "gh pr create --draft" in done.stdout
    branch = hostile.trees[HostileRun.PUSHED].branch
    pushed = git_bytes(hostile.remote, "log", "-1", "--format=%B", branch)
    assert safe_for_git(pushed) and b"wrote ]52;c;aGVsbG8=NOTES.md" in pushed
    (body_file,) = (hostile.folder / "pull-requests").iterdir()
    body = body_file.read_bytes()
    assert safe_for_git(body) and body.startswith(b"## Goal\nFix it.\n")
    assert b"- wrote ]52;c;aGVsbG8=NOTES.md\n- 31mdone[0m\n" in body


def test_nothing_to_resume_names_its_sessions_literally_on_one_line(tmp_path: Path) -> None:
    name = f"a{TITLE}\nmala-tui resume: forged line{CLIPBOARD}"
    journal = RunJournal.create(tmp_path, RUN_ID, {"mode": "run", "tasks": []})
    with journal:
        journal.write(ev.RunStarted(at=1, run_id=RUN_ID, sessions=(name,), mode=ev.RunMode.RUN))
        journal.write(
            ev.SessionEnded(at=2, session=name, status=EndStatus.DONE, reason="ok\x1b[2J")
        )
        journal.write(ev.RunEnded(at=3, run_id=RUN_ID, ok=True))
    before = journal.events_path.read_bytes()
    done = run("resume", RUN_ID, "--headless", "--data-dir", str(tmp_path))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"mala-tui resume: run {RUN_ID} has nothing to resume "
        f"(a\u241b]0;pwned\u2407 \u23ce mala-tui resume: forged line\u241b]52;c;aGVsbG8=\u2407: "
        "ended done: ok\u241b[2J)\n"
    )
    assert journal.events_path.read_bytes() == before
