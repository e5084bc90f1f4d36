"""`python -m mala_tui.bench subagents`: are a session's subagents measured exactly?

Not a test: a measurement. Each delegation scenario runs once with the real Claude Code
CLI on the loopback model (127.0.0.1, unpaced) under mala-tui's supervisor with the
shipped settings, the CLI's own compaction left on for subagents as a managed session
has it. The loopback logs every request it answered, with the agent id Claude Code
sends for a subagent's; mala-tui journals each subagent from its transcript. For each
scenario the table says:

- the subagents started and finished, against the scenario's;
- per subagent, its calls (journaled / answered by the model), the gauge's error (the
  largest difference, call by call, between the window mala-tui journaled and the
  model's prompt + output for that call; target 0), its peak and its compactions;
- the run's cost as mala-tui counts it (main thread and subagents) against the model's
  own figures: the loopback's billed usage priced with the same list prices
  (mala_tui.core.pricing), and Claude Code's own `total_cost_usd`; target within 1%;
- the main thread's peak, mala-tui's and the model's.

Exit status 0 when every target holds in every scenario, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from mala_tui.bench.loopback_session import supervised_session
from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.pricing import PriceTable
from mala_tui.core.run_view import RunState
from mala_tui.core.usage import CallUsage
from mala_tui.loopback import LoopbackServer, ScenarioError, load_scenario
from mala_tui.loopback.request_log import RequestRecord

SCENARIOS = (
    "delegation",
    "delegation-foreground",
    "delegation-sequential",
    "delegation-fails",
    "delegation-nested",
    "delegation-fills",
)
#: Largest relative difference between mala-tui's cost and each of the model's figures.
COST_TOLERANCE = 0.01
SESSION = "bench"


@dataclass(frozen=True)
class SubagentRow:
    """One subagent: what mala-tui journaled against what the model answered."""

    name: str
    """The scenario's name for it (the loopback's), or its agent id when unknown."""
    description: str
    depth: int
    journaled: tuple[int, ...]
    """The window of each call, as journaled (prompt + output)."""
    billed: tuple[int, ...]
    """Each call's prompt + output, as the model answered it."""
    compactions: int
    compaction_calls: int
    """Summaries the model wrote for this subagent (its compactions' calls)."""
    ended: str

    @property
    def error(self) -> int | None:
        """The largest difference call by call; None when the calls do not pair up."""
        if len(self.journaled) != len(self.billed):
            return None
        return max(
            (abs(a - b) for a, b in zip(self.journaled, self.billed, strict=True)), default=0
        )

    @property
    def peak(self) -> int:
        return max(self.journaled, default=0)

    def line(self) -> str:
        error = "calls differ" if self.error is None else f"{self.error:,}"
        return (
            f"| {self.name} | {self.description} | {self.depth} "
            f"| {len(self.journaled)} / {len(self.billed)} | {error} | {self.peak:,} "
            f"| {self.compactions} ({self.compaction_calls}) | {self.ended} |"
        )


@dataclass(frozen=True)
class ScenarioResult:
    scenario: str
    expected: int
    """Subagents the scenario defines."""
    status: str
    started: int
    finished: int
    subagents: tuple[SubagentRow, ...]
    cost: float | None
    """mala-tui's figure: every call of the session, priced."""
    model_cost: float
    """The loopback's billed usage, priced with the same list prices."""
    cli_cost: float | None
    """Claude Code's own figure."""
    main_peak: int
    model_main_peak: int
    notes: tuple[str, ...] = field(default=())

    def failures(self) -> list[str]:
        """Each target missed, one line each ([] when all hold)."""
        missed = [*self.notes]
        if self.status != EndStatus.DONE:
            missed.append(f"the session ended {self.status}, not done")
        if not self.expected == self.started == self.finished:
            missed.append(
                f"{self.started} subagents started and {self.finished} finished of {self.expected}"
            )
        for row in self.subagents:
            if row.error is None:
                missed.append(
                    f"subagent {row.name}: {len(row.journaled)} calls journaled, "
                    f"{len(row.billed)} answered"
                )
            elif row.error:
                missed.append(f"subagent {row.name}: the gauge is off by up to {row.error:,}")
        for label, figure in (
            ("the model's usage", self.model_cost),
            ("Claude Code", self.cli_cost),
        ):
            difference = relative(self.cost, figure)
            if difference is None or difference > COST_TOLERANCE:
                missed.append(f"the cost is not within 1% of {label}'s figure")
        if self.main_peak != self.model_main_peak:
            missed.append(
                f"main peak {self.main_peak:,} against the model's {self.model_main_peak:,}"
            )
        return missed

    def table(self) -> str:
        lines = [
            f"{self.scenario}: {self.status}; subagents started {self.started}, "
            f"finished {self.finished} (of {self.expected})",
            "| subagent | description | depth | calls (journal / model) | gauge error | peak "
            "| compactions (summary calls) | ended |",
            "| --- | --- | ---: | ---: | ---: | ---: | --- | --- |",
            *(row.line() for row in self.subagents),
            "",
            "| cost: mala-tui | the model's usage, priced | Claude Code's own | main thread's peak "
            "(mala-tui / model) |",
            "| ---: | ---: | ---: | ---: |",
            f"| {dollars(self.cost)} | {dollars(self.model_cost)} "
            f"({percent(relative(self.cost, self.model_cost))}) | {dollars(self.cli_cost)} "
            f"({percent(relative(self.cost, self.cli_cost))}) | {self.main_peak:,} / "
            f"{self.model_main_peak:,} |",
        ]
        failures = self.failures()
        lines.append("targets: " + ("all met" if not failures else "; ".join(failures)))
        return "\n".join(lines)


