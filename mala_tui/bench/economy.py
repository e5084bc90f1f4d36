"""Token economy: a set of scenarios, six ways of handling the window, side by side.

    python -m mala_tui.bench economy --jobs 1         # the whole set, every arm, 1x and 2x
    python -m mala_tui.bench economy --scenario code-change --arms managed,clearing
    python -m mala_tui.bench economy --token-ratio 2  # one density only
    python -m mala_tui.bench economy --sweep          # and mala-tui's knobs, one at a time
    python -m mala_tui.bench economy --out docs/bench --chart-dir docs

Each arm is the real CLI against its own loopback model (see arms.py); figures come from
the model's request log. The CLI's compaction is run at each ``--compact-windows`` value,
the API's server-side compaction at each ``--compact-triggers`` value, and each is judged
at its best (the cheapest that finishes). Every scenario runs at each token density of
``--densities`` (1x and 2x). Prints markdown tables, the floor of each scenario and
density (floor.py, from raw's log) with every arm's cost above it, writes ``results.json``
(every figure and each arm's context trace) and a context-over-time chart per scenario
and density. The
exit status is 1 when any target below is missed in any scenario at any density; a subset
of arms is gated on the targets its arms can decide.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from mala_tui.bench.arms import (
    REQUEST_LOG,
    SUMMARISING,
    ArmResult,
    run_cli_arm,
    run_managed_arm,
    settings_with,
)
from mala_tui.bench.economy_options import COMPACT_TRIGGERS, KNOBS, Options, parse_options
from mala_tui.bench.economy_report import (
    ScenarioRun,
    chart,
    density_name,
    machine,
    print_report,
    results_json,
)
from mala_tui.bench.economy_targets import best_compaction, check_targets
from mala_tui.bench.floor import Floor, floor_of_projection, floor_of_raw
from mala_tui.bench.raw_projection import project_raw, step_increments
from mala_tui.config import Settings
from mala_tui.loopback import Scenario, read_jsonl


async def run_scenario(
    scenario: Scenario,
    names: Sequence[str],
    out: Path,
    settings: Settings,
    *,
    compact_windows: Sequence[int],
    compact_triggers: Sequence[int] = COMPACT_TRIGGERS,
    token_ratio: float | None,
) -> ScenarioRun:
    arms: dict[str, ArmResult] = {}
    sweeps: dict[str, list[ArmResult]] = {}
    for name in names:
        if name == "managed":
            arms[name] = await run_managed_arm(
                scenario, out / name, settings, token_ratio=token_ratio
            )
        elif name in SUMMARISING:
            sweep = sweeps[name] = []
            values = compact_windows if name == "compaction" else compact_triggers
            for value in values:
                setting = "compact_window" if name == "compaction" else "compact_trigger"
                result = await run_cli_arm(
                    name,
                    scenario,
                    out / f"{name}-{value}",
                    token_ratio=token_ratio,
                    **{setting: value},
                )
                _progress(scenario, f"{name} at {value:,}", result)
                sweep.append(result)
            arms[name] = best_compaction(sweep)
            continue
        else:
            arms[name] = await run_cli_arm(name, scenario, out / name, token_ratio=token_ratio)
            if name == "raw" and past_its_window(arms[name]):
                arms[name] = computed_raw(arms[name], scenario, out / name)
        _progress(scenario, name, arms[name])
    floor = floor_of(arms["raw"], scenario, out / "raw") if "raw" in arms else None
    return ScenarioRun(scenario, arms, sweeps, token_ratio=token_ratio, floor=floor)


def past_its_window(raw: ArmResult) -> bool:
    """Raw stopped because its prompt outgrew the 1M window (the reader at 2x density):
    the CLI's "Prompt is too long", not a fault of the run."""
    return not raw.finished and raw.ending.startswith("blocking_limit")


def computed_raw(raw: ArmResult, scenario: Scenario, folder: Path) -> ArmResult:
    """Raw's figures over the whole scenario, from what each step added while it ran
    (raw_projection): the reference the 0.5x-prompt and cost targets need."""
    projection = project_raw(scenario, step_increments(read_jsonl(folder / REQUEST_LOG)))
    return replace(
        raw,
        computed=True,
        ending=(
            f"past its window after {raw.requests} requests ({raw.ending}); "
            f"computed over {projection.requests}"
        ),
        requests=projection.requests,
        prompt_tokens=projection.prompt_tokens,
        cost_units=projection.cost_units,
        peak_prompt_tokens=projection.peak,
    )


