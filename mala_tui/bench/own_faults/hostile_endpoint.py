"""A hostile endpoint: a broken stream of terminal escapes and a key, and a 401.

A headless ``run`` whose model answers some sessions with a broken stream (as a broken
gateway echoes it) and others with a 401 on every request: the first must recover, the
others fail at once saying so, and nothing of the stream reach the terminal raw.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from mala_tui.bench.fault_harness import TrialRow, journal_complete
from mala_tui.bench.own_faults.headless_cli import (
    PLANTED_KEY,
    QUICKSTART_DONE,
    TRIAL_MODEL,
    exposure,
    journal_of,
    left_under,
    lines_lost,
    start_mala,
)
from mala_tui.core import events as ev
from mala_tui.loopback import (
    LoopbackServer,
    Scenario,
    load_scenario,
    materialize_workspace,
    offline_cli_env,
)
from mala_tui.loopback.faults import FaultKind
from mala_tui.runtime.journal.writer import read_events

#: A session the 401 stopped fails at once, saying so.
AUTH_FAILED = r"^authentication failed: "


async def hostile_endpoint_trial(
    folder: Path, each: int = 1, *, mala_tui: Sequence[str] = ()
) -> TrialRow:
    """A headless `run` against an endpoint that answers `each` sessions with a broken
    stream (terminal escapes: a clipboard write, a window title, a clear screen; and a key)
    and `each` with a 401 on every request.

    The broken stream's sessions must recover (done, their folder edited); the 401's must
    fail at once, saying so. Nothing of the stream may reach the terminal raw, no key any
    file, and the run must exit 1 (not every session finished) with its journal ended."""
    command = list(mala_tui) or [sys.executable, "-m", "mala_tui"]
    scenario = load_scenario("quickstart")
    broken = [f"broken-{index:02d}" for index in range(each)]
    denied = [f"denied-{index:02d}" for index in range(each)]
    names = broken + denied
    data = folder / "data"
    problems: list[str] = []
    started = time.monotonic()
    async with LoopbackServer({name: scenario for name in names}, response_delay_s=0.0) as server:
        tasks = _tasks_file(folder, server, scenario, broken, denied)
        env = dict(os.environ, **offline_cli_env(server.base_url, folder / "claude-home"))
        env["MALA_TUI_STORAGE__DATA_DIR"] = str(data)
        env["MALA_TUI_CONFIG_FILE"] = os.devnull
        process = await start_mala(
            command, *TRIAL_MODEL, "run", "--tasks", str(tasks), "--headless", env=env
        )
        try:
            out, err = await asyncio.wait_for(process.communicate(), 240)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        injected = sum(1 for record in server.request_log if record.fault)
        left = left_under(folder)
    if process.returncode != 1:
        problems.append(f"exit status {process.returncode}, expected 1")
    journal = journal_of(data)
    events = read_events(journal).events if journal is not None else []
    recovered, failed, reasons = _outcomes(events, names, folder)
    problems += exposure(out + err, data)
    return TrialRow(
        fault="a hostile endpoint (a broken stream of escapes and a key; a 401)",
        sessions=len(names),
        injected=injected,
        recovered=recovered,
        failed_fast=failed,
        lost=len(names) - recovered - failed,
        reasons=tuple(sorted(set(reasons))),
        processes_left=len(left),
        journal_lines_lost=lines_lost(journal) if journal is not None else 0,
        wall_s=round(time.monotonic() - started, 1),
        journal_complete=journal_complete(events, names),
        problems=tuple(problems),
    )


def _tasks_file(
    folder: Path,
    server: LoopbackServer,
    scenario: Scenario,
    broken: Sequence[str],
    denied: Sequence[str],
) -> Path:
    """The run's tasks file: each session in a workspace of its own, on a route of its own
    whose fault the server is given here (a broken stream, or a 401 on every request)."""
    from mala_tui.loopback import FaultSpec

    entries = []
    for name in [*broken, *denied]:
        materialize_workspace(scenario, folder / name)
        kind: FaultKind = "broken_stream" if name in broken else "unauthorized"
        fault = (
            FaultSpec(kind=kind, at_request=2)
            if name in broken
            else FaultSpec(kind=kind, times=1_000)
        )
        server.add_fault(fault, route=name)
        task = f"{scenario.task} (The deploy key {PLANTED_KEY} is not needed.)"
        entries.append(
            f"[[task]]\nname = {json.dumps(name)}\ntask = {json.dumps(task)}\n"
            f"cwd = {json.dumps(name)}\n"
            f"env = {{ ANTHROPIC_BASE_URL = {json.dumps(server.url_for(name))} }}\n"
        )
    tasks = folder / "tasks.toml"
    tasks.write_text("\n".join(entries))
    return tasks


def _outcomes(
    events: Sequence[ev.Event], names: Sequence[str], folder: Path
) -> tuple[int, int, list[str]]:
    """Sessions recovered (done, their folder edited) and failed, and the reasons of the
    failed and the lost."""
    ends = {e.session: e for e in events if isinstance(e, ev.SessionEnded)}
    recovered = failed = 0
    reasons: list[str] = []
    for name in names:
        end = ends.get(name)
        edited = QUICKSTART_DONE in (folder / name / "src" / "app.py").read_text()
        if end is not None and end.status == "done" and edited:
            recovered += 1
        elif end is not None and end.status == "failed":
            failed += 1
            reasons.append(end.reason)
        else:
            reasons.append(f"LOST {name}: {end.status + ' ' + end.reason if end else 'no end'}")
    return recovered, failed, reasons
