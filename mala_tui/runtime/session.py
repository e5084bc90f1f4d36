"""Drives one agent session: feeds the manager what happens, carries out what it decides.

Everything the session hears arrives in one inbox: the agent's stream items
(tagged with the client they came from, so a stale process cannot confuse a new
one), the operator's commands, and approval answers. The runner waits on the
inbox with the idle timeout while a turn is in flight, hands each item to the
ContextManager, records the events it returns, and performs its actions in
order. An outcome produced while an action is under way (the drain after an
interrupt, say) replaces the rest of that action: the manager knows best.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Literal, overload

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
)
from mala_tui.core.manager import ContextManager, Outcome
from mala_tui.core.observations import (
    AgentFailed,
    ApprovalGiven,
    ApprovalPolicyChanged,
    Command,
    CompactionObserved,
    Decision,
    IdleTimedOut,
    ManageModeChanged,
    MaskConfirmed,
    MaskFailed,
    MessageObserved,
    Observation,
    OperatorCommand,
    RestartCompleted,
    SessionIdentified,
    SessionTimedOut,
    TurnEnded,
    UsageObserved,
)
from mala_tui.core.phases import IllegalTransition, ManageMode
from mala_tui.runtime.backends.base import (
    AgentClient,
    Backend,
    CompactionItem,
    MaskError,
    MessageItem,
    ProblemItem,
    ResultItem,
    SessionIdItem,
    SessionSpec,
    StreamItem,
    UsageItem,
    carries_tool_result,
)

Clock = Callable[[], float]


@dataclass(frozen=True)
class RunnerLimits:
    idle_timeout: float
    disconnect_timeout: float = 10.0
    session_timeout: float | None = None
    approval_timeout: float | None = None
    approval_timeout_decision: str = "deny"
    drain_timeout: float = 30.0
    """How long to wait for an interrupted turn to end before disconnecting it."""
    clean_point_timeout: float = 120.0
    """How long to wait for the running tool call to finish before interrupting anyway."""


@dataclass(frozen=True)
class _FromAgent:
    generation: int
    item: StreamItem | None
    """None: the stream ended (the process went away)."""
    error: str = ""


@dataclass(frozen=True)
class _Answer:
    decision: Decision
    edited_text: str | None
    decided_by: str


_OperatorInput = OperatorCommand | ApprovalPolicyChanged | ManageModeChanged | _Answer
"""What the operator sends a session: held back while a turn is being drained."""

Inbox = asyncio.Queue["_FromAgent | _OperatorInput"]
EventSink = Callable[[ev.Event], ev.Event]
"""Records an event (journal, live view); returns it as recorded (a checkpoint gains its path)."""


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
    ) -> None:
        self.spec = spec
        self.backend = backend
        self.manager = manager
        self.limits = limits
        self._sink = sink
        self._clock = clock
        self._sleep = sleep or asyncio.sleep
        self._inbox: Inbox = asyncio.Queue()
        self._client: AgentClient | None = None
        self._reader: asyncio.Task[None] | None = None
        self._generation = 0
        self._closing: set[asyncio.Future[None]] = set()
        """Disconnects under way, seen out before the runner returns."""
        self._started_at: dict[int, float] = {}
        self._last_item_at = time.monotonic()
        self._client_pid: int | None = None
        self._call_open = False
        """An API call has started (message_start) and not finished (message_delta)."""
        self.status: EndStatus | None = None
        self.end_reason = ""
        self.approval_pending: int | None = None
        self.pids: list[int] = []

    # -- the outside world talks to the runner through these ------------------------------

    def command(self, command: Command) -> None:
        self._inbox.put_nowait(OperatorCommand(self._clock(), command))

    def set_require_approval(self, required: bool) -> None:
        self._inbox.put_nowait(ApprovalPolicyChanged(self._clock(), required))

    def set_manage_mode(self, mode: ManageMode) -> None:
        self._inbox.put_nowait(ManageModeChanged(self._clock(), mode))

    def answer_approval(
        self, decision: Decision | str, edited_text: str | None = None, by: str = "operator"
    ) -> None:
        """Raises ValueError for an answer that is not one of `Decision`'s."""
        self._inbox.put_nowait(_Answer(Decision(decision), edited_text, by))

    # -- the loop ------------------------------------------------------------------------------

    async def run(self) -> EndStatus:
        self._emit(
            ev.SessionStarted(
                at=self._clock(),
                session=self.spec.name,
                task=self.spec.task,
                cwd=str(self.spec.cwd),
                model=self.spec.model,
                window=self.manager.window,
                soft_threshold=self.manager.limits.soft_threshold,
                hard_threshold=self.manager.limits.hard_threshold,
                max_restarts=self.manager.limits.max_restarts,
                require_approval=self.manager.require_approval,
                window_source=self.manager.window_source.value,
                manage=self.manager.manage.value,
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
                    outcome = self._observe(
                        SessionTimedOut(self._clock(), self.limits.session_timeout)
                    )
                    await self._run_actions(deque(outcome.actions))
        except asyncio.CancelledError:
            with contextlib.suppress(IllegalTransition):
                self._observe(OperatorCommand(self._clock(), Command.STOP))
            raise
        except Exception as exc:  # the runner must end its session, whatever broke
            self._emit(
                ev.ErrorRecorded(
                    at=self._clock(), session=self.spec.name, where="runtime", message=repr(exc)
                )
            )
            with contextlib.suppress(IllegalTransition):
                outcome = self._observe(AgentFailed(self._clock(), f"internal error: {exc!r}"))
                self._note_end(outcome)
        finally:
            await _uncancellable(self._close_everything())
        return self.status or EndStatus.FAILED

    async def _loop(self) -> None:
        pending: deque[Action] = deque(self._record(self.manager.start(self._clock())).actions)
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
            timeout = self.limits.idle_timeout if self.manager.streaming else None
            try:
                async with asyncio.timeout(timeout):
                    item = await self._inbox.get()
            except TimeoutError:
                return self._observe(
                    IdleTimedOut(self._clock(), time.monotonic() - self._last_item_at)
                )
            outcome = self._handle(item)
            if outcome is not None and (outcome.actions or self.status is not None):
                return outcome

    def _handle(
        self,
        item: _FromAgent | _OperatorInput,
    ) -> Outcome | None:
        if isinstance(item, OperatorCommand | ApprovalPolicyChanged | ManageModeChanged):
            return self._observe_quietly(item)
        if isinstance(item, _Answer):
            if self.approval_pending is None:
                return None
            self.approval_pending = None
            return self._observe_quietly(
                ApprovalGiven(self._clock(), item.decision, item.edited_text, item.decided_by)
            )
        if item.generation != self._generation:
            return None  # an earlier process's leftovers
        if item.item is None:
            if not self.manager.streaming:
                return None
            # The process went away mid-turn: recovered like a hang, known sooner.
            reason = item.error or "the agent process ended mid-turn"
            self._emit(
                ev.ErrorRecorded(
                    at=self._clock(), session=self.spec.name, where="agent", message=reason
                )
            )
            return self._observe(IdleTimedOut(self._clock(), time.monotonic() - self._last_item_at))
        self._last_item_at = time.monotonic()
        if isinstance(item.item, UsageItem):
            self._call_open = not item.item.final
        return self._observe_stream_item(item.item)

    def _observe_stream_item(self, item: StreamItem) -> Outcome:
        at = self._clock()
        observation: Observation
        match item:
            case UsageItem():
                observation = UsageObserved(at, item.call, item.notes, starts_call=not item.final)
            case MessageItem():
                observation = MessageObserved(at, item.message)
            case SessionIdItem():
                observation = SessionIdentified(at, item.session_id)
            case CompactionItem():
                observation = CompactionObserved(
                    at, item.trigger, item.blocked, item.pre_tokens, item.post_tokens
                )
            case ResultItem():
                observation = TurnEnded(
                    at,
                    subtype=item.subtype,
                    is_error=item.is_error,
                    terminal_reason=item.terminal_reason,
                    result_text=item.result_text,
                    summed_usage=item.summed_usage,
                    context_window=item.context_window,
                    session_id=item.session_id,
                    api_error_status=item.api_error_status,
                )
            case ProblemItem():
                self._emit(
                    ev.ErrorRecorded(
                        at=at, session=self.spec.name, where=item.where, message=item.message
                    )
                )
                return Outcome()
        return self._observe(observation)

    # -- feeding the manager -------------------------------------------------------------------

    def _observe(self, observation: Observation) -> Outcome:
        outcome = self._record(self.manager.observe(observation))
        self._note_end(outcome)
        return outcome

    def _observe_quietly(self, observation: Observation) -> Outcome | None:
        """Operator input may race the session (a stop after it ended): refuse it in the log."""
        try:
            return self._observe(observation)
        except IllegalTransition as exc:
            self._emit(
                ev.ErrorRecorded(
                    at=self._clock(), session=self.spec.name, where="operator", message=str(exc)
                )
            )
            return None

    def _record(self, outcome: Outcome) -> Outcome:
        for event in outcome.events:
            self._emit(event)
        return outcome

    def _emit(self, event: ev.Event) -> ev.Event:
        return self._sink(event)

    def _note_end(self, outcome: Outcome) -> None:
        for action in outcome.actions:
            if isinstance(action, EndSession):
                self.status, self.end_reason = action.status, action.reason

    # -- performing actions ----------------------------------------------------------------------

    async def _perform(self, action: Action) -> Outcome | None:
        """Carry out one action; an outcome returned here supersedes the actions after it."""
        match action:
            case SendPrompt():
                if action.interrupt_first:
                    drained = await self._interrupt_and_drain(at_clean_point=True)
                    if drained.actions or self.manager.phase.terminal:
                        return drained
                await self._query(action.text, resume=self.manager.session_id)
            case Interrupt():
                drained = await self._interrupt_and_drain()
                if drained.actions:
                    return drained
            case ApplyMask():
                return await self._apply_mask(action)
            case RequestApproval():
                self.approval_pending = action.checkpoint_number
                if self.limits.approval_timeout is not None:
                    asyncio.get_running_loop().call_later(
                        self.limits.approval_timeout,
                        self._approval_timed_out,
                        action.checkpoint_number,
                    )
            case StartFreshSession():
                await self._close_client(self.limits.disconnect_timeout)
                await self._query(action.prompt, resume=None)
                restarted = self._observe(RestartCompleted(self._clock(), None))
                return restarted if restarted.actions else None
            case Disconnect():
                await self._close_client(action.timeout)
            case RetryTurn():
                await self._sleep_for(action.delay)
                resume = action.session_id if action.mode is RetryMode.RESUME else None
                await self._query(action.prompt, resume=resume)
            case EndSession():
                await self._close_client(self.limits.disconnect_timeout)
        return None

    async def _sleep_for(self, seconds: float) -> None:
        result = self._sleep(seconds)
        if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
            await result

    def _approval_timed_out(self, number: int) -> None:
        if self.approval_pending == number:
            self.answer_approval(self.limits.approval_timeout_decision, None, "timeout")

    async def _apply_mask(self, action: ApplyMask) -> Outcome | None:
        if action.interrupt_first:
            drained = await self._interrupt_and_drain(at_clean_point=True)
            if drained.actions or self.manager.phase.terminal:
                return drained
        session_id = self.manager.session_id
        await self._close_client(self.limits.disconnect_timeout)
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
            failed = self._observe(MaskFailed(self._clock(), str(exc)))
            return failed if failed.actions else None
        confirmed = self._observe(MaskConfirmed(self._clock(), action.plan.ids))
        if action.resume_prompt is not None:
            await self._query(action.resume_prompt, resume=session_id)
        return confirmed if confirmed.actions else None

    # -- the agent process -------------------------------------------------------------------------

    async def _query(self, prompt: str, *, resume: str | None) -> None:
        if self._client is None:
            await self._open_client(resume)
        assert self._client is not None
        await self._client.query(prompt)

    async def _open_client(self, resume: str | None) -> None:
        self._generation += 1
        generation = self._generation
        client = self.backend.create(self.spec, resume=resume)
        started = time.monotonic()
        await client.connect()
        self._client = client
        pid = self._client_pid = client.pid
        if pid is not None:
            self.pids.append(pid)
            self._started_at[pid] = started
        self._emit(
            ev.ProcessStarted(
                at=self._clock(),
                session=self.spec.name,
                pid=pid,
                purpose="agent",
                resume=resume is not None,
            )
        )
        self._reader = asyncio.create_task(
            self._read(client, generation), name=f"read {self.spec.name}"
        )

    async def _read(self, client: AgentClient, generation: int) -> None:
        try:
            async for item in client.stream():
                await self._inbox.put(_FromAgent(generation, item))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the stream broke: tell the loop, which treats it as a hang
            await self._inbox.put(_FromAgent(generation, None, repr(exc)))
            return
        await self._inbox.put(_FromAgent(generation, None))

    async def _interrupt_and_drain(self, *, at_clean_point: bool = False) -> Outcome:
        """Interrupt the turn and feed the manager until it has ended; returns what that decided.

        With `at_clean_point`, first let the API call in flight finish and its tool calls
        get their results: an interrupt lands on the next call, so the step the agent
        was taking is kept, not rejected (a rejected Write is work thrown away).
        """
        if self._client is None or not self.manager.streaming:
            return (
                self._observe(_interrupted(self._clock())) if self.manager.streaming else Outcome()
            )
        held: list[_OperatorInput] = []
        try:
            if at_clean_point:
                deadline = time.monotonic() + self.limits.clean_point_timeout
                if self._client.stop_after_tools():
                    # The client ends the turn itself after the running tools: no model
                    # request is thrown away, as an interrupt would throw the next one.
                    stopped = await self._drain(deadline, held, give_up=False)
                    if stopped is not None:
                        return stopped
                else:
                    settled = await self._until_clean_point(deadline, held)
                    if settled is not None:
                        return settled
            client = self._current_client()  # the wait above may have closed it
            if client is None:
                return self._observe(_interrupted(self._clock()))
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.interrupt(), self.limits.disconnect_timeout)
            return await self._drain(time.monotonic() + self.limits.drain_timeout, held)
        finally:
            for item in held:  # operator input during the drain waits its turn
                self._inbox.put_nowait(item)

    def _current_client(self) -> AgentClient | None:
        return self._client

    def _at_clean_point(self) -> bool:
        return not self._call_open and not self.manager.transcript.open_calls

    async def _until_clean_point(
        self,
        deadline: float,
        held: list[_OperatorInput],
    ) -> Outcome | None:
        """Feed the manager until no call or tool is in flight; an outcome if the turn ended."""
        while not self._at_clean_point():
            try:
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    item = await self._inbox.get()
            except TimeoutError:
                return None  # a tool that runs this long is interrupted after all
            if not isinstance(item, _FromAgent):
                held.append(item)
                continue
            if item.generation == self._generation and item.item is None:
                await self._close_client(self.limits.disconnect_timeout)
                return self._observe(_interrupted(self._clock()))
            outcome = self._handle(item)
            if isinstance(item.item, ResultItem) and item.generation == self._generation:
                return outcome or Outcome()  # the turn ended before it needed interrupting
            if outcome is not None and outcome.actions:
                return outcome
        return None

    @overload
    async def _drain(
        self,
        deadline: float,
        held: list[_OperatorInput],
        *,
        give_up: Literal[True] = True,
    ) -> Outcome: ...

    @overload
    async def _drain(
        self,
        deadline: float,
        held: list[_OperatorInput],
        *,
        give_up: Literal[False],
    ) -> Outcome | None: ...

    async def _drain(
        self,
        deadline: float,
        held: list[_OperatorInput],
        *,
        give_up: bool = True,
    ) -> Outcome | None:
        """Feed the manager until the turn ends. Past the deadline: close the agent and
        count the turn as interrupted, or, without `give_up`, return None.

        Without `give_up` the client has promised to stop after its tools: a new model
        request starting after a tool result means it did not, and None comes back at
        once, so the caller interrupts instead of letting the agent run on.
        """
        result_seen = False
        while self.manager.streaming:
            try:
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    item = await self._inbox.get()
            except TimeoutError:
                if not give_up:
                    return None
                await self._close_client(self.limits.disconnect_timeout)
                return self._observe(_interrupted(self._clock()))
            if not isinstance(item, _FromAgent):
                held.append(item)
                continue
            if item.generation == self._generation and item.item is None:
                await self._close_client(self.limits.disconnect_timeout)
                return self._observe(_interrupted(self._clock()))
            outcome = self._handle(item)
            if isinstance(item.item, ResultItem) and item.generation == self._generation:
                return outcome or Outcome()  # the interrupted turn is over
            if outcome is not None and outcome.actions:
                return outcome
            if not give_up and item.generation == self._generation:
                if carries_tool_result(item.item):
                    result_seen = True
                elif result_seen and isinstance(item.item, UsageItem) and not item.item.final:
                    return None
        return Outcome()

    async def _close_everything(self) -> None:
        await self._close_client(self.limits.disconnect_timeout)
        if self._closing:
            await asyncio.wait(set(self._closing), timeout=self.limits.disconnect_timeout)

    async def _close_client(self, bound: float) -> None:
        """Disconnect within `bound` seconds; past it, kill the process."""
        client, reader, pid = self._client, self._reader, self._client_pid
        self._client = self._reader = None
        self._client_pid = None
        self._generation += 1  # whatever the old process still sends is ignored
        if reader is not None:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
        if client is None:
            return
        how = "disconnected"
        # Not wait_for: cancelling the SDK's close midway leaves its pipes open and the
        # process on its books. Past the bound the process is killed and the close,
        # which then sees it gone, is let finish.
        closing = asyncio.ensure_future(client.disconnect())
        self._closing.add(closing)  # if this wait is cancelled, run() still sees it out
        closing.add_done_callback(self._closing.discard)
        done, _ = await asyncio.wait({closing}, timeout=bound)
        if not done:
            how = "killed after the disconnect bound"
            _kill(pid)
            done, _ = await asyncio.wait({closing}, timeout=_AFTER_KILL_S)
            if not done:
                closing.cancel()
        elif closing.exception() is not None:
            how = f"disconnect failed ({closing.exception()!r}); killed"
            _kill(pid)
        started = self._started_at.pop(pid, None) if pid is not None else None
        self._emit(
            ev.ProcessEnded(
                at=self._clock(),
                session=self.spec.name,
                pid=pid,
                how=how,
                seconds=time.monotonic() - started if started is not None else 0.0,
            )
        )


#: How long the SDK's close may take once its process is killed.
_AFTER_KILL_S = 5.0


async def _uncancellable(cleanup: Coroutine[Any, Any, None]) -> None:
    """Run a bounded cleanup to its end even when cancelled, again and again, meanwhile.

    A shield alone lets the caller go on a second cancellation (Ctrl-C, then the event
    loop's own shutdown), which then cancels the cleanup itself and leaves an agent
    process disconnected halfway. The cancellation is passed on once it is done.
    """
    task = asyncio.ensure_future(cleanup)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError


def _interrupted(at: float) -> TurnEnded:
    return TurnEnded(
        at, subtype="error_during_execution", is_error=True, terminal_reason="aborted_streaming"
    )


def _kill(pid: int | None) -> None:
    if pid is None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)
