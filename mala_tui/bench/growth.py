"""How each way of handling the window costs as the work grows: the reader at 1x, 4x, 16x.

    python -m mala_tui.bench growth                      # economy-long at 1x, 4x and 16x
    python -m mala_tui.bench growth --lengths 1,4 --arms compaction,managed
    python -m mala_tui.bench growth --chart-dir docs     # and docs/growth.svg

The reader (`economy-long`, nothing needed again) is made 4 and 16 times as long: every
block of steps and of workspace files repeated that many times over, in the same order.
Each arm runs it for real, as in the economy benchmark (arms.py); the summarising peers
run at one setting each (`--compact-window`, `--compact-trigger`: their best on the
reader at 1x), not swept. The figure is the cache-adjusted cost per step: a manager whose
cost per step stays flat grows linearly with the work. Raw (nothing managed, the 1M
window) cannot run past its window at 4x and 16x, so its cost is computed from the
prompts it would send: each step adds to the prompt what it added in the 1x run (its
result, its call, the agent's words, measured per kind of step), and each request reads
the previous prompt from the cache and writes what is new. It grows with the square of
the length.

Gated (growth_gate.py): the exit status is 1 when mala-tui's cost per step grows more,
from the shortest length to the longest, than the best summarising peer's (the one of the
CLI's compaction and server-side compaction that grows less), or when an arm could not be
run. Without mala-tui or both peers (`--arms compaction,raw`), or at one length only, the
gate says it was not judged and does not fail the run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mala_tui.bench.arms import ArmResult, run_cli_arm, run_managed_arm, settings_with
from mala_tui.bench.chart import growth_chart
from mala_tui.bench.economy_report import COLOURS, LABELS, machine
from mala_tui.bench.growth_gate import GrowthGate, judge
from mala_tui.bench.raw_projection import Increments, project_raw, step_increments
from mala_tui.loopback import Scenario, load_scenario, read_jsonl
from mala_tui.loopback.tokens import check_token_ratio

READER = "economy-long"
LENGTHS = (1, 4, 16)
GROWTH_ARMS = ("raw", "compaction", "server-compaction", "clearing", "managed")
#: The summarising peers' settings: their best on the reader at 1x (docs/BENCHMARKS.md).
COMPACT_WINDOW = 160_000
COMPACT_TRIGGER = 100_000
# A 16x reader is about 2,000 steps: give each arm longer than the economy's bound.
GROWTH_TIMEOUT_S = 7_200.0


def lengthened(scenario: Scenario, factor: int) -> Scenario:
    """`scenario` with every generated block of steps and of files `factor` times longer,
    in place: block k of n items starting at s becomes factor x n items starting at
    (s - 1) x factor + 1, so consecutive blocks stay consecutive and every name unique."""
    if factor == 1:
        return scenario
    data = scenario.model_dump(mode="json", exclude_unset=True)

    def grow(entry: dict[str, Any]) -> dict[str, Any]:
        count, start = entry.get("count", 1), entry.get("start", 1)
        if count == 1 and "{i" not in json.dumps(entry):
            return entry
        return {**entry, "count": count * factor, "start": (start - 1) * factor + 1}

    data["name"] = f"{scenario.name}-x{factor}"
    data["steps"] = [grow(step) for step in data["steps"]]
    data["workspace"] = {"files": [grow(entry) for entry in data["workspace"]["files"]]}
    for key in ("task", "goal", "final_answer", "description"):
        if data.get(key):
            data[key] = f"{data[key]} ({factor} times as long)"
    return Scenario.model_validate(data)


@dataclass(frozen=True)
class Point:
    """One arm at one length."""

    arm: str
    length: int
    steps: int
    cost_units: float
    peak: int
    finished: bool
    ending: str
    computed: bool = False
    """Raw past its window: costed from the prompts it would send, not run."""

    @property
    def cost_per_step(self) -> float:
        return self.cost_units / max(1, self.steps)

    def to_json(self) -> dict[str, Any]:
        return {**vars(self), "cost_per_step": round(self.cost_per_step, 1)}


def raw_cost(scenario: Scenario, increments: Increments) -> Point:
    """Raw's cost for `scenario`, from the prompts it would send (raw_projection)."""
    projection = project_raw(scenario, increments)
    return Point(
        "raw",
        0,
        len(scenario.plan()),
        projection.cost_units,
        projection.peak,
        finished=projection.peak <= 1_000_000,
        ending="computed",
        computed=True,
    )


