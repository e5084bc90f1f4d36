"""A session host's own checkout: a worktree made from a per-host mirror of the repository.

With `--worktree` on a cluster, no host needs the driver's paths. The driver only
notes each session's worktree (where it will be on the driver, its branch, the run's
base commit, kept reachable at `refs/mala/base/<run>/<session>`) and hands the host a
`Workspace`: the source to fetch from and push to (the repository's path). The host:

- keeps one bare mirror of the repository per source in its data folder
  (`mirrors/<name>-<hash>.git`, `git clone --mirror`, then `git fetch` of what a
  session needs), under a lock, so the sessions on one host share it;
- makes the session's worktree from it, on the session's branch from the run's base
  commit, or, when the source holds a snapshot of the session (its host was lost),
  from that snapshot: the agent's commits as they were, its edits as edits;
- pushes each turn's snapshot (runtime.git.wip) to `refs/mala/wip/<run>/<session>` in the
  source, and the session's branch when the session ends.

When the session has ended, the driver makes its own worktree of the branch from the
last snapshot (`materialize`), so measuring, landing and discarding work on the
driver as they do in a local run.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import re
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from mala_tui.runtime.git.wip import WIP_PREFIX, restore, wip_ref
from mala_tui.runtime.git.worktree import (
    Worktree,
    WorktreeError,
    _git,
    base_tip,
    branch_name,
    current_branch,
    repository_root,
    run_git,
    safe_name,
)

BASE_PREFIX: Final = "refs/mala/base"
MIRRORS_DIR: Final = "mirrors"
_PLAIN = re.compile(r"[^A-Za-z0-9._-]+")
PUSH_TRIES: Final = 2
"""A push may meet another host's push to the same repository (a ref lock): tried again once."""


@dataclass(frozen=True)
class Workspace:
    """What a host needs to make a session's worktree of its own (it travels to the host)."""

    source: str
    """Where the repository is fetched from and snapshots are pushed to: its path."""
    run_id: str
    session: str
    branch: str
    base_commit: str
    inside: str
    """Where the agent works, relative to the worktree's top ("." for the top)."""

    @property
    def base_ref(self) -> str:
        return base_ref(self.run_id, self.session)

    @property
    def snapshot_ref(self) -> str:
        return wip_ref(self.run_id, self.session)


def base_ref(run_id: str, session: str) -> str:
    """`refs/mala/base/<run id>/<session's safe name>`: the commit the session starts from."""
    return f"{BASE_PREFIX}/{run_id}/{safe_name(session)}"


# -- the driver's side -----------------------------------------------------------------------


def plan(cwd: Path, run_id: str, session: str, parent: Path, base: str = "") -> Worktree:
    """The worktree a session will have, made nowhere yet: its host makes its own (`check_out`)
    and the driver makes this one when the session ends (`materialize`). With `base`, from
    that branch's tip (and landing on it), as `worktree.create`.

    Raises:
        WorktreeError: as `worktree.repository_root` and `worktree.base_tip`, or the branch
            already exists.
    """
    repository, commit = repository_root(cwd)
    into = current_branch(cwd)
    if base:
        commit, into = base_tip(cwd, base), base
    branch = branch_name(run_id, session)
    taken = run_git(["rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"], repository)
    if taken.returncode == 0:
        raise WorktreeError(f"git: a branch named '{branch}' already exists in {repository}")
    path = parent / safe_name(session)
    inside = cwd.resolve().relative_to(repository.resolve())
    return Worktree(session, repository, path, path / inside, branch, commit, into, base)


def plan_all(
    plans: Sequence[tuple[str, Path]],
    run_id: str,
    parent: Path,
    bases: Mapping[str, str] | None = None,
) -> dict[str, Worktree]:
    """`plan` for each (session, cwd), from its branch in `bases` when it has one.

    Raises:
        WorktreeError: as `plan`.
    """
    given = bases or {}
    return {
        session: plan(cwd, run_id, session, parent, given.get(session, ""))
        for session, cwd in plans
    }


def workspace(worktree: Worktree, run_id: str) -> Workspace:
    """The host's part of `worktree`; keeps its base commit reachable in the repository
    at `base_ref` (whatever happens to the branch it was taken from meanwhile).

    Raises:
        WorktreeError: the repository cannot be written.
    """
    ref = base_ref(run_id, worktree.session)
    _git(["update-ref", ref, worktree.base_commit], worktree.repository)
    inside = worktree.cwd.relative_to(worktree.path).as_posix()
    return Workspace(
        source=str(worktree.repository),
        run_id=run_id,
        session=worktree.session,
        branch=worktree.branch,
        base_commit=worktree.base_commit,
        inside=inside,
    )


