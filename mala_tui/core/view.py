"""What the UI and `show` know of a session, rebuilt from events alone.

The same reducer runs live (the supervisor feeds it every event as it is
recorded) and afterwards (`mala-tui show` feeds it the journal), so a finished
run looks exactly as it did live. `SessionState` accumulates; `snapshot()` hands
out a small frozen copy for the dashboard, and the long histories are read only
by the screens that draw them. The records the histories hold and the snapshot are
in core.session_records (imported from here too).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, replace

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.background import describe_tasks
from mala_tui.core.phases import ManageMode, Phase
from mala_tui.core.pricing import PriceTable, Spend
from mala_tui.core.questions import (
    ApprovalQuestion,
    PermissionQuestion,
    Question,
    approval_asked,
    permission_asked,
    permission_id,
)
from mala_tui.core.session_records import (
    BranchStatus,
    CheckpointRecord,
    CostPoint,
    MaskRecord,
    RestartRecord,
    SessionSnapshot,
    UsagePoint,
    WorktreeRecord,
)
from mala_tui.core.session_spend import SessionSpend
from mala_tui.core.subagents import SubagentEvent, SubagentGauge, SubagentState
from mala_tui.core.usage import UsageSource
from mala_tui.core.window import WindowSource

#: Context samples kept for a card's trend line.
TREND_POINTS = 48
#: Event log lines kept per session in memory (the journal keeps all).
LOG_LINES = 2_000


@dataclass
class SessionState:
    """Everything known of one session, built by `apply`."""

    name: str
    task: str = ""
    cwd: str = ""
    forked_from: str = ""
    """The session whose conversation this one was forked from ("" for none)."""
    by_hand: bool = False
    """A person has it in the interactive Claude Code (taken over, not handed back yet)."""
    phase: Phase = Phase.RUNNING
    tokens: int = 0
    window: int = 200_000
    source: UsageSource = UsageSource.DISABLED
    soft_threshold: float = 0.15
    hard_threshold: float = 0.8
    max_restarts: int = 0
    require_approval: bool = False
    masked_total: int = 0
    masked_session: int = 0
    idle_retries: int = 0
    pending_approval: int | None = None
    status: EndStatus | None = None
    end_reason: str = ""
    last_error: str = ""
    mask_failures: int = 0
    """Masks in a row that could not be applied (since the last one that was, or a restart)."""
    mask_problem: str = ""
    """Why the latest of them could not be."""
    updated_at: float = 0.0
    window_source: WindowSource = WindowSource.DEFAULT
    density: float = 1.0
    density_measured: bool = False
    manage: ManageMode = ManageMode.FULL
    model: str | None = None
    started_at: float | None = None
    cache_ttl_seconds: float | None = None
    """The prompt cache's lifetime the session is judged by (from its start)."""
    cache_refreshed_at: float | None = None
    """When its latest API call began: the cache stays warm a lifetime from then."""
    messages_waiting: set[int] = field(default_factory=set)
    prices: PriceTable = field(default_factory=PriceTable, repr=False)
    """List prices the spend is costed at (the `[pricing]` settings)."""
    spent: SessionSpend = field(init=False)
    worktree: WorktreeRecord | None = None
    usage: list[UsagePoint] = field(default_factory=list)
    masks: list[MaskRecord] = field(default_factory=list)
    restarts: list[RestartRecord] = field(default_factory=list)
    checkpoints: list[CheckpointRecord] = field(default_factory=list)
    log: deque[ev.Event] = field(default_factory=lambda: deque(maxlen=LOG_LINES))
    questions: dict[str, Question] = field(default_factory=dict)
    """Restart approvals and permission requests waiting for a person, by id, oldest first
    (core.questions)."""
    pids: dict[int, bool] = field(default_factory=dict)
    """CLI processes started for this session, and whether each has ended."""
    host: str = ""
    """Where the session's host runs (`--engine ray`): the node's address; "" when local,
    or while its host is lost."""
    hosts_lost: int = 0
    """Hosts of this session lost with their node."""
    host_lost: str = ""
    """How the latest was lost."""
    subagents: dict[str, SubagentState] = field(default_factory=dict)
    """Its subagents by agent id, in the order they started (core.subagents)."""
    subagent_thresholds: tuple[float, float] | None = None
    """(soft, hard) of its subagents' windows, when mala-tui manages them."""
    waiting_for: str = ""
    """The background work its turn ended on ("2 subagents"): the session waits for the
    CLI's next turn, with their reports; "" when it is not waiting."""
    _trend: deque[float] = field(default_factory=lambda: deque(maxlen=TREND_POINTS))
    _await_after_restart: bool = False

    def __post_init__(self) -> None:
        self.spent = SessionSpend(self.prices)

    def apply(self, event: ev.Event) -> None:
        """Take one event in (`_take`)."""
        self.updated_at = max(self.updated_at, event.at)
        self.log.append(event)
        self._take(event)

    def _take(self, event: ev.Event) -> None:
        """A flat table of what each kind of event changes."""
        match event:
            case ev.SessionStarted():
                self._started(event)
            case ev.ModelLearned():
                self.model = event.model
                self.spent.model_learned(event.model)
            case ev.PhaseChanged():
                self.phase = event.after
                if event.after is not Phase.AWAITING_APPROVAL:
                    self.pending_approval = None
            case ev.UsageRecorded():
                self._usage(event)
            case ev.WindowLearned():
                self.window, self.window_source = event.window, WindowSource.REFUSAL
            case ev.MaskApplied():
                self._mask_applied(event)
            case ev.MaskMeasured():
                if self.masks and self.masks[-1].reclaimed is None:
                    self.masks[-1] = replace(self.masks[-1], reclaimed=event.reclaimed)
            case ev.TranscriptFolded() if self.masks:  # the fold of the mask just applied
                self.masks[-1] = replace(
                    self.masks[-1],
                    folded_steps=event.steps,
                    folded_tokens=max(0, event.tokens_before - event.tokens_after),
                    digest_lines=event.digest_lines,
                    digest_tokens=event.digest_tokens,
                )
            case ev.CheckpointSaved():
                self.checkpoints.append(
                    CheckpointRecord(event.at, event.number, event.origin, event.text, event.path)
                )
            case ev.ApprovalRequested():
                self.pending_approval = event.checkpoint_number
                text = self.checkpoints[-1].text if self.checkpoints else ""
                self._ask(approval_asked(event, text))
            case ev.ApprovalDecided():
                self.pending_approval = None
                self._close_approvals()
            case ev.ApprovalPolicySet():
                self.require_approval = event.required
            case ev.ManageModeSet():
                self.manage = event.mode
            case ev.TakenOver():
                self.by_hand = True
            case ev.HandedBack():
                self.by_hand = False
                if event.tokens is not None:  # the person's latest call measures the window
                    self.tokens, self.source = event.tokens, UsageSource.PER_CALL
            case ev.SessionAdded():
                self.task, self.cwd = event.task, event.cwd
                self.forked_from = event.forked_from
            case ev.MessageQueued():
                self.messages_waiting.add(event.number)
            case ev.MessageDelivered():
                self.messages_waiting.difference_update(event.numbers)
            case ev.Restarted():
                self._restarted(event)
            case ev.IdleTimeoutSeen():
                self.idle_retries = event.retry
            case ev.BackgroundWaiting():
                self.waiting_for = describe_tasks(event.tasks, event.reports)
            case ev.BackgroundStopped():
                self.waiting_for = ""
                for task in event.tasks:
                    if task.id in self.subagents:
                        self.subagents[task.id].killed(event.at, event.reason)
            case (
                ev.SubagentStarted()
                | ev.SubagentCall()
                | ev.SubagentCompacted()
                | ev.SubagentEnded()
                | ev.SubagentWoundDown()
                | ev.SubagentResultWithheld()
            ):
                self._subagent_event(event)
            case ev.CliCostReported():
                self.spent.cli_reported(event)
            case ev.SessionEnded():
                self.status, self.end_reason = event.status, event.reason
                self.waiting_for = ""
                self.by_hand = False
                self.questions.clear()  # nobody is left to ask
            case ev.ErrorRecorded():
                self.last_error = event.message
                if event.mask_not_applied:
                    self.mask_failures += 1
                    self.mask_problem = event.message
            case ev.WorktreeCreated():
                self.worktree = WorktreeRecord.created(event)
            case ev.WorktreeChanged() | ev.WorktreeLanded() | ev.WorktreePushed() if (
                self.worktree is not None
            ):
                self.worktree = self.worktree.after(event)
            case ev.WorktreeDiscarded() if self.worktree is not None:
                self.set_branch_status(BranchStatus(0, False, discarded=True))
            case ev.ProcessStarted() if event.pid is not None:
                self.pids[event.pid] = False
            case ev.ProcessEnded() if event.pid is not None:
                self.pids[event.pid] = True
            case ev.PermissionRequested() if event.waiting:
                self._ask(permission_asked(event))
            case ev.PermissionDecided():
                self.questions.pop(permission_id(event.session, event.request_id), None)
            case ev.HostPlaced():
                self.host = event.address
            case ev.HostLost():
                self.host, self.hosts_lost, self.host_lost = "", self.hosts_lost + 1, event.reason
                self.questions.clear()  # whoever waited went with the host; asked again
            case _:
                pass

    # -- the longer entries of `apply`'s table ------------------------------------------

    def _started(self, event: ev.SessionStarted) -> None:
        self.task, self.cwd, self.window = event.task, event.cwd, event.window
        self.model = event.model
        if self.started_at is None:  # a resumed session keeps what it spent
            self.spent.started(event.model)
        self.started_at = event.at
        self.soft_threshold, self.hard_threshold = event.soft_threshold, event.hard_threshold
        self.max_restarts, self.require_approval = event.max_restarts, event.require_approval
        self.window_source, self.manage = event.window_source, event.manage
        self.cache_ttl_seconds = event.cache_ttl_seconds
        self.subagent_thresholds = (
            (event.subagent_soft_threshold, event.subagent_hard_threshold)
            if event.subagent_soft_threshold is not None
            and event.subagent_hard_threshold is not None
            else None
        )

    def _usage(self, event: ev.UsageRecorded) -> None:
        self.tokens, self.window, self.source = event.tokens, event.window, event.source
        self.window_source = event.window_source
        self.density, self.density_measured = event.density, event.density_measured
        self.usage.append(UsagePoint(event.at, event.tokens, event.window))
        self._trend.append(event.pressure)
        if event.usage.call is not None:
            self.spent.meter.observe(event.usage.call)
            self._cost_point(event.at)
        if event.call_started:
            self.cache_refreshed_at = event.at
            self.waiting_for = ""  # the CLI's next turn has begun
        if self._await_after_restart and self.restarts:
            self.restarts[-1] = replace(self.restarts[-1], tokens_after=event.tokens)
            self._await_after_restart = False

    def _mask_applied(self, event: ev.MaskApplied) -> None:
        self.mask_failures, self.mask_problem = 0, ""
        self.masked_total = event.total_masked
        self.masked_session += event.count
        self.masks.append(
            MaskRecord(
                event.at,
                event.count,
                event.tokens_before,
                event.estimated_tokens,
                event.placeholders,
                trigger=event.trigger,
            )
        )

    def _restarted(self, event: ev.Restarted) -> None:
        self.restarts.append(RestartRecord.of(event))
        self.masked_session = 0
        self.idle_retries = 0
        self.mask_failures, self.mask_problem = 0, ""
        self.tokens, self.source = 0, UsageSource.DISABLED
        self._await_after_restart = True

    def _ask(self, question: Question) -> None:
        self.questions.pop(question.id, None)  # asked again: it goes to the back
        self.questions[question.id] = question

    def _close_approvals(self) -> None:
        """An approval decided closes the session's one approval (its number is not said)."""
        for key, question in list(self.questions.items()):
            if isinstance(question, ApprovalQuestion):
                del self.questions[key]

    def set_branch_status(self, status: BranchStatus) -> None:
        """Where the worktree's branch stands, as read from git (`show` reads it afresh)."""
        if self.worktree is not None:
            self.worktree = replace(self.worktree, status=status)

    def resume(self, event: ev.RunResumed) -> None:
        """The run was picked up again and this session goes on: it has not ended after all."""
        self.updated_at = max(self.updated_at, event.at)
        self.log.append(event)
        self.status, self.end_reason = None, ""
        self.phase, self.pending_approval = Phase.RUNNING, None
        self.tokens, self.source = 0, UsageSource.DISABLED
        self.questions.clear()  # whoever waited went with the old process; asked again

    def _cost_point(self, at: float) -> None:
        self.spent.cost_point(at, self.spend)

    def _subagent_event(self, event: SubagentEvent) -> None:
        SubagentState.of(self.subagents, event).apply(event, self.prices)
        if isinstance(event, ev.SubagentCall):
            self._cost_point(event.at)

    @property
    def costs(self) -> list[CostPoint]:
        return self.spent.costs

    @property
    def main_spend(self) -> Spend:
        """The main thread's calls only."""
        return self.spent.meter.spend

    @property
    def seen_spend(self) -> Spend:
        """The calls mala-tui saw: the main thread's and each subagent's."""
        return self.spent.seen(subagent.spend for subagent in self.subagents.values())

    @property
    def unseen_spend(self) -> Spend:
        """What Claude Code counted beyond the calls seen (`SessionSpend.unseen`)."""
        return self.spent.unseen(self.seen_spend, self.model)

    @property
    def spend(self) -> Spend:
        """Every token the session spent: each call seen (the main thread's and each
        subagent's), and what Claude Code's own totals hold beyond them."""
        return self.seen_spend + self.unseen_spend

    @property
    def cli_cost_usd(self) -> float | None:
        """What Claude Code says the session cost (None: it has not said)."""
        return self.spent.cli_cost_usd

    def subagent_gauges(self) -> tuple[SubagentGauge, ...]:
        return tuple(subagent.gauge() for subagent in self.subagents.values())

    def snapshot(self) -> SessionSnapshot:
        """A small frozen copy for the dashboard (core.session_records)."""
        return snapshot_of(self)


