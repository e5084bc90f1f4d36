"""One scenario, five ways of handling its context window, each run for real.

Every arm runs the bundled Claude Code CLI against its own loopback model server and
workspace, so nothing is shared between arms but the scenario. What an arm cost and
whether it stayed on track is read from the server's request log (what the model was
sent, how it was billed, which steps were redone), never from what the client thinks.

- ``raw``: nothing managed, the 1M-token window (``context-1m`` beta): the reference;
- ``unmanaged``: the 200,000 window, the CLI's compaction off, nothing else;
- ``compaction``: the CLI's own compaction (``CLAUDE_CODE_AUTO_COMPACT_WINDOW``, swept by
  the caller for its best setting);
- ``server-compaction``: the API's server-side compaction (``compact_20260112``, its
  trigger swept by the caller for its best setting), applied by the model server; the
  CLI's compaction off;
- ``clearing``: the API's server-side tool-result clearing (``clear_tool_uses_20250919``
  with its documented defaults), applied by the model server to every request it gets;
  the CLI's compaction off, its transcript whole;
- ``managed``: mala-tui's supervisor managing the session (settings given by the caller).

Re-reads (a tool call made only because a fact the next step needs is no longer visible)
are counted by the model server, so every arm is judged by the same rule.
"""

from __future__ import annotations

import asyncio
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mala_tui.bench.cli_client import cli_ending, cli_options, converse
from mala_tui.bench.loopback_session import for_scenario, loopback_spec, loopback_supervisor
from mala_tui.bench.operator import ScriptedOperator, SimulatedClock
from mala_tui.config import Settings
from mala_tui.config_loading import LoadedSettings
from mala_tui.core import events as ev
from mala_tui.core.events import RunMode
from mala_tui.loopback import (
    ClearToolUses,
    LoopbackServer,
    RequestRecord,
    Scenario,
    ServerCompaction,
    materialize_workspace,
    summarize,
)
from mala_tui.loopback.compaction import DEFAULT_TRIGGER_INPUT_TOKENS
from mala_tui.runtime.journal.writer import RunJournal, new_run_id

REQUEST_LOG = "loopback-requests.jsonl"
"""The model server's request log, in each arm's folder."""
ARMS = ("raw", "unmanaged", "compaction", "server-compaction", "clearing", "managed")
CLI_ARMS = ("raw", "unmanaged", "compaction", "server-compaction", "clearing")
#: The arms that summarise the conversation: mala-tui is judged against each at its best.
SUMMARISING = ("compaction", "server-compaction")
WINDOW = 200_000
COMPACT_WINDOW = 200_000
# An arm that has not ended after this long is stopped and counted as not finished: a
# benchmark that hangs on one arm reports nothing at all.
ARM_TIMEOUT_S = 1_200.0


