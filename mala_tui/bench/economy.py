"""Token economy: one long scenario, four ways of handling the window, side by side.

    python -m mala_tui.bench economy                 # the four arms, targets checked
    python -m mala_tui.bench economy --sweep         # and the masking knobs, one at a time
    python -m mala_tui.bench economy --out docs/bench --chart docs/economy-context.svg

Each arm is the real CLI against its own loopback model (see arms.py); figures come from
the model's request log. Prints markdown tables, writes ``results.json`` (every figure and
each arm's context trace) and the context-over-time chart. The exit status is 1 when the
managed arm misses one of the targets below, so the command doubles as a check.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mala_tui.bench.arms import ARMS, WINDOW, ArmResult, run_cli_arm, run_managed_arm, settings_with
from mala_tui.bench.chart import Level, Series, context_chart
from mala_tui.config import Settings
from mala_tui.loopback import Scenario, load_scenario

SCENARIO = "economy-long"

#: Values tried for each knob, the others held at their defaults.
KNOBS: dict[str, tuple[float | int, ...]] = {
    "soft_threshold": (0.3, 0.4, 0.5, 0.6, 0.7),
    "keep_recent_observations": (1, 2, 3, 4, 6),
    "mask_min_batch_tokens": (8_000, 20_000, 30_000, 50_000),
    "mask_target_threshold": (0.0, 0.2, 0.3),
}

COLOURS = {"raw": "#888888", "unmanaged": "#d62728", "compaction": "#1f77b4", "managed": "#2ca02c"}
LABELS = {
    "raw": "raw (1M window)",
    "unmanaged": "unmanaged (200K)",
    "compaction": "CLI compaction (200K)",
    "managed": "mala-tui (200K)",
}


@dataclass(frozen=True)
class Target:
    name: str
    met: bool
    detail: str


def check_targets(arms: dict[str, ArmResult], settings: Settings) -> list[Target]:
    """Issue 6's targets for the managed arm, against the other arms of the same run."""
    managed = arms["managed"]
    raw, compaction = arms["raw"], arms["compaction"]
    hard = int(settings.context.hard_threshold * WINDOW)
    prompt_ratio = managed.prompt_tokens / raw.prompt_tokens
    cost_vs_compaction = managed.cost_units / compaction.cost_units
    cost_vs_raw = managed.cost_units / raw.cost_units
    return [
        Target("finishes", managed.finished, managed.ending),
        Target("0 steps redone", managed.redone_steps == 0, f"{managed.redone_steps} redone"),
        Target(
            "peak never above the hard threshold",
            managed.peak_prompt_tokens <= hard,
            f"peak {managed.peak_prompt_tokens:,} of {hard:,}",
        ),
        Target(
            "total prompt tokens <= 0.5x raw",
            prompt_ratio <= 0.5,
            f"{prompt_ratio:.2f}x",
        ),
        Target(
            "cache-adjusted cost <= 0.8x the CLI's compaction",
            cost_vs_compaction <= 0.8,
            f"{cost_vs_compaction:.2f}x",
        ),
        Target("cache-adjusted cost below raw", cost_vs_raw < 1.0, f"{cost_vs_raw:.2f}x"),
    ]


async def run_arms(
    names: Sequence[str], scenario: Scenario, out: Path, settings: Settings
) -> dict[str, ArmResult]:
    results: dict[str, ArmResult] = {}
    for name in names:
        folder = out / name
        if name == "managed":
            results[name] = await run_managed_arm(scenario, folder, settings)
        else:
            results[name] = await run_cli_arm(name, scenario, folder)
        print(f"  {name}: {results[name].ending} ({results[name].wall_s} s)", file=sys.stderr)
    return results


async def run_sweep(
    scenario: Scenario,
    out: Path,
    base: Settings,
    knobs: dict[str, tuple[float | int, ...]],
    jobs: int,
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
                scenario, out / f"{knob}={value}", settings, label=f"{knob}={value}"
            )
        print(f"  {knob}={value}: {result.ending} ({result.wall_s} s)", file=sys.stderr)
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