def snapshot_of(state: SessionState) -> SessionSnapshot:
    """What the dashboard shows of `state`: a small frozen copy."""
    return SessionSnapshot(
        name=state.name,
        task=state.task,
        phase=state.phase,
        tokens=state.tokens,
        window=state.window,
        source=state.source,
        soft_threshold=state.soft_threshold,
        hard_threshold=state.hard_threshold,
        masked_session=state.masked_session,
        masked_total=state.masked_total,
        restarts=len(state.restarts),
        max_restarts=state.max_restarts,
        idle_retries=state.idle_retries,
        require_approval=state.require_approval,
        pending_approval=state.pending_approval,
        trend=tuple(state._trend),
        status=state.status,
        end_reason=state.end_reason,
        last_error=state.last_error,
        mask_failures=state.mask_failures,
        mask_problem=state.mask_problem,
        updated_at=state.updated_at,
        window_source=state.window_source,
        density=state.density,
        density_measured=state.density_measured,
        manage=state.manage,
        spend=state.spend,
        subagents=state.subagent_gauges(),
        subagent_thresholds=state.subagent_thresholds,
        model=state.model,
        messages_waiting=len(state.messages_waiting),
        pending_permissions=sum(
            isinstance(question, PermissionQuestion) for question in state.questions.values()
        ),
        worktree_status=state.worktree.status if state.worktree is not None else None,
        forked_from=state.forked_from,
        by_hand=state.by_hand,
        host=state.host,
        hosts_lost=state.hosts_lost,
        host_lost=state.host_lost,
        waiting_for=state.waiting_for,
        cache_warm_until=(
            state.cache_refreshed_at + state.cache_ttl_seconds
            if state.cache_refreshed_at is not None and state.cache_ttl_seconds is not None
            else None
        ),
    )
