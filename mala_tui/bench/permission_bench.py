"""`python -m mala_tui.bench permissions`: from a permission request to the tool's result.

Not a test: a measurement. Each run is the `permission-request` scenario with the real
CLI on the loopback model, unpaced, with Bash left out of the allowed tools, so the CLI
asks through `can_use_tool` before its one Bash command. The request is allowed once as
soon as it reaches the supervisor's desk (on the next turn of the event loop, as an
answer from the app would be handled), and the clock runs from the request being
journaled to the command's result arriving in the runner's stream: the gate's answer
crossing the control protocol, the CLI running the command, and its result coming back.

For comparison it also times each run from the Bash call's message to its result, and
as many runs again with Bash among the allowed tools (nobody asked): the difference
between the two is what asking costs, the rest is the CLI running the command.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from mala_tui.bench.loopback_session import supervised_session
from mala_tui.core import events as ev
from mala_tui.core.operator_actions import AnswerPermission
from mala_tui.core.permissions import PermissionAnswer
from mala_tui.core.questions import PermissionQuestion, Question
from mala_tui.loopback import LoopbackServer, load_scenario

SCENARIO = "permission-request"
ALLOWED = ("Read", "Write", "Edit", "Grep", "Glob")


@dataclass
class Timings:
    """perf_counter() readings in one session."""

    call: float | None = None
    """The Bash call's message reached the runner."""
    requested: float | None = None
    result: float | None = None


async def one_run(root: Path, *, ask: bool) -> Timings:
    """One session; `ask`: Bash is left out of the allowed tools, so the CLI asks."""
    scenario = load_scenario(SCENARIO)
    clock = Timings()
    async with LoopbackServer(scenario, response_delay_s=0) as server:
        sup = supervised_session(
            "p", scenario, server, root, ALLOWED if ask else (*ALLOWED, "Bash")
        )
        loop = asyncio.get_running_loop()

        def on_event(event: ev.Event) -> None:
            now = time.perf_counter()
            if isinstance(event, ev.PermissionRequested) and clock.requested is None:
                clock.requested = now
            elif isinstance(event, ev.MessageRecorded):
                # Results do not name their tool: the one after the Bash call is its own
                # (the scenario calls one tool at a time).
                if event.kind == "tool_call" and event.tool == "Bash" and clock.call is None:
                    clock.call = now
                elif event.kind == "tool_result" and clock.call and clock.result is None:
                    clock.result = now

        def allow(waiting: list[Question]) -> None:
            for request in waiting:
                if isinstance(request, PermissionQuestion):
                    allowed = AnswerPermission(
                        session="p",
                        request_id=request.request_id,
                        answer=PermissionAnswer.ALLOW_ONCE,
                    )
                    loop.call_soon(sup.act, allowed)

        sup.listeners.events.append(on_event)
        sup.listeners.questions.append(allow)
        await sup.run()
    if clock.call is None or clock.result is None or (ask and clock.requested is None):
        raise RuntimeError("the Bash call gave no result, or the CLI did not ask for it")
    return clock


async def measure(runs: int, *, ask: bool) -> list[Timings]:
    timings = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="mala-perm-bench-") as folder:
            timings.append(await one_run(Path(folder), ask=ask))
    return timings


def summary(label: str, seconds: list[float]) -> str:
    ms = sorted(s * 1000 for s in seconds)
    spread = f"min {ms[0]:.0f}, max {ms[-1]:.0f}"
    if len(ms) > 1:
        spread += f", stdev {statistics.stdev(ms):.0f}"
    return f"{label}: median {statistics.median(ms):.0f} ms ({spread}), {len(ms)} runs"


async def measure_both(runs: int) -> list[str]:
    asked = await measure(runs, ask=True)
    allowed = await measure(runs, ask=False)
    return [
        summary(
            "asked: permission request -> tool result",
            [t.result - t.requested for t in asked if t.result and t.requested],
        ),
        summary(
            "asked: Bash call -> tool result",
            [t.result - t.call for t in asked if t.result and t.call],
        ),
        summary(
            "allowed (not asked): Bash call -> tool result",
            [t.result - t.call for t in allowed if t.result and t.call],
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mala_tui.bench permissions")
    parser.add_argument("--runs", type=int, default=10, help="sessions to measure (default 10)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    for line in asyncio.run(measure_both(args.runs)):
        print(line)
    return 0
