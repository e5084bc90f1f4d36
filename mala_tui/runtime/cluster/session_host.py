"""One session run away from its driver: the session host, which a cluster engine places.

The unit a cluster runs is the session host, not a bare agent process: it holds the
session's runner (runtime.session.runner), its manager, its Claude Code process, the agent's
transcript and the working tree, all on one machine, because they must share one:
masking rewrites the agent's local transcript, and the runner ends the agent by pid.

Everything the runner does stays as it is in a local run (the idle timeout, the
retries, masking, restarts). Only three things go elsewhere:

- its events go to an outbox, numbered by position, which the driver reads in batches
  (`batches`, runtime.cluster.wire), together with the transcript as deltas;
- the questions it waits on (a restart approval, a permission request) are sent to
  the driver, whose desk asks them and whose answer comes back (`answer_approval`,
  `answer_permission`): the policies, the timeouts and "answered once, by whoever is
  first" are the driver's, as in a local run;
- commands, messages and settings come in as calls (`command`, `say`...).

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
import itertools
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
from mala_tui.runtime.backends.base import Backend, PermissionAsk, PermissionVerdict, SessionSpec
from mala_tui.runtime.cluster.mirror import Workspace, check_out, push
from mala_tui.runtime.cluster.wire import (
    ApprovalAsk,
    Ask,
    Batch,
    HostEnd,
    PermissionAskWire,
    PermissionWithdrawn,
    message_json,
)
from mala_tui.runtime.git.wip import WorktreeError, snapshot
from mala_tui.runtime.questions.approvals import Approvals
from mala_tui.runtime.questions.desk import Desk, Reply
from mala_tui.runtime.session.runner import RunnerLimits, SessionRunner
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


class RelayedApprovals:
    """The runner's approvals on a host: each question goes to the driver, whose desk asks
    it; the answer comes back through `SessionHost.answer_approval`. Nothing is asked
    here, so an answer given here finds no question, as on a desk of the host's own."""

    def __init__(self, host: SessionHost) -> None:
        self._host = host
        self._here = Approvals(Desk())

    def ask(
        self, session: str, checkpoint_number: int, on_answer: Callable[[Reply], None]
    ) -> asyncio.Future[Reply]:
        return self._host.relay_approval(checkpoint_number, on_answer)

    def decide(
        self,
        session: str,
        decision: Decision,
        edited_text: str | None = None,
        by: AnsweredBy = AnsweredBy.OPERATOR,
        checkpoint_number: int | None = None,
        *,
        console: str = "",
    ) -> None:
        self._here.decide(session, decision, edited_text, by, checkpoint_number, console=console)


