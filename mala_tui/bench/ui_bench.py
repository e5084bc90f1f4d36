"""`python -m mala_tui.bench ui`: what the app costs while 50 sessions update 4 times a second.

Not a test: a measurement. The real app and the real Supervisor run on one
event loop; simulated sessions feed the supervisor's sink (`record`) with
usage, masks, checkpoints and restarts at the given rate, staggered as real
agents are (climbing from 5% to the hard threshold in 20 to 60 s, far faster
than real agents, so zones and states change often). Frames are rendered to a
terminal driver that discards the bytes, so rendering and escape-code output
are paid for as on a real terminal.

It prints CPU use (process CPU time over wall time: 100% is one whole core)
and the event loop's lag (how late a 10 ms sleep wakes): p50, p99, max. The
same load is then run without the app, so the app's own share can be read off.
Aims (issue 5): at most 15% of a core and 30 ms lag p99. `--naive` swaps in a
card of Static and ProgressBar widgets, for comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import ClassVar, Final

from textual.app import ComposeResult
from textual.drivers.headless_driver import HeadlessDriver
from textual.pilot import Pilot
from textual.strip import Strip
from textual.widgets import ProgressBar, Static

from mala_tui.config import Settings
from mala_tui.core import events as ev
from mala_tui.core.checkpoint import CheckpointOrigin
from mala_tui.core.permissions import AnsweredBy
from mala_tui.core.phases import Phase, Trigger
from mala_tui.core.session_records import SessionSnapshot
from mala_tui.core.usage import UsageSource
from mala_tui.prompt_files import load_prompts
from mala_tui.runtime.backends.scripted import ScriptedBackend
from mala_tui.runtime.run.run_types import RunResult
from mala_tui.runtime.run.supervisor import Supervisor
from mala_tui.ui.app import MalaApp
from mala_tui.ui.format import phase_label
from mala_tui.ui.screens.dashboard import DashboardScreen
from mala_tui.ui.widgets.session_card import SessionCard

WINDOW: Final = 200_000
LAG_PROBE_SECONDS: Final = 0.010
TICK_SECONDS: Final = 0.025
"""The load generator wakes this often and records the updates that are due."""


class _DiscardingTerminal(HeadlessDriver):
    """A headless driver that claims to be a terminal, so the app renders and writes every frame."""

    written = 0

    @property
    def is_headless(self) -> bool:
        return False

    def write(self, data: str) -> None:
        _DiscardingTerminal.written += len(data)


class _IdleSupervisor(Supervisor):
    """A Supervisor with no agents: the benchmark records the sessions' events itself."""

    def __init__(self) -> None:
        super().__init__(
            settings=Settings(), backend=ScriptedBackend([]), prompts=load_prompts(), journal=None
        )
        self._stopped = asyncio.Event()

    async def run(self) -> RunResult:
        await self._stopped.wait()
        return self.result()

    def stop_all(self) -> None:
        self._stopped.set()

    def stop_for(self, cause: str) -> None:
        self.stop_all()

    def hurry(self) -> None:
        pass  # no agent processes to kill


@dataclass
class _SimulatedSession:
    """Context that climbs, is masked in the soft zone and restarts in the hard one."""

    name: str
    pressure: float
    step: float
    phase: Phase = Phase.RUNNING
    restarts: int = 0
    masked: int = 0
    checkpoints: int = 0

    def update(self, now: float) -> list[ev.Event]:
        out: list[ev.Event] = []

        def phase(after: Phase, trigger: Trigger) -> None:
            out.append(
                ev.PhaseChanged(
                    at=now, session=self.name, before=self.phase, after=after, trigger=trigger
                )
            )
            self.phase = after

        self.pressure += self.step
        before = round(self.pressure * WINDOW)
        if self.pressure >= 0.9:
            phase(Phase.WINDING_DOWN, Trigger.HARD_PRESSURE)
            phase(Phase.CHECKPOINTING, Trigger.WIND_DOWN_DONE)
            self.checkpoints += 1
            out.append(
                ev.CheckpointSaved(
                    at=now,
                    session=self.name,
                    number=self.checkpoints,
                    origin=CheckpointOrigin.TAGGED,
                    text="## Goal\nKeep going.",
                    path="bench.md",
                )
            )
            phase(Phase.RESTARTING, Trigger.CHECKPOINT_ACCEPTED)
            self.restarts += 1
            out.append(
                ev.Restarted(
                    at=now,
                    session=self.name,
                    continuation=self.restarts,
                    reason="hard threshold",
                    tokens_before=before,
                    checkpoint_number=self.checkpoints,
                    approved_by=AnsweredBy.AUTO,
                )
            )
            phase(Phase.RUNNING, Trigger.RESTARTED)
            self.pressure = 0.05
        elif self.pressure >= 0.7 and self.phase is Phase.RUNNING:
            phase(Phase.MASKING, Trigger.SOFT_PRESSURE)
            self.masked += 3
            out.append(
                ev.MaskApplied(
                    at=now,
                    session=self.name,
                    count=3,
                    tool_use_ids=("a", "b", "c"),
                    placeholders=("[Read result masked -- a.py, 10 lines]",) * 3,
                    estimated_tokens=20_000,
                    tokens_before=before,
                    total_masked=self.masked,
                )
            )
            phase(Phase.RUNNING, Trigger.MASK_APPLIED)
            self.pressure -= 0.1
        out.append(
            ev.UsageRecorded(
                at=now,
                session=self.name,
                tokens=round(self.pressure * WINDOW),
                window=WINDOW,
                source=UsageSource.PER_CALL,
            )
        )
        return out


