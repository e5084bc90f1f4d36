"""The economy benchmark's report: markdown tables, charts and results.json, per run."""

from __future__ import annotations

import os
import platform
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mala_tui.bench.arms import ARMS, WINDOW, ArmResult
from mala_tui.bench.chart import Level, Series, context_chart
from mala_tui.bench.economy_targets import TargetCheck
from mala_tui.bench.floor import Floor
from mala_tui.config import Settings
from mala_tui.loopback import Scenario

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
    floor: Floor | None = None
    """What any arm pays at least (floor.py), from raw's log; None without raw."""


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


def density_name(ratio: float | None) -> str:
    """A density as folders and results.json name it: "1x", "2x", "1.5x"."""
    return f"{ratio or 1:g}x"


def print_run(run: ScenarioRun) -> None:
    scenario = run.scenario
    density = density_name(run.token_ratio)
    print(f"\n## {scenario.name} at {density} ({len(scenario.plan())} steps)\n")
    print(arms_table(run.arms))
    if run.floor is not None:
        print(f"\n{floor_line(run.floor)}")
    for name, sweep in run.sweeps.items():
        print(f"\n{LABELS[name]}, by setting (best in bold):\n")
        print(compaction_table(sweep, run.arms[name], name))
    if run.targets:
        print()
        print(targets_table(run.targets))
    if run.knob_sweep and {"raw", "compaction"} <= run.arms.keys():
        print("\n### Knobs, one at a time from the defaults\n")
        print(sweep_table(run.knob_sweep, run.arms["raw"], run.arms["compaction"]))


def floor_line(floor: Floor) -> str:
    """The floor and its three parts, in words."""
    computed = ", computed past raw's window" if floor.computed else ""
    cold = (
        f" and written again after {floor.cold_requests} "
        f"wait{'s' if floor.cold_requests != 1 else ''} that outlasted the cache "
        f"({floor.head_rewrite_cost:,.0f})"
        if floor.cold_requests
        else ""
    )
    return (
        f"Floor{computed}: {floor.cost_units:,.0f} = every block once "
        f"({floor.written_tokens:,} tokens at {floor.write_price:g}: {floor.write_cost:,.0f}) "
        f"+ the tools and system prompt ({floor.head_tokens:,} tokens) read on "
        f"{floor.requests - 1 - floor.cold_requests:,} more requests "
        f"({floor.head_read_cost:,.0f}){cold} "
        f"+ the output ({floor.output_tokens:,} tokens: {floor.output_cost:,.0f})."
    )


def overhead_cell(arm: ArmResult, floor: Floor) -> str:
    """An arm's cost above the floor, in thousands, and its cost as a multiple of the floor;
    an arm that did not do the task has no overhead to speak of."""
    if not (arm.finished or arm.computed):
        return "did not finish"
    above = (arm.cost_units - floor.cost_units) / 1000
    return f"{above:+,.0f}K ({arm.cost_units / floor.cost_units:.2f}x)"


def floor_table(runs: Sequence[ScenarioRun]) -> str:
    """Every run's floor and each arm's overhead above it; the last column sets mala-tui's
    overhead against server-side compaction's (the gate at 2x asks for at most half)."""
    floored = [run for run in runs if run.floor is not None]
    names = [name for name in ARMS if any(name in run.arms for run in floored)]
    rows = [
        "| scenario | density | floor | "
        + " | ".join(f"{LABELS[name]} above it" for name in names)
        + " | mala-tui's overhead / server-side compaction's |",
        "| --- | ---: | ---: | " + " | ".join("---:" for _ in names) + " | ---: |",
    ]
    for run in floored:
        assert run.floor is not None
        floor = run.floor
        cells = [overhead_cell(run.arms[name], floor) if name in run.arms else "" for name in names]
        managed, server = run.arms.get("managed"), run.arms.get("server-compaction")
        ratio = ""
        if managed is not None and server is not None:
            server_above = server.cost_units - floor.cost_units
            if server_above > 0:
                ratio = f"{(managed.cost_units - floor.cost_units) / server_above:.2f}"
        computed = " computed" if floor.computed else ""
        rows.append(
            f"| {run.scenario.name} | {density_name(run.token_ratio)} "
            f"| {floor.cost_units / 1000:,.0f}K{computed} | " + " | ".join(cells) + f" | {ratio} |"
        )
    return "\n".join(rows)


def print_report(runs: Sequence[ScenarioRun]) -> None:
    """Every run's tables, then the floors and every target across the set."""
    print(f"# Economy, {machine()}")
    for run in runs:
        print_run(run)
    if any(run.floor is not None for run in runs):
        print("\n## The floor, and each arm's cost above it (cost units; x: of the floor)\n")
        print(floor_table(runs))
    print("\n## Targets, every scenario\n")
    print("| scenario | density | target | met | measured |\n| --- | ---: | --- | --- | --- |")
    for run in runs:
        for t in run.targets:
            print(
                f"| {run.scenario.name} | {run.token_ratio or 1:g}x | {t.name} "
                f"| {'yes' if t.met else 'NO'} | {t.detail} |"
            )


def results_json(
    runs: Sequence[ScenarioRun], settings: Settings, ratios: Sequence[float]
) -> dict[str, Any]:
    """What results.json holds: every figure of every run, and the targets missed."""
    return {
        "machine": machine(),
        "settings": settings.context.model_dump(mode="json"),
        "densities": {
            density_name(ratio): {
                run.scenario.name: _run_json(run) for run in runs if run.token_ratio == ratio
            }
            for ratio in ratios
        },
        "missed": [
            {"scenario": run.scenario.name, "token_ratio": run.token_ratio, **vars(t)}
            for run in runs
            for t in run.targets
            if not t.met
        ],
    }


def _run_json(run: ScenarioRun) -> dict[str, Any]:
    floor = run.floor
    return {
        "steps": len(run.scenario.plan()),
        "token_ratio": run.token_ratio,
        "floor": floor.to_json() if floor is not None else None,
        "above_floor": (
            {name: round(arm.cost_units - floor.cost_units, 1) for name, arm in run.arms.items()}
            if floor is not None
            else {}
        ),
        "arms": {name: arm.to_json() for name, arm in run.arms.items()},
        "sweeps": {name: [arm.to_json() for arm in sweep] for name, sweep in run.sweeps.items()},
        "targets": [vars(t) for t in run.targets],
        "sweep": [
            {"knob": knob, "value": value, **arm.to_json()} for knob, value, arm in run.knob_sweep
        ],
    }
