"""The economy benchmark's command line: the set, the arms, the densities, the knobs."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mala_tui.bench.arms import ARMS, WINDOW, settings_with
from mala_tui.config import Settings
from mala_tui.loopback import Scenario, ScenarioError, load_scenario
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


@dataclass(frozen=True)
class Options:
    scenarios: list[Scenario]
    arms: list[str]
    compact_windows: list[int]
    token_ratios: list[float]
    settings: Settings
    compact_triggers: list[int] = field(default_factory=lambda: list(COMPACT_TRIGGERS))


def parse_options(argv: list[str] | None) -> tuple[argparse.Namespace, Options]:
    """The arguments and what they ask for; a usage error (exit 2) says what is wrong."""
    command = parser()
    args = command.parse_args(argv)
    return args, options_from(args, command.error)


def parser() -> argparse.ArgumentParser:
    command = argparse.ArgumentParser(prog="python -m mala_tui.bench economy")
    command.add_argument(
        "--scenario",
        action="append",
        metavar="NAME_OR_FILE",
        help=f"a scenario to run (repeatable; default: the set, {', '.join(SCENARIO_SET)})",
    )
    command.add_argument("--arms", default=",".join(ARMS), help="comma-separated arms to run")
    command.add_argument(
        "--compact-windows",
        default=",".join(str(w) for w in COMPACT_WINDOWS),
        metavar="N,N,...",
        help="CLAUDE_CODE_AUTO_COMPACT_WINDOW values for the compaction arm (best is kept)",
    )
    command.add_argument(
        "--compact-triggers",
        default=",".join(str(t) for t in COMPACT_TRIGGERS),
        metavar="N,N,...",
        help="input-token triggers for the server-side compaction arm (best is kept)",
    )
    command.add_argument(
        "--densities",
        default=",".join(f"{d:g}" for d in DENSITIES),
        metavar="X,X,...",
        help="token densities to run the set at, every arm's model alike (default 1,2)",
    )
    command.add_argument(
        "--token-ratio",
        type=float,
        metavar="X",
        help="one token density only (instead of --densities)",
    )
    command.add_argument("--sweep", action="store_true", help="also sweep mala-tui's knobs")
    command.add_argument("--jobs", type=int, default=1, help="sweep runs at once (default 1)")
    command.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a [context] setting for the managed arm, e.g. --set soft_threshold=0.5",
    )
    command.add_argument("--out", type=Path, default=Path("economy-results"))
    command.add_argument(
        "--chart-dir",
        type=Path,
        help="also write each scenario's chart here as <scenario>-context.svg",
    )
    command.add_argument("--keep-workspaces", action="store_true")
    return command


def options_from(args: argparse.Namespace, error: Callable[[str], Any]) -> Options:
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
