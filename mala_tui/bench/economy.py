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
``--densities`` (1x and 2x). Prints markdown tables, writes ``results.json`` (every figure
and each arm's context trace) and a context-over-time chart per scenario and density. The
exit status is 1 when any target below is missed in any scenario at any density; a subset
of arms is gated on the targets its arms can decide.
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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mala_tui.bench.arms import (
    ARMS,
    REQUEST_LOG,
    SUMMARISING,
    WINDOW,
    ArmResult,
    run_cli_arm,
    run_managed_arm,
    settings_with,
)
from mala_tui.bench.chart import Level, Series, context_chart
from mala_tui.bench.raw_projection import project_raw, step_increments
from mala_tui.config import Settings
from mala_tui.loopback import Scenario, ScenarioError, load_scenario, read_jsonl
from mala_tui.loopback.tokens import check_token_ratio

#: The scenario set: nothing needed again; later edits need early files; a conclusion that
#: needs details from the first reads; one file consulted at almost every step; long
#: operator waits.
SCENARIO_SET = ("economy-long", "code-change", "log-investigation", "reference-heavy", "waits")
#: ``CLAUDE_CODE_AUTO_COMPACT_WINDOW`` values tried for the CLI's compaction (it compacts
#: at about the window minus 33,000 tokens); the cheapest that finishes is its best.
COMPACT_WINDOWS = (80_000, 120_000, 160_000, 200_000)
#: Triggers tried for the API's server-side compaction: its documented default (150,000)
#: and below; above it the CLI itself refuses to send (past about 177,000 of 200,000).
COMPACT_TRIGGERS = (100_000, 120_000, 150_000)
#: Token densities the set is judged at: the scenarios' own and twice as dense.
DENSITIES = (1.0, 2.0)

#: Values tried for each knob, the others held at their defaults.
KNOBS: dict[str, tuple[float | int, ...]] = {
    "soft_threshold": (0.3, 0.4, 0.5, 0.6, 0.7),
    "keep_recent_observations": (1, 2, 3, 4, 6),
    "mask_min_batch_tokens": (8_000, 20_000, 30_000, 50_000),
    "mask_target_threshold": (0.0, 0.2, 0.3),
}

COLOURS = {
    "raw": "#888888",
    "unmanaged": "#d62728",
    "compaction": "#1f77b4",
    "server-compaction": "#9467bd",
    "clearing": "#ff7f0e",
    "managed": "#2ca02c",
}
LABELS = {
    "raw": "raw (1M window)",
    "unmanaged": "unmanaged (200K)",
    "compaction": "CLI compaction (200K)",
    "server-compaction": "API server-side compaction (200K)",
    "clearing": "API tool-result clearing (200K)",
    "managed": "mala-tui (200K)",
}
#: The summarising peers as the targets name them.
PEER_NAMES = {"compaction": "the CLI's compaction", "server-compaction": "server-side compaction"}
#: What each swept arm's setting is called.
SETTING_NAMES = {
    "compaction": "CLAUDE_CODE_AUTO_COMPACT_WINDOW",
    "server-compaction": "compact_20260112 trigger (input tokens)",
}

CHART_LABELS = {
    **LABELS,
    "clearing": "API clearing (200K)",
    "server-compaction": "API compaction (200K)",
}


@dataclass(frozen=True)
class TargetCheck:
    name: str
    met: bool
    detail: str


@dataclass
class ScenarioRun:
    """One scenario's arms at one density (the swept ones at their best) and its sweeps."""

    scenario: Scenario
    arms: dict[str, ArmResult]
    sweeps: dict[str, list[ArmResult]] = field(default_factory=dict)
    """Each swept arm (the two compactions) at each of its settings."""
    knob_sweep: list[tuple[str, float | int, ArmResult]] = field(default_factory=list)
    targets: list[TargetCheck] = field(default_factory=list)
    token_ratio: float | None = None


def best_compaction(runs: Sequence[ArmResult]) -> ArmResult:
    """A compaction at its best: the cheapest run that finishes (else the cheapest)."""
    finished = [run for run in runs if run.finished]
    return min(finished or runs, key=lambda run: run.cost_units)


def check_targets(arms: dict[str, ArmResult], settings: Settings) -> list[TargetCheck]:
    """Issue 11's targets for the mala-tui arm, and the scenario's own point, each judged
    only when the arms it needs were run."""
    targets: list[TargetCheck] = []
    raw, unmanaged, managed = arms.get("raw"), arms.get("unmanaged"), arms.get("managed")
    summarising = {name: arms[name] for name in SUMMARISING if name in arms}
    if raw is not None:
        targets.append(
            TargetCheck(
                "scenario: raw (1M) finishes, or is computed past its window",
                raw.finished or raw.computed,
                raw.ending,
            )
        )
    if unmanaged is not None:
        targets.append(
            TargetCheck(
                "scenario: an unmanaged 200K window does not finish",
                not unmanaged.finished,
                f"{unmanaged.ending}; peak {unmanaged.peak_prompt_tokens:,}",
            )
        )
    if managed is None:
        return targets
    hard = int(settings.context.hard_threshold * WINDOW)
    targets += [
        TargetCheck("finishes", managed.finished, managed.ending),
        TargetCheck(
            "peak under the hard threshold",
            managed.peak_prompt_tokens < hard,
            f"peak {managed.peak_prompt_tokens:,} of {hard:,}",
        ),
    ]
    if summarising:
        fewest = min(summarising, key=lambda name: summarising[name].rereads)
        targets.append(
            TargetCheck(
                "re-reads no more than the best summarising peer's",
                managed.rereads <= summarising[fewest].rereads,
                f"{managed.rereads} against {summarising[fewest].rereads} ({PEER_NAMES[fewest]})",
            )
        )
    if raw is not None:
        ratio = managed.prompt_tokens / raw.prompt_tokens
        targets.append(
            TargetCheck("total prompt tokens <= 0.5x raw", ratio <= 0.5, f"{ratio:.2f}x")
        )
    peers = {
        name: arm
        for name, arm in arms.items()
        if name != "managed" and (arm.finished or arm.computed)
    }
    if peers:
        cheapest = min(arm.cost_units for arm in peers.values())
        detail = ", ".join(
            f"{managed.cost_units / arm.cost_units:.2f}x {name}" for name, arm in peers.items()
        )
        targets.append(
            TargetCheck(
                "cache-adjusted cost below every peer's that finishes",
                managed.cost_units < cheapest,
                detail,
            )
        )
    for name, peer in summarising.items():
        ratio = managed.cost_units / peer.cost_units
        setting = f" ({_setting_label(peer)})" if peer.setting is not None else ""
        targets.append(
            TargetCheck(
                f"cache-adjusted cost <= 0.8x {PEER_NAMES[name]} at its best",
                ratio <= 0.8,
                f"{ratio:.2f}x{setting}",
            )
        )
    return targets


def _setting_label(arm: ArmResult) -> str:
    if arm.compact_window is not None:
        return f"window {arm.compact_window:,}"
    return f"trigger {arm.compact_trigger:,}"


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
    return ScenarioRun(scenario, arms, sweeps, token_ratio=token_ratio)


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


def arms_table(arms: dict[str, ArmResult]) -> str:
    raw = arms.get("raw")
    rows = [
        "| arm | finished | re-reads (tokens) | steps redone | peak context | requests "
        "| total prompt tokens | cache-adjusted cost | masks (results) | restarts "
        "| compactions | results cleared | wall time |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| ---: |",
    ]
    for name, arm in arms.items():
        ratio = f" ({arm.prompt_tokens / raw.prompt_tokens:.2f}x raw)" if raw else ""
        cost_ratio = f" ({arm.cost_units / raw.cost_units:.2f}x raw)" if raw else ""
        finished = "yes" if arm.finished else f"no: {arm.ending}"
        label = LABELS.get(name, name)
        if arm.computed:
            finished, label = f"computed: {arm.ending}", f"{label}, computed"
        if arm.compact_window is not None:
            label += f", best window {arm.compact_window:,}"
        if arm.compact_trigger is not None:
            label += f", best trigger {arm.compact_trigger:,}"
        rows.append(
            f"| {label} | {finished} | {arm.rereads} ({arm.reread_tokens:,}) "
            f"| {arm.redone_steps} | {arm.peak_prompt_tokens:,} of {arm.window:,} "
            f"| {arm.requests} | {arm.prompt_tokens:,}{ratio} "
            f"| {arm.cost_units:,.0f}{cost_ratio} | {arm.masks} ({arm.masked_results})"
            f"{f', {arm.free_masks} free' if arm.free_masks else ''} "
            f"| {arm.restarts} | {arm.compactions} | {arm.cleared_results:,} "
            f"| {arm.wall_s:.1f} s |"
        )
    return "\n".join(rows)


def compaction_table(sweep: Sequence[ArmResult], best: ArmResult, name: str = "compaction") -> str:
    rows = [
        f"| {SETTING_NAMES[name]} | finished | re-reads | steps redone "
        "| peak context | compactions | total prompt tokens | cache-adjusted cost |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for arm in sweep:
        window = f"{arm.setting or 0:,}"
        if arm is best:
            window = f"**{window}**"
        rows.append(
            f"| {window} | {'yes' if arm.finished else 'no: ' + arm.ending} | {arm.rereads} "
            f"| {arm.redone_steps} | {arm.peak_prompt_tokens:,} | {arm.compactions} "
            f"| {arm.prompt_tokens:,} | {arm.cost_units:,.0f} |"
        )
    return "\n".join(rows)


def sweep_table(
    sweep: list[tuple[str, float | int, ArmResult]], raw: ArmResult, compaction: ArmResult
) -> str:
    """mala-tui's knobs one at a time, against raw and the CLI's compaction at its best."""
    rows = [
        "| knob | value | finished | re-reads | peak context | masks | total prompt tokens "
        "| vs raw | cache-adjusted cost | vs CLI compaction |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for knob, value, arm in sweep:
        rows.append(
            f"| {knob} | {value} | {'yes' if arm.finished else 'no'} | {arm.rereads} "
            f"| {arm.peak_prompt_tokens:,} | {arm.masks} | {arm.prompt_tokens:,} "
            f"| {arm.prompt_tokens / raw.prompt_tokens:.2f}x | {arm.cost_units:,.0f} "
            f"| {arm.cost_units / compaction.cost_units:.2f}x |"
        )
    return "\n".join(rows)


def targets_table(targets: Sequence[TargetCheck]) -> str:
    rows = ["| target | met | measured |", "| --- | --- | --- |"]
    rows += [f"| {t.name} | {'yes' if t.met else 'NO'} | {t.detail} |" for t in targets]
    return "\n".join(rows)


def chart(run: ScenarioRun, settings: Settings) -> str:
    series = []
    for name, arm in run.arms.items():
        points = [(index + 1, tokens) for index, (_, tokens) in enumerate(arm.trace)]
        note = f"peak {arm.peak_prompt_tokens // 1000}K"
        if arm.computed:
            note += ", computed past 1M"
        elif not arm.finished:
            note += ", did not finish"
        if arm.rereads:
            note += f", {arm.rereads} re-reads"
        # Short: the legend has about 26 characters of room.
        label = CHART_LABELS.get(name, name)
        if arm.compact_window is not None:
            label = f"CLI compaction, {arm.compact_window // 1000}K"
        if arm.compact_trigger is not None:
            label = f"API compaction, {arm.compact_trigger // 1000}K"
        series.append(Series(label, COLOURS.get(name, "#000000"), points, note))
    context = settings.context
    levels = [
        Level("200K window", WINDOW, dashed=False),
        Level(f"hard {context.hard_threshold:g}", int(context.hard_threshold * WINDOW)),
        Level(f"soft {context.soft_threshold:g}", int(context.soft_threshold * WINDOW)),
    ]
    scenario = run.scenario
    density = f", {run.token_ratio:g}x density" if run.token_ratio not in (None, 1.0) else ""
    return context_chart(
        series,
        levels,
        y_max=250_000,
        title=f"Context per model request: {scenario.name} ({len(scenario.plan())} steps{density})",
    )


def machine() -> str:
    cpus = os.cpu_count() or 0
    return f"{platform.machine()}, {cpus} cores, Python {platform.python_version()}"


@dataclass(frozen=True)
class Options:
    scenarios: list[Scenario]
    arms: list[str]
    compact_windows: list[int]
    token_ratios: list[float]
    settings: Settings
    compact_triggers: list[int] = field(default_factory=lambda: list(COMPACT_TRIGGERS))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m mala_tui.bench economy")
    parser.add_argument(
        "--scenario",
        action="append",
        metavar="NAME_OR_FILE",
        help=f"a scenario to run (repeatable; default: the set, {', '.join(SCENARIO_SET)})",
    )
    parser.add_argument("--arms", default=",".join(ARMS), help="comma-separated arms to run")
    parser.add_argument(
        "--compact-windows",
        default=",".join(str(w) for w in COMPACT_WINDOWS),
        metavar="N,N,...",
        help="CLAUDE_CODE_AUTO_COMPACT_WINDOW values for the compaction arm (best is kept)",
    )
    parser.add_argument(
        "--compact-triggers",
        default=",".join(str(t) for t in COMPACT_TRIGGERS),
        metavar="N,N,...",
        help="input-token triggers for the server-side compaction arm (best is kept)",
    )
    parser.add_argument(
        "--densities",
        default=",".join(f"{d:g}" for d in DENSITIES),
        metavar="X,X,...",
        help="token densities to run the set at, every arm's model alike (default 1,2)",
    )
    parser.add_argument(
        "--token-ratio",
        type=float,
        metavar="X",
        help="one token density only (instead of --densities)",
    )
    parser.add_argument("--sweep", action="store_true", help="also sweep mala-tui's knobs")
    parser.add_argument("--jobs", type=int, default=1, help="sweep runs at once (default 1)")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a [context] setting for the managed arm, e.g. --set soft_threshold=0.5",
    )
    parser.add_argument("--out", type=Path, default=Path("economy-results"))
    parser.add_argument(
        "--chart-dir",
        type=Path,
        help="also write each scenario's chart here as <scenario>-context.svg",
    )
    parser.add_argument("--keep-workspaces", action="store_true")
    return parser


def _options(args: argparse.Namespace, error: Callable[[str], Any]) -> Options:
    names = [name.strip() for name in args.arms.split(",") if name.strip()]
    unknown = sorted(set(names) - set(ARMS))
    if unknown or not names:
        error(f"unknown arm {unknown[0]!r}; arms: {', '.join(ARMS)}" if unknown else "no arms")
    try:
        windows = [int(text) for text in args.compact_windows.split(",") if text.strip()]
    except ValueError:
        error(f"--compact-windows wants whole numbers, got {args.compact_windows!r}")
    if not windows or any(not 50_000 <= window <= 1_000_000 for window in windows):
        error("--compact-windows: each value must be from 50,000 to 1,000,000 tokens")
    try:
        triggers = [int(text) for text in args.compact_triggers.split(",") if text.strip()]
    except ValueError:
        error(f"--compact-triggers wants whole numbers, got {args.compact_triggers!r}")
    if not triggers or any(not 50_000 <= trigger < WINDOW for trigger in triggers):
        error("--compact-triggers: each value must be from 50,000 (the API's least) to 199,999")
    if args.jobs < 1:
        error(f"--jobs must be at least 1, got {args.jobs}")
    ratios: list[float] = []
    try:
        if args.token_ratio is not None:
            ratios = [check_token_ratio(args.token_ratio)]
        else:
            ratios = [check_token_ratio(float(x)) for x in args.densities.split(",") if x.strip()]
    except ValueError as exc:
        which = "--token-ratio" if args.token_ratio is not None else "--densities"
        error(f"{which}: {exc}")
    if not ratios:
        error("--densities: no density given")
    scenarios = []
    for name in args.scenario or SCENARIO_SET:
        try:
            scenarios.append(load_scenario(name))
        except ScenarioError as exc:
            error(str(exc))
    overrides = dict(_parse_setting(text, error) for text in args.set)
    try:
        settings = settings_with(**overrides).settings
    except ValueError as exc:
        error(f"--set: {exc}")
    # Arms run in the canonical order, whatever order they were asked in.
    ordered = [name for name in ARMS if name in names]
    return Options(scenarios, ordered, windows, ratios, settings, triggers)


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    options = _options(args, parser.error)
    settings = options.settings
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)

    started = time.monotonic()
    runs: list[ScenarioRun] = []
    for ratio in options.token_ratios:
        for scenario in options.scenarios:
            steps = len(scenario.plan())
            print(
                f"scenario {scenario.name} at {ratio:g}x, {steps} steps; {machine()}",
                file=sys.stderr,
            )
            folder = args.out / density_name(ratio) / scenario.name
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
                    run_sweep(
                        scenario, folder / "sweep", settings, KNOBS, args.jobs, token_ratio=ratio
                    )
                )
            run.targets = check_targets(run.arms, settings)
            runs.append(run)
            chart_text = chart(run, settings)
            (folder / "context-over-time.svg").write_text(chart_text, encoding="utf-8")
            if args.chart_dir is not None:
                args.chart_dir.mkdir(parents=True, exist_ok=True)
                suffix = "" if ratio == 1.0 else f"-{density_name(ratio)}"
                target = args.chart_dir / f"{scenario.name}-context{suffix}.svg"
                target.write_text(chart_text, encoding="utf-8")
    if not args.keep_workspaces:
        for folder in args.out.rglob("workspace"):
            shutil.rmtree(folder, ignore_errors=True)

    print(f"# Economy, {machine()}")
    for run in runs:
        print_run(run)
    missed = [(run, t) for run in runs for t in run.targets if not t.met]
    print("\n## Targets, every scenario\n")
    print("| scenario | density | target | met | measured |\n| --- | ---: | --- | --- | --- |")
    for run in runs:
        for t in run.targets:
            print(
                f"| {run.scenario.name} | {run.token_ratio or 1:g}x | {t.name} "
                f"| {'yes' if t.met else 'NO'} | {t.detail} |"
            )
    results = {
        "machine": machine(),
        "settings": settings.context.model_dump(mode="json"),
        "densities": {
            density_name(ratio): {
                run.scenario.name: _run_json(run) for run in runs if run.token_ratio == ratio
            }
            for ratio in options.token_ratios
        },
        "missed": [
            {"scenario": run.scenario.name, "token_ratio": run.token_ratio, **vars(t)}
            for run, t in missed
        ],
    }
    (args.out / "results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    print(
        f"\nfigures: {args.out / 'results.json'}; charts: {args.out}/*/*/context-over-time.svg; "
        f"{time.monotonic() - started:.0f} s in all; "
        f"{len(missed)} target(s) missed",
        file=sys.stderr,
    )
    return 1 if missed else 0


