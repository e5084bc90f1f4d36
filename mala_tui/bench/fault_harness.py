"""The fault trials' harness: run planned sessions against a misbehaving loopback model,
sort each into recovered, failed fast or lost, and find what a trial left behind.

The suite (bench.faults) and the trials of mala-tui's own world (bench.own_faults) both
run on it; neither imports the other's trials for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mala_tui.bench.loopback_session import loopback_spec, loopback_supervisor
from mala_tui.config import Settings
from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.loopback import (
    FaultSpec,
    LoopbackServer,
    Scenario,
    materialize_workspace,
)
from mala_tui.runtime.journal.writer import EVENTS_FILE, RunJournal, new_run_id, read_events
from mala_tui.runtime.run.supervisor import Supervisor

#: The settings every trial runs with: short timeouts so that stalls are seen in seconds.
#: Not too short: a CLI starved of CPU by a dozen others can take seconds to answer, and
#: a timeout shorter than that retries a session that was never stuck.
TRIAL_IDLE = {
    "idle_timeout_seconds": 4.0,
    "idle_retry_backoff": (0.0, 0.5, 1.0),
    "session_timeout_seconds": 240.0,
}
#: A trial that has not ended by then has lost its sessions.
TRIAL_DEADLINE_S = 420.0


@dataclass(frozen=True)
class Planned:
    """One session of a trial: its scenario, the faults its model meets, extra env."""

    name: str
    scenario: Scenario
    faults: tuple[FaultSpec, ...] = ()
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TrialRow:
    """One trial's figures."""

    fault: str
    sessions: int
    injected: int
    """Faults that fired at the model (or the refusals of a too-small window)."""
    recovered: int
    failed_fast: int
    lost: int
    reasons: tuple[str, ...]
    processes_left: int
    journal_lines_lost: int
    wall_s: float
    journal_complete: bool = True
    """Every session ended in the journal (`session_ended`), and the run (`run_ended`)."""
    problems: tuple[str, ...] = ()
    """What else broke the trial's contract (a wrong exit status, a command that failed)."""


@dataclass(frozen=True)
class Expect:
    """What a trial must come to: counts (None: the rest) and the designed reasons."""

    recovered: int | None
    failed_fast: int
    reasons: tuple[str, ...] = ()
    """Regular expressions; every failed-fast reason must match one."""

    def misses(self, row: TrialRow) -> list[str]:
        """Where `row` differs from this expectation; empty when it meets it."""
        found = []
        recovered = row.sessions - self.failed_fast if self.recovered is None else self.recovered
        if (row.recovered, row.failed_fast) != (recovered, self.failed_fast):
            found.append(
                f"expected {recovered} recovered and {self.failed_fast} failed fast, "
                f"got {row.recovered} and {row.failed_fast}"
            )
        for reason in row.reasons:
            if not any(re.search(pattern, reason) for pattern in self.reasons):
                found.append(f"not a designed reason: {reason}")
        if row.lost or row.processes_left or row.journal_lines_lost or not row.journal_complete:
            found.append("lost sessions, processes left, lines lost or an incomplete journal")
        found.extend(row.problems)
        return found


def agent_processes_under(folder: Path) -> list[int]:
    """Live processes whose environment points into `folder` (the CLIs a trial started)."""
    marker = str(folder).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in environ and state != "Z":
            found.append(int(entry.name))
    return found


def trial_settings(**idle: Any) -> Settings:
    settings = Settings()
    return settings.model_copy(
        update={"idle": settings.idle.model_copy(update={**TRIAL_IDLE, **idle})}
    )


def sort_outcome(
    status: EndStatus, reason: str, finished: bool, designed_stop: str = ""
) -> Literal["recovered", "failed fast", "lost"]:
    """One session's outcome. Done without the model's final answer is lost (a "done"
    without the work), and so is a failure for an internal error: a bug is not a design."""
    if status is EndStatus.DONE and finished:
        return "recovered"
    if status is EndStatus.FAILED and reason.strip() and not reason.startswith("internal error"):
        return "failed fast"
    if designed_stop and status is EndStatus.STOPPED and designed_stop in reason:
        return "failed fast"
    return "lost"


def journal_complete(events: Sequence[ev.Event], sessions: Sequence[str]) -> bool:
    ended = {e.session for e in events if isinstance(e, ev.SessionEnded)}
    return bool(events) and isinstance(events[-1], ev.RunEnded) and set(sessions) <= ended