@dataclass
class UiFigures:
    cpu: float
    lag_p50: float
    lag_p99: float
    lag_max: float
    updates: int
    seconds: float
    bytes_written: int = 0


@dataclass
class _Load:
    """Drives the sessions: each updates `rate` times a second, at its own offset."""

    supervisor: Supervisor
    sessions: int
    rate: float
    simulated: list[_SimulatedSession] = field(default_factory=list)

    def start(self) -> None:
        self.simulated = [
            _SimulatedSession(
                f"session-{index:03d}", 0.05 + (index % 17) * 0.04, 0.004 + (index % 5) * 0.002
            )
            for index in range(self.sessions)
        ]
        now = time.time()
        names = tuple(s.name for s in self.simulated)
        self.supervisor.record(
            ev.RunStarted(at=now, run_id="bench", sessions=names, mode=ev.RunMode.BENCH)
        )
        for session in self.simulated:
            self.supervisor.record(
                ev.SessionStarted(
                    at=now,
                    session=session.name,
                    task=f"Simulated task for {session.name}",
                    cwd="/tmp",
                    window=WINDOW,
                    soft_threshold=0.7,
                    hard_threshold=0.9,
                    max_restarts=1_000,
                    require_approval=False,
                )
            )

    async def run(self, warmup: float, seconds: float) -> UiFigures:
        loop = asyncio.get_running_loop()
        period = 1 / self.rate
        started = loop.time()
        due = [started + period * index / self.sessions for index in range(self.sessions)]
        lags: list[float] = []
        measuring = asyncio.Event()
        done = asyncio.Event()

        async def probe() -> None:
            while not done.is_set():
                start = loop.time()
                await asyncio.sleep(LAG_PROBE_SECONDS)
                if measuring.is_set():
                    lags.append(loop.time() - start - LAG_PROBE_SECONDS)

        probing = asyncio.create_task(probe())
        updates = 0
        cpu_start = wall_start = 0.0
        bytes_start = 0
        end_warmup = started + warmup
        end = end_warmup + seconds
        while (now := loop.time()) < end:
            if not measuring.is_set() and now >= end_warmup:
                measuring.set()
                cpu_start, wall_start = time.process_time(), time.perf_counter()
                bytes_start = _DiscardingTerminal.written
            for index, session in enumerate(self.simulated):
                if due[index] <= now:
                    due[index] += period
                    for event in session.update(time.time()):
                        self.supervisor.record(event)
                    updates += measuring.is_set()
            await asyncio.sleep(TICK_SECONDS)
        cpu, wall = time.process_time() - cpu_start, time.perf_counter() - wall_start
        done.set()
        await probing
        ordered = sorted(lags)
        return UiFigures(
            cpu=cpu / wall,
            lag_p50=statistics.median(ordered),
            lag_p99=ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
            lag_max=ordered[-1],
            updates=updates,
            seconds=wall,
            bytes_written=_DiscardingTerminal.written - bytes_start,
        )


class _NaiveCard(SessionCard):
    """The card as first sketched: Static labels and a ProgressBar, each update a layout pass."""

    def compose(self) -> ComposeResult:
        yield Static(id="naive-task")
        yield Static(id="naive-state")
        yield ProgressBar(total=100, show_eta=False)
        yield Static(id="naive-counters")
        yield Static(id="naive-trend")

    def _show(self, snap: SessionSnapshot) -> None:
        if not self.is_mounted:
            return
        self.query_one("#naive-task", Static).update(snap.task)
        self.query_one("#naive-state", Static).update(phase_label(snap.state))
        self.query_one(ProgressBar).update(progress=round(snap.pressure * 100))
        self.query_one("#naive-counters", Static).update(
            f"masked {snap.masked_session} restarts {snap.restarts}"
        )
        self.query_one("#naive-trend", Static).update(" ".join(f"{p:.0%}" for p in snap.trend[-6:]))

    def on_mount(self) -> None:
        if self.snapshot is not None:
            self._show(self.snapshot)

    def render_line(self, y: int) -> Strip:
        return Strip.blank(self.size.width, self.rich_style)  # the children draw it all