def density_name(ratio: float | None) -> str:
    """A density as folders and results.json name it: "1x", "2x", "1.5x"."""
    return f"{ratio or 1:g}x"


def print_run(run: ScenarioRun) -> None:
    scenario = run.scenario
    density = density_name(run.token_ratio)
    print(f"\n## {scenario.name} at {density} ({len(scenario.plan())} steps)\n")
    print(arms_table(run.arms))
    for name, sweep in run.sweeps.items():
        print(f"\n{LABELS[name]}, by setting (best in bold):\n")
        print(compaction_table(sweep, run.arms[name], name))
    if run.targets:
        print()
        print(targets_table(run.targets))
    if run.knob_sweep and {"raw", "compaction"} <= run.arms.keys():
        print("\n### Knobs, one at a time from the defaults\n")
        print(sweep_table(run.knob_sweep, run.arms["raw"], run.arms["compaction"]))


def _run_json(run: ScenarioRun) -> dict[str, Any]:
    return {
        "steps": len(run.scenario.plan()),
        "token_ratio": run.token_ratio,
        "arms": {name: arm.to_json() for name, arm in run.arms.items()},
        "sweeps": {name: [arm.to_json() for arm in sweep] for name, sweep in run.sweeps.items()},
        "targets": [vars(t) for t in run.targets],
        "sweep": [
            {"knob": knob, "value": value, **arm.to_json()} for knob, value, arm in run.knob_sweep
        ],
    }


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
