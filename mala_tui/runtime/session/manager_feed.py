"""Feeding one session's manager: what it hears goes in as observations, what it says is recorded.

A part of the session's runner (runtime.session.runner), which decides what reaches the
manager (not an earlier process's leftovers, not an answer to a question it no
longer asks) and carries out the actions. Here each inbox item becomes at most one
observation, and the events of every outcome go to the sink (journal, live view)
before anything is done about its actions; an `EndSession` among them is noted as
the session's end. The agent's post-tool hook asks here too (`tool_gate`).

What is read of the manager is its public surface only: `observe`, `streaming`,
`session_id`, and `transcript` (the tool calls still open).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from mala_tui.core import events as ev
from mala_tui.core.actions import EndSession, EndStatus, StopTurn
from mala_tui.core.manager import ContextManager, Outcome
from mala_tui.core.observations import (
    ApiRetrying,
    BudgetReached,
    IdleTimedOut,
    ManageModeChanged,
    MessageForAgent,
    Observation,
    OperatorCommand,
    SessionHandedBack,
    ToolResultSeen,
    UsageObserved,
)
from mala_tui.core.phases import IllegalTransition
from mala_tui.runtime.backends.base import (
    ActivityItem,
    ModelItem,
    ProblemItem,
    RecordItem,
    SessionSpec,
)
from mala_tui.runtime.session.agent_process import EventSink
from mala_tui.runtime.session.inbox import FromAgent, PermissionWait

Clock = Callable[[], float]


class ManagerFeed:
    """One session's manager, told what happens; the state the telling needs."""

    def __init__(
        self,
        *,
        session: str,
        manager: ContextManager,
        sink: EventSink,
        clock: Clock,
        fork_of: str | None = None,
        model: str | None = None,
    ) -> None:
        """`fork_of`: the agent session a fork starts from: never journaled as its own."""
        self.session = session
        self.model = model
        """The model the session runs: as started, then as the API's answers name it."""
        self.manager = manager
        self._sink = sink
        self._clock = clock
        self.last_heard = time.monotonic()
        """When the agent last said something (or a permission request began or ended)."""
        self._call_open = False
        """An API call has started (message_start) and not finished (message_delta)."""
        self.status: EndStatus | None = None
        """How the session ended, once an `EndSession` has been decided."""
        self.end_reason = ""
        self._named: str | None = fork_of
        """The agent session id last journaled (what `mala-tui resume` picks up); a fork's
        first is the session it forks, which is another session's and must never be
        resumed as its own: the fork's own id comes with its first turn."""

    def handle(
        self,
        item: FromAgent
        | OperatorCommand
        | ManageModeChanged
        | BudgetReached
        | MessageForAgent
        | SessionHandedBack
        | PermissionWait,
    ) -> Outcome | None:
        """Observe one inbox item (an agent's from the current process); None when it was
        not for the manager, or the manager refused it."""
        if isinstance(item, PermissionWait):
            self.last_heard = time.monotonic()
            return None  # the runner takes up its wait again, with the idle timeout as it now is
        if not isinstance(item, FromAgent):
            return self.observe_quietly(item)
        if item.item is None:
            if not self.manager.streaming and not self.manager.background.waiting:
                return None
            # The process went away mid-turn: recovered like a hang, known sooner.
            self.error(ev.Where.AGENT, item.error or "the agent process ended mid-turn")
            return self.observe(IdleTimedOut(self._clock(), time.monotonic() - self.last_heard))
        self.last_heard = time.monotonic()
        said = item.item
        if isinstance(said, ModelItem):  # the feed's to journal: the manager does not decide on it
            self._model_named(said.model)
            return Outcome()
        if isinstance(said, ProblemItem):  # recorded, not observed
            self.error(said.where, said.message)
            return Outcome()
        if isinstance(said, ActivityItem):  # heard from (above): the agent is at work
            return Outcome()
        if isinstance(said, RecordItem):  # journaled as it is: for the person watching
            self.emit(said.event)
            return Outcome()
        if isinstance(said, UsageObserved):
            self._call_open = said.starts_call
        if isinstance(said, ApiRetrying):
            self.error(ev.Where.API, said.line)  # each retry is worth a line in the log
        return self.observe(said)

    def _model_named(self, model: str) -> None:
        """An answer named its model: journaled when it is news (a session started with
        Claude Code's default learns its model here, and is priced from then on)."""
        if model == self.model:
            return
        self.emit(
            ev.ModelLearned(at=self._clock(), session=self.session, model=model, was=self.model)
        )
        self.model = model

    def at_clean_point(self) -> bool:
        """No API call and no tool call in flight: a turn stopped now loses no work."""
        return not self._call_open and not self.manager.transcript.open_calls

    def tool_gate(self, tool_use_id: str, tool: str, characters: int) -> bool:
        """Asked by the agent's post-tool hook, before the model request the result would join.

        True when the manager answers with `StopTurn`: the client then ends the turn
        there, as after a stop the runner asked for, and the manager decides what
        comes next from the `TurnEnded` that follows. Only `StopTurn` is answered
        here: a hook cannot carry out anything else.
        """
        try:
            outcome = self.observe(ToolResultSeen(self._clock(), tool_use_id, tool, characters))
        except IllegalTransition as exc:
            self.error(ev.Where.RUNTIME, str(exc))
            return False
        return any(isinstance(action, StopTurn) for action in outcome.actions)

    def started(self, spec: SessionSpec, require_approval: bool | None) -> None:
        """Journal the session's start: its task, where it works, the limits it runs under
        (`require_approval`: as switched before it started; None: as its limits say)."""
        limits = self.manager.limits
        sub = spec.subagent_limits
        self.emit(
            ev.SessionStarted(
                at=self._clock(),
                session=spec.name,
                task=spec.task,
                cwd=str(spec.cwd),
                model=spec.model,
                window=self.manager.window,
                soft_threshold=limits.soft_threshold,
                hard_threshold=limits.hard_threshold,
                max_restarts=limits.max_restarts,
                require_approval=(
                    self.manager.require_approval if require_approval is None else require_approval
                ),
                window_source=self.manager.window_source,
                manage=self.manager.manage,
                cache_ttl_seconds=limits.cache_ttl_seconds,
                subagent_soft_threshold=sub.soft_threshold if sub is not None else None,
                subagent_hard_threshold=sub.hard_threshold if sub is not None else None,
            )
        )

    def observe(self, observation: Observation) -> Outcome:
        """The manager's outcome, its events recorded and an ending noted.

        Raises:
            IllegalTransition: the manager refused the observation (nothing recorded).
        """
        outcome = self.record(self.manager.observe(observation))
        for action in outcome.actions:
            if isinstance(action, EndSession):
                self.status, self.end_reason = action.status, action.reason
        return outcome

    def observe_quietly(self, observation: Observation) -> Outcome | None:
        """Operator input may race the session (a stop after it ended): refuse it in the log."""
        try:
            return self.observe(observation)
        except IllegalTransition as exc:
            self.error(ev.Where.OPERATOR, str(exc))
            return None

    def record(self, outcome: Outcome) -> Outcome:
        """Record the outcome's events, and the agent's session id when it is new."""
        for event in outcome.events:
            self.emit(event)
        session_id = self.manager.session_id
        if session_id is not None and session_id != self._named:
            self._named = session_id
            self.emit(
                ev.AgentSessionNamed(at=self._clock(), session=self.session, session_id=session_id)
            )
        return outcome

    def emit(self, event: ev.Event) -> ev.Event:
        return self._sink(event)

    def error(self, where: ev.Where, message: str) -> None:
        self.emit(
            ev.ErrorRecorded(at=self._clock(), session=self.session, where=where, message=message)
        )