def arms_table(arms: dict[str, ArmResult]) -> str:
    raw = arms.get("raw")
    rows = [
        "| arm | finished | steps redone | peak context | requests | total prompt tokens "
        "| cache-adjusted cost | masks (results) | restarts | compactions | wall time |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, arm in arms.items():
        ratio = f" ({arm.prompt_tokens / raw.prompt_tokens:.2f}x raw)" if raw else ""
        cost_ratio = f" ({arm.cost_units / raw.cost_units:.2f}x raw)" if raw else ""
        finished = "yes" if arm.finished else f"no: {arm.ending}"
        rows.append(
            f"| {LABELS.get(name, name)} | {finished} | {arm.redone_steps} "
            f"| {arm.peak_prompt_tokens:,} of {arm.window:,} | {arm.requests} "
            f"| {arm.prompt_tokens:,}{ratio} | {arm.cost_units:,.0f}{cost_ratio} "
            f"| {arm.masks} ({arm.masked_results}) | {arm.restarts} | {arm.compactions} "
            f"| {arm.wall_s:.1f} s |"
        )
    return "\n".join(rows)


def sweep_table(
    sweep: list[tuple[str, float | int, ArmResult]], raw: ArmResult, compaction: ArmResult
) -> str:
    rows = [
        "| knob | value | finished | redone | peak context | masks | total prompt tokens "
        "| vs raw | cache-adjusted cost | vs CLI compaction |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for knob, value, arm in sweep:
        rows.append(
            f"| {knob} | {value} | {'yes' if arm.finished else 'no'} | {arm.redone_steps} "
            f"| {arm.peak_prompt_tokens:,} | {arm.masks} | {arm.prompt_tokens:,} "
            f"| {arm.prompt_tokens / raw.prompt_tokens:.2f}x | {arm.cost_units:,.0f} "
            f"| {arm.cost_units / compaction.cost_units:.2f}x |"
        )
    return "\n".join(rows)


def chart(arms: dict[str, ArmResult], settings: Settings) -> str:
    series = []
    for name, arm in arms.items():
        points = [(index + 1, tokens) for index, (_, tokens) in enumerate(arm.trace)]
        note = f"peak {arm.peak_prompt_tokens // 1000}K"
        if not arm.finished:
            note += ", did not finish"
        series.append(Series(LABELS.get(name, name), COLOURS.get(name, "#000000"), points, note))
    context = settings.context
    levels = [
        Level("200K window", WINDOW, dashed=False),
        Level(f"hard {context.hard_threshold:g}", int(context.hard_threshold * WINDOW)),
        Level(f"soft {context.soft_threshold:g}", int(context.soft_threshold * WINDOW)),
    ]
    return context_chart(
        series,
        levels,
        y_max=250_000,
        title="Context per model request: economy-long (121 steps, ~850K tokens of output)",
    )


def machine() -> str:
    cpus = os.cpu_count() or 0
    return f"{platform.machine()}, {cpus} cores, Python {platform.python_version()}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mala_tui.bench economy")
    parser.add_argument("--scenario", default=SCENARIO, help="scenario name or file")
    parser.add_argument("--arms", default=",".join(ARMS), help="comma-separated arms to run")
    parser.add_argument("--sweep", action="store_true", help="also sweep the masking knobs")
    parser.add_argument("--jobs", type=int, default=1, help="sweep runs at once (default 1)")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a [context] setting for the managed arm, e.g. --set soft_threshold=0.5",
    )
    parser.add_argument("--out", type=Path, default=Path("economy-results"))
    parser.add_argument("--chart", type=Path, help="where to write the SVG (default: in --out)")
    parser.add_argument("--keep-workspaces", action="store_true")
    args = parser.parse_args(argv)

    names = [name.strip() for name in args.arms.split(",") if name.strip()]
    unknown = sorted(set(names) - set(ARMS))
    if unknown:
        parser.error(f"unknown arm {unknown[0]!r}; arms: {', '.join(ARMS)}")
    overrides = dict(_parse_setting(text, parser.error) for text in args.set)
    settings = settings_with(**overrides).settings
    scenario = load_scenario(args.scenario)
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)

    started = time.monotonic()
    print(f"scenario {scenario.name}, {len(scenario.plan())} steps; {machine()}", file=sys.stderr)
    arms = asyncio.run(run_arms(names, scenario, args.out, settings))
    sweep: list[tuple[str, float | int, ArmResult]] = []
    if args.sweep:
        sweep = asyncio.run(run_sweep(scenario, args.out / "sweep", settings, KNOBS, args.jobs))
    if not args.keep_workspaces:
        for folder in args.out.rglob("workspace"):
            shutil.rmtree(folder, ignore_errors=True)

    print(f"## Economy: {scenario.name} ({len(scenario.plan())} steps), {machine()}\n")
    print(arms_table(arms))
    targets: list[Target] = []
    if {"raw", "compaction", "managed"} <= arms.keys():
        targets = check_targets(arms, settings)
        print("\n| target (mala-tui arm) | met | measured |\n| --- | --- | --- |")
        for target in targets:
            print(f"| {target.name} | {'yes' if target.met else 'NO'} | {target.detail} |")
    if sweep and {"raw", "compaction"} <= arms.keys():
        print("\n### Knobs, one at a time from the defaults\n")
        print(sweep_table(sweep, arms["raw"], arms["compaction"]))
    chart_path = args.chart or args.out / "context-over-time.svg"
    chart_path.parent.mkdir(parents=True, exist_ok=True)
    chart_path.write_text(chart(arms, settings), encoding="utf-8")
    results = {
        "scenario": scenario.name,
        "machine": machine(),
        "settings": settings.context.model_dump(mode="json"),
        "arms": {name: arm.to_json() for name, arm in arms.items()},
        "targets": [vars(t) for t in targets],
        "sweep": [{"knob": knob, "value": value, **arm.to_json()} for knob, value, arm in sweep],
    }
    (args.out / "results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    print(
        f"\nchart: {chart_path}; figures: {args.out / 'results.json'}; "
        f"{time.monotonic() - started:.0f} s in all",
        file=sys.stderr,
    )
    return 0 if all(t.met for t in targets) else 1


def _parse_setting(text: str, error: Callable[[str], Any]) -> tuple[str, Any]:
    key, _, value = text.partition("=")
    if not value:
        error(f"--set wants KEY=VALUE, got {text!r}")
    number: Any
    try:
        number = int(value)
    except ValueError:
        try:
            number = float(value)
        except ValueError:
            number = value
    return key.strip(), number
