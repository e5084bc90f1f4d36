"""Feeding the manager: what the session hears goes in as observations, what it says is recorded.

The runner's lower half. Each inbox item becomes at most one observation; the
events of every outcome go to the sink (journal, live view) before anything is
done about its actions, and an `EndSession` among them is noted as the session's
end. The agent's post-tool hook asks here too (`_tool_gate`), and its permission
requests pass through here on their way to the run's desk (`_permission_gate`): while
one waits the agent is silent by design, so the runner's idle timeout is off.

What is read of the manager is its public surface only: `observe`, `streaming`,
`transcript` (the tool calls still open); the runner adds `start`, `phase`,
`session_id`, and for the session's first event `window`, `window_source`,
`manage`, `limits` and `require_approval`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from mala_tui.core import events as ev
from mala_tui.core.actions import EndSession, EndStatus, StopTurn
from mala_tui.core.manager import ContextManager, Outcome
from mala_tui.core.observations import (
    ApprovalGiven,
    ApprovalPolicyChanged,
    BudgetReached,
    IdleTimedOut,
    ManageModeChanged,
    MessageForAgent,
    Observation,
    OperatorCommand,
    ToolResultSeen,
)
from mala_tui.core.phases import IllegalTransition
from mala_tui.runtime.agent_process import AgentProcess, EventSink
from mala_tui.runtime.backends.base import (
    Backend,
    PermissionAsk,
    PermissionGate,
    PermissionVerdict,
    ProblemItem,
    SessionSpec,
    UsageItem,
)
from mala_tui.runtime.inbox import Answer, Inbox, InboxItem, PermissionWait, observation_of

Clock = Callable[[], float]


class ManagerFeed:
    """One session's manager, told what happens; the state the telling needs."""

    def __init__(
        self,
        *,
        spec: SessionSpec,
        backend: Backend,
        manager: ContextManager,
        inbox: Inbox,
        sink: EventSink,
        clock: Clock,
        permissions: PermissionGate | None = None,
    ) -> None:
        self.spec = spec
        self.backend = backend
        self.manager = manager
        self._inbox = inbox
        self._sink = sink
        self._clock = clock
        self._permissions = permissions
        self._permission_waits = 0
        """Permission requests waiting now: the agent is waiting for a person, not stalled."""
        self._process = AgentProcess(
            spec=spec,
            backend=backend,
            inbox=inbox,
            sink=sink,
            clock=clock,
            gate=self._tool_gate,
            permission_gate=self._permission_gate if permissions is not None else None,
        )
        self._last_item_at = time.monotonic()
        self._call_open = False
        """An API call has started (message_start) and not finished (message_delta)."""
        self.status: EndStatus | None = None
        self.end_reason = ""
        self.approval_pending: int | None = None
        """The checkpoint number an approval is awaited for; answers to nothing else count."""
        self._named: str | None = None
        """The agent session id last journaled (what `mala-tui resume` picks up)."""

    @property
    def pids(self) -> list[int]:
        """Every agent process this session started."""
        return self._process.pids

    def _handle(self, item: InboxItem) -> Outcome | None:
        """Observe one inbox item; None when it was not for the manager (or it refused)."""
        if isinstance(
            item,
            OperatorCommand
            | ApprovalPolicyChanged
            | ManageModeChanged
            | BudgetReached
            | MessageForAgent,
        ):
            return self._observe_quietly(item)
        if isinstance(item, PermissionWait):
            self._last_item_at = time.monotonic()
            return None  # the loop takes up its wait again, with the idle timeout as it now is
        if isinstance(item, Answer):
            if self.approval_pending is None:
                return None
            self.approval_pending = None
            return self._observe_quietly(
                ApprovalGiven(self._clock(), item.decision, item.edited_text, item.decided_by)
            )
        if item.generation != self._process.generation:
            return None  # an earlier process's leftovers
        if item.item is None:
            if not self.manager.streaming:
                return None
            # The process went away mid-turn: recovered like a hang, known sooner.
            self._error("agent", item.error or "the agent process ended mid-turn")
            return self._observe(IdleTimedOut(self._clock(), time.monotonic() - self._last_item_at))
        self._last_item_at = time.monotonic()
        if isinstance(item.item, UsageItem):
            self._call_open = not item.item.final
        observation = observation_of(item.item, self._clock())
        if isinstance(observation, ProblemItem):
            self._error(observation.where, observation.message)
            return Outcome()
        return self._observe(observation)

    def _at_clean_point(self) -> bool:
        """No API call and no tool call in flight: a turn stopped now loses no work."""
        return not self._call_open and not self.manager.transcript.open_calls

    def _tool_gate(self, tool_use_id: str, tool: str, characters: int) -> bool:
        """Asked by the agent's post-tool hook, before the model request the result would join.

        True when the manager answers with `StopTurn`: the client then ends the turn
        there, as after a stop the runner asked for, and the manager decides what
        comes next from the `TurnEnded` that follows. Only `StopTurn` is answered
        here: a hook cannot carry out anything else.
        """
        try:
            outcome = self._observe(ToolResultSeen(self._clock(), tool_use_id, tool, characters))
        except IllegalTransition as exc:
            self._error("runtime", str(exc))
            return False
        return any(isinstance(action, StopTurn) for action in outcome.actions)

    async def _permission_gate(self, ask: PermissionAsk) -> PermissionVerdict:
        """Asked by the agent before a tool outside its allowed set; it waits for the answer."""
        assert self._permissions is not None
        self._permission_waits += 1
        self._inbox.put_nowait(PermissionWait())  # wakes the loop: the idle timeout goes off
        try:
            return await self._permissions(ask)
        finally:
            self._permission_waits -= 1
            self._inbox.put_nowait(PermissionWait())  # and back on, counted from now

    def _observe(self, observation: Observation) -> Outcome:
        outcome = self._record(self.manager.observe(observation))
        self._note_end(outcome)
        return outcome

    def _observe_quietly(self, observation: Observation) -> Outcome | None:
        """Operator input may race the session (a stop after it ended): refuse it in the log."""
        try:
            return self._observe(observation)
        except IllegalTransition as exc:
            self._error("operator", str(exc))
            return None

    def _record(self, outcome: Outcome) -> Outcome:
        for event in outcome.events:
            self._emit(event)
        session_id = self.manager.session_id
        if session_id is not None and session_id != self._named:
            self._named = session_id
            self._emit(
                ev.AgentSessionNamed(
                    at=self._clock(), session=self.spec.name, session_id=session_id
                )
            )
        return outcome

    def _emit(self, event: ev.Event) -> ev.Event:
        return self._sink(event)

    def _error(self, where: str, message: str) -> None:
        self._emit(
            ev.ErrorRecorded(at=self._clock(), session=self.spec.name, where=where, message=message)
        )

    def _note_end(self, outcome: Outcome) -> None:
        for action in outcome.actions:
            if isinstance(action, EndSession):
                self.status, self.end_reason = action.status, action.reason
