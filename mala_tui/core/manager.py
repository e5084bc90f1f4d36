"""The ContextManager: one session's context window, as a small explicit state machine.

The manager performs nothing. The runtime tells it what happened (an
Observation, with the time) and gets back an Outcome: Actions to carry out, in
order, and Events to record. Because it does no I/O and keeps no clock, the
same code drives the real Claude Code backend, the scripted one in tests, and
replays. An observation the current phase does not accept raises
IllegalTransition and leaves the manager exactly as it was: every handler checks
before it changes anything.

Who owns what
-------------
The manager owns one `ManagerState` and the parts it hands that state to, as a
connection owns its protocol state: it makes them, sends each observation to
the one part that handles it, and decides nothing itself. Each part is an object
given the state and, explicitly, the few other parts it calls; the calls run one
way, top to bottom:

- core/turn_flow.py (`TurnFlow`): usage, the agent's messages, a turn's end;
  calls the projection, masking decisions, the restart flow, the background flow
  and recovery;
- core/operator_flow.py (`OperatorFlow`): the operator's commands, messages and
  settings, and the budgets' limits; calls masking decisions and the restart flow;
- core/projection.py (`Projection`): the next request projected at each tool
  result, and the turn stopped before it passes a threshold; calls masking
  decisions and the restart flow;
- core/masking_decisions.py (`MaskingDecisions`): when to mask and how much; calls
  the restart flow;
- core/restart_flow.py (`RestartFlow`): wind-down, checkpoint, approval, restart,
  emergency (what a restart says is core/restart_prompts.py's);
- core/background_flow.py (`BackgroundFlow`): the agent's background work, and
  whether a turn's end is the task's; calls recovery;
- core/recovery.py (`Recovery`): retries after a hang or an API error (the rules
  are core/retry.py's), and the failures that end a session;
- core/session_start.py (`SessionStart`): the first prompt: the task, a fork's new
  instruction, or where a resumed run left the session;
- core/manager_state.py (`ManagerState`): every field the manager keeps, and the
  moves every part shares: the legal-move check against the phase table
  (core/phases.py), the phase change, a turn begun, a fresh session started, the
  session ended. Its parts (core/state_parts.py, core/window_belief.py) change
  through named transitions; core/decision_figures.py reads the figures off it.
"""

from __future__ import annotations

from collections.abc import Sequence

from mala_tui.core.actions import EndStatus
from mala_tui.core.background import BackgroundWork
from mala_tui.core.background_flow import BackgroundFlow
from mala_tui.core.calibration import Density
from mala_tui.core.checkpoint import Checkpoint
from mala_tui.core.decision_figures import cache_warm_until, projected_tokens
from mala_tui.core.limits import Limits
from mala_tui.core.manager_state import ManagerState, Outcome
from mala_tui.core.mask_economics import GrowthRate
from mala_tui.core.masking_decisions import MaskingDecisions
from mala_tui.core.observations import (
    AgentFailed,
    ApiRetrying,
    ApprovalGiven,
    ApprovalPolicyChanged,
    BackgroundChanged,
    BudgetReached,
    CompactionObserved,
    IdleTimedOut,
    ManageModeChanged,
    MaskConfirmed,
    MaskFailed,
    MessageForAgent,
    MessageObserved,
    Observation,
    OperatorCommand,
    RestartCompleted,
    SessionHandedBack,
    SessionIdentified,
    SessionTimedOut,
    ToolResultSeen,
    TurnEnded,
    UsageObserved,
)
from mala_tui.core.operator_flow import OperatorFlow
from mala_tui.core.operator_messages import MessageQueue
from mala_tui.core.phases import IllegalTransition, ManageMode, Phase
from mala_tui.core.projection import Projection
from mala_tui.core.prompts import PromptSet
from mala_tui.core.recovery import Recovery
from mala_tui.core.restart_flow import RestartFlow
from mala_tui.core.resume_plan import SessionResume
from mala_tui.core.session_start import SessionStart
from mala_tui.core.state_parts import Counters, Fork, StopFor
from mala_tui.core.transcript import Message, Transcript
from mala_tui.core.turn_flow import TurnFlow
from mala_tui.core.usage import ContextUsage, Zone
from mala_tui.core.window import RefusalBounds, WindowSource

__all__ = ["ContextManager", "Limits", "Outcome"]