@dataclass(frozen=True)
class ArmResult:
    """What one arm did, from the model's side."""

    arm: str
    finished: bool
    ending: str
    """How the agent's run ended, in a few words."""
    redone_steps: int
    rereads: int
    """Tool calls made only to see again a fact the next step needs."""
    reread_tokens: int
    """Tokens those re-reads brought back into the context."""
    peak_prompt_tokens: int
    window: int
    requests: int
    prompt_tokens: int
    """Sum over requests of the whole prompt: what a provider without caching bills."""
    cost_units: float
    """Cache-adjusted cost in input-token units (reads 0.1x, writes 1.25x, output 5x)."""
    masks: int
    masked_results: int
    free_masks: int
    """Masks applied when the prompt cache had gone cold during a wait (managed arm)."""
    restarts: int
    compactions: int
    cleared_results: int
    """Tool results the server's clearing replaced, summed over requests."""
    wall_s: float
    trace: tuple[tuple[float, int], ...] = ()
    """(seconds since the first request, prompt tokens) of each answered request."""
    settings: Mapping[str, Any] = field(default_factory=dict)
    compact_window: int | None = None
    """The compaction arm's ``CLAUDE_CODE_AUTO_COMPACT_WINDOW``."""
    compact_trigger: int | None = None
    """The server-side compaction arm's trigger, in input tokens."""
    waited_s: float = 0.0
    """Simulated seconds the scripted operator kept the agent waiting."""
    computed: bool = False
    """Raw past its window: the figures are computed from the prompts it would send
    (raw_projection), not measured; `peak_prompt_tokens` is the computed peak."""

    @property
    def setting(self) -> int | None:
        """What a swept arm was run at: its compaction window or trigger."""
        return self.compact_window if self.compact_window is not None else self.compact_trigger

    def to_json(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data["trace"] = [list(point) for point in self.trace]
        data["settings"] = dict(self.settings)
        return data


def _trace(records: list[RequestRecord]) -> tuple[tuple[float, int], ...]:
    """Each model request's prompt; a server-side compaction's summarising step is a
    request of its own, before the answer it came with."""
    answered = [r for r in records if r.status == 200 and r.response_kind != "error"]
    if not answered:
        return ()
    start = answered[0].time
    points: list[tuple[float, int]] = []
    for r in answered:
        if r.compacted:
            points.append((round(r.time - start, 3), r.compaction_prompt_tokens))
        points.append((round(r.time - start, 3), r.prompt_tokens))
    return tuple(points)


def _result(
    arm: str,
    server: LoopbackServer,
    *,
    finished: bool,
    ending: str,
    wall_s: float,
    window: int,
    masks: int = 0,
    masked_results: int = 0,
    free_masks: int = 0,
    restarts: int = 0,
    settings: Mapping[str, Any] | None = None,
    compact_window: int | None = None,
    compact_trigger: int | None = None,
    waited_s: float = 0.0,
) -> ArmResult:
    records = server.request_log
    totals = summarize(records)
    return ArmResult(
        arm=arm,
        finished=finished,
        ending=ending,
        redone_steps=totals.redone_steps,
        rereads=totals.rereads,
        reread_tokens=totals.reread_tokens,
        peak_prompt_tokens=totals.peak_prompt_tokens,
        window=window,
        requests=totals.requests,
        prompt_tokens=totals.prompt_tokens,
        cost_units=totals.cost_units,
        masks=masks,
        masked_results=masked_results,
        free_masks=free_masks,
        restarts=restarts,
        compactions=sum(
            1 for r in records if r.response_kind == "compaction_summary" or r.compacted
        ),
        cleared_results=sum(r.cleared_results for r in records),
        wall_s=round(wall_s, 1),
        trace=_trace(records),
        settings=settings or {},
        compact_window=compact_window,
        compact_trigger=compact_trigger,
        waited_s=round(waited_s, 1),
    )


def _finished_on_model_side(server: LoopbackServer) -> bool:
    """The scripted agent gave its final answer: every step was visible as done."""
    return any(r.response_kind == "final" for r in server.request_log)


def _workspace(folder: Path, scenario: Scenario) -> Path:
    """The arm's own copy of the scenario's workspace, in ``folder``."""
    workspace = folder / "workspace"
    workspace.mkdir(parents=True)
    materialize_workspace(scenario, workspace)
    return workspace


def _arm_server(
    scenario: Scenario,
    workspace: Path,
    clock: SimulatedClock,
    token_ratio: float | None,
    *,
    clear_tool_uses: ClearToolUses | None = None,
    server_compaction: ServerCompaction | None = None,
) -> LoopbackServer:
    """The arm's own model server, answering at once on the simulated clock (the scripted
    operator's waits are in its time), with the API's clearing or server-side compaction
    for the arms that use them."""
    return LoopbackServer(
        scenario,
        workspace=workspace,
        response_delay_s=0.0,
        token_ratio=token_ratio,
        clear_tool_uses=clear_tool_uses,
        server_compaction=server_compaction,
        time_scale=1.0,
        clock=clock.monotonic,
    )


async def run_cli_arm(
    arm: str,
    scenario: Scenario,
    folder: Path,
    *,
    compact_window: int = COMPACT_WINDOW,
    compact_trigger: int = DEFAULT_TRIGGER_INPUT_TOKENS,
    token_ratio: float | None = None,
    timeout_s: float = ARM_TIMEOUT_S,
) -> ArmResult:
    """``raw``, ``unmanaged``, ``compaction``, ``server-compaction`` or ``clearing``: the
    CLI alone, as people run it today (``compact_window`` is the compaction arm's setting,
    ``compact_trigger`` the server-side compaction's)."""
    from claude_agent_sdk import CanUseToolShadowedWarning, ClaudeSDKClient, ResultMessage

    if arm not in CLI_ARMS:
        raise ValueError(f"not a CLI-only arm: {arm!r}")
    workspace = _workspace(folder, scenario)
    clock = SimulatedClock()
    server = _arm_server(
        scenario,
        workspace,
        clock,
        token_ratio,
        clear_tool_uses=ClearToolUses() if arm == "clearing" else None,
        server_compaction=(
            ServerCompaction(compact_trigger) if arm == "server-compaction" else None
        ),
    )
    async with server:
        operator = ScriptedOperator(scenario, clock)
        auto_compact_window = compact_window if arm == "compaction" else None
        options = cli_options(
            scenario,
            workspace,
            server.base_url,
            folder,
            operator,
            auto_compact_window=auto_compact_window,
            one_million_window=arm == "raw",
        )
        started = time.monotonic()
        result: ResultMessage | None = None
        timed_out = False
        client = ClaudeSDKClient(options)
        with warnings.catch_warnings():
            # The allowed tools never reach the callback: only those outside them should.
            warnings.simplefilter("ignore", CanUseToolShadowedWarning)
            await client.connect()
        try:
            async with asyncio.timeout(timeout_s):
                result = await converse(client, scenario.task, operator, server)
        except TimeoutError:
            timed_out = True
        finally:
            await operator.close()
            await client.disconnect()
        wall = time.monotonic() - started
        server.write_log(folder / REQUEST_LOG)
    ending = cli_ending(result, timeout_s if timed_out else None)
    if timed_out:
        result = None
    finished = result is not None and not result.is_error and _finished_on_model_side(server)
    return _result(
        arm,
        server,
        finished=finished,
        ending=ending,
        wall_s=wall,
        window=1_000_000 if arm == "raw" else WINDOW,
        compact_window=compact_window if arm == "compaction" else None,
        compact_trigger=compact_trigger if arm == "server-compaction" else None,
        waited_s=sum(seconds for _, seconds in operator.waited),
    )


async def run_managed_arm(
    scenario: Scenario,
    folder: Path,
    settings: Settings,
    *,
    label: str = "managed",
    token_ratio: float | None = None,
    timeout_s: float = ARM_TIMEOUT_S,
) -> ArmResult:
    """mala-tui's supervisor managing one session of the scenario, journaled in ``folder``.

    The scenario's waits are played by a person at mala-tui's console (bench.operator),
    on the simulated clock the model server and the supervisor share; mala-tui judges
    its prompt cache by the server's lifetime (`context.cache_ttl_seconds`), and the agent
    asks about the tools the scenario leaves out of its allowed ones, as in the other arms.
    """
    workspace = _workspace(folder, scenario)
    journal = RunJournal.create(
        folder / "data", new_run_id(), {"mode": "bench", "arm": label, "scenario": scenario.name}
    )
    clock = SimulatedClock()
    server = _arm_server(scenario, workspace, clock, token_ratio)
    settings = for_scenario(settings, scenario, server)
    async with server:
        operator = ScriptedOperator(scenario, clock)
        supervisor = loopback_supervisor(settings, journal, RunMode.BENCH, clock=clock.wall)
        supervisor.add_session(
            loopback_spec(
                scenario.name,
                scenario,
                workspace,
                server.base_url,
                folder / "home",
                settings=settings,
            )
        )
        events: list[ev.Event] = []
        supervisor.listeners.events.append(events.append)
        supervisor.listeners.events.append(operator.answer_at_the_desk(supervisor))
        started = time.monotonic()
        timed_out = False
        try:
            async with asyncio.timeout(timeout_s):
                if operator.pauses:
                    operator.pause_session(server, supervisor, scenario.name)
                outcome = await supervisor.run()
        except TimeoutError:
            # Cancelling the run stops every session first; what they reached is kept.
            timed_out, outcome = True, supervisor.result()
        finally:
            await operator.close()
            journal.close()
        wall = time.monotonic() - started
        server.write_log(folder / REQUEST_LOG)
    status = outcome.statuses[scenario.name]
    reason = outcome.reasons.get(scenario.name, "")
    if timed_out:
        reason = f"timed out after {timeout_s:g} s"
    masks = [e for e in events if isinstance(e, ev.MaskApplied)]
    return _result(
        label,
        server,
        finished=not timed_out and outcome.ok and _finished_on_model_side(server),
        ending=f"{status.value}: {reason}" if reason else status.value,
        wall_s=wall,
        window=WINDOW,
        masks=len(masks),
        masked_results=sum(m.count for m in masks),
        free_masks=sum(1 for m in masks if m.free),
        waited_s=sum(seconds for _, seconds in operator.waited),
        restarts=sum(1 for e in events if isinstance(e, ev.Restarted)),
        settings=settings.context.model_dump(mode="json"),
    )


def settings_with(**context: Any) -> LoadedSettings:
    """Defaults, with these [context] values: reproducible whatever the user's config says."""
    settings = Settings()
    if context:
        updated = settings.context.model_copy(update=context)
        type(updated).model_validate(updated.model_dump())  # same checks as a config file
        settings = settings.model_copy(update={"context": updated})
    sources = {f"context.{key}": "benchmark" for key in context}
    return LoadedSettings(settings, sources, Path(), False)
