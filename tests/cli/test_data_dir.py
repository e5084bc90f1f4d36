"""The data dir: absolute from the moment it is read, named in every command mala-tui prints
for pasting, and read only when it (and each run's folder) is the user's own."""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import cast

import pytest

from mala_tui import cli
from mala_tui.commands import console_cmd, run_cmd
from mala_tui.commands.running import finish, resume_command
from mala_tui.commands.runs_cmd import worktree_lines
from mala_tui.config import IdleSettings, Settings, StorageSettings
from mala_tui.config_loading import LoadedSettings, load_settings
from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.observations import SessionIdentified
from mala_tui.core.run_view import RunState
from mala_tui.runtime.backends.scripted import HANG, ScriptedClient
from mala_tui.runtime.consoles.live_run import RemoteRun
from mala_tui.runtime.git.worktree import create
from mala_tui.runtime.journal.writer import (
    RunJournal,
    StorageError,
    UnsafeFolder,
    find_run,
    list_runs,
)
from tests.cli.test_cli import run
from tests.cli.test_land_cli import RUN_ID as LANDED_RUN
from tests.cli.test_land_cli import Run, git
from tests.support.backends import PerSession
from tests.support.supervisors import build_supervisor

RUN_ID = "20260101-000000-beef"
PLANTED = "20991231-235959-evil"
"""A run id that sorts after every real one: what `latest` picks."""
NOBODY = 65534


def journaled(data: Path, run_id: str = RUN_ID, *, ended: bool = True) -> Path:
    """A run under `data` (made as mala-tui makes it): started, and ended unless told not."""
    journal = RunJournal.create(data, run_id, {"mode": "run", "tasks": []})
    journal.write(ev.RunStarted(at=1, run_id=run_id, sessions=("a",), mode=ev.RunMode.RUN))
    if ended:
        journal.write(ev.SessionEnded(at=2, session="a", status=EndStatus.DONE))
        journal.write(ev.RunEnded(at=3, run_id=run_id, ok=True))
    journal.close()
    return journal.directory


def data_settings(data: Path) -> Settings:
    return Settings(storage=StorageSettings(data_dir=data))


# -- a relative --data-dir ------------------------------------------------------------------------


def test_a_relative_data_dir_is_made_absolute_against_the_folder_mala_tui_started_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `--cwd` names the repository elsewhere: the data dir (and the worktrees under it)
    # must not land inside it.
    started, repo = tmp_path / "started", tmp_path / "repo"
    started.mkdir()
    repo.mkdir()
    monkeypatch.chdir(started)
    seen: list[tuple[argparse.Namespace, LoadedSettings]] = []

    def fake_run(args: argparse.Namespace, loaded: LoadedSettings) -> int:
        seen.append((args, loaded))
        return 0

    monkeypatch.setattr(run_cmd, "run", fake_run)
    argv = ["run", "--worktree", "--cwd", str(repo), "--data-dir", "data", "--headless", "t"]
    assert cli.main(argv) == 0
    ((args, loaded),) = seen
    assert args.data_dir == started / "data"
    assert loaded.settings.resolved_data_dir() == started / "data"
    assert not loaded.settings.resolved_data_dir().is_relative_to(repo)


def test_a_relative_data_dir_from_the_environment_is_absolute_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MALA_TUI_STORAGE__DATA_DIR", "runs-here")
    settings = load_settings().settings
    assert settings.storage.data_dir == tmp_path / "runs-here"
    assert settings.resolved_data_dir() == tmp_path / "runs-here"


# -- the commands mala-tui prints ------------------------------------------------------------------


def test_a_printed_command_names_the_data_dir_unless_it_is_the_default(tmp_path: Path) -> None:
    spaced = tmp_path / "my runs"
    assert Settings().command("resume", RUN_ID) == f"mala-tui resume {RUN_ID}"
    assert data_settings(spaced).command("resume", RUN_ID) == (
        f"mala-tui resume {RUN_ID} --data-dir {shlex.quote(str(spaced))}"
    )
    assert resume_command(RUN_ID, data_settings(spaced)).endswith(shlex.quote(str(spaced)))
    # Pasted, it parses back to the same words.
    assert shlex.split(data_settings(spaced).command("land", RUN_ID, "a b")) == [
        *("mala-tui", "land", RUN_ID, "a b", "--data-dir", str(spaced)),
    ]