class ContextManager:
    """Decides, for one agent session, when to mask, wind down, checkpoint and restart."""

    def __init__(self, *, name: str, task: str, limits: Limits, prompts: PromptSet) -> None:
        self._state = ManagerState(name=name, task=task, limits=limits, prompts=prompts)
        self._restart_flow = RestartFlow(self._state)
        self._masking = MaskingDecisions(self._state, self._restart_flow)
        self._projection = Projection(self._state, self._masking, self._restart_flow)
        self._recovery = Recovery(self._state)
        self._background = BackgroundFlow(self._state, self._recovery)
        self._start = SessionStart(self._state)
        self._operator = OperatorFlow(self._state, self._masking, self._restart_flow)
        self._turns = TurnFlow(
            self._state,
            masking=self._masking,
            projection=self._projection,
            restart_flow=self._restart_flow,
            recovery=self._recovery,
            background=self._background,
        )

    # -- what the UI and runtime read ------------------------------------------------

    @property
    def name(self) -> str:
        return self._state.name

    @property
    def limits(self) -> Limits:
        return self._state.limits

    @property
    def phase(self) -> Phase:
        return self._state.phase

    @property
    def manage(self) -> ManageMode:
        return self._state.manage

    @property
    def require_approval(self) -> bool:
        return self._state.require_approval

    @property
    def session_id(self) -> str | None:
        return self._state.session_id

    @property
    def by_hand(self) -> bool:
        """A person has the session in the interactive Claude Code (not handed back yet)."""
        return self._state.by_hand

    @property
    def checkpoint(self) -> Checkpoint | None:
        return self._state.checkpoint

    @property
    def end_status(self) -> EndStatus | None:
        return self._state.end_status

    @property
    def transcript(self) -> Transcript:
        return self._state.transcript

    @property
    def messages(self) -> MessageQueue:
        return self._state.messages

    @property
    def counters(self) -> Counters:
        return self._state.counters

    @property
    def growth(self) -> GrowthRate:
        return self._state.growth

    @property
    def density(self) -> Density:
        return self._state.density

    @property
    def usage(self) -> ContextUsage:
        return self._state.usage

    def cache_warm_until(self) -> float | None:
        """When the prompt cache goes cold unless a request comes first (None: unknown)."""
        return cache_warm_until(self._state)

    def projected_tokens(self) -> int:
        """The next request's size, as decisions at a tool result see it."""
        return projected_tokens(self._state)

    @property
    def window(self) -> int:
        return self._state.window

    @property
    def window_source(self) -> WindowSource:
        return self._state.window_source

    @property
    def refusal(self) -> RefusalBounds | None:
        return self._state.belief.refusal

    @property
    def window_reported(self) -> bool:
        return self._state.window_source is WindowSource.CLI

    @property
    def zone(self) -> Zone:
        return self._state.usage.zone(
            self._state.limits.soft_threshold, self._state.limits.hard_threshold
        )

    @property
    def continuation_count(self) -> int:
        return self._state.counters.continuation

    @property
    def streaming(self) -> bool:
        return self._state.turn.streaming

    @property
    def background(self) -> BackgroundWork:
        """What the agent runs in the background (read only: the manager keeps it)."""
        return self._state.background

    @property
    def stopping(self) -> StopFor | None:
        """Why the turn in flight is being stopped, if it is."""
        return self._state.turn.stopping

    # -- entry points ----------------------------------------------------------------

    def resume_from(
        self, plan: SessionResume, gap_seconds: float, history: Sequence[Message] = ()
    ) -> None:
        """Have `start` continue where an interrupted run left this session (see resume_plan).

        `history`: the agent session's conversation so far, when it is resumed by its id
        (what masking decides on; the agent's window holds it all).
        """
        if self._state.started:
            raise IllegalTransition(f"{self._state.name}: already started")
        self._state.plan_resume(plan, gap_seconds, history)

    def fork_from(
        self, session_id: str, history: Sequence[Message] = (), density: float | None = None
    ) -> None:
        """Have `start` fork the agent session `session_id` (another session's conversation,
        `history`, its text measured at `density`) instead of starting afresh: the agent
        resumes it under a new id of its own and gets this session's task as its next
        instruction."""
        if self._state.started:
            raise IllegalTransition(f"{self._state.name}: already started")
        self._state.fork = Fork(session_id, tuple(history), density)

    def start(self, at: float) -> Outcome:
        """The first prompt: the task itself, or where a resumed run left the session, or
        the task as the next instruction in a conversation forked from another session."""
        if self._state.started:
            raise IllegalTransition(f"{self._state.name}: already started")
        self._state.started = True
        if self._state.resume is not None:
            return self._start.resumed_turn(at, *self._state.resume)
        if self._state.fork is not None:
            return self._start.forked_turn(at, self._state.fork)
        return self._start.first_turn()

    def observe(self, observation: Observation) -> Outcome:
        """Take one fact in, decide. Raises IllegalTransition, changing nothing, when refused."""
        if not self._state.started:
            raise IllegalTransition(f"{self._state.name}: observe() before start()")
        return self._operator.stop_for_messages(self._dispatch(observation))

    def _dispatch(self, observation: Observation) -> Outcome:
        match observation:
            case UsageObserved():
                return self._turns.on_usage(observation)
            case MessageObserved():
                return self._turns.on_message(observation)
            case ToolResultSeen():
                return self._projection.on_tool_result_seen(observation)
            case SessionIdentified():
                return self._turns.on_session_identified(observation)
            case TurnEnded():
                return self._turns.on_turn_ended(observation)
            case MaskConfirmed():
                return self._masking.on_mask_confirmed(observation)
            case MaskFailed():
                return self._masking.on_mask_failed(observation)
            case ApprovalGiven():
                return self._restart_flow.on_approval(observation)
            case RestartCompleted():
                return self._restart_flow.on_restarted(observation)
            case IdleTimedOut() if self._state.background.waiting:
                return self._background.on_idle_while_waiting(observation)
            case IdleTimedOut():
                return self._recovery.on_idle(observation)
            case SessionTimedOut():
                return self._recovery.on_session_timeout(observation)
            case AgentFailed():
                return self._recovery.on_agent_failed(observation)
            case ApiRetrying():
                return self._recovery.on_api_retrying(observation)
            case CompactionObserved():
                return self._turns.on_compaction(observation)
            case OperatorCommand():
                return self._operator.on_command(observation)
            case MessageForAgent():
                return self._operator.on_message_for_agent(observation)
            case SessionHandedBack():
                return self._turns.on_handed_back(observation)
            case ApprovalPolicyChanged():
                return self._operator.on_approval_policy(observation)
            case BudgetReached():
                return self._operator.on_budget(observation)
            case ManageModeChanged():
                return self._operator.set_manage_mode(observation)
            case BackgroundChanged():
                return self._background.on_background(observation)
        raise TypeError(f"not an observation: {observation!r}")
