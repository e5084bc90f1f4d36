"""What the cluster benchmark measures, where it reads it, and how it reports it.

The figures of one scenario: what the journal says (who finished, who was lost with the node
and how soon each restarted), what /proc says (the session hosts' memory, the CPU the
cluster's processes used), and the lines of the report.
"""

from __future__ import annotations

import asyncio
import math
import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mala_tui.bench.sim_cluster import SimCluster
from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus


@dataclass
class ClusterFigures:
    """What one scenario measured; `ok` when it met every target."""

    scenario: str
    sessions: int
    nodes: int
    finished: int = 0
    lost_sessions: list[str] = field(default_factory=list)
    restarted_from_checkpoint: list[str] = field(default_factory=list)
    lines_lost: int = 0
    unreadable_lines: int = 0
    processes_left: int = 0
    events: int = 0
    seconds: float = 0.0
    throughput: float = 0.0
    lag_p50_ms: float | None = None
    lag_p99_ms: float | None = None
    host_rss_mb: float | None = None
    to_new_host_s: list[float] = field(default_factory=list)
    to_restart_s: list[float] = field(default_factory=list)
    driver_cpu_s: float = 0.0
    cluster_cpu_s: float | None = None
    run_dir: str = ""
    stderr: str = ""
    """What `mala-tui run` printed on stderr (the `cli` scenario): Ray's own output never
    belongs there."""
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        lost = set(self.lost_sessions)
        return (
            self.finished == self.sessions
            and lost == set(self.restarted_from_checkpoint)
            and self.lines_lost == 0
            and self.unreadable_lines == 0
            and self.processes_left == 0
        )


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))]


def host_rss_mb() -> list[float]:
    """RSS of every session host process on this machine (Ray names them after the actor)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            if not cmdline.startswith(b"ray::HostActor"):
                continue
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    found.append(int(line.split()[1]) / 1024)
        except OSError:
            continue
    return found


def cpu_of(pids: Sequence[int]) -> dict[int, float]:
    """User + system CPU seconds of each of these processes so far."""
    ticks = os.sysconf("SC_CLK_TCK")
    found = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found[pid] = (int(fields[11]) + int(fields[12])) / ticks
    return found


class CpuMeter:
    """The CPU a cluster's processes used, sampled every second: a process that ends
    (a host released) counts with what it had used at its last sample."""

    def __init__(self, cluster: SimCluster) -> None:
        self._cluster = cluster
        self._start = cpu_of(cluster.processes())
        self._last: dict[int, float] = dict(self._start)

    def sample(self) -> None:
        self._last.update(cpu_of(self._cluster.processes()))

    async def run(self) -> None:
        while True:
            self.sample()
            await asyncio.sleep(1.0)

    @property
    def seconds(self) -> float:
        return sum(self._last.values()) - sum(self._start.values())


def judge(figures: ClusterFigures, events: Sequence[ev.Event], lost_at: float | None) -> None:
    """Fill in what the journal says: who finished, who was lost and how they restarted."""
    ended = {e.session: e for e in events if isinstance(e, ev.SessionEnded)}
    figures.finished = sum(1 for e in ended.values() if e.status is EndStatus.DONE)
    lost = sorted({e.session for e in events if isinstance(e, ev.HostLost)})
    figures.lost_sessions = lost
    figures.restarted_from_checkpoint = sorted(
        {
            e.session
            for e in events
            if isinstance(e, ev.Restarted) and e.trigger == "node_lost" and e.checkpoint_number
        }
    )
    figures.lines_lost = sum(
        1
        for e in events
        if isinstance(e, ev.ErrorRecorded) and "never reached the journal" in e.message
    )
    figures.events = len(events)
    if lost_at is None:
        return
    for name in lost:
        placed = [
            e.at
            for e in events
            if isinstance(e, ev.HostPlaced) and e.session == name and e.attempt > 1
        ]
        restarted = [
            e.at
            for e in events
            if isinstance(e, ev.Restarted) and e.session == name and e.trigger == "node_lost"
        ]
        if placed:
            figures.to_new_host_s.append(round(min(placed) - lost_at, 2))
        if restarted:
            figures.to_restart_s.append(round(min(restarted) - lost_at, 2))


def lines(figures: ClusterFigures) -> list[str]:
    said = [f"{figures.scenario}: {figures.sessions} sessions over {figures.nodes} node(s)"]
    said.append(
        f"  finished {figures.finished}/{figures.sessions}; lost with the node: "
        f"{len(figures.lost_sessions)}, each restarted from a checkpoint: "
        f"{len(figures.restarted_from_checkpoint)}"
    )
    said.append(
        f"  journal lines lost {figures.lines_lost}, unreadable {figures.unreadable_lines}; "
        f"processes left {figures.processes_left}"
    )
    lag = (
        f"; lag p50 {figures.lag_p50_ms} ms, p99 {figures.lag_p99_ms} ms"
        if figures.lag_p50_ms is not None
        else ""
    )
    said.append(
        f"  {figures.events} events in {figures.seconds} s: {figures.throughput} events/s at the "
        f"driver{lag}"
    )
    if figures.host_rss_mb is not None:
        said.append(f"  memory per session host: {figures.host_rss_mb} MB RSS")
    if figures.to_new_host_s:
        new, restart = figures.to_new_host_s, figures.to_restart_s or [0.0]
        said.append(
            f"  node removed -> new host: median {statistics.median(new):.1f} s, "
            f"max {max(new):.1f} s; -> restarted: median {statistics.median(restart):.1f} s, "
            f"max {max(restart):.1f} s"
        )
    if figures.driver_cpu_s:
        said.append(
            f"  CPU: driver {figures.driver_cpu_s} s"
            + (f", cluster {figures.cluster_cpu_s} s" if figures.cluster_cpu_s is not None else "")
        )
    said += [f"  note: {note}" for note in figures.notes]
    said.append(f"  targets {'met' if figures.ok else 'NOT met'}")
    return said