def test_show_names_the_data_dir_a_setting_gave_in_its_resume_command(tmp_path: Path) -> None:
    data = tmp_path / "data"
    task = {"name": "a", "task": "t", "cwd": str(tmp_path)}
    journal = RunJournal.create(data, RUN_ID, {"mode": "run", "tasks": [task]})
    journal.write(ev.RunStarted(at=1, run_id=RUN_ID, sessions=("a",), mode=ev.RunMode.RUN))
    journal.write(ev.AgentSessionNamed(at=2, session="a", session_id="abc"))
    journal.close()
    # Not on the command line: from the environment, which a pasting shell may not have.
    env = dict(os.environ, MALA_TUI_STORAGE__DATA_DIR=str(data))
    shown = run("show", RUN_ID, "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["resume"]["command"] == (
        f"mala-tui resume {RUN_ID} --data-dir {data}"
    )


def test_shows_land_hint_names_the_data_dir(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(
        repo,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@e",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "s",
    )
    tree = create(repo, RUN_ID, "a", tmp_path / "trees")
    (tree.path / "x.md").write_text("x\n")
    state = RunState().apply_all(
        [
            ev.WorktreeCreated(
                at=1,
                session="a",
                path=str(tree.path),
                branch=tree.branch,
                base_commit=tree.base_commit,
                repository=str(repo),
                base_branch=tree.base_branch,
            )
        ]
    )
    from mala_tui.runtime.git.landing import refresh_statuses

    refresh_statuses(state)
    data = tmp_path / "data"
    (line,) = worktree_lines(state, RUN_ID, data_settings(data))
    assert line.endswith(f"(mala-tui land {RUN_ID} a --data-dir {data})")


class _Gone:
    """What `_ending` reads of a console's run: a detached one has not ended."""

    def __init__(self, folder: Path, lost: str = "") -> None:
        self.folder = folder
        self.ended = None
        self.lost = lost


@pytest.mark.parametrize(
    ("lost", "said"),
    [
        ("", "detached: run {run} goes on (mala-tui attach {run} --data-dir {data})\n"),
        ("the run's host went away", ""),
    ],
)
def test_a_console_leaving_names_the_data_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lost: str, said: str
) -> None:
    data = tmp_path / "data"
    loaded = LoadedSettings(data_settings(data), {}, tmp_path / "config.toml", False)
    out = io.StringIO()
    remote = cast("RemoteRun", _Gone(data / "runs" / RUN_ID, lost))
    console_cmd._ending(remote, loaded, out, detached=False)
    assert out.getvalue() == said.format(run=RUN_ID, data=data)
    if lost:
        assert capsys.readouterr().err == (
            f"mala-tui: {lost}; `mala-tui resume {RUN_ID} --data-dir {data}` carries it on\n"
        )


# -- whose folders are read ------------------------------------------------------------------------


def test_a_data_dir_mala_tui_makes_is_private_and_is_read(tmp_path: Path) -> None:
    data = tmp_path / "fresh" / "data"
    journaled(data)
    assert (data.stat().st_mode & 0o777, (data / "runs").stat().st_mode & 0o777) == (0o700, 0o700)
    assert [r.run_id for r in list_runs(data)] == [RUN_ID]
    done = run("runs", "--data-dir", str(data))
    assert done.returncode == 0, done.stderr
    assert RUN_ID in done.stdout


@pytest.mark.parametrize("mode", [0o770, 0o707, 0o1777])
def test_a_data_dir_others_can_write_to_is_refused_before_anything_is_read(
    tmp_path: Path, mode: int
) -> None:
    data = tmp_path / "data"
    journaled(data)
    data.chmod(mode)
    for command in (["runs"], ["show", "latest", "--json"], ["resume", "latest", "--headless"]):
        done = run(*command, "--data-dir", str(data))
        assert done.returncode == 2, (command, done.stdout, done.stderr)
        assert done.stdout == ""
        (line,) = done.stderr.splitlines()
        assert line == (
            f"mala-tui {command[0]}: {data} can be written to by other users (mode {mode:o}); "
            "mala-tui reads runs only from folders of yours that nobody else can write to"
        )


def test_a_runs_folder_others_can_write_to_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    journaled(data)
    (data / "runs").chmod(0o777)
    with pytest.raises(UnsafeFolder, match="can be written to by other users"):
        find_run(data, "latest")
    with pytest.raises(UnsafeFolder):
        list_runs(data)


