"""Sessions joining a running run: a new task (with one of the run's profiles), or a fork.

The supervisor owns one `NewSessions`, built with the run's `Joining`: how a new or
forked session is made (in a worktree run, in a worktree of its own) and the run's named
profiles, which the launcher knows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from mala_tui.config import Settings
from mala_tui.core import events as ev
from mala_tui.core.budget import BudgetLimits
from mala_tui.core.manager import Limits
from mala_tui.core.operator_messages import MessageError, checked_text
from mala_tui.runtime.backends.base import SessionSpec
from mala_tui.runtime.run.budget_watch import BudgetWatch
from mala_tui.runtime.run.profiles import Profile, ProfileError, with_profile
from mala_tui.runtime.run.runners import Runner
from mala_tui.runtime.run.session_limits import task_limits
from mala_tui.runtime.run.slots import Slots

#: The longest session name a new task may have (a card's title).
MAX_NAME = 60


@dataclass(frozen=True)
class Joining:
    """How sessions that join a running run are made, as the launcher knows it."""

    spec_for_new: Callable[[str, str, Path], SessionSpec] | None = None
    """How a session added while the run runs is made (name, task, cwd): like the run's
    others (its model, environment, worktrees). None: the run takes no new sessions."""
    spec_for_fork: Callable[[SessionSpec, str, str], SessionSpec] | None = None
    """How a fork's session is made from its parent's (spec, name, instruction); in a
    worktree run, with a worktree of its own. None: in the parent's folder."""
    profiles: Mapping[str, Profile] = field(default_factory=dict)
    """The run's named profiles (a tasks file's `[profile.NAME]`) a session added while
    it runs may be given."""


class NewSessions:
    """Adds sessions to the run while it runs (`Supervisor.add_task`, `Supervisor.fork`)."""

    def __init__(
        self,
        *,
        settings: Settings,
        runners: dict[str, Runner],
        add_session: Callable[..., Runner],
        budget: BudgetWatch,
        slots: Slots,
        record: Callable[[ev.Event], ev.Event],
        clock: Callable[[], float],
        stop_cause: Callable[[], str],
        joining: Joining,
    ) -> None:
        self.settings = settings
        self.runners = runners
        self.add_session = add_session
        self.budget = budget
        self.slots = slots
        self.record = record
        self.clock = clock
        self.stop_cause = stop_cause
        self.joining = joining

    def profile_names(self) -> list[str]:
        """The run's named profiles a session added while it runs may be given."""
        return list(self.joining.profiles)

    def _new_name(self, name: str) -> str:
        """A name for a session joining the run, stripped; refused when unusable or taken."""
        name = name.strip()
        if not name or len(name) > MAX_NAME or not name.isprintable():
            raise ValueError(f"a session name is 1 to {MAX_NAME} printable characters")
        if name in self.runners:
            raise ValueError(f"a session is already named {name!r}")
        return name

    def add_task(self, name: str, task: str, cwd: Path, profile: str = "") -> None:
        """A new task for the running run, made into a session like the run's others, or
        with one of the run's named profiles over the run's settings (`profile`).

        Raises:
            ValueError: a bad name, task, folder or profile, a name taken, or the run not
                running.
        """
        make = self.joining.spec_for_new
        if make is None:
            raise ValueError("this run cannot take new sessions")
        name, task = self._new_name(name), task.strip()
        if not task:
            raise ValueError("the task is empty")
        try:
            folder = cwd.expanduser().resolve()
        except (OSError, RuntimeError, ValueError) as exc:
            raise ValueError(f"{str(cwd)!r} is not a folder: {exc}") from None
        if not folder.is_dir():
            raise ValueError(f"{str(cwd)!r} is not a folder")
        chosen, task_settings = None, self.settings
        if profile:  # checked before the session's worktree is made
            chosen = self.joining.profiles.get(profile)
            if chosen is None:
                known = ", ".join(self.joining.profiles) or "none (a tasks file's [profile.NAME])"
                raise ValueError(f"this run has no profile {profile!r}; profiles: {known}")
            try:
                task_settings = chosen.apply(self.settings)
            except ProfileError as exc:
                raise ValueError(f"profile {profile}: {exc}") from None
        spec = make(name, task, folder)
        if chosen is None:
            self.add_live(spec)
            return
        spec = with_profile(spec, chosen, self.settings)
        limits, budget = task_limits(task_settings, self.settings, spec)
        self.add_live(spec, limits=limits, budget=budget, profile=profile)

    def fork(self, parent: str, name: str, instruction: str) -> None:
        """A new session from `parent`'s conversation as it stands, told `instruction` instead
        of what `parent` goes on with (the agent forks the conversation into a session of its
        own: the SDK's `fork_session`). It runs with `parent`'s model, tools, limits and
        budget; in a worktree run, in a worktree of its own made from `parent`'s (its
        commits and its uncommitted edits). `parent` goes on as it was.

        Raises:
            ValueError: no such session, one without a conversation yet or on another host,
                a bad name or instruction, or the run not running.
        """
        runner = self.runners.get(parent)
        if runner is None:
            raise ValueError(f"no session is named {parent!r}")
        if runner.elsewhere:
            raise ValueError(
                f"{parent} runs on {runner.elsewhere}, which keeps its conversation: it "
                "cannot be forked from here"
            )
        session_id = runner.manager.session_id
        if session_id is None:
            raise ValueError(f"{parent} has no agent session yet: there is nothing to fork")
        name = self._new_name(name)
        try:
            instruction = checked_text(instruction)
        except MessageError as exc:
            raise ValueError(f"the instruction: {exc}") from None
        self._check_running()  # before a worktree is made for it
        make = self.joining.spec_for_fork or _in_the_same_folder
        spec = replace(make(runner.spec, name, instruction), fork_of=session_id)
        manager = runner.manager
        forked = self.add_session(
            spec, limits=manager.limits, budget=self.budget.limits_for(parent)
        )
        forked.manager.fork_from(session_id, manager.transcript.messages, manager.density.ratio)
        self._join(
            spec,
            forked,
            ev.SessionAdded(
                at=self.clock(),
                session=name,
                task=instruction,
                cwd=str(spec.cwd),
                forked_from=parent,
                fork_of=session_id,
            ),
        )

    def add_live(
        self,
        spec: SessionSpec,
        *,
        limits: Limits | None = None,
        budget: BudgetLimits | None = None,
        profile: str = "",
    ) -> Runner:
        """A session joining the run while it runs; it waits for a slot like the others.
        `limits`, `budget`, `profile`: its profile's (the run's settings when not given).

        Raises:
            ValueError: the run is not running (over, or not started), or the name is taken.
        """
        self._check_running()
        runner = self.add_session(spec, limits=limits, budget=budget)
        self._join(
            spec,
            runner,
            ev.SessionAdded(
                at=self.clock(),
                session=spec.name,
                task=spec.task,
                cwd=str(spec.cwd),
                profile=profile,
            ),
        )
        return runner

    def _join(self, spec: SessionSpec, runner: Runner, added: ev.SessionAdded) -> None:
        """The session added is journaled, and started when a slot is free."""
        self._check_running()
        self.record(added)
        self.slots.join(spec.name, runner, self.stop_cause())

    def _check_running(self) -> None:
        self.slots.check_running(self.stop_cause())


def _in_the_same_folder(parent: SessionSpec, name: str, instruction: str) -> SessionSpec:
    """A fork outside a worktree run: the parent's session, in the parent's folder."""
    return replace(parent, name=name, task=instruction)