async def run_arm(
    arm: str, scenario: Scenario, folder: Path, token_ratio: float | None, args: Any
) -> ArmResult:
    if arm == "managed":
        return await run_managed_arm(
            scenario,
            folder,
            settings_with().settings,
            token_ratio=token_ratio,
            timeout_s=GROWTH_TIMEOUT_S,
        )
    return await run_cli_arm(
        arm,
        scenario,
        folder,
        compact_window=args.compact_window,
        compact_trigger=args.compact_trigger,
        token_ratio=token_ratio,
        timeout_s=GROWTH_TIMEOUT_S,
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m mala_tui.bench growth")
    parser.add_argument("--lengths", default=",".join(str(n) for n in LENGTHS), metavar="N,N")
    parser.add_argument("--arms", default=",".join(GROWTH_ARMS), metavar="ARM,ARM")
    parser.add_argument("--compact-window", type=int, default=COMPACT_WINDOW, metavar="N")
    parser.add_argument("--compact-trigger", type=int, default=COMPACT_TRIGGER, metavar="N")
    parser.add_argument("--token-ratio", type=float, metavar="X")
    parser.add_argument("--out", type=Path, default=Path("growth-results"))
    parser.add_argument("--chart-dir", type=Path, help="also write growth.svg here")
    parser.add_argument(
        "--peers-from",
        type=Path,
        metavar="RESULTS_JSON",
        help="take the arms not run now from an earlier run's results.json (same lengths)",
    )
    return parser


def reused_points(path: Path, lengths: Sequence[int], skip: Sequence[str]) -> list[Point]:
    """The points of an earlier run for the arms not run now: the peers do not change
    with mala-tui's settings, and at 16x each takes the better part of an hour. ValueError
    when the file is not such a run's figures or lacks a length asked for."""
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))["points"]
        names = set(Point.__dataclass_fields__)
        points = [Point(**{k: v for k, v in item.items() if k in names}) for item in saved]
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a growth run's results.json ({exc})") from None
    kept = [p for p in points if p.arm not in skip and p.length in lengths]
    for arm in {p.arm for p in kept}:
        missing = sorted(set(lengths) - {p.length for p in kept if p.arm == arm})
        if missing:
            raise ValueError(f"{path}: {arm} was not run at {missing}x there")
    return kept


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    lengths, arms, ratio = _checked(parser, args)
    reused: list[Point] = []
    if args.peers_from is not None:
        # Read before --out is emptied: the earlier run may be in it.
        try:
            reused = reused_points(args.peers_from, lengths, arms)
        except ValueError as exc:
            parser.error(f"--peers-from: {exc}")
        print(f"taken from {args.peers_from}: {sorted({p.arm for p in reused})}", file=sys.stderr)
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    base = load_scenario(READER)
    points = list(reused)
    checked: dict[str, float] = {}
    increments: Increments | None = None
    if "raw" in arms:
        # Raw runs at 1x for real; longer, its cost is computed from what each step added.
        folder = args.out / "x1" / "raw"
        print(f"{base.name} / raw: {len(base.plan())} steps", file=sys.stderr)
        measured = asyncio.run(run_arm("raw", base, folder, ratio, args))
        shutil.rmtree(folder / "workspace", ignore_errors=True)
        increments = step_increments(read_jsonl(folder / "loopback-requests.jsonl"))
        # The rule checked where both are known: computed against measured, at 1x.
        checked = {
            "measured": measured.cost_units,
            "computed": raw_cost(base, increments).cost_units,
        }
        print(f"  raw at 1x: {checked}", file=sys.stderr)
        if 1 in lengths:
            points.append(_measured("raw", 1, base, measured))
    for length in lengths:
        scenario = lengthened(base, length)
        for arm in arms:
            folder = args.out / f"x{length}" / arm
            if arm == "raw":
                if length > 1 and increments is not None:
                    point = raw_cost(scenario, increments)
                    points.append(Point(**{**vars(point), "length": length}))
                continue
            print(f"{scenario.name} / {arm}: {len(scenario.plan())} steps", file=sys.stderr)
            result = asyncio.run(run_arm(arm, scenario, folder, ratio, args))
            shutil.rmtree(folder / "workspace", ignore_errors=True)
            points.append(_measured(arm, length, scenario, result))
            print(f"  {result.ending}, {result.wall_s} s", file=sys.stderr)
    print(f"# Growth: {READER} at {', '.join(f'{n}x' for n in lengths)}; {machine()}\n")
    shown = [arm for arm in GROWTH_ARMS if arm in arms or any(p.arm == arm for p in points)]
    print(table(points, lengths, shown))
    if checked:
        print(
            f"\nRaw computed at 1x: {checked['computed']:,.0f} against {checked['measured']:,.0f} "
            "measured."
        )
    gate = judge(points, lengths)
    print(f"\n{gate.line()}")
    _write(args.out, args.chart_dir, points, shown, checked=checked, gate=gate)
    ran = all(p.finished or p.computed for p in points)
    return 0 if ran and not gate.failed else 1


