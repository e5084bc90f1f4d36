"""A session host's own worktrees, made from its mirror of the repository (real git, in tmp)."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from mala_tui.config import Settings
from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.manager import ContextManager
from mala_tui.prompt_files import load_prompts
from mala_tui.runtime.backends.base import SessionSpec
from mala_tui.runtime.backends.scripted import ScriptedBackend, ScriptedClient, finished
from mala_tui.runtime.cluster.mirror import (
    Workspace,
    check_out,
    materialize,
    mirror_path,
    plan,
    workspace,
)
from mala_tui.runtime.cluster.session_host import HostSetup, SessionHost
from mala_tui.runtime.git.wip import wip_ref
from mala_tui.runtime.git.worktree import WorktreeError
from mala_tui.runtime.run.session_limits import limits_from, runner_limits_from
from tests.runtime.test_worktree import git, make_repo


def test_sessions_on_one_host_share_one_mirror_each_on_its_branch_from_the_base(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    base = make_repo(repo)
    planned = [plan(repo, "run-1", name, tmp_path / "driver") for name in ("a", "b", "c")]
    spaces = [workspace(w, "run-1") for w in planned]
    git(repo, "commit", "-q", "--allow-empty", "-m", "later")  # the base stays the run's
    root, folder = tmp_path / "host", tmp_path / "host" / "run-1"
    with ThreadPoolExecutor(3) as pool:
        made = list(pool.map(lambda space: check_out(space, root, folder), spaces))
    assert [kept for _, kept in made] == [None, None, None], "nothing to restore"
    assert list((root / "mirrors").glob("*.git")) == [mirror_path(root, str(repo))]
    for (cwd, _), space in zip(made, spaces, strict=True):
        assert cwd == folder / space.session
        assert git(cwd, "rev-parse", "HEAD").strip() == base
        assert git(cwd, "symbolic-ref", "--short", "HEAD").strip() == space.branch
        assert (cwd / "src" / "app.py").is_file()
    assert not any(w.path.exists() for w in planned), "nothing made on the driver"


def test_a_branch_already_there_is_refused_before_anything_is_made(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_repo(repo)
    git(repo, "branch", "mala/run-1/a")
    with pytest.raises(WorktreeError, match="mala/run-1/a' already exists"):
        plan(repo, "run-1", "a", tmp_path / "driver")


def test_the_driver_makes_a_worktree_at_the_base_for_a_session_that_never_ran(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    base = make_repo(repo)
    worktree = plan(repo / "src", "run-1", "a", tmp_path / "driver")
    assert materialize(worktree, wip_ref("run-1", "a")) is None
    assert git(worktree.path, "rev-parse", "HEAD").strip() == base
    assert git(worktree.path, "symbolic-ref", "--short", "HEAD").strip() == worktree.branch
    assert (worktree.cwd / "app.py").is_file()


def test_a_source_the_host_cannot_reach_ends_the_session_failed_saying_why(
    tmp_path: Path,
) -> None:
    spec = SessionSpec(name="a", task="t", cwd=tmp_path)
    manager = ContextManager(
        name="a", task="t", limits=limits_from(Settings()), prompts=load_prompts()
    )
    backend = ScriptedBackend([ScriptedClient([[finished("ok")]])])
    gone = Workspace(str(tmp_path / "nowhere"), "run-1", "a", "mala/run-1/a", "0" * 40, ".")
    setup = HostSetup(
        run_id="run-1",
        spec=spec,
        manager=manager,
        runner_limits=runner_limits_from(Settings()),
        backend=lambda folder: backend,
        workspace=gone,
        flush_seconds=0.01,
    )
    host = SessionHost(setup)

    async def run() -> list[ev.Event]:
        host.start()
        lines = [line async for batch in host.batches(0) for line in batch.events]
        await host.close()
        return [ev.parse_event(json.loads(line)) for line in lines]

    events = asyncio.run(run())
    (error,) = [e for e in events if isinstance(e, ev.ErrorRecorded)]
    assert "the worktree could not be made" in error.message
    assert str(tmp_path / "nowhere") in error.message
    (end,) = [e for e in events if isinstance(e, ev.SessionEnded)]
    assert end.status is EndStatus.FAILED
    assert backend.created == [], "no agent started"


def test_forking_a_session_whose_worktree_is_on_its_host_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    from mala_tui.runtime.journal.writer import RunJournal
    from mala_tui.runtime.run.worktree_sessions import fork_in_worktree

    repo = tmp_path / "repo"
    make_repo(repo)
    worktree = plan(repo, "run-1", "a", tmp_path / "driver")
    journal = RunJournal.create(tmp_path / "data", "run-1", {"mode": "test"})
    try:
        fork = fork_in_worktree({"a": worktree}, journal, on_hosts=True)
        with pytest.raises(ValueError, match=r"cannot be forked yet \(a's worktree is on its host"):
            fork(SessionSpec(name="a", task="t", cwd=worktree.cwd), "a2", "go on")
    finally:
        journal.close()
    assert not (tmp_path / "driver" / "a2").exists(), "nothing made"
