"""Latencies of the runtime's mechanisms, from a demo run's journal and the model's request log.

- restart latency: the hard threshold crossed, to the fresh session's first request at
  the model (the wind-down and checkpoint turns included), and the checkpoint received,
  to that request (the restart's own cost: a new CLI process);
- masking round trip: the decision to mask, to the next request at the model (interrupt,
  transcript rewrite, resume in a new process);
- stall: the idle timeout firing, to the stuck CLI process gone.

`python -m mala_tui.bench latency [RUN_DIR]` reads a finished demo run (default: the
latest under the data dir); with `--run` it first runs `mala-tui demo --headless`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from mala_tui.config_loading import load_settings
from mala_tui.core import events as ev
from mala_tui.core.phases import Phase
from mala_tui.runtime.journal.writer import EVENTS_FILE, list_runs, read_events


def _requests(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "loopback-requests.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _next_request(requests: list[dict[str, Any]], route: str, after: float) -> float | None:
    times = [r["time"] for r in requests if r["route"] == route and r["time"] > after]
    return min(times) if times else None


def _first_masked_request(requests: list[dict[str, Any]], route: str, after: float) -> float | None:
    """The first request after `after` carrying more placeholders than any before it."""
    seen = max(
        (r["masked_placeholders"] for r in requests if r["route"] == route and r["time"] <= after),
        default=0,
    )
    times = [
        r["time"]
        for r in requests
        if r["route"] == route and r["time"] > after and r["masked_placeholders"] > seen
    ]
    return min(times) if times else None


def measure(run_dir: Path) -> dict[str, list[float]]:
    events = read_events(run_dir / EVENTS_FILE).events
    requests = _requests(run_dir)
    figures: dict[str, list[float]] = {
        "restart: hard threshold -> first request of the new session": [],
        "restart: checkpoint received -> first request of the new session": [],
        "masking round trip: decision -> first request with the placeholders": [],
        "stall: idle timeout -> stuck process gone": [],
    }
    hard_at: dict[str, float] = {}
    for event in events:
        if isinstance(event, ev.PhaseChanged) and event.after is Phase.WINDING_DOWN:
            hard_at[event.session] = event.at
        elif isinstance(event, ev.Restarted):
            first = _next_request(requests, event.session, event.at)
            if first is not None:
                figures["restart: checkpoint received -> first request of the new session"].append(
                    first - event.at
                )
                if event.session in hard_at:
                    figures["restart: hard threshold -> first request of the new session"].append(
                        first - hard_at.pop(event.session)
                    )
        elif isinstance(event, ev.PhaseChanged) and event.after is Phase.MASKING:
            first = _first_masked_request(requests, event.session, event.at)
            if first is not None:
                figures[
                    "masking round trip: decision -> first request with the placeholders"
                ].append(first - event.at)
        elif isinstance(event, ev.IdleTimeoutSeen):
            ended = next(
                (
                    e
                    for e in events
                    if isinstance(e, ev.ProcessEnded)
                    and e.session == event.session
                    and e.at >= event.at
                ),
                None,
            )
            if ended is not None:
                figures["stall: idle timeout -> stuck process gone"].append(ended.at - event.at)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mala_tui.bench latency")
    parser.add_argument(
        "run_dir", nargs="?", type=Path, help="a demo run's folder (default: latest)"
    )
    parser.add_argument("--run", action="store_true", help="run `mala-tui demo --headless` first")
    args = parser.parse_args(argv)
    if args.run:
        subprocess.run(
            [sys.executable, "-m", "mala_tui", "demo", "--headless"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    run_dir = args.run_dir
    if run_dir is None:
        runs = [
            r for r in list_runs(load_settings().settings.resolved_data_dir()) if r.mode == "demo"
        ]
        if not runs:
            print("no demo run found: pass a run folder or --run", file=sys.stderr)
            return 2
        run_dir = runs[0].directory
    print(f"run: {run_dir}")
    for name, values in measure(run_dir).items():
        if not values:
            print(f"{name}: not seen in this run")
            continue
        shown = ", ".join(f"{v:.2f}" for v in values)
        print(f"{name}: median {statistics.median(values):.2f} s (n={len(values)}: {shown})")
    return 0