async def run_trial(
    fault: str,
    planned: Sequence[Planned],
    folder: Path,
    *,
    window: int | None = None,
    settings: Settings | None = None,
    data_dir: Path | None = None,
    journal_class: type[RunJournal] = RunJournal,
    meanwhile: Callable[[Supervisor], Awaitable[None]] | None = None,
    designed_stop: str = "",
    response_delay_s: float = 0.0,
) -> TrialRow:
    """Run the sessions side by side on one loopback model and sort their outcomes.

    `meanwhile` runs beside the sessions (a fault of the trial's own: filling the disk);
    a session stopped with `designed_stop` in the run's stop cause counts as failed fast.
    """
    settings = settings or trial_settings()
    scenarios = {p.name: p.scenario for p in planned}
    workspaces = {p.name: folder / p.name / "workspace" for p in planned}
    for p in planned:
        workspaces[p.name].mkdir(parents=True)
        materialize_workspace(p.scenario, workspaces[p.name])
    journal = journal_class.create(
        data_dir or folder / "data", new_run_id(), {"mode": "faults", "fault": fault}
    )
    server_options: dict[str, Any] = {
        "workspace": workspaces,
        "response_delay_s": response_delay_s,
    }
    if window is not None:
        server_options["window"] = window
    server = LoopbackServer(scenarios, **server_options)
    started = time.monotonic()
    async with server:
        for p in planned:
            for spec in p.faults:
                server.add_fault(spec, route=p.name)
        supervisor = loopback_supervisor(settings, journal, ev.RunMode.FAULTS)
        for p in planned:
            supervisor.add_session(
                loopback_spec(
                    p.name,
                    p.scenario,
                    workspaces[p.name],
                    server.url_for(p.name),
                    folder / p.name / "home",
                    settings=settings,
                    env=p.env,
                )
            )
        try:
            await _run_within_deadline(supervisor, meanwhile)
        finally:
            journal.close()
    wall = time.monotonic() - started
    finished = {r.route for r in server.request_log if r.response_kind == "final"}
    injected = sum(1 for r in server.request_log if r.fault or r.response_kind == "error")
    recovered, failed, lost, reasons = _outcomes(supervisor, finished, designed_stop)
    contents = read_events(journal.directory / EVENTS_FILE)
    await asyncio.sleep(0.2)  # a process reaped a moment ago may still be listed
    left = sorted(set(agent_processes_under(folder)) | set(supervisor.alive_pids()))
    return TrialRow(
        fault=fault,
        sessions=len(planned),
        injected=injected,
        recovered=recovered,
        failed_fast=failed,
        lost=lost,
        reasons=tuple(sorted(set(reasons))),
        processes_left=len(left),
        journal_lines_lost=journal.lines_written - len(contents.events),
        wall_s=round(wall, 1),
        journal_complete=journal_complete(contents.events, list(supervisor.runners)),
    )


async def _run_within_deadline(
    supervisor: Supervisor, meanwhile: Callable[[Supervisor], Awaitable[None]] | None
) -> None:
    """The run, with `meanwhile` beside it, cancelled past the trial's deadline (its
    sessions stop on the way out)."""
    run = asyncio.ensure_future(supervisor.run())
    side = asyncio.ensure_future(meanwhile(supervisor)) if meanwhile else None
    try:
        await asyncio.wait_for(asyncio.shield(run), TRIAL_DEADLINE_S)
    except TimeoutError:
        run.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await run
    finally:
        if side is not None:
            side.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await side


def _outcomes(
    supervisor: Supervisor, finished: set[str], designed_stop: str
) -> tuple[int, int, int, list[str]]:
    """Sessions recovered, failed fast and lost, and the reasons of the failed and the lost
    (`finished`: the routes whose model gave its final answer)."""
    recovered = failed = lost = 0
    reasons: list[str] = []
    result = supervisor.result()
    for name in supervisor.runners:
        status, reason = result.statuses[name], result.reasons[name]
        outcome = sort_outcome(status, reason, name in finished, designed_stop)
        if outcome == "recovered":
            recovered += 1
        elif outcome == "failed fast":
            failed += 1
            reasons.append(_without_paths(reason))
        else:
            lost += 1
            reasons.append(f"LOST {name}: {status} {reason}")
    return recovered, failed, lost, reasons


def _without_paths(reason: str) -> str:
    """A reason with its file paths cut (they differ per trial folder): `(.../events.jsonl)`."""
    return re.sub(r"\(/(?:[^()]*/)?([^()/]+)\)", r"(…/\1)", reason)
