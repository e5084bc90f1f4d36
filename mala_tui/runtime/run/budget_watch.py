"""Watching a run's spending against its budgets, at every API call.

The arithmetic is core.budget's; what is spent comes from the run's live view
(core.view: each session's calls and their estimated cost). At every call a
session (or the run) makes while near a limit or over it, each running session
concerned is told: near, it winds down and writes its checkpoint; over, it
stops. Told again at each call, a session that could not act at one moment (a
prompt already queued, say) acts at the next; the manager ignores the repeats
once its checkpoint is on its way. Raising a limit takes effect at the next call.
The watch only judges; `BudgetListener` is the event listener that asks it after
each call and tells whoever owns the sessions (the supervisor, through each
session's inbox).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mala_tui.core import events as ev
from mala_tui.core.budget import BudgetCheck, BudgetLimits, BudgetState, Spent, check, run_spent
from mala_tui.core.run_view import RunState
from mala_tui.core.view import SessionState


@dataclass(frozen=True)
class BudgetNotice:
    """Tell `session` it is near (wind down) or over (stop) a budget, and why."""

    session: str
    over: bool
    reason: str


@dataclass
class BudgetWatch:
    """Per-session and per-run limits, and what each session has been told so far."""

    session_limits: BudgetLimits = field(default_factory=BudgetLimits)
    run_limits: BudgetLimits = field(default_factory=BudgetLimits)
    overrides: dict[str, BudgetLimits] = field(default_factory=dict)
    """Per-session limits the operator set, over `session_limits`."""

    def limits_for(self, session: str) -> BudgetLimits:
        return self.overrides.get(session, self.session_limits)

    @property
    def active(self) -> bool:
        return (
            self.session_limits.any
            or self.run_limits.any
            or any(limits.any for limits in self.overrides.values())
        )

    def set_limits(self, session: str | None, limits: BudgetLimits) -> None:
        """New limits for one session, or (None) for the run; the next call is judged anew."""
        if session is None:
            self.run_limits = limits
        else:
            self.overrides[session] = limits

    def session_check(self, state: SessionState, now: float) -> BudgetCheck:
        return check(_spent(state, now), self.limits_for(state.name))

    def run_check(self, run: RunState, now: float) -> BudgetCheck:
        started = run.started_at if run.started_at is not None else now
        spent = run_spent(
            [_spent(state, now) for state in run.sessions.values()], (now - started) / 60
        )
        return check(spent, self.run_limits)

    def observe(self, event: ev.Event, run: RunState) -> list[BudgetNotice]:
        """After `event` has been applied to `run`: the sessions to tell, if any."""
        # A subagent's call is the session's money too: its budget counts it.
        if not isinstance(event, ev.UsageRecorded | ev.SubagentCall) or not self.active:
            return []
        told: dict[str, BudgetNotice] = {}
        state = run.sessions.get(event.session)
        if state is not None and state.status is None:
            mine = self.session_check(state, event.at)
            if mine.state is not BudgetState.OK:
                over = mine.state is BudgetState.OVER
                told[state.name] = BudgetNotice(state.name, over, mine.reason)
        if self.run_limits.any:
            whole = self.run_check(run, event.at)
            if whole.state is not BudgetState.OK:
                reason = whole.reason.replace("budget:", "run budget:", 1)
                over = whole.state is BudgetState.OVER
                for name, other in run.sessions.items():
                    if other.status is not None:
                        continue
                    if name in told and (told[name].over or not over):
                        continue  # its own limit already says as much
                    told[name] = BudgetNotice(name, over, reason)
        return list(told.values())


@dataclass
class BudgetListener:
    """An event listener: after each event is in the run's view, the sessions to tell
    (near or over a budget) go to `tell`."""

    watch: BudgetWatch
    run: RunState
    tell: Callable[[BudgetNotice], None]

    def __call__(self, event: ev.Event) -> None:
        for notice in self.watch.observe(event, self.run):
            self.tell(notice)


def _spent(state: SessionState, now: float) -> Spent:
    spend = state.spend
    started = state.started_at if state.started_at is not None else now
    return Spent(spend.cost_usd, spend.calls, max(0.0, now - started) / 60)
