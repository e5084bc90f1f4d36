"""Work an agent runs in the background: subagents, shells, monitors, workflows.

Claude Code runs subagents in the background by default, and shells when the
agent asks it to. The main thread's turn may end while that work goes on: the
CLI holds each report and starts a new main turn of its own for it (a
`<task-notification>`). So a turn that ends is not a task that is done: the
session is done when the CLI is, with nothing left in the background and no
report waiting to be taken in. Until then the session waits, and says for what.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from pydantic import BaseModel, ConfigDict


class BackgroundKind(StrEnum):
    """What a background task is, in the CLI's own words."""

    SUBAGENT = "subagent"
    SHELL = "shell"
    MONITOR = "monitor"
    WORKFLOW = "workflow"
    OTHER = "other"

    @classmethod
    def of(cls, label: str) -> BackgroundKind:
        """The kind for the CLI's label (`local_agent` and `local_bash` are its stream's
        names for a subagent and a shell); one it does not know is OTHER."""
        label = {"local_agent": "subagent", "local_bash": "shell"}.get(label, label)
        try:
            return cls(label)
        except ValueError:
            return cls.OTHER

    def counted(self, count: int) -> str:
        """`1 subagent`, `2 shells`, `3 background tasks`."""
        noun = "background task" if self is BackgroundKind.OTHER else str(self)
        return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


class BackgroundTask(BaseModel):
    """One piece of background work, as the CLI lists it."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str
    kind: BackgroundKind = BackgroundKind.OTHER
    description: str = ""


def describe_tasks(tasks: tuple[BackgroundTask, ...], reports: int = 0) -> str:
    """`2 subagents and 1 shell`; reports the CLI holds for the agent are named too."""
    parts = []
    for kind in BackgroundKind:
        count = sum(1 for task in tasks if task.kind is kind)
        if count:
            parts.append(kind.counted(count))
    if reports:
        parts.append("1 report" if reports == 1 else f"{reports} reports")
    if not parts:
        return "nothing"
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


@dataclass
class BackgroundWork:
    """What the session's agent runs in the background now (the manager's to keep)."""

    tasks: tuple[BackgroundTask, ...] = ()
    reports: int = 0
    """Reports the CLI holds for the main thread's next turn (a task ended after the
    turn in flight took in its reports): that turn is still to come."""
    waiting: bool = False
    """The main thread's turn ended with work pending: the session waits for the CLI's
    next turn, not for a prompt of mala-tui's."""
    subagents_seen: bool = False
    """The agent has had background work in this session: the CLI may start turns of its
    own for it (and, as reports reach it together, a turn that makes no call first)."""

    @property
    def pending(self) -> bool:
        return bool(self.tasks) or self.reports > 0

    @property
    def subagents(self) -> int:
        return sum(1 for task in self.tasks if task.kind is BackgroundKind.SUBAGENT)

    def describe(self) -> str:
        return describe_tasks(self.tasks, self.reports)

    # -- its transitions: the turn flow's, but for the stop every restart and ending makes

    def listed(self, tasks: tuple[BackgroundTask, ...], reports: int) -> None:
        """The CLI's list of background work, as it changed."""
        self.tasks, self.reports = tasks, reports
        self.subagents_seen = self.subagents_seen or bool(tasks)

    def expect_report(self) -> None:
        """A report is on its way although none is counted (see `subagents_seen`)."""
        self.reports = max(self.reports, 1)

    def wait(self) -> None:
        """The main thread's turn ended with work pending: wait for the CLI's next turn."""
        self.waiting = True

    def taken_in(self) -> None:
        """The reports the CLI held were taken in (or will never come): nothing waits."""
        self.waiting, self.reports = False, 0

    def stop_all(self) -> tuple[BackgroundTask, ...]:
        """The agent process closes and its work with it: what was running."""
        tasks, self.tasks = self.tasks, ()
        self.taken_in()
        return tasks