def floor_of(raw: ArmResult, scenario: Scenario, folder: Path) -> Floor | None:
    """The scenario's floor at this density from raw's request log (floor.py): measured
    when raw finished, projected when it outgrew its window; None when raw did neither."""
    records = read_jsonl(folder / REQUEST_LOG)
    try:
        if raw.computed:
            return floor_of_projection(records, project_raw(scenario, step_increments(records)))
        return floor_of_raw(records) if raw.finished else None
    except ValueError:
        return None


def _progress(scenario: Scenario, name: str, result: ArmResult) -> None:
    print(f"  {scenario.name} / {name}: {result.ending} ({result.wall_s} s)", file=sys.stderr)


async def run_sweep(
    scenario: Scenario,
    out: Path,
    base: Settings,
    knobs: dict[str, tuple[float | int, ...]],
    jobs: int,
    *,
    token_ratio: float | None = None,
) -> list[tuple[str, float | int, ArmResult]]:
    """The managed arm once per knob value, every other setting at `base`."""
    gate = asyncio.Semaphore(jobs)
    default = base.context.model_dump()

    async def one(knob: str, value: float | int) -> tuple[str, float | int, ArmResult]:
        changes = {knob: value}
        if knob == "soft_threshold" and default["mask_target_threshold"] > value:
            changes["mask_target_threshold"] = value
        settings = settings_with(**{**_context_overrides(base), **changes}).settings
        async with gate:
            result = await run_managed_arm(
                scenario,
                out / f"{knob}={value}",
                settings,
                label=f"{knob}={value}",
                token_ratio=token_ratio,
            )
        _progress(scenario, f"{knob}={value}", result)
        return knob, value, result

    runs = [
        one(knob, value)
        for knob, values in knobs.items()
        for value in values
        if not (knob == "mask_target_threshold" and value > default["soft_threshold"])
    ]
    return list(await asyncio.gather(*runs))


def _context_overrides(settings: Settings) -> dict[str, Any]:
    defaults = Settings().context.model_dump()
    return {k: v for k, v in settings.context.model_dump().items() if defaults[k] != v}


def main(argv: list[str] | None = None) -> int:
    args, options = parse_options(argv)
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)

    started = time.monotonic()
    runs = [
        _run_one(scenario, ratio, options, args.out / density_name(ratio) / scenario.name, args)
        for ratio in options.token_ratios
        for scenario in options.scenarios
    ]
    if not args.keep_workspaces:
        for folder in args.out.rglob("workspace"):
            shutil.rmtree(folder, ignore_errors=True)

    print_report(runs)
    results = results_json(runs, options.settings, options.token_ratios)
    (args.out / "results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    missed = results["missed"]
    print(
        f"\nfigures: {args.out / 'results.json'}; charts: {args.out}/*/*/context-over-time.svg; "
        f"{time.monotonic() - started:.0f} s in all; "
        f"{len(missed)} target(s) missed",
        file=sys.stderr,
    )
    return 1 if missed else 0


def _run_one(
    scenario: Scenario, ratio: float, options: Options, folder: Path, args: Any
) -> ScenarioRun:
    """One scenario at one density: its arms, its knob sweep if asked, its targets, its chart."""
    settings = options.settings
    steps = len(scenario.plan())
    print(f"scenario {scenario.name} at {ratio:g}x, {steps} steps; {machine()}", file=sys.stderr)
    run = asyncio.run(
        run_scenario(
            scenario,
            options.arms,
            folder,
            settings,
            compact_windows=options.compact_windows,
            compact_triggers=options.compact_triggers,
            token_ratio=ratio,
        )
    )
    if args.sweep:
        run.knob_sweep = asyncio.run(
            run_sweep(scenario, folder / "sweep", settings, KNOBS, args.jobs, token_ratio=ratio)
        )
    run.targets = check_targets(
        run.arms,
        settings,
        token_ratio=ratio,
        floor_cost=run.floor.cost_units if run.floor is not None else None,
    )
    chart_text = chart(run, settings)
    (folder / "context-over-time.svg").write_text(chart_text, encoding="utf-8")
    if args.chart_dir is not None:
        args.chart_dir.mkdir(parents=True, exist_ok=True)
        suffix = "" if ratio == 1.0 else f"-{density_name(ratio)}"
        target = args.chart_dir / f"{scenario.name}-context{suffix}.svg"
        target.write_text(chart_text, encoding="utf-8")
    return run
