"""What the UI and `show` know of a whole run: its sessions' views, rebuilt from events.

A live run's recorder and a finished run's journal both fold events into a `RunState`:
the run's own (started, ended, resumed) here, each session's in its `SessionState`
(core.view).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from mala_tui.core import events as ev
from mala_tui.core.pricing import PriceTable, Spend, total_spend
from mala_tui.core.questions import Question
from mala_tui.core.view import SessionState


@dataclass
class RunState:
    """Every session of a run, in the order they appeared."""

    run_id: str = ""
    mode: ev.RunMode | None = None
    """How the run was started (`RunStarted.mode`; None before it is known). A demo
    cannot be resumed: its model server ends with it."""
    sessions: dict[str, SessionState] = field(default_factory=dict)
    started_at: float | None = None
    ended_at: float | None = None
    ok: bool | None = None
    prices: PriceTable = field(default_factory=PriceTable, repr=False)
    """List prices every session's spend is costed at."""
    resumed: list[ev.RunResumed] = field(default_factory=list)
    """Each time the run was picked up again (`mala-tui resume`), with the gap before it."""

    def apply(self, event: ev.Event) -> SessionState | None:
        match event:
            case ev.RunStarted():
                self.run_id, self.started_at, self.mode = event.run_id, event.at, event.mode
                for name in event.sessions:
                    self.sessions.setdefault(name, SessionState(name, prices=self.prices))
                return None
            case ev.RunEnded():
                self.ended_at, self.ok = event.at, event.ok
                return None
            case ev.RunResumed():
                self.ended_at, self.ok = None, None
                self.resumed.append(event)
                for name in event.resumed:
                    self.sessions.setdefault(name, SessionState(name, prices=self.prices)).resume(
                        event
                    )
                return None
        if not event.session:
            return None
        state = self.sessions.get(event.session)
        if state is None:
            state = self.sessions[event.session] = SessionState(event.session, prices=self.prices)
        state.apply(event)
        return state

    def questions(self) -> list[Question]:
        """Every question waiting for a person, all sessions, oldest first (core.questions)."""
        waiting = [q for state in self.sessions.values() for q in state.questions.values()]
        return sorted(waiting, key=lambda question: question.asked_at)

    @property
    def spend(self) -> Spend:
        """Every session's spend added up (unpriced if any session's model has no price)."""
        return total_spend(session.spend for session in self.sessions.values())

    @property
    def cli_cost_usd(self) -> float | None:
        """What Claude Code says the run cost, over the sessions it said it for."""
        said = [s.cli_cost_usd for s in self.sessions.values() if s.cli_cost_usd is not None]
        return sum(said) if said else None

    def apply_all(self, events: Iterable[ev.Event]) -> RunState:
        for event in events:
            self.apply(event)
        return self
