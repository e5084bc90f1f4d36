"""`python -m mala_tui.bench cluster`: sessions on a Ray cluster, and the loss of a node.

Not a test: a measurement (tests/cluster holds the cluster to the same targets on a
smaller run). Everything runs on simulated nodes (`ray.cluster_utils.Cluster`) in a
private network namespace with only loopback up: the command re-executes itself in one
(mala_tui.bench.netns) unless it is in one already.

- `scripted`: 100 sessions of the scripted backend (no CLI: 100 real ones would not fit
  in 24 GiB) over 3 nodes, each journaling events at about 4 Hz, the driver in this
  process. Once every session runs, the node with the most sessions is removed.
  Targets: every session finishes, every session of the lost node restarts from a
  checkpoint, no journal line lost, no process left.
- `cli`: real Claude Code sessions (6 by default) on the loopback model over 2 nodes,
  through `mala-tui run --engine ray --ray-address ...`; one node is removed once each
  session has worked a little. The same targets.
- `compare`: the same 20-session scripted run on the local engine and on Ray (one node):
  wall time and CPU, what Ray costs.

Figures: the driver's event throughput and lag (journal write - event time, p50/p99),
the memory of each session host (RSS of the actor processes, sampled mid-run), the time
from the node's removal to each lost session's new host and to its restart.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import asdict
from pathlib import Path
from typing import Any

from mala_tui.bench.cluster_cli_run import real_cli
from mala_tui.bench.cluster_figures import (
    ClusterFigures,
    CpuMeter,
    host_rss_mb,
    judge,
    lines,
    percentile,
)
from mala_tui.bench.netns import NetnsUnavailable, inside, private_network
from mala_tui.bench.paced import paced_backend
from mala_tui.bench.sim_cluster import SimCluster, simulated_cluster
from mala_tui.config import Settings
from mala_tui.core import events as ev
from mala_tui.runtime.backends.base import Backend, SessionSpec
from mala_tui.runtime.journal.writer import RunJournal, read_events
from mala_tui.runtime.questions.approvals import ApprovalMode
from mala_tui.runtime.run.supervisor import Supervisor

#: Events a session journals per scripted step: usage, the call, the result (and more).
HZ = 4.0


# -- the scripted scenario, the driver in this process -------------------------------------


class PerSession:
    """The local engine's backend for paced sessions: one paced backend per session, made
    as each host makes its own on a cluster."""

    def __init__(self, steps: int, hz: float) -> None:
        self._factory = paced_backend(steps, hz)
        self._made: dict[str, Backend] = {}

    def _of(self, name: str) -> Backend:
        if name not in self._made:
            self._made[name] = self._factory(Path())
        return self._made[name]

    def create(self, spec: SessionSpec, *, resume: str | None, clock: Callable[[], float]) -> Any:
        return self._of(spec.name).create(spec, resume=resume, clock=clock)

    def transcript_path(self, spec: SessionSpec, session_id: str) -> None:
        return None

    async def mask_transcript(self, spec: SessionSpec, session_id: str, placeholders: Any) -> int:
        return 0

    async def fold_transcript(self, spec: SessionSpec, session_id: str, notes: Any) -> None:
        return None

    async def keep_breakpoint(self, spec: SessionSpec, session_id: str) -> None:
        return None


async def drive(
    data: Path,
    sessions: int,
    steps: int,
    *,
    engine: Any = None,
    cluster: SimCluster | None = None,
    kill: bool = False,
) -> tuple[ClusterFigures, list[ev.Event]]:
    """One scripted run; with `kill`, the busiest node is removed once every session runs."""
    from mala_tui.runtime.run.launch import prompts_for

    settings = Settings()
    journal = RunJournal.create(data, f"bench-{time.time_ns()}", {"mode": "bench"})
    if engine is not None:
        engine.run_id = journal.run_id
    sup = Supervisor(
        settings=settings,
        backend=PerSession(steps, HZ),
        prompts=prompts_for(settings),
        journal=journal,
        approval_mode=ApprovalMode.AUTO,
        engine=engine,
        host_backend=paced_backend(steps, HZ) if engine is not None else None,
        max_concurrent=sessions,
    )
    for index in range(sessions):
        sup.add_session(SessionSpec(name=f"s{index:03d}", task="read every module", cwd=data))
    nodes = len(cluster.nodes) if cluster else 0
    figures = ClusterFigures("", sessions, nodes, run_dir=str(journal.directory))
    lags: list[float] = []
    placed: dict[str, str] = {}
    started: set[str] = set()
    everyone = asyncio.Event()

    def listen(event: ev.Event) -> None:
        now = time.time()
        if not isinstance(event, ev.HostPlaced | ev.HostLost | ev.RunStarted | ev.RunEnded):
            lags.append(now - event.at)
        if isinstance(event, ev.HostPlaced):
            placed[event.session] = event.node
        elif isinstance(event, ev.UsageRecorded):
            started.add(event.session)
            if len(started) == sessions:
                everyone.set()

    sup.listeners.events.append(listen)
    lost_at: float | None = None
    rss: list[float] = []

    async def killer() -> None:
        nonlocal lost_at
        await everyone.wait()
        await asyncio.sleep(2.0)
        rss.extend(host_rss_mb())
        if not kill or cluster is None:
            return
        busiest, _ = Counter(placed.values()).most_common(1)[0]
        lost_at = time.time()
        await asyncio.to_thread(cluster.remove, cluster.node_of(busiest))

    cpu0, wall0 = time.process_time(), time.monotonic()
    watcher = asyncio.create_task(killer())
    try:
        await sup.run()
    finally:
        watcher.cancel()
        journal.close()
    figures.seconds = round(time.monotonic() - wall0, 2)
    figures.driver_cpu_s = round(time.process_time() - cpu0, 2)
    contents = read_events(journal.events_path)
    figures.unreadable_lines = len(contents.skipped)
    judge(figures, contents.events, lost_at)
    figures.throughput = round(len(lags) / figures.seconds, 1) if figures.seconds else 0.0
    if lags:
        figures.lag_p50_ms = round(1000 * percentile(lags, 0.5), 1)
        figures.lag_p99_ms = round(1000 * percentile(lags, 0.99), 1)
    if rss:
        figures.host_rss_mb = round(statistics.mean(rss), 1)
    return figures, contents.events


async def scripted(sessions: int, nodes: int, steps: int, data: Path) -> ClusterFigures:
    from mala_tui.runtime.cluster.ray_engine import RayEngine

    slots = math.ceil(sessions / nodes) + math.ceil(sessions / nodes / max(1, nodes - 1))
    with simulated_cluster(nodes, slots) as cluster:
        engine = RayEngine.connect(cluster.address, local_slots=0, memory_mb=0)
        try:
            figures, _ = await drive(
                data, sessions, steps, engine=engine, cluster=cluster, kill=True
            )
        finally:
            engine.close()
    figures.scenario, figures.nodes = "scripted", nodes
    figures.processes_left = len(cluster.leftover)
    return figures


async def compare(sessions: int, steps: int, data: Path) -> list[ClusterFigures]:
    """The same run on the local engine, then on Ray (one node holding every session)."""
    from mala_tui.runtime.cluster.ray_engine import RayEngine

    local, _ = await drive(data, sessions, steps)
    local.scenario = "compare: local engine"
    with simulated_cluster(1, sessions) as cluster:
        engine = RayEngine.connect(cluster.address, local_slots=0, memory_mb=0)
        meter = CpuMeter(cluster)
        sampling = asyncio.create_task(meter.run())
        try:
            remote, _ = await drive(data, sessions, steps, engine=engine, cluster=cluster)
        finally:
            sampling.cancel()
            engine.close()
        remote.cluster_cpu_s = round(meter.seconds, 2)
    remote.scenario, remote.nodes = "compare: ray engine", 1
    remote.processes_left = len(cluster.leftover)
    return [local, remote]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mala_tui.bench cluster")
    parser.add_argument("--scenario", choices=("scripted", "cli", "compare", "all"), default="all")
    parser.add_argument("--sessions", type=int, help="sessions (default: 100, cli 6, compare 20)")
    parser.add_argument("--nodes", type=int, default=3, help="nodes of the scripted run (3)")
    parser.add_argument("--steps", type=int, default=40, help="steps of each scripted session")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    parser.add_argument(
        "--data", type=Path, help="keep the runs' journals here (default: a temporary folder)"
    )
    args = parser.parse_args(argv)
    if not inside():
        rest = sys.argv[1:] if argv is None else argv
        try:
            command = private_network([sys.executable, "-m", "mala_tui.bench", "cluster", *rest])
        except NetnsUnavailable as exc:
            print(f"cluster benchmark: {exc}", file=sys.stderr)
            return 2
        return subprocess.run(command, check=False).returncode
    data = args.data or Path(tempfile.mkdtemp(prefix="mala-cluster-bench-"))
    data.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("XDG_DATA_HOME", str(data / "xdg"))
    try:
        return _scenarios(args, data)
    finally:
        if args.data is None:
            shutil.rmtree(data, ignore_errors=True)


def _scenarios(args: argparse.Namespace, data: Path) -> int:
    runs: list[tuple[str, Callable[[], Coroutine[Any, Any, list[ClusterFigures]]]]] = []
    if args.scenario in ("scripted", "all"):
        runs.append(
            ("scripted", lambda: _one(scripted(args.sessions or 100, args.nodes, args.steps, data)))
        )
    if args.scenario in ("cli", "all"):
        runs.append(("cli", lambda: _one(real_cli(args.sessions or 6, data))))
    if args.scenario in ("compare", "all"):
        runs.append(("compare", lambda: compare(args.sessions or 20, args.steps, data)))
    results: list[ClusterFigures] = []
    for _, scenario in runs:
        figures: list[ClusterFigures] = asyncio.run(scenario())
        for each in figures:  # as each scenario ends: a long benchmark says what it has
            print("\n".join(lines(each)), flush=True)
        results += figures
        if args.json is not None:
            args.json.write_text(json.dumps([asdict(f) | {"ok": f.ok} for f in results], indent=2))
    compared = [f for f in results if f.scenario.startswith("compare")]
    return 0 if all(f.ok for f in results if f not in compared) else 1


async def _one(figures: Awaitable[ClusterFigures]) -> list[ClusterFigures]:
    return [await figures]
