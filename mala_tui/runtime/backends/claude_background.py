"""Reading the CLI's background work from its stream (what core.background keeps).

Observed with the bundled CLI 2.1.330 in streaming mode (docs/ARCHITECTURE.md has
the whole account):
- `system/background_tasks_changed` lists every background task of the main
  thread after each change (`task_type` `local_agent` for a subagent, `local_bash`
  for a shell); an empty list when none runs. A subagent's own shells are not in it.
- `system/task_notification` says a task ended. The CLI hands its report to the
  main thread in a turn of its own, which begins with `system/init`: a report that
  arrives during a turn is taken in by the next one, one that arrives between turns
  by the turn it starts.
- A subagent's messages carry `parent_tool_use_id`, and `system/task_progress`
  reports its steps: signs of life, not the main window's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mala_tui.core.background import BackgroundKind, BackgroundTask


class BackgroundReader:
    """The background work one agent process reports; `read` says when it changed."""

    def __init__(self) -> None:
        self._tasks: tuple[BackgroundTask, ...] = ()
        self._known: set[str] = set()
        """Every task of the main thread's ever listed: whose end is a report for it."""
        self._reports: set[str] = set()
        """Tasks that ended during the turn in flight: the next turn takes in their reports."""
        self._in_turn = False

    @property
    def tasks(self) -> tuple[BackgroundTask, ...]:
        return self._tasks

    @property
    def reports(self) -> int:
        return len(self._reports)

    def turn_begins(self) -> bool:
        """A main turn begins (`init`): it takes in the reports that wait. True: changed."""
        self._in_turn = True
        had = bool(self._reports)
        self._reports.clear()
        return had

    def turn_ends(self) -> None:
        self._in_turn = False

    def tasks_listed(self, listed: object) -> bool:
        """`background_tasks_changed`'s list. True when what runs changed."""
        tasks = tuple(_task(entry) for entry in _entries(listed))
        self._known.update(task.id for task in tasks)
        changed = tasks != self._tasks
        self._tasks = tasks
        return changed

    def task_ended(self, data: Mapping[str, Any]) -> bool:
        """A `task_notification`: a report for the main thread when it is one of its tasks
        and ended during a turn (then only the next turn takes it in). True: changed."""
        task_id = str(data.get("task_id") or "")
        if task_id not in self._known or not self._in_turn or task_id in self._reports:
            return False
        self._reports.add(task_id)
        return True


def _entries(listed: object) -> list[Mapping[str, Any]]:
    if not isinstance(listed, list):
        return []
    return [entry for entry in listed if isinstance(entry, Mapping) and entry.get("task_id")]


def _task(entry: Mapping[str, Any]) -> BackgroundTask:
    label = entry.get("task_type") or entry.get("type") or ""
    description = entry.get("description") or entry.get("command") or ""
    return BackgroundTask(
        id=str(entry["task_id"]),
        kind=BackgroundKind.of(str(label)),
        description=str(description)[:200],
    )