class SessionHost:
    """Runs one session (its runner) and keeps what the driver has not collected yet."""

    def __init__(self, setup: HostSetup, *, on_exit: Callable[[], None] | None = None) -> None:
        self.setup = setup
        self.spec = setup.spec
        self._folder = folder = host_folder(setup.run_id)
        backend = setup.backend(folder)
        if setup.workspace is not None:
            backend = TurnEnds(backend, self._turn_ended)
        self._snapshot_task: asyncio.Task[None] | None = None
        self._snapshot_again = False
        self.runner = SessionRunner(
            spec=setup.spec,
            backend=backend,
            manager=setup.manager,
            limits=setup.runner_limits,
            sink=self._emit,
            clock=time.time,
            permissions=self._relay_permission,
            approvals=RelayedApprovals(self),
        )
        self._on_exit = on_exit
        self._outbox: list[str] = []
        self._dropped = 0
        """Positions acknowledged and let go: `_outbox[0]` is position `_dropped + 1`."""
        self._asks: list[Ask] = []
        """Questions asked or withdrawn since the last batch of the current connection."""
        self._approval_waits: dict[int, tuple[Callable[[Reply], None], asyncio.Future[Reply]]]
        self._approval_waits = {}
        self._permission_waits: dict[int, tuple[PermissionAsk, asyncio.Future[PermissionVerdict]]]
        self._permission_waits = {}
        self._keys = itertools.count(1)
        self._changed = asyncio.Event()
        self._connection = 0
        self.end: HostEnd | None = None
        self.last_contact = time.monotonic()
        self.orphaned = False
        self._task: asyncio.Task[EndStatus] | None = None
        self._watch: asyncio.Task[None] | None = None
        self._held_end: ev.SessionEnded | None = None
        """In a worktree of its own, the session's end waits for its work to be pushed: the
        driver makes its worktree from what was pushed once it hears of the end."""

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
            self.end = HostEnd(EndStatus.FAILED, reason, (), self.sent_up_to)
            self._changed.set()
            return EndStatus.FAILED
        try:
            status = await self.runner.run()
        except BaseException as exc:
            status = EndStatus.FAILED
            reason = f"the host's runner broke: {exc!r}"
            self._let_end_go()
            self.end = HostEnd(status, reason, self._pids(), self.sent_up_to)
            self._changed.set()
            raise
        await self._keep_work()  # the last turn's files too, before the end is said
        await self._push_branch()
        self._let_end_go()
        self.end = HostEnd(status, self.runner.end_reason, self._pids(), self.sent_up_to)
        self._changed.set()
        return status

    # -- the working tree, kept aside ----------------------------------------------------------

    def _turn_ended(self) -> None:
        """A turn ended: keep the working tree (one snapshot at a time; one more after)."""
        if self._snapshot_task is not None and not self._snapshot_task.done():
            self._snapshot_again = True
            return
        self._snapshot_task = asyncio.create_task(self._keep_work(), name="snapshot")

    async def _keep_work(self) -> None:
        space = self.setup.workspace
        if space is None:
            return
        if self._snapshot_task is not None and self._snapshot_task is not asyncio.current_task():
            await asyncio.shield(self._snapshot_task)  # let the one under way finish first
        while True:
            self._snapshot_again = False
            message = f"mala-tui: work in progress of {self.spec.name} (run {self.setup.run_id})"
            try:
                commit = await asyncio.to_thread(self._snapshot, space, message)
            except WorktreeError as exc:
                self._error(ev.Where.SNAPSHOT, str(exc))
                return
            if commit is not None:
                self._emit(
                    ev.WorktreeSnapshot(
                        at=time.time(),
                        session=self.spec.name,
                        ref=space.snapshot_ref,
                        commit=commit,
                    )
                )
            if not self._snapshot_again:
                return

    def _snapshot(self, space: Workspace, message: str) -> str | None:
        """Keep the working tree at the snapshot ref here, then in the source."""
        commit = snapshot(self.spec.cwd, space.snapshot_ref, message)
        if commit is not None:
            push(self.spec.cwd, space.source, commit, space.snapshot_ref)
        return commit

    async def _push_branch(self) -> None:
        """The session's branch (the agent's commits) to the source, as the session ends."""
        space = self.setup.workspace
        if space is None:
            return
        ref = f"refs/heads/{space.branch}"
        try:
            await asyncio.to_thread(push, self.spec.cwd, space.source, ref, ref)
        except WorktreeError as exc:
            self._error(ev.Where.SNAPSHOT, str(exc))

    def _let_end_go(self) -> None:
        held, self._held_end = self._held_end, None
        if held is not None:
            self._outbox.append(ev.event_json(held))
            self._changed.set()

    async def _check_out(self) -> bool:
        """Make the session's worktree on this host (runtime.cluster.mirror); False when it
        cannot be."""
        space = self.setup.workspace
        if space is None:
            return True
        root = data_folder()
        try:
            cwd, kept = await asyncio.to_thread(check_out, space, root, self._folder / "worktrees")
        except WorktreeError as exc:
            self._error(ev.Where.SNAPSHOT, f"the worktree could not be made: {exc}")
            return False
        self.runner.work_in(cwd)
        self.spec = self.runner.spec
        if kept is not None:
            self._emit(
                ev.WorktreeSnapshot(
                    at=time.time(),
                    session=self.spec.name,
                    ref=space.snapshot_ref,
                    commit=kept,
                    restored=True,
                )
            )
        return True

    def _error(self, where: ev.Where, message: str) -> None:
        self._emit(
            ev.ErrorRecorded(at=time.time(), session=self.spec.name, where=where, message=message)
        )

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
        self._outbox.append(ev.event_json(event))
        self._changed.set()
        return event

    @property
    def sent_up_to(self) -> int:
        """The position of the newest event in the outbox."""
        return self._dropped + len(self._outbox)

    # -- what the driver reads ---------------------------------------------------------------

    async def batches(self, after: int) -> AsyncIterator[Batch]:
        """Every event after position `after`, then live, in batches, until the session's end.

        A new call (a driver reconnecting) supersedes the one before: that one returns. The
        first batch carries the whole transcript and every question still waiting.
        """
        self.touch()
        self.ack(after)
        self._connection += 1
        connection = self._connection
        sent = max(after, self._dropped)
        transcript_id, transcript_sent = -1, 0
        self._asks = [
            *(ApprovalAsk(number) for number in self._approval_waits),
            *(self._permission_wire(key, ask) for key, (ask, _) in self._permission_waits.items()),
        ]
        first = True
        while True:
            if not first:
                await self._wait_for_news(sent)
                if connection != self._connection:
                    return
            transcript = self.runner.manager.transcript
            reset = id(transcript) != transcript_id or len(transcript) < transcript_sent
            if reset:
                transcript_id, transcript_sent = id(transcript), 0
            messages = tuple(message_json(m) for m in transcript.messages[transcript_sent:])
            transcript_sent = len(transcript)
            start = sent - self._dropped
            events = tuple(self._outbox[start : start + self.setup.batch_events])
            asks, self._asks = tuple(self._asks), []
            end = self.end if sent + len(events) == self.sent_up_to else None
            batch = Batch(
                first=sent + 1,
                events=events,
                transcript_reset=reset,
                messages=messages,
                asks=asks,
                end=end,
                pids=self._pids(),
            )
            sent = batch.last
            first = False
            yield batch
            if end is not None:
                return

    async def _wait_for_news(self, sent: int) -> None:
        """Until there is something to send (events, a question, the end); then a short
        while longer, so what comes together goes together."""
        while sent >= self.sent_up_to and not self._asks and self.end is None:
            self._changed.clear()
            await self._changed.wait()
        if self.sent_up_to - sent < self.setup.batch_events and self.end is None:
            await asyncio.sleep(self.setup.flush_seconds)

    def ack(self, position: int) -> None:
        """The driver has journaled everything up to `position`: the host lets it go."""
        self.touch()
        drop = min(position, self.sent_up_to) - self._dropped
        if drop > 0:
            del self._outbox[:drop]
            self._dropped += drop

    def touch(self) -> None:
        """The driver is there (any call from it says so)."""
        self.last_contact = time.monotonic()

    # -- questions, relayed to the driver ----------------------------------------------------

    def relay_approval(
        self, number: int, on_answer: Callable[[Reply], None]
    ) -> asyncio.Future[Reply]:
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._approval_waits[number] = (on_answer, future)
        self._asks.append(ApprovalAsk(number))
        self._changed.set()
        return future

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
        waiting = self._approval_waits.pop(number, None)
        if waiting is None:
            return False
        on_answer, future = waiting
        reply = Reply(decision, by, reason, edited_text)
        on_answer(reply)
        if not future.done():
            future.set_result(reply)
        return True

    async def _relay_permission(self, ask: PermissionAsk) -> PermissionVerdict:
        key = next(self._keys)
        future: asyncio.Future[PermissionVerdict] = asyncio.get_running_loop().create_future()
        self._permission_waits[key] = (ask, future)
        self._asks.append(self._permission_wire(key, ask))
        self._changed.set()
        try:
            return await future
        finally:
            if self._permission_waits.pop(key, None) is not None:
                self._asks.append(PermissionWithdrawn(key))  # the agent stopped waiting
                self._changed.set()

    @staticmethod
    def _permission_wire(key: int, ask: PermissionAsk) -> PermissionAskWire:
        return PermissionAskWire(key, ask.tool_use_id, ask.tool, dict(ask.tool_input))

    def answer_permission(self, key: int, allow: bool, message: str) -> bool:
        self.touch()
        waiting = self._permission_waits.pop(key, None)
        if waiting is None:
            return False
        _, future = waiting
        if not future.done():
            future.set_result(PermissionVerdict(allow, message))
        return True

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
