"""One session run away from its driver: the session host, which a cluster engine places.

The unit a cluster runs is the session host, not a bare agent process: it holds the
session's runner (runtime.session.runner), its manager, its Claude Code process, the agent's
transcript and the working tree, all on one machine, because they must share one:
masking rewrites the agent's local transcript, and the runner ends the agent by pid.

Everything the runner does stays as it is in a local run (the idle timeout, the
retries, masking, restarts). Only three things go elsewhere:

- its events go to an outbox, numbered by position, which the driver reads in batches
  (`batches`: runtime.cluster.host_outbox), together with the transcript as deltas;
- the questions it waits on (a restart approval, a permission request) are sent to
  the driver, whose desk asks them and whose answer comes back (`answer_approval`,
  `answer_permission`: runtime.cluster.relayed_questions);
- commands, messages and settings come in as calls (`apply`, `hurry`...).

In a worktree run the host makes the session's worktree and keeps it in the source after
every turn (runtime.cluster.host_worktree); the session's end is said once its work is
pushed.

The driver acknowledges what it has journaled (`ack`); the host keeps the rest, so a
driver that reconnects (after a crash, `mala-tui resume`) asks for what follows and
misses nothing. A host whose driver has said nothing for `orphan_seconds` winds its
session down to a checkpoint and stops, then waits as long again for a driver to
collect its last events before it calls `on_exit`.

This module knows nothing of Ray (runtime.cluster.ray_engine wraps it in an actor).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.manager import ContextManager
from mala_tui.core.observations import Command, Decision
from mala_tui.core.operator_actions import (
    RequireApproval,
    SayToAgent,
    SessionCommand,
    SetManageMode,
    action_from_json,
)
from mala_tui.core.permissions import AnsweredBy
from mala_tui.core.resume_plan import ORPHANED
from mala_tui.runtime.backends.base import Backend, SessionSpec
from mala_tui.runtime.cluster.host_outbox import Outbox
from mala_tui.runtime.cluster.host_worktree import HostWorktree
from mala_tui.runtime.cluster.mirror import Workspace
from mala_tui.runtime.cluster.relayed_questions import QuestionRelay, RelayedApprovals
from mala_tui.runtime.cluster.wire import Batch, HostEnd
from mala_tui.runtime.session.runner import SessionRunner
from mala_tui.runtime.session.runner_limits import RunnerLimits
from mala_tui.runtime.session.turn_ends import TurnEnds

BackendFactory = Callable[[Path], Backend]
"""Makes the session's backend on its host, given the host's folder for the run."""

#: Where the hosts on a machine keep what a run's sessions leave there (stderr logs,
#: transcript copies), under the user data dir of whoever runs the host.
HOSTS_DIR = "hosts"


@dataclass(frozen=True)
class HostSetup:
    """Everything a host needs to run its session: it travels to the host whole."""

    run_id: str
    spec: SessionSpec
    manager: ContextManager
    """Not started: the host starts it (a restart's comes with its resume plan set)."""
    runner_limits: RunnerLimits
    backend: BackendFactory
    orphan_seconds: float = 30 * 60.0
    workspace: Workspace | None = None
    """The session works in a worktree of its own on this host (runtime.cluster.mirror), made
    from the host's mirror of the repository, kept in the source after every turn."""
    flush_seconds: float = 0.1
    """How long the host gathers events before it sends what it has."""
    batch_events: int = 256
    """The most events one batch carries."""


def data_folder() -> Path:
    """This machine's data folder for whoever runs the hosts (their mirrors are there)."""
    return Path(platformdirs.user_data_dir("mala-tui", appauthor=False))


def host_folder(run_id: str) -> Path:
    """This machine's folder for a run's sessions (the driver's run folder is elsewhere)."""
    return data_folder() / HOSTS_DIR / run_id


class SessionHost:
    """Runs one session (its runner) and keeps what the driver has not collected yet."""

    def __init__(self, setup: HostSetup, *, on_exit: Callable[[], None] | None = None) -> None:
        self.setup = setup
        self.spec = setup.spec
        self._folder = folder = host_folder(setup.run_id)
        backend = setup.backend(folder)
        self._worktree: HostWorktree | None = None
        if setup.workspace is not None:
            self._worktree = HostWorktree(
                setup.workspace,
                session=setup.spec.name,
                run_id=setup.run_id,
                cwd=setup.spec.cwd,
                emit=self._emit,
            )
            backend = TurnEnds(backend, self._worktree.turn_ended)
        self.outbox = Outbox(
            transcript=lambda: self.runner.manager.transcript,
            pids=self._pids,
            flush_seconds=setup.flush_seconds,
            batch_events=setup.batch_events,
        )
        self._questions = QuestionRelay(self.outbox.ask)
        self.runner = SessionRunner(
            spec=setup.spec,
            backend=backend,
            manager=setup.manager,
            limits=setup.runner_limits,
            sink=self._emit,
            clock=time.time,
            permissions=self._questions.relay_permission,
            approvals=RelayedApprovals(self._questions),
        )
        self._on_exit = on_exit
        self.last_contact = time.monotonic()
        self.orphaned = False
        self._task: asyncio.Task[EndStatus] | None = None
        self._watch: asyncio.Task[None] | None = None
        self._held_end: ev.SessionEnded | None = None
        """In a worktree of its own, the session's end waits for its work to be pushed: the
        driver makes its worktree from what was pushed once it hears of the end."""

    @property
    def end(self) -> HostEnd | None:
        """How the session ended, once it has."""
        return self.outbox.end

    @property
    def sent_up_to(self) -> int:
        """The position of the newest event in the outbox."""
        return self.outbox.sent_up_to

    # -- the session -----------------------------------------------------------------------

    def start(self) -> None:
        """Start the session (once); the host's event loop must be running."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"session {self.spec.name}")
            self._watch = asyncio.create_task(self._watch_driver(), name="orphan watch")

    async def _run(self) -> EndStatus:
        if not await self._check_out():
            reason = "its worktree could not be made on its host"
            self._emit(
                ev.SessionEnded(
                    at=time.time(), session=self.spec.name, status=EndStatus.FAILED, reason=reason
                )
            )
            self._let_end_go()
            self.outbox.finish(HostEnd(EndStatus.FAILED, reason, (), self.sent_up_to))
            return EndStatus.FAILED
        try:
            status = await self.runner.run()
        except BaseException as exc:
            status = EndStatus.FAILED
            reason = f"the host's runner broke: {exc!r}"
            self._let_end_go()
            self.outbox.finish(HostEnd(status, reason, self._pids(), self.sent_up_to))
            raise
        if self._worktree is not None:
            await self._worktree.keep_work()  # the last turn's files too, before the end is said
            await self._worktree.push_branch()
        self._let_end_go()
        self.outbox.finish(HostEnd(status, self.runner.end_reason, self._pids(), self.sent_up_to))
        return status

    async def _check_out(self) -> bool:
        """Make the session's worktree on this host, if it has one; False when it cannot be."""
        if self._worktree is None:
            return True
        cwd = await self._worktree.check_out(data_folder(), self._folder / "worktrees")
        if cwd is None:
            return False
        self.runner.work_in(cwd)
        self.spec = self.runner.spec
        return True

    def _let_end_go(self) -> None:
        held, self._held_end = self._held_end, None
        if held is not None:
            self.outbox.put(ev.event_json(held))

    def _pids(self) -> tuple[int, ...]:
        return tuple(self.runner.pids)

    def _emit(self, event: ev.Event) -> ev.Event:
        if self.setup.workspace is not None and isinstance(event, ev.SessionEnded):
            self._held_end = event  # said once the work is pushed (`_let_end_go`)
            return event
        if self.setup.workspace is not None and isinstance(event, ev.SessionStarted):
            # The journal is the driver's: the folder it names is the driver's worktree
            # (made there when the session ends), which `resume` starts the session from.
            event = event.model_copy(update={"cwd": str(self.setup.spec.cwd)})
        self.outbox.put(ev.event_json(event))
        return event

    # -- what the driver reads ---------------------------------------------------------------

    async def batches(self, after: int) -> AsyncIterator[Batch]:
        """Every event after position `after`, then live, in batches, until the session's end.

        A new call (a driver reconnecting) supersedes the one before: that one returns. The
        first batch carries the whole transcript and every question still waiting.
        """
        self.touch()
        stream = self.outbox.batches(after, self._questions.waiting())
        async with contextlib.aclosing(stream):
            async for batch in stream:
                yield batch

    def ack(self, position: int) -> None:
        """The driver has journaled everything up to `position`: the host lets it go."""
        self.touch()
        self.outbox.ack(position)

    def touch(self) -> None:
        """The driver is there (any call from it says so)."""
        self.last_contact = time.monotonic()

    # -- questions, answered by the driver ---------------------------------------------------

    def answer_approval(
        self,
        number: int,
        decision: Decision,
        edited_text: str | None,
        by: AnsweredBy,
        reason: str = "",
    ) -> bool:
        """The driver's desk settled the approval of checkpoint `number`; False when the
        session no longer waits for it."""
        self.touch()
        return self._questions.answer_approval(number, decision, edited_text, by, reason)

    def answer_permission(self, key: int, allow: bool, message: str) -> bool:
        self.touch()
        return self._questions.answer_permission(key, allow, message)

    # -- commands from the driver ------------------------------------------------------------

    def apply(self, action: str) -> None:
        """What a person did to the session (core.operator_actions), sent by the driver as
        JSON (`action_json`): the runner applies it."""
        self.touch()
        received = action_from_json(action)
        if not isinstance(received, SessionCommand | SetManageMode | RequireApproval | SayToAgent):
            raise ValueError(f"{received.kind}: not an action a session's host applies")
        self.runner.apply(received)

    def hurry(self) -> None:
        self.touch()
        self.runner.hurry()

    def budget_reached(self, over: bool, reason: str) -> None:
        self.touch()
        self.runner.budget_reached(over, reason)

    # -- a driver gone -----------------------------------------------------------------------

    async def _watch_driver(self) -> None:
        """Wind the session down when the driver has been gone `orphan_seconds`; once it
        has ended, wait as long again for a driver to collect its events, then exit."""
        limit = self.setup.orphan_seconds
        step = max(0.05, min(limit / 4, 30.0))
        while True:
            await asyncio.sleep(step)
            silent = time.monotonic() - self.last_contact
            if silent < limit:
                self.orphaned = False
                continue
            if self.end is None and not self.orphaned:
                self.orphaned = True
                gone = f"{ORPHANED} for {limit / 60:g} min (cluster.orphan_minutes)"
                self.runner.apply(
                    SessionCommand(session=self.spec.name, command=Command.CANCEL, reason=gone)
                )
            elif self.end is not None and silent >= 2 * limit:
                if self._on_exit is not None:
                    self._on_exit()
                return

    async def close(self) -> None:
        """Stop the session (if it runs) and wait for its end."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
