"""What is known of a session's subagents, built from their events (core.events.subagents).

Each subagent is a context window of its own: its figure is its latest call's whole
prompt plus output (the same rule as the main gauge, exact, from its transcript), its
peak the largest of those, and its spend its own calls at its own model's price.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mala_tui.core import events as ev
from mala_tui.core.events.subagents import SubagentEnd
from mala_tui.core.pricing import PriceTable, Spend, SpendMeter

SubagentEvent = (
    ev.SubagentStarted
    | ev.SubagentCall
    | ev.SubagentCompacted
    | ev.SubagentEnded
    | ev.SubagentWoundDown
    | ev.SubagentResultWithheld
)
"""What the journal says of one subagent."""


@dataclass(frozen=True, slots=True)
class SubagentGauge:
    """One subagent as a card or a list shows it."""

    agent_id: str
    label: str
    """Its description, else its type, else its id."""
    agent_type: str
    depth: int
    parent: str
    background: bool
    nested: bool
    tokens: int
    peak: int
    calls: int
    tool_uses: int
    compactions: int
    started_at: float
    ended_at: float | None
    how: SubagentEnd | None
    reason: str
    spend: Spend
    wound_down: int = 0
    """Times mala-tui told it to return its findings (its window near full)."""
    withheld: int = 0
    """Tool results mala-tui kept from it (they would have overflowed its window)."""

    @property
    def live(self) -> bool:
        return self.how is None

    def seconds(self, now: float) -> float:
        return max(0.0, (self.ended_at if self.ended_at is not None else now) - self.started_at)


@dataclass
class SubagentState:
    """One subagent, as its events leave it."""

    agent_id: str
    started_at: float
    agent_type: str = ""
    description: str = ""
    depth: int = 1
    parent: str = ""
    background: bool = True
    nested: bool = False
    tokens: int = 0
    peak: int = 0
    calls: int = 0
    tool_uses: int = 0
    compactions: int = 0
    wound_down: int = 0
    withheld: int = 0
    ended_at: float | None = None
    how: SubagentEnd | None = None
    reason: str = ""
    meter: SpendMeter = field(default_factory=lambda: SpendMeter(None), repr=False)

    @classmethod
    def of(cls, subagents: dict[str, SubagentState], event: SubagentEvent) -> SubagentState:
        """The state of the subagent `event` is about, made when it is the first."""
        found = subagents.get(event.agent_id)
        if found is None:
            found = subagents[event.agent_id] = cls(event.agent_id, event.at)
        return found

    def apply(self, event: ev.Event, prices: PriceTable) -> None:
        match event:
            case ev.SubagentStarted():
                self.agent_type, self.description = event.agent_type, event.description
                self.depth, self.parent = event.depth, event.parent
                self.background, self.nested = event.background, event.nested
                if event.model is not None and self.calls == 0:
                    self.meter = SpendMeter(prices.lookup(event.model))
            case ev.SubagentCall():
                if self.calls == 0 and event.model is not None:
                    self.meter = SpendMeter(prices.lookup(event.model))
                call = event.call
                self.meter.observe(call)
                self.calls += 1
                self.tool_uses += event.tool_uses
                self.tokens = call.context_tokens
                self.peak = max(self.peak, self.tokens)
            case ev.SubagentCompacted():
                self.compactions += 1
                if event.post_tokens is not None:
                    self.tokens = event.post_tokens
            case ev.SubagentWoundDown():
                self.wound_down += 1
            case ev.SubagentResultWithheld():
                self.withheld += 1
            case ev.SubagentEnded() if self.how is None:
                self.how, self.reason, self.ended_at = event.how, event.reason, event.at
            case _:
                pass

    def killed(self, at: float, reason: str) -> None:
        """Ended with its session's agent process."""
        if self.how is None:
            self.how, self.reason, self.ended_at = SubagentEnd.KILLED, reason, at

    @property
    def spend(self) -> Spend:
        return self.meter.spend

    def gauge(self) -> SubagentGauge:
        return SubagentGauge(
            agent_id=self.agent_id,
            label=self.description or self.agent_type or self.agent_id,
            agent_type=self.agent_type,
            depth=self.depth,
            parent=self.parent,
            background=self.background,
            nested=self.nested,
            tokens=self.tokens,
            peak=self.peak,
            calls=self.calls,
            tool_uses=self.tool_uses,
            compactions=self.compactions,
            started_at=self.started_at,
            ended_at=self.ended_at,
            how=self.how,
            reason=self.reason,
            spend=self.spend,
            wound_down=self.wound_down,
            withheld=self.withheld,
        )
