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
from dataclasses import dataclass, replace
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
    ApprovalGiven,
    ApprovalPolicyChanged,
    BudgetReached,
    Command,
    Decision,
    IdleTimedOut,
    ManageModeChanged,
    MaskConfirmed,
    MaskFailed,
    MessageForAgent,
    OperatorCommand,
    RestartCompleted,
    SessionHandedBack,
    SessionTimedOut,
    TurnEnded,
    UsageObserved,
)
from mala_tui.core.operator_actions import (
    RequireApproval,
    SayToAgent,
    SessionAction,
    SessionCommand,
    SetManageMode,
)
from mala_tui.core.permissions import AnsweredBy
from mala_tui.core.phases import IllegalTransition
from mala_tui.core.view import RunState
from mala_tui.runtime.backends.base import (
    Backend,
    MaskError,
    PermissionAsk,
    PermissionGate,
    PermissionVerdict,
    SessionSpec,
    carries_tool_result,
)
from mala_tui.runtime.questions.approvals import ApprovalAsker, Approvals
from mala_tui.runtime.questions.desk import Desk, Reply
from mala_tui.runtime.session.agent_process import AgentProcess, EventSink, uncancellable
from mala_tui.runtime.session.cache_watch import CacheWatch
from mala_tui.runtime.session.inbox import (
    Acknowledged,
    Answer,
    FromAgent,
    Inbox,
    InboxItem,
    OperatorInput,
    PermissionWait,
    interrupted,
)
from mala_tui.runtime.session.manager_feed import Clock, ManagerFeed

__all__ = ["EventSink", "RunnerLimits", "SessionRunner"]


REPORT_GRACE_S = 15.0
"""How long a session whose background work has all reported waits for the CLI's turn
that takes the last reports in (seen to start within milliseconds)."""


