"""A worktree run's sessions, added or forked while it runs, and on a cluster's hosts.

Each session of a worktree run (`run --worktree`, and its resume) works in a git
worktree and branch of its own (runtime.git.worktree); on a cluster each session's host
makes it from its own mirror of the repository (runtime.cluster.mirror).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mala_tui.runtime.backends.base import SessionSpec
    from mala_tui.runtime.git.worktree import Worktree
    from mala_tui.runtime.journal.writer import RunJournal
    from mala_tui.runtime.run.supervisor import Supervisor


def host_worktrees(supervisor: Supervisor, worktrees: dict[str, Worktree], run_id: str) -> None:
    """On a cluster, each session's host makes its worktree from its own mirror of the
    repository (runtime.cluster.mirror): the sessions there now, and those added later.

    Raises:
        WorktreeError: a repository cannot be written (its base ref).
    """
    set_up = host_worktree_setter(worktrees, run_id)
    for name, runner in supervisor.runners.items():
        set_up(name, runner)
    supervisor.on_added.append(set_up)


def host_worktree_setter(
    worktrees: dict[str, Worktree], run_id: str
) -> Callable[[str, object], None]:
    """Hands a session's runner on a cluster the worktree its host is to make (raises
    WorktreeError when the repository cannot be written)."""
    from mala_tui.runtime.cluster.driver_runner import RemoteRunner
    from mala_tui.runtime.cluster.mirror import workspace

    def set_up(name: str, runner: object) -> None:
        if isinstance(runner, RemoteRunner) and name in worktrees:
            runner.workspace = workspace(worktrees[name], run_id)

    return set_up


def ended_on_host(run_id: str) -> Callable[[Worktree], object]:
    """The driver's worktree of a session its host ran, made as the session ends."""
    from mala_tui.runtime.cluster.mirror import materialize
    from mala_tui.runtime.git.wip import wip_ref

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
    from mala_tui.runtime.cluster.mirror import plan
    from mala_tui.runtime.git.worktree import WorktreeError, create

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
    from mala_tui.runtime.git.worktree import WorktreeError, fork

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
