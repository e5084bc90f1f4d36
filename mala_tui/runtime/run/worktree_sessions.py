"""A worktree run's sessions, added or forked while it runs, and on a cluster's hosts.

Each session of a worktree run (`run --worktree`, and its resume) works in a git
worktree and branch of its own (runtime.git.worktree); on a cluster each session's host
makes it from its own mirror of the repository (runtime.cluster.mirror).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

from mala_tui.runtime.backends.base import SessionSpec
from mala_tui.runtime.cluster.mirror import Workspace, materialize, plan, workspace
from mala_tui.runtime.git.wip import wip_ref
from mala_tui.runtime.git.worktree import Worktree, WorktreeError, create, fork
from mala_tui.runtime.journal.writer import RunJournal
from mala_tui.runtime.run.new_sessions import Joining
from mala_tui.runtime.run.profiles import Profile


def worktree_joining(
    template: SessionSpec,
    worktrees: dict[str, Worktree],
    journal: RunJournal,
    *,
    on_hosts: bool,
    profiles: Mapping[str, Profile],
    base: str = "",
) -> Joining:
    """How sessions join a worktree run: each added or forked one in a worktree of its own."""
    return Joining(
        spec_for_new=in_worktree(template, worktrees, journal, on_hosts=on_hosts, base=base),
        spec_for_fork=fork_in_worktree(worktrees, journal, on_hosts=on_hosts),
        profiles=profiles,
    )


def host_workspaces(
    worktrees: dict[str, Worktree], run_id: str
) -> Callable[[str], Workspace | None]:
    """On a cluster, the worktree each session's host makes from its own mirror of the
    repository (runtime.cluster.mirror), for the sessions there now and those added later
    (raises WorktreeError when the repository cannot be written)."""

    def workspace_for(name: str) -> Workspace | None:
        return workspace(worktrees[name], run_id) if name in worktrees else None

    return workspace_for


def ended_on_host(run_id: str) -> Callable[[Worktree], object]:
    """The driver's worktree of a session its host ran, made as the session ends."""
    return lambda worktree: materialize(worktree, wip_ref(run_id, worktree.session))


def in_worktree(
    template: SessionSpec,
    worktrees: dict[str, Worktree],
    journal: RunJournal,
    *,
    on_hosts: bool,
    base: str = "",
) -> Callable[[str, str, Path], SessionSpec]:
    """A session added to a worktree run gets a worktree of its own, like the others (on a
    cluster, one its host makes), from the run's `--base` branch when it was given one."""

    def spec(name: str, task: str, cwd: Path) -> SessionSpec:
        try:
            made = plan if on_hosts else create
            worktree = made(cwd, journal.run_id, name, journal.directory / "worktrees", base)
        except WorktreeError as exc:
            raise ValueError(str(exc)) from None
        worktrees[name] = worktree  # the tracker journals it when the session starts
        return replace(template, name=name, task=task, cwd=worktree.cwd)

    return spec


def fork_in_worktree(
    worktrees: dict[str, Worktree], journal: RunJournal, *, on_hosts: bool
) -> Callable[[SessionSpec, str, str], SessionSpec]:
    """A fork in a worktree run gets a worktree of its own, made from its parent's."""

    def spec(parent: SessionSpec, name: str, instruction: str) -> SessionSpec:
        made = worktrees.get(parent.name)
        if made is None:
            raise ValueError(f"{parent.name} has no worktree to fork")
        if on_hosts:  # its files are on its host until it ends
            raise ValueError(
                f"a worktree session on a cluster cannot be forked yet ({parent.name}'s "
                "worktree is on its host); add a session instead"
            )
        try:
            worktree = fork(made, journal.run_id, name, journal.directory / "worktrees")
        except WorktreeError as exc:
            raise ValueError(str(exc)) from None
        worktrees[name] = worktree  # the tracker journals it when the session starts
        return replace(parent, name=name, task=instruction, cwd=worktree.cwd)

    return spec