def test_a_run_folder_others_can_write_to_is_refused_not_listed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    journaled(data)
    journaled(data, PLANTED).chmod(0o777)
    for command in (["runs"], ["show", PLANTED, "--json"], ["resume", "latest", "--headless"]):
        done = run(*command, "--data-dir", str(data))
        assert done.returncode == 2, (command, done.stdout, done.stderr)
        (line,) = done.stderr.splitlines()
        assert f"{data / 'runs' / PLANTED} can be written to by other users" in line
    # The user's own run is still found by its id.
    assert find_run(data, RUN_ID) == data / "runs" / RUN_ID


def foreign(path: Path) -> None:
    """Hand `path` (and what is in it) to another user, as a planting user would own it."""
    if os.getuid() != 0:
        pytest.skip("making a folder another user's needs root (chown)")
    for root, folders, files in os.walk(path):
        for name in [*folders, *files]:
            os.chown(os.path.join(root, name), NOBODY, NOBODY)
    os.chown(path, NOBODY, NOBODY)


def test_a_run_folder_planted_by_another_user_is_not_resumed_as_latest(tmp_path: Path) -> None:
    data = tmp_path / "data"
    journaled(data)
    planted = journaled(data, PLANTED, ended=False)  # `latest`, and resumable
    foreign(planted)
    done = run("resume", "latest", "--headless", "--data-dir", str(data))
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"mala-tui resume: {planted} belongs to another user (uid {NOBODY}); "
        "mala-tui reads runs only from folders of yours that nobody else can write to\n"
    )
    assert run("runs", "--data-dir", str(data)).returncode == 2


def test_a_data_dir_of_another_users_is_refused_for_reading_and_for_a_new_run(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    journaled(data)
    foreign(data)
    done = run("runs", "--data-dir", str(data))
    assert done.returncode == 2
    assert f"{data} belongs to another user (uid {NOBODY})" in done.stderr
    with pytest.raises(StorageError, match="belongs to another user"):
        RunJournal.create(data, "20260101-000001-cafe", {"mode": "run"})


def test_a_data_dir_that_is_a_link_to_a_folder_of_ones_own_is_read(tmp_path: Path) -> None:
    data = tmp_path / "data"
    journaled(data)
    link = tmp_path / "link"
    link.symlink_to(data)
    assert [r.run_id for r in list_runs(link)] == [RUN_ID]
    (data / "runs" / RUN_ID).rename(tmp_path / "elsewhere")
    (data / "runs" / RUN_ID).symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UnsafeFolder, match="is a link, not a folder"):
        list_runs(data)


async def test_the_end_of_a_stopped_run_says_how_to_carry_it_on_with_its_data_dir(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    backend = PerSession(lambda name: ScriptedClient([[SessionIdentified(0, name), HANG]]))
    settings = Settings(
        idle=IdleSettings(idle_timeout_seconds=30), storage=StorageSettings(data_dir=data)
    )
    sup = build_supervisor(backend, ["a"], cwd=tmp_path, journal=data, settings=settings)
    running = asyncio.Event()
    sup.listeners.events.append(
        lambda e: running.set() if isinstance(e, ev.SessionStarted) else None
    )
    task = asyncio.create_task(sup.run())
    await asyncio.wait_for(running.wait(), 30)
    sup.stop_for("stopped by a test")
    result = await asyncio.wait_for(task, 30)
    out = io.StringIO()
    finish(result, sup, out)
    assert f"1 stopped with the run; carry on: mala-tui resume run-1 --data-dir {data}\n" in (
        out.getvalue()
    )


def test_land_pr_with_a_relative_data_dir_prints_a_body_file_that_works_pasted(
    tmp_path: Path,
) -> None:
    # Without gh, `land --pr` prints the `gh pr create` to run by hand: its body file must be
    # absolute (gh is run in the repository, and so would a relative path be read).
    finished = Run(tmp_path)
    git(tmp_path, "init", "-q", "--bare", "remote.git")
    git(finished.repo, "remote", "add", "origin", str(tmp_path / "remote.git"))
    git(finished.repo, "push", "-q", "origin", "main")
    (finished.trees["a"].path / "NOTES.md").write_text("notes\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(shutil.which("git") or "/usr/bin/git")
    done = subprocess.run(
        [sys.executable, "-m", "mala_tui", "land", LANDED_RUN, "a", "--pr", "--data-dir", "data"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=dict(os.environ, PATH=str(bin_dir)),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    said = shlex.split(done.stdout.split("gh pr create", 1)[1])
    body = Path(said[said.index("--body-file") + 1])
    assert body == finished.folder / "pull-requests" / "a.md"
    assert body.is_file()