def relative(ours: float | None, theirs: float | None) -> float | None:
    """|ours - theirs| / theirs; None when either is missing or theirs is 0."""
    if ours is None or theirs is None or theirs <= 0:
        return None
    return abs(ours - theirs) / theirs


def dollars(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}"


def percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.2%}"


def priced(records: list[RequestRecord], prices: PriceTable) -> float:
    """What the model billed, at the list prices: each answered request's usage."""
    total = 0.0
    for record in records:
        price = prices.lookup(record.model)
        if price is None:
            continue
        total += price.call_cost(
            CallUsage(
                input_tokens=record.input_tokens,
                cache_creation_input_tokens=record.cache_creation_input_tokens,
                cache_read_input_tokens=record.cache_read_input_tokens,
                output_tokens=record.output_tokens,
            )
        )
    return total


def compare(
    scenario: str, expected: int, events: list[ev.Event], log: list[RequestRecord]
) -> ScenarioResult:
    """A scenario's figures from the run's events and the model's request log."""
    prices = PriceTable()
    state = RunState().apply_all(events)
    session = state.sessions.get(SESSION)
    answered = [record for record in log if record.status == 200]
    names = {record.agent_id: record.subagent for record in answered if record.agent_id}
    journaled: dict[str, list[int]] = {}
    for event in events:
        if isinstance(event, ev.SubagentCall):
            journaled.setdefault(event.agent_id, []).append(event.call.context_tokens)
    rows = []
    gauges = session.subagent_gauges() if session is not None else ()
    for gauge in gauges:
        mine = [r for r in answered if r.agent_id == gauge.agent_id]
        calls = [r for r in mine if r.response_kind != "compaction_summary"]
        rows.append(
            SubagentRow(
                name=names.get(gauge.agent_id) or gauge.agent_id,
                description=gauge.label,
                depth=gauge.depth,
                journaled=tuple(journaled.get(gauge.agent_id, ())),
                billed=tuple(r.prompt_tokens + r.output_tokens for r in calls),
                compactions=gauge.compactions,
                compaction_calls=len(mine) - len(calls),
                ended=str(gauge.how) if gauge.how is not None else "not ended",
            )
        )
    notes = [
        f"the model answered agent {agent} ({name}), which mala-tui never journaled"
        for agent, name in names.items()
        if agent not in {gauge.agent_id for gauge in gauges}
    ]
    main = [r for r in answered if r.agent_id is None and r.response_kind != "compaction_summary"]
    return ScenarioResult(
        scenario=scenario,
        expected=expected,
        status=str(session.status) if session is not None and session.status else "no ending",
        started=len(gauges),
        finished=sum(1 for gauge in gauges if gauge.how is not None),
        subagents=tuple(rows),
        cost=session.spend.cost_usd if session is not None else None,
        model_cost=priced(answered, prices),
        cli_cost=session.cli_cost_usd if session is not None else None,
        main_peak=max((point.tokens for point in session.usage), default=0) if session else 0,
        model_main_peak=max((r.prompt_tokens + r.output_tokens for r in main), default=0),
        notes=tuple(notes),
    )


async def one_run(root: Path, name: str) -> ScenarioResult:
    """The scenario once, under the supervisor, the CLI on a loopback playing it."""
    scenario = load_scenario(name)
    events: list[ev.Event] = []
    async with LoopbackServer(scenario, response_delay_s=0) as server:
        supervisor = supervised_session(
            SESSION, scenario, server, root, tuple(scenario.allowed_tools), auto_compact=True
        )
        supervisor.listeners.events.append(events.append)
        await supervisor.run()
        log = list(server.request_log)
    return compare(name, len(scenario.subagent_names), events, log)


async def measure(scenarios: list[str]) -> list[ScenarioResult]:
    results = []
    for name in scenarios:
        with tempfile.TemporaryDirectory(prefix="mala-subagents-bench-") as folder:
            results.append(await one_run(Path(folder), name))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mala_tui.bench subagents")
    parser.add_argument(
        "--scenarios",
        default=",".join(SCENARIOS),
        help="delegation scenarios (names or files), comma-separated (default: the shipped six)",
    )
    args = parser.parse_args(argv)
    names = [part.strip() for part in args.scenarios.split(",") if part.strip()]
    if not names:
        parser.error("--scenarios needs at least one scenario")
    for name in names:
        try:
            scenario = load_scenario(name)
        except ScenarioError as exc:
            parser.error(str(exc))
        if not scenario.subagent_names:
            parser.error(f"{name}: the scenario starts no subagent")
    results = asyncio.run(measure(names))
    print("\n\n".join(result.table() for result in results))
    return 0 if all(not result.failures() for result in results) else 1
