"""Each worktree session's worktree in the run's journal: made, and what it changed.

``WorktreeTracker`` listens to the run's events: a session's start journals its worktree,
its end what the worktree changed against its base (files and lines, commits ahead,
uncommitted edits), measured by ``runtime.git.worktree_diffs``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from mala_tui.core import events as ev
from mala_tui.runtime.git.worktree import (
    Worktree,
    WorktreeError,
    base_of,
    commits_ahead,
    has_uncommitted,
)
from mala_tui.runtime.git.worktree_diffs import changes, compared_with


class WorktreeTracker:
    """Journals each session's worktree when it starts, and what it changed when it ends.

    A session that ends without having started (queued when the run stopped, or the run
    stopped during its start-up) has its worktree journaled as it ends: no worktree or
    branch the run made is left out of its journal.

    An event listener of the run: `record` is the supervisor's sink. `prepare` is called
    with a session's worktree as the session ends, before it is measured: on a cluster,
    the driver's worktree is made there and then, from what the host pushed
    (runtime.cluster.mirror); what it raises is said as the measure's error.
    """

    def __init__(
        self,
        worktrees: dict[str, Worktree],
        record: Callable[[ev.Event], object],
        prepare: Callable[[Worktree], object] | None = None,
    ):
        self.worktrees = worktrees
        self._record = record
        self._prepare = prepare
        self._journaled: set[str] = set()

    def __call__(self, event: ev.Event) -> None:
        worktree = self.worktrees.get(event.session)
        if worktree is None:
            return
        unstarted_end = isinstance(event, ev.SessionEnded) and event.session not in self._journaled
        if isinstance(event, ev.SessionStarted) or unstarted_end:
            self._journaled.add(event.session)
            self._record(
                ev.WorktreeCreated(
                    at=event.at,
                    session=event.session,
                    path=str(worktree.path),
                    branch=worktree.branch,
                    base_commit=worktree.base_commit,
                    repository=str(worktree.repository),
                    base_branch=worktree.base_branch,
                    base=worktree.base,
                )
            )
        if isinstance(event, ev.SessionEnded):
            ahead: int | None = None
            uncommitted: bool | None = None
            try:
                if self._prepare is not None:
                    self._prepare(worktree)
                since = compared_with(worktree.path, worktree.base_commit, worktree.base)
                files = changes(worktree.path, since)
                error = ""
            except WorktreeError as exc:
                files, error = (), str(exc)
            with contextlib.suppress(WorktreeError):  # unmeasured, the counts stay unknown
                ahead = commits_ahead(worktree.path, base_of(worktree))
                uncommitted = has_uncommitted(worktree.path)
            self._record(
                ev.WorktreeChanged(
                    at=event.at,
                    session=event.session,
                    files=tuple(
                        ev.ChangedFile(path=f.path, added=f.added, deleted=f.deleted) for f in files
                    ),
                    error=error,
                    commits_ahead=ahead,
                    uncommitted=uncommitted,
                )
            )