class _NaiveDashboard(DashboardScreen):
    card_class: ClassVar[type[SessionCard]] = _NaiveCard
    repaint_seconds: ClassVar[float] = 0.0


class _NaiveApp(MalaApp):
    DASHBOARD: ClassVar[type[DashboardScreen]] = _NaiveDashboard


async def _with_app(
    app: MalaApp, size: tuple[int, int], measure: Callable[[], Awaitable[UiFigures]]
) -> UiFigures:
    app.driver_class = _DiscardingTerminal
    figures: list[UiFigures] = []

    async def once_ready(pilot: Pilot[object]) -> None:
        await pilot.pause()
        try:
            figures.append(await measure())
        finally:
            app.exit()

    await app.run_async(headless=False, size=size, auto_pilot=once_ready)
    if app.return_code or not figures:
        raise RuntimeError(f"the app failed (exit status {app.return_code}); see above")
    if not figures[0].bytes_written:
        raise RuntimeError("the app drew nothing while measured: a widget failed to render?")
    return figures[0]


async def run(
    sessions: int,
    rate: float,
    seconds: float,
    warmup: float,
    *,
    naive: bool = False,
    size: tuple[int, int] = (200, 60),
    with_app: bool = True,
    repaint: float | None = None,
) -> UiFigures:
    """Drive the load for `seconds` after `warmup`; with the app, or alone for the baseline.

    `repaint` overrides the dashboard's repaint interval (0: on every update).
    """
    supervisor = _IdleSupervisor()
    load = _Load(supervisor, sessions, rate)
    if not with_app:
        load.start()
        return await load.run(warmup, seconds)
    app_class: type[MalaApp] = _NaiveApp if naive else MalaApp
    if repaint is not None:
        screen = type("RepaintDashboard", (DashboardScreen,), {"repaint_seconds": repaint})
        app_class = type("RepaintApp", (app_class,), {"DASHBOARD": screen})
    app = app_class(supervisor, settings=Settings())

    async def measure() -> UiFigures:
        load.start()
        return await load.run(warmup, seconds)

    return await _with_app(app, size, measure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mala_tui.bench ui", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--rate", type=float, default=4.0, help="updates a second per session")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--size", default="200x60", help="terminal size, COLUMNSxLINES")
    parser.add_argument("--naive", action="store_true", help="cards of Static and ProgressBar")
    parser.add_argument(
        "--repaint",
        type=float,
        default=None,
        help="seconds between repaints of gauges and trends (0: on every update); "
        "default: the dashboard's own",
    )
    args = parser.parse_args(argv)
    columns, lines = (int(part) for part in args.size.split("x"))
    figures = asyncio.run(
        run(
            args.sessions,
            args.rate,
            args.seconds,
            args.warmup,
            naive=args.naive,
            size=(columns, lines),
            repaint=args.repaint,
        )
    )
    baseline = asyncio.run(
        run(args.sessions, args.rate, min(args.seconds, 10.0), 1.0, with_app=False)
    )
    card = "naive Static+ProgressBar card" if args.naive else "SessionCard"
    if args.repaint is not None:
        card += (
            f", repaint every {args.repaint:g} s" if args.repaint else ", repaint on every update"
        )
    print(
        f"ui benchmark: {args.sessions} sessions x {args.rate:g} updates/s for "
        f"{figures.seconds:.1f} s, {card}, {columns}x{lines}, "
        f"python {platform.python_version()} on {platform.machine()}"
    )
    print(f"updates recorded     {figures.updates} ({figures.updates / figures.seconds:.0f}/s)")
    print(f"cpu                  {figures.cpu:.1%} of one core   (aim <= 15%)")
    print(f"  the load alone     {baseline.cpu:.1%} (supervisor and simulated sessions, no app)")
    print(f"event-loop lag p50   {figures.lag_p50 * 1000:.1f} ms")
    print(f"event-loop lag p99   {figures.lag_p99 * 1000:.1f} ms   (aim <= 30 ms)")
    print(f"event-loop lag max   {figures.lag_max * 1000:.1f} ms")
    print(f"terminal output      {figures.bytes_written / figures.seconds / 1024:.0f} KiB/s")
    return 0