@dataclass(frozen=True)
class RunnerLimits:
    """The runner's bounds. The configurable ones have no defaults here: the settings
    give them (`runtime.run.session_limits.runner_limits_from`)."""

    idle_timeout: float
    disconnect_timeout: float
    session_timeout: float | None
    drain_timeout: float = 30.0
    """How long to wait for an interrupted turn to end before disconnecting it."""
    clean_point_timeout: float = 120.0
    """How long to wait for the running tool call to finish before interrupting anyway."""


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
        self._approvals: ApprovalAsker = approvals or Approvals(Desk())
        self._permissions = permissions
        self._permission_waits = 0
        """Permission requests waiting now: the agent is waiting for a person, not stalled."""
        self._process = AgentProcess(
            spec=spec,
            backend=backend,
            inbox=self._inbox,
            sink=sink,
            clock=clock,
            gate=self._feed.tool_gate,
            permission_gate=self._permission_gate if permissions is not None else None,
        )
        self._cache_watch = CacheWatch(
            session=spec.name,
            warm_until=manager.cache_warm_until,
            ttl=manager.limits.cache_ttl_seconds,
            clock=clock,
            emit=self._feed.emit,
        )
        """Says when a question has kept the session waiting past half its cache's life."""
        self._started = False
        self._approval_at_start: bool | None = None
        """Approval switched before the manager started: it is told as it starts."""
        self.approval_pending: int | None = None
        """The checkpoint number an approval is awaited for; answers to nothing else count."""
        self._mask_notes: list[str] = []
        """The resume notes sent after masks: the next fold takes them out."""

    @property
    def status(self) -> EndStatus | None:
        """How the session ended; None while it runs (or has not started)."""
        return self._feed.status

    @property
    def end_reason(self) -> str:
        return self._feed.end_reason

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

    def answer_approval(
        self,
        decision: Decision,
        edited_text: str | None = None,
        by: AnsweredBy = AnsweredBy.OPERATOR,
    ) -> None:
        """Answer the approval this session waits for, at its desk (`Approvals.decide`).

        Raises:
            QuestionClosed: it was answered already. KeyError: none was asked.
        """
        self._approvals.decide(self.spec.name, decision, edited_text, by)

    # -- the loop ------------------------------------------------------------------------------

    async def run(self) -> EndStatus:
        limits = self.manager.limits
        held = self._approval_at_start
        sub = self.spec.subagent_limits
        self._feed.emit(
            ev.SessionStarted(
                at=self._clock(),
                session=self.spec.name,
                task=self.spec.task,
                cwd=str(self.spec.cwd),
                model=self.spec.model,
                window=self.manager.window,
                soft_threshold=limits.soft_threshold,
                hard_threshold=limits.hard_threshold,
                max_restarts=limits.max_restarts,
                require_approval=self.manager.require_approval if held is None else held,
                window_source=self.manager.window_source,
                manage=self.manager.manage,
                cache_ttl_seconds=limits.cache_ttl_seconds,
                subagent_soft_threshold=sub.soft_threshold if sub is not None else None,
                subagent_hard_threshold=sub.hard_threshold if sub is not None else None,
            )
        )
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
            outcome = await self._next_outcome()
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

    async def _next_outcome(self) -> Outcome:
        """Wait for the next thing that makes the manager decide something."""
        while True:
            # A permission request waiting for a person is a sign of life, not a stall.
            silent = (
                self.manager.streaming or self._waiting_on_agents()
            ) and not self._permission_waits
            timeout = self.limits.idle_timeout if silent else None
            work = self.manager.background
            if timeout is not None and work.waiting and not work.tasks:
                # Only the CLI's next turn for reports it holds is awaited: it comes at
                # once, or not at all (its last result already took them in).
                timeout = min(timeout, REPORT_GRACE_S)
            try:
                async with asyncio.timeout(timeout):
                    item = await self._inbox.get()
            except TimeoutError:
                return self._feed.observe(
                    IdleTimedOut(self._clock(), time.monotonic() - self._feed.last_heard)
                )
            outcome = self._take(item)
            if outcome is not None and (outcome.actions or self.status is not None):
                return outcome

    def _waiting_on_agents(self) -> bool:
        """The turn is over and the session waits on subagents, whose messages are signs
        of life (or on reports the CLI has yet to hand in): a long silence is a hang.
        A background shell alone says nothing while it runs, so it is waited for."""
        work = self.manager.background
        return work.waiting and (work.subagents > 0 or not work.tasks)

    def _take(self, item: InboxItem) -> Outcome | None:
        """What reaches the manager of an inbox item (through the feed); None when nothing
        does, or the manager refused it."""
        if isinstance(item, Answer):
            if item.checkpoint_number != self.approval_pending:
                return None  # an answer to an approval no longer awaited
            self.approval_pending = None
            given = ApprovalGiven(self._clock(), item.decision, item.edited_text, item.decided_by)
            return self._feed.observe_quietly(given)
        if isinstance(item, Acknowledged):
            return self._acknowledge(item)
        if isinstance(item, FromAgent) and item.generation != self._process.generation:
            return None  # an earlier process's leftovers
        return self._feed.handle(item)

    def _acknowledge(self, asked: Acknowledged) -> Outcome | None:
        """The manager's outcome of a command whose asker waits for the answer: told ""
        when taken, or the refusal (also journaled, as any refused operator input is)."""
        refusal = ""
        try:
            outcome: Outcome | None = self._feed.observe(asked.command)
        except IllegalTransition as exc:
            refusal = str(exc)
            self._feed.error(ev.Where.OPERATOR, refusal)
            outcome = None
        if not asked.answer.done():
            asked.answer.set_result(refusal)
        return outcome

    async def _permission_gate(self, ask: PermissionAsk) -> PermissionVerdict:
        """Asked by the agent before a tool outside its allowed set; it waits for the answer
        (the run's desk gives it) and meanwhile is not stalled: the idle timeout is off."""
        assert self._permissions is not None
        self._permission_waits += 1
        self._inbox.put_nowait(PermissionWait())  # wakes the loop: the idle timeout goes off
        key = f"permission {ask.tool_use_id or id(ask)}"
        self._cache_watch.start(key, f"permission to use {ask.tool}")
        try:
            return await self._permissions(ask)
        finally:
            self._cache_watch.stop(key)
            self._permission_waits -= 1
            self._inbox.put_nowait(PermissionWait())  # and back on, counted from now

    # -- performing actions ----------------------------------------------------------------------

    async def _perform(self, action: Action) -> Outcome | None:
        """Carry out one action; an outcome returned here supersedes the actions after it."""
        match action:
            case SendPrompt():
                if action.interrupt_first:
                    drained = await self._interrupt_and_drain(at_clean_point=True)
                    if drained.actions or self.manager.phase.terminal:
                        return drained
                await self._process.query(action.text, resume=self.manager.session_id)
            case Interrupt():
                drained = await self._interrupt_and_drain()
                if drained.actions:
                    return drained
            case ApplyMask():
                return await self._apply_mask(action)
            case RequestApproval():
                number = self.approval_pending = action.checkpoint_number
                self._cache_watch.start("approval", f"approval of checkpoint #{number}")
                self._approvals.ask(
                    self.spec.name, number, lambda reply: self._approval_answered(number, reply)
                )
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

    def _approval_answered(self, number: int, reply: Reply) -> None:
        """The desk's answer (a person's, the policy's, the timeout's): to the inbox, as
        operator input is, unless the session has ended meanwhile (nobody reads it)."""
        self._cache_watch.stop("approval")
        if self.status is None:
            decision = Decision(reply.answer)
            self._inbox.put_nowait(Answer(number, decision, reply.edited_text, reply.by))

    async def _apply_mask(self, action: ApplyMask) -> Outcome | None:
        if action.interrupt_first:
            drained = await self._interrupt_and_drain(at_clean_point=True)
            if drained.actions or self.manager.phase.terminal:
                return drained
        session_id = self.manager.session_id
        await self._process.close(self.limits.disconnect_timeout)
        try:
            if session_id is None:
                raise MaskError("the session has no id yet, so its transcript cannot be found")
            replaced = await self.backend.mask_transcript(
                self.spec, session_id, action.plan.placeholders
            )
            if replaced == 0:
                raise MaskError(
                    f"none of the {len(action.plan.ids)} results was found in the transcript"
                )
        except MaskError as exc:
            failed = self._feed.observe(MaskFailed(self._clock(), str(exc)))
            return failed if failed.actions else None
        confirmed = self._feed.observe(MaskConfirmed(self._clock(), action.plan.ids))
        await self._fold(session_id)
        if action.resume_prompt is not None:
            self._mask_notes.append(action.resume_prompt)
            await self._process.query(action.resume_prompt, resume=session_id)
        return confirmed if confirmed.actions else None

    async def _fold(self, session_id: str) -> None:
        """Fold the masked steps into the transcript's digest (core.fold); a fold that
        fails leaves the masked transcript as it was, which resumes as well."""
        try:
            report = await self.backend.fold_transcript(self.spec, session_id, self._mask_notes)
        except MaskError as exc:
            self._feed.emit(
                ev.WarningRecorded(
                    at=self._clock(),
                    session=self.spec.name,
                    where=ev.Where.MASKING,
                    message=f"the masked steps were not folded: {exc}",
                )
            )
            return
        if report is not None:
            self._feed.emit(
                ev.TranscriptFolded(
                    at=self._clock(),
                    session=self.spec.name,
                    steps=report.steps,
                    notes=report.notes,
                    digest_lines=report.digest_lines,
                    tokens_before=report.tokens_before,
                    tokens_after=report.tokens_after,
                    digest_tokens=report.digest_tokens,
                )
            )

    # -- stopping a turn -------------------------------------------------------------------------

    async def _interrupt_and_drain(self, *, at_clean_point: bool = False) -> Outcome:
        """Interrupt the turn and feed the manager until it has ended; returns what that decided.

        With `at_clean_point`, first let the API call in flight finish and its tool calls
        get their results: an interrupt lands on the next call, so the step the agent
        was taking is kept, not rejected (a rejected Write is work thrown away).
        """
        client = self._process.current()
        if client is None or not self.manager.streaming:
            return (
                self._feed.observe(interrupted(self._clock()))
                if self.manager.streaming
                else Outcome()
            )
        held: list[OperatorInput] = []
        try:
            if at_clean_point:
                deadline = time.monotonic() + self.limits.clean_point_timeout
                if client.stop_after_tools():
                    # The client ends the turn itself after the running tools: no model
                    # request is thrown away, as an interrupt would throw the next one.
                    stopped = await self._feed_until(
                        self._turn_over, deadline, held, stop_promised=True
                    )
                    if stopped is not None:
                        return stopped
                    if self._turn_over():
                        return Outcome()
                else:
                    settled = await self._feed_until(self._feed.at_clean_point, deadline, held)
                    if settled is not None:
                        return settled
            client = self._process.current()  # the wait above may have closed it
            if client is None:
                return self._feed.observe(interrupted(self._clock()))
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.interrupt(), self.limits.disconnect_timeout)
            deadline = time.monotonic() + self.limits.drain_timeout
            drained = await self._feed_until(self._turn_over, deadline, held)
            if drained is not None:
                return drained
            if self._turn_over():
                return Outcome()
            # The interrupted turn did not end in time: the process goes, the turn with it.
            await self._process.close(self.limits.disconnect_timeout)
            return self._feed.observe(interrupted(self._clock()))
        finally:
            for item in held:  # operator input during the drain waits its turn
                self._inbox.put_nowait(item)

    def _turn_over(self) -> bool:
        return not self.manager.streaming

    async def _feed_until(
        self,
        settled: Callable[[], bool],
        deadline: float,
        held: list[OperatorInput],
        *,
        stop_promised: bool = False,
    ) -> Outcome | None:
        """Feed the manager the agent's items until `settled()` holds or the turn ends.

        Returns what the manager decided when the turn ended, when it decided something
        on the way, or when the process went away (closed, and the turn counted as
        interrupted). None when `settled()` came to hold first or the deadline passed;
        with `stop_promised` (the client promised to end the turn after its tools) also
        as soon as a new model request starts after a tool result, since then it did
        not, and the caller interrupts rather than let the agent run on. Operator input
        meanwhile is kept in `held` for the caller to put back.
        """
        result_seen = False
        while not settled():
            try:
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    item = await self._inbox.get()
            except TimeoutError:
                return None
            if not isinstance(item, FromAgent):
                held.append(item)
                continue
            current = item.generation == self._process.generation
            if current and item.item is None:
                await self._process.close(self.limits.disconnect_timeout)
                return self._feed.observe(interrupted(self._clock()))
            outcome = self._take(item)
            if current and isinstance(item.item, TurnEnded):
                return outcome or Outcome()  # the turn is over
            if outcome is not None and outcome.actions:
                return outcome
            if stop_promised and current:
                if carries_tool_result(item.item):
                    result_seen = True
                elif result_seen and isinstance(item.item, UsageObserved) and item.item.starts_call:
                    return None
        return None
