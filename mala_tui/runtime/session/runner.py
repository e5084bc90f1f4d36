"""Drives one agent session: feeds the manager what happens, carries out what it decides.

Everything the session hears arrives in one inbox (runtime.session.inbox). The runner
waits on it with the idle timeout while a turn is in flight, decides what reaches
the manager (not an earlier process's leftovers, not an answer to an approval it no
longer waits for), hands the rest to its feed (runtime.session.manager_feed: observations
in, events recorded), and performs the outcome's actions in order. An outcome
produced while an action is under way (the drain after an interrupt, say) replaces
the rest of that action: the manager knows best. The agent process itself is
runtime.session.agent_process's; approvals are asked at the run's desk
(runtime.questions.approvals), and the answer comes back through the inbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from mala_tui.core import events as ev
from mala_tui.core.actions import (
    Action,
    ApplyMask,
    Disconnect,
    EndSession,
    EndStatus,
    Interrupt,
    RequestApproval,
    RetryMode,
    RetryTurn,
    SendPrompt,
    StartFreshSession,
    StopTurn,
)
from mala_tui.core.breakdown import WindowContents
from mala_tui.core.manager import ContextManager, Outcome
from mala_tui.core.observations import (
    AgentFailed,
    ApprovalPolicyChanged,
    BudgetReached,
    Command,
    ManageModeChanged,
    MessageForAgent,
    OperatorCommand,
    RestartCompleted,
    SessionHandedBack,
    SessionTimedOut,
)
from mala_tui.core.operator_actions import (
    RequireApproval,
    SayToAgent,
    SessionAction,
    SessionCommand,
    SetManageMode,
)
from mala_tui.core.phases import IllegalTransition
from mala_tui.core.run_view import RunState
from mala_tui.runtime.backends.base import (
    Backend,
    PermissionGate,
    SessionSpec,
)
from mala_tui.runtime.questions.approvals import ApprovalAsker, Approvals
from mala_tui.runtime.questions.desk import Desk
from mala_tui.runtime.session.agent_process import AgentProcess, EventSink, uncancellable
from mala_tui.runtime.session.cache_watch import CacheWatch
from mala_tui.runtime.session.inbox import (
    Acknowledged,
    Inbox,
)
from mala_tui.runtime.session.inbox_reader import InboxReader
from mala_tui.runtime.session.manager_feed import Clock, ManagerFeed
from mala_tui.runtime.session.mask_apply import MaskApplier
from mala_tui.runtime.session.person_waits import PersonWaits
from mala_tui.runtime.session.runner_limits import RunnerLimits
from mala_tui.runtime.session.turn_stop import TurnStopper

__all__ = ["SessionRunner"]


class SessionRunner:
    """One session, from its task to its end, across restarts and retries."""

    def __init__(
        self,
        *,
        spec: SessionSpec,
        backend: Backend,
        manager: ContextManager,
        limits: RunnerLimits,
        sink: EventSink,
        clock: Clock = time.time,
        sleep: Callable[[float], object] | None = None,
        permissions: PermissionGate | None = None,
        approvals: ApprovalAsker | None = None,
    ) -> None:
        """`approvals`: the run's (a runner of its own has its own desk, with no policy)."""
        self.spec = spec
        self.backend = backend
        self.manager = manager
        self.limits = limits
        self._clock = clock
        self._sleep = sleep or asyncio.sleep
        self._inbox: Inbox = asyncio.Queue()
        self._feed = ManagerFeed(
            session=spec.name,
            manager=manager,
            sink=sink,
            clock=clock,
            fork_of=spec.fork_of,
            model=spec.model,
        )
        self._cache_watch = CacheWatch(
            session=spec.name,
            warm_until=manager.cache_warm_until,
            ttl=manager.limits.cache_ttl_seconds,
            clock=clock,
            emit=self._feed.emit,
        )
        """Says when a question has kept the session waiting past half its cache's life."""
        self._asks = PersonWaits(
            session=spec.name,
            approvals=approvals or Approvals(Desk()),
            permissions=permissions,
            cache_watch=self._cache_watch,
            inbox=self._inbox,
            ended=lambda: self.status is not None,
        )
        """The questions the session waits on a person for (runtime.session.person_waits)."""
        self._process = AgentProcess(
            spec=spec,
            backend=backend,
            inbox=self._inbox,
            sink=sink,
            clock=clock,
            gate=self._feed.tool_gate,
            permission_gate=None if permissions is None else self._asks.permit,
        )
        self._started = False
        self._approval_at_start: bool | None = None
        """Approval switched before the manager started: it is told as it starts."""
        self._own_parts()

    def _own_parts(self) -> None:
        """The parts that read the inbox, stop a turn and apply a mask, on the agent's
        process and the manager's feed."""
        manager, limits, clock = self.manager, self.limits, self._clock
        self._reader = InboxReader(
            inbox=self._inbox,
            feed=self._feed,
            process=self._process,
            manager=manager,
            idle_timeout=limits.idle_timeout,
            clock=clock,
            asks=self._asks,
        )
        """What of the inbox reaches the manager, and when (runtime.session.inbox_reader)."""
        self._stopper = TurnStopper(
            process=self._process,
            feed=self._feed,
            inbox=self._inbox,
            manager=manager,
            limits=limits,
            clock=clock,
            take=self._reader.take,
        )
        self._masks = MaskApplier(
            backend=self.backend,
            process=self._process,
            feed=self._feed,
            manager=manager,
            limits=limits,
            clock=clock,
            stopper=self._stopper,
        )

    @property
    def status(self) -> EndStatus | None:
        """How the session ended; None while it runs (or has not started)."""
        return self._feed.status

    @property
    def end_reason(self) -> str:
        return self._feed.end_reason

    @property
    def approval_pending(self) -> int | None:
        """The checkpoint number an approval is awaited for; answers to nothing else count."""
        return self._asks.approval_pending

    @property
    def pids(self) -> list[int]:
        """Every agent process this session started."""
        return self._process.pids

    # -- the outside world talks to the runner through these ------------------------------

    stop_reason: str = ""
    """Why the session is being stopped, when cancelled for a cause (a signal, a full disk)."""

    def apply(self, action: SessionAction) -> None:
        """What a person did to this session (core.operator_actions), heard in order through
        the inbox; a change of the approval setting is recorded at once (`_approval`)."""
        match action:
            case SessionCommand():
                self._inbox.put_nowait(
                    OperatorCommand(self._clock(), action.command, action.reason)
                )
            case SetManageMode():
                self._inbox.put_nowait(ManageModeChanged(self._clock(), action.mode))
            case SayToAgent():
                self._inbox.put_nowait(MessageForAgent(self._clock(), action.text))
            case RequireApproval():
                self._approval(action.required)

    def hurry(self) -> None:
        """The stop was asked for again: kill the agent process now
        (runtime.session.agent_process)."""
        self._process.kill_now()

    def _approval(self, required: bool) -> None:
        """Recorded at once, not queued behind what the session is busy with: the manager
        only takes note (its answer is an event, never an action), so every console shows
        the new setting now. Before the manager starts, the runner records it and tells
        the manager as it starts."""
        if self._started:
            self._feed.observe_quietly(ApprovalPolicyChanged(self._clock(), required))
            return
        self._approval_at_start = required
        self._feed.emit(
            ev.ApprovalPolicySet(at=self._clock(), session=self.spec.name, required=required)
        )

    def take_over(self) -> asyncio.Future[str]:
        """Stop the turn and end the process so that a person can open the session by hand
        (`Command.TAKE_OVER`); the future says "" once the manager took it, or why not."""
        answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._inbox.put_nowait(
            Acknowledged(OperatorCommand(self._clock(), Command.TAKE_OVER), answer)
        )
        return answer

    def hand_back(self, handed: SessionHandedBack) -> None:
        """The person is done with the session by hand (core's `SessionHandedBack`)."""
        self._inbox.put_nowait(handed)

    @property
    def elsewhere(self) -> str:
        """It runs here."""
        return ""

    def recorded(self, event: ev.Event) -> None:
        """Its manager made or heard every event of its own already: nothing to keep."""

    def window(self, state: RunState) -> WindowContents:
        """Its manager's transcript and calibration, now."""
        return WindowContents(self.manager.transcript, self.manager.density, str(self.spec.cwd))

    @property
    def process_open(self) -> bool:
        """An agent process of this session is open now."""
        return self._process.current() is not None

    def work_in(self, cwd: Path) -> None:
        """Where the agent works, set before the session runs (a session host's own worktree,
        made once the host runs: runtime.cluster.mirror)."""
        self.spec = self._process.spec = replace(self.spec, cwd=cwd)

    def budget_reached(self, over: bool, reason: str) -> None:
        """Near a budget limit (wind down, checkpoint, stop) or at it (stop now)."""
        self._inbox.put_nowait(BudgetReached(self._clock(), over, reason))

    # -- the loop ------------------------------------------------------------------------------

    async def run(self) -> EndStatus:
        self._feed.started(self.spec, self._approval_at_start)
        try:
            if self.limits.session_timeout is None:
                await self._loop()
            else:
                try:
                    async with asyncio.timeout(self.limits.session_timeout):
                        await self._loop()
                except TimeoutError:
                    outcome = self._feed.observe(
                        SessionTimedOut(self._clock(), self.limits.session_timeout)
                    )
                    await self._run_actions(deque(outcome.actions))
        except asyncio.CancelledError:
            with contextlib.suppress(IllegalTransition):
                self._feed.observe(OperatorCommand(self._clock(), Command.STOP, self.stop_reason))
            raise
        except Exception as exc:  # the runner must end its session, whatever broke
            self._feed.error(ev.Where.RUNTIME, repr(exc))
            with contextlib.suppress(IllegalTransition):
                self._feed.observe(AgentFailed(self._clock(), f"internal error: {exc!r}"))
        finally:
            await self._cache_watch.close()
            await uncancellable(self._process.close_everything(self.limits.disconnect_timeout))
        return self.status or EndStatus.FAILED

    async def _loop(self) -> None:
        pending: deque[Action] = deque(self._feed.record(self.manager.start(self._clock())).actions)
        self._started = True
        if self._approval_at_start is not None:
            self._feed.observe_quietly(
                ApprovalPolicyChanged(self._clock(), self._approval_at_start)
            )
        while True:
            if pending:
                pending = await self._run_actions(pending)
                if self.status is not None:
                    return
                continue
            if self.status is not None:
                return
            outcome = await self._reader.next_outcome()
            pending = deque(outcome.actions)

    async def _run_actions(self, pending: deque[Action]) -> deque[Action]:
        while pending:
            action = pending.popleft()
            superseding = await self._perform(action)
            if superseding is not None:
                return deque(superseding.actions)
            if self.status is not None:
                return deque()
        return pending

    # -- performing actions ----------------------------------------------------------------------

    async def _perform(self, action: Action) -> Outcome | None:
        """Carry out one action; an outcome returned here supersedes the actions after it."""
        match action:
            case SendPrompt():
                if action.interrupt_first:
                    drained = await self._stopper.interrupt_and_drain(at_clean_point=True)
                    if drained.actions or self.manager.phase.terminal:
                        return drained
                await self._process.query(action.text, resume=self.manager.session_id)
            case Interrupt():
                drained = await self._stopper.interrupt_and_drain()
                if drained.actions:
                    return drained
            case ApplyMask():
                return await self._masks.apply(action, self.spec)
            case RequestApproval():
                self._asks.ask_approval(action.checkpoint_number)
            case StartFreshSession():
                await self._process.close(self.limits.disconnect_timeout)
                await self._process.query(action.prompt, resume=None)
                restarted = self._feed.observe(RestartCompleted(self._clock(), None))
                return restarted if restarted.actions else None
            case Disconnect():
                await self._process.close(action.timeout)
            case RetryTurn():
                await self._sleep_for(action.delay)
                resume = action.session_id if action.mode is RetryMode.RESUME else None
                await self._process.query(action.prompt, resume=resume)
            case EndSession():
                await self._process.close(self.limits.disconnect_timeout)
            case StopTurn():
                # Usually answered in the post-tool hook itself (the feed's `tool_gate`); decided
                # anywhere else, it is asked of the client for the next tool result.
                client = self._process.current()
                if client is not None:
                    client.stop_after_tools()
        return None

    async def _sleep_for(self, seconds: float) -> None:
        result = self._sleep(seconds)
        if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
            await result
