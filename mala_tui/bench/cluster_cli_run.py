"""The cluster benchmark's ``cli`` scenario: real Claude Code sessions through ``mala-tui run
--engine ray`` on the loopback model, over 2 simulated nodes, one of them removed once each
session has worked a little.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mala_tui.bench.cluster_figures import ClusterFigures, judge
from mala_tui.bench.sim_cluster import SimCluster, simulated_cluster
from mala_tui.core import events as ev
from mala_tui.runtime.journal.writer import read_events
from mala_tui.runtime.session.processes import pid_alive


def _tasks_file(folder: Path, server: Any, names: Sequence[str], scenario: Any) -> Path:
    from mala_tui.loopback import materialize_workspace, offline_cli_env

    lines = []
    for name in names:
        workspace = folder / name
        workspace.mkdir()
        materialize_workspace(scenario, workspace)
        env = offline_cli_env(server.url_for(name), folder / "homes" / name)
        table = ", ".join(f"{key} = {json.dumps(value)}" for key, value in sorted(env.items()))
        lines += [
            "[[task]]",
            f'name = "{name}"',
            f"task = {json.dumps(scenario.task)}",
            f'cwd = "{workspace}"',
            f"env = {{ {table} }}",
            "",
        ]
    path = folder / "tasks.toml"
    path.write_text("\n".join(lines))
    return path


async def real_cli(sessions: int, data: Path, *, delay: float = 1.0) -> ClusterFigures:
    """`mala-tui run --engine ray` on `sessions` loopback sessions over 2 nodes, one lost."""
    from mala_tui.loopback import LoopbackServer, load_scenario

    scenario = load_scenario("quickstart")
    names = [f"c{index}" for index in range(sessions)]
    figures = ClusterFigures("cli", sessions, 2)
    folder = Path(tempfile.mkdtemp(prefix="cli-", dir=data))
    routes = {name: scenario for name in names}
    async with LoopbackServer(routes, response_delay_s=delay) as server:
        tasks = _tasks_file(folder, server, names, scenario)
        with simulated_cluster(2, math.ceil(sessions / 2) + 1) as cluster:
            env = dict(os.environ, MALA_TUI_STORAGE__DATA_DIR=str(data / "runs"))
            env["MALA_TUI_AGENT__ALLOWED_TOOLS"] = json.dumps(list(scenario.tools))
            command = [
                sys.executable,
                "-m",
                "mala_tui",
                "run",
                "--tasks",
                str(tasks),
                "--headless",
                "--approve",
                "auto",
                "--engine",
                "ray",
                "--ray-address",
                cluster.address,
            ]
            process = await asyncio.create_subprocess_exec(
                *command, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
            )
            lost_at = await _remove_a_busy_node(cluster, data / "runs", names, process)
            _, err = await asyncio.wait_for(process.communicate(), 600)
            said = err.decode(errors="replace")
            figures.stderr = said
            if process.returncode != 0:
                figures.notes.append(f"mala-tui run exited {process.returncode}: {said[-400:]}")
        figures.processes_left = len(cluster.leftover)
    runs = sorted((data / "runs" / "runs").iterdir())
    contents = read_events(runs[-1] / "events.jsonl")
    figures.run_dir = str(runs[-1])
    figures.unreadable_lines = len(contents.skipped)
    judge(figures, contents.events, lost_at)
    began = [e.at for e in contents.events if isinstance(e, ev.RunStarted)]
    ended = [e.at for e in contents.events if isinstance(e, ev.RunEnded)]
    if began and ended:
        figures.seconds = round(ended[-1] - began[0], 2)
        figures.throughput = round(figures.events / figures.seconds, 1)
    pids = [e.pid for e in contents.events if isinstance(e, ev.ProcessStarted) and e.pid]
    figures.processes_left += sum(1 for pid in pids if pid_alive(pid))
    return figures


async def _remove_a_busy_node(
    cluster: SimCluster, runs: Path, names: Sequence[str], process: Any
) -> float | None:
    """Once every session has worked a little, remove the node with the most of them."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.returncode is None:
        await asyncio.sleep(0.5)
        found = sorted((runs / "runs").glob("*/events.jsonl")) if (runs / "runs").is_dir() else []
        if not found:
            continue
        events = read_events(found[-1]).events
        placed = {e.session: e.node for e in events if isinstance(e, ev.HostPlaced)}
        steps = Counter(
            e.session
            for e in events
            if isinstance(e, ev.MessageRecorded) and e.kind == "tool_result"
        )
        if set(placed) == set(names) and all(steps[name] >= 2 for name in names):
            busiest, _ = Counter(placed.values()).most_common(1)[0]
            lost_at = time.time()
            await asyncio.to_thread(cluster.remove, cluster.node_of(busiest))
            return lost_at
    return None