def materialize(worktree: Worktree, snapshot_ref: str) -> str | None:
    """Make the driver's worktree of a session its host ran, once it has ended (nothing when
    its folder is there): from the snapshot the host pushed last, else of its branch, else
    (it never ran) of the base commit. The snapshot's commit, or None.

    Raises:
        WorktreeError: git could not make it.
    """
    if worktree.path.exists():
        return None
    kept = restore(worktree.repository, worktree.path, worktree.branch, snapshot_ref)
    if kept is not None:
        return kept
    worktree.path.parent.mkdir(parents=True, exist_ok=True)
    branch = run_git(
        ["rev-parse", "--verify", "--quiet", f"refs/heads/{worktree.branch}"], worktree.repository
    )
    if branch.returncode == 0:
        add = ["worktree", "add", "--quiet", str(worktree.path), worktree.branch]
        _git(add, worktree.repository)
    else:
        add = ["worktree", "add", "--quiet", "-b", worktree.branch]
        _git([*add, str(worktree.path), worktree.base_commit], worktree.repository)
    return None


# -- the host's side -------------------------------------------------------------------------


def mirror_path(root: Path, source: str) -> Path:
    """The host's mirror of `source` under `root`: named after the source's last part, keyed
    by a hash of the whole (two repositories named alike never share one)."""
    name = _PLAIN.sub("-", source.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")) or "repo"
    digest = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return root / MIRRORS_DIR / f"{name[:40]}-{digest}.git"


@contextlib.contextmanager
def _locked(mirror: Path) -> Iterator[None]:
    """The mirror to this process alone: the sessions on a host clone, fetch and add
    worktrees one at a time."""
    mirror.parent.mkdir(parents=True, exist_ok=True)
    with (mirror.parent / f"{mirror.name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _fetched(root: Path, space: Workspace) -> Path:
    """The mirror, made if it is not there, with the session's base and the run's snapshots
    fetched (the lock held by the caller)."""
    mirror = mirror_path(root, space.source)
    if not (mirror / "HEAD").is_file():
        scratch = mirror.with_name(mirror.name + ".new")
        shutil.rmtree(scratch, ignore_errors=True)  # a clone cut short before
        _git(["clone", "--mirror", "--quiet", space.source, str(scratch)], mirror.parent)
        scratch.rename(mirror)
    wips = f"{WIP_PREFIX}/{space.run_id}/*"
    refspecs = [f"+{space.base_ref}:{space.base_ref}", f"+{wips}:{wips}"]
    _git(["fetch", "--quiet", "--no-write-fetch-head", space.source, *refspecs], mirror)
    return mirror


def check_out(space: Workspace, root: Path, folder: Path) -> tuple[Path, str | None]:
    """Make the session's worktree on this host, in `folder/<session>`, from the mirror kept
    under `root`: where the agent works in it, and the snapshot it was made from (None:
    from the base commit). A folder left there before (a host that was lost on this machine)
    is made afresh: what the source keeps is the truth.

    Raises:
        WorktreeError: the source cannot be fetched, or git could not make the worktree.
    """
    mirror = mirror_path(root, space.source)
    path = folder / safe_name(space.session)
    with _locked(mirror):
        mirror = _fetched(root, space)
        if path.exists():
            run_git(["worktree", "remove", "--force", str(path)], mirror)
            shutil.rmtree(path, ignore_errors=True)
        _git(["worktree", "prune"], mirror)
        folder.mkdir(parents=True, exist_ok=True)
        kept = restore(mirror, path, space.branch, space.snapshot_ref)
        if kept is None:
            add = ["worktree", "add", "--quiet", "--force", "-B", space.branch]
            _git([*add, str(path), space.base_commit], mirror)
    return path / space.inside, kept


def push(cwd: Path, source: str, what: str, ref: str) -> None:
    """Push `what` (a commit, a branch) to `ref` in the source, replacing what was there.

    Raises:
        WorktreeError: the push failed twice.
    """
    for attempt in range(PUSH_TRIES):
        done = run_git(["push", "--quiet", source, f"+{what}:{ref}"], cwd)
        if done.returncode == 0:
            return
        if attempt == PUSH_TRIES - 1:
            reason = " ".join(done.stderr.split()) or "failed"
            raise WorktreeError(f"git push to {source} ({ref}): {reason}")


__all__ = [
    "BASE_PREFIX",
    "Workspace",
    "base_ref",
    "check_out",
    "materialize",
    "mirror_path",
    "plan",
    "plan_all",
    "push",
    "workspace",
]