def _checked(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> tuple[list[int], list[str], float | None]:
    """The lengths, the arms and the token ratio asked for; a bad one ends the command
    with the parser's usage error."""
    try:
        lengths = sorted({int(text) for text in args.lengths.split(",") if text.strip()})
    except ValueError:
        parser.error(f"--lengths wants whole numbers, got {args.lengths!r}")
    if not lengths or lengths[0] < 1 or lengths[-1] > 64:
        parser.error("--lengths: each from 1 to 64")
    arms = [name.strip() for name in args.arms.split(",") if name.strip()]
    unknown = sorted(set(arms) - set(GROWTH_ARMS))
    if unknown or not arms:
        parser.error(f"--arms: one or more of {', '.join(GROWTH_ARMS)}")
    ratio = None
    if args.token_ratio is not None:
        try:
            ratio = check_token_ratio(args.token_ratio)
        except ValueError as exc:
            parser.error(f"--token-ratio: {exc}")
    return lengths, arms, ratio


def _measured(arm: str, length: int, scenario: Scenario, result: ArmResult) -> Point:
    """The point an arm run for real gives, at `length` times the reader."""
    return Point(
        arm,
        length,
        len(scenario.plan()),
        result.cost_units,
        result.peak_prompt_tokens,
        result.finished,
        result.ending,
    )


def _write(
    out: Path,
    chart_dir: Path | None,
    points: Sequence[Point],
    arms: Sequence[str],
    *,
    checked: dict[str, float],
    gate: GrowthGate,
) -> None:
    """The figures and the gate as JSON and the chart in `out`, and the chart in
    `chart_dir` too."""
    (out / "results.json").write_text(
        json.dumps(
            {
                "machine": machine(),
                "points": [p.to_json() for p in points],
                "raw_at_1x": checked,
                "gate": gate.to_json(),
            },
            indent=1,
        ),
        encoding="utf-8",
    )
    svg = chart(points, arms)
    (out / "growth.svg").write_text(svg, encoding="utf-8")
    if chart_dir is not None:
        chart_dir.mkdir(parents=True, exist_ok=True)
        (chart_dir / "growth.svg").write_text(svg, encoding="utf-8")


def table(points: Sequence[Point], lengths: Sequence[int], arms: Sequence[str]) -> str:
    head = " | ".join(f"{n}x: cost per step" for n in lengths)
    rows = [
        f"| arm | {head} | growth, {lengths[0]}x to {lengths[-1]}x |",
        "| --- |" + " ---: |" * (len(lengths) + 1),
    ]
    for arm in arms:
        mine = {p.length: p for p in points if p.arm == arm}
        cells = []
        for n in lengths:
            point = mine.get(n)
            if point is None:
                cells.append("")
                continue
            note = " (computed)" if point.computed else ""
            note += "" if point.finished or point.computed else f" (did not finish: {point.ending})"
            cells.append(f"{point.cost_per_step:,.0f}{note}")
        first, last = mine.get(lengths[0]), mine.get(lengths[-1])
        growth = (
            f"{last.cost_per_step / first.cost_per_step:.2f}x"
            if first is not None and last is not None
            else ""
        )
        rows.append(f"| {LABELS.get(arm, arm)} | {' | '.join(cells)} | {growth} |")
    return "\n".join(rows)


def chart(points: Sequence[Point], arms: Sequence[str]) -> str:
    series = {
        arm: [(p.length, p.cost_per_step) for p in points if p.arm == arm]
        for arm in arms
        if any(p.arm == arm for p in points)
    }
    return growth_chart(
        {LABELS.get(arm, arm): values for arm, values in series.items()},
        {LABELS.get(arm, arm): COLOURS.get(arm, "#000000") for arm in series},
        title=f"Cost per step as the reader ({READER}) grows",
    )
