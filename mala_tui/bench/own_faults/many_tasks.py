"""Many tasks at once: never more agents alive than ``agent.max_concurrent``, every one finished."""

from __future__ import annotations

from pathlib import Path

from mala_tui.bench.fault_harness import Planned, TrialRow, run_trial, trial_settings
from mala_tui.core import events as ev
from mala_tui.loopback import load_scenario
from mala_tui.runtime.run.supervisor import Supervisor


async def many_tasks_trial(folder: Path, tasks: int) -> TrialRow:
    """`tasks` sessions given at once: at most max_concurrent agents alive at any moment."""
    settings = trial_settings()
    limit = settings.agent.max_concurrent
    base = load_scenario("quickstart")
    planned = [Planned(f"many-{index:03d}", base) for index in range(tasks)]
    alive: set[int] = set()
    peak = 0

    async def watch(supervisor: Supervisor) -> None:
        def listen(event: ev.Event) -> None:
            nonlocal peak
            if isinstance(event, ev.ProcessStarted) and event.pid is not None:
                alive.add(event.pid)
                peak = max(peak, len(alive))
            elif isinstance(event, ev.ProcessEnded):
                alive.discard(event.pid or -1)

        supervisor.listeners.events.append(listen)

    row = await run_trial(
        f"{tasks} tasks at once (agent.max_concurrent {limit})",
        planned,
        folder,
        settings=settings,
        meanwhile=watch,
    )
    problems = list(row.problems)
    if peak > limit:
        problems.append(f"{peak} agents at once, more than agent.max_concurrent {limit}")
    fault = f"{row.fault}: at most {peak} agents at once"
    return TrialRow(**{**row.__dict__, "fault": fault, "problems": tuple(problems)})
