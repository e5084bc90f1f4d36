"""`python -m mala_tui.bench window`: a model whose window is smaller than Claude Code believes.

Not a test: a measurement. The loopback refuses any prompt past `--windows` tokens, as a
model behind a gateway or a proxy would, while the CLI, for a Claude model name, believes
and reports 200,000. Claude Code passes the refusal on as a bare "Prompt is too long".
Each run is one session of the scenario (the real CLI, unpaced) under the supervisor
with the shipped settings; the row says how often the model refused, how the session
recovered, the window it decided with at the end, and the cost from the model's log.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mala_tui.bench.loopback_session import supervised_session
from mala_tui.core import events as ev
from mala_tui.core.checkpoint import CheckpointOrigin
from mala_tui.loopback import LoopbackServer, load_scenario
from mala_tui.loopback.request_log import cost_units

TOOLS = ("Read", "Grep", "Glob", "Bash", "Edit", "Write")


@dataclass(frozen=True)
class WindowRow:
    window: int
    ending: str
    refused: int
    restarts: int
    harness_checkpoints: int
    masks: int
    peak: int
    decided_with: str
    cost: float

    def line(self) -> str:
        return (
            f"| {self.window:,} | {self.ending} | {self.refused} | {self.restarts} "
            f"({self.harness_checkpoints} harness-made) | {self.masks} | {self.peak:,} "
            f"| {self.decided_with} | {self.cost:,.0f} |"
        )


HEADER = (
    "| model's window | ending | prompts refused | restarts | masks | peak prompt "
    "| window decided with at the end | cache-adjusted cost |\n"
    "| ---: | --- | ---: | --- | ---: | ---: | --- | ---: |"
)


async def one_run(root: Path, scenario_name: str, window: int, token_ratio: float) -> WindowRow:
    scenario = load_scenario(scenario_name)
    events: list[ev.Event] = []
    async with LoopbackServer(
        scenario, response_delay_s=0, window=window, token_ratio=token_ratio
    ) as server:
        sup = supervised_session("gateway", scenario, server, root, TOOLS)
        sup.listeners.events.append(events.append)
        await sup.run()
    log = server.request_log
    sent = [record for record in log if record.status == 200]
    usage = [event for event in events if isinstance(event, ev.UsageRecorded)]
    ended = [event for event in events if isinstance(event, ev.SessionEnded)]
    checkpoints = [event for event in events if isinstance(event, ev.CheckpointSaved)]
    return WindowRow(
        window=window,
        ending=ended[-1].status if ended else "no ending",
        refused=sum(1 for record in log if record.response_kind == "error"),
        restarts=sum(1 for event in events if isinstance(event, ev.Restarted)),
        harness_checkpoints=sum(
            1 for event in checkpoints if event.origin is CheckpointOrigin.HARNESS
        ),
        masks=sum(1 for event in events if isinstance(event, ev.MaskApplied)),
        peak=max((record.prompt_tokens for record in sent), default=0),
        decided_with=f"{usage[-1].window:,} ({usage[-1].window_source})" if usage else "-",
        cost=sum(cost_units(record) for record in sent),
    )


async def measure(scenario: str, windows: list[int], token_ratio: float) -> list[WindowRow]:
    rows = []
    for window in windows:
        with tempfile.TemporaryDirectory(prefix="mala-window-bench-") as folder:
            rows.append(await one_run(Path(folder), scenario, window, token_ratio))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mala_tui.bench window")
    parser.add_argument("--scenario", default="soft-zone-reader")
    parser.add_argument(
        "--windows",
        default="60000,100000",
        help="the model's real windows, comma-separated (default 60000,100000)",
    )
    parser.add_argument("--token-ratio", type=float, default=1.0, help="token density")
    args = parser.parse_args(argv)
    try:
        windows = [int(part) for part in args.windows.split(",") if part.strip()]
    except ValueError:
        parser.error(f"--windows {args.windows!r}: expected whole numbers, comma-separated")
    if not windows or min(windows) < 1:
        parser.error("--windows needs at least one positive window")
    rows = asyncio.run(measure(args.scenario, windows, args.token_ratio))
    print(f"{args.scenario}, token density {args.token_ratio:g}x, Claude Code believing 200,000")
    print(HEADER)
    for row in rows:
        print(row.line())
    return 0
