"""The fault suite: what goes wrong on the way to the model, and what mala-tui makes of it.

Each trial runs real Claude Code sessions under the supervisor against a loopback model
that misbehaves on cue (stalls, 529 storms, 500s, connection resets, a window too small),
and sorts every session into one of three outcomes:

- recovered: the session finished its task (the model gave its final answer);
- failed fast: the session ended failed, with a reason, within its bound;
- lost: anything else (a silent hang, a "done" without the work, an exception). Must be 0.

It also counts the agent processes left alive afterwards (found by the trial's folder in
their environment, not only by the PIDs the supervisor knows) and the journal lines lost
(written by the journal but not read back). Both must be 0. A journal is complete when
every session has its `session_ended` and the run its `run_ended`.

Then a hostile endpoint (a broken stream of terminal escapes and a key, a 401) and the
faults of mala-tui's own world: the disk filling up mid-run, SIGTERM and SIGHUP mid-run,
Ctrl-C then resume, SIGTERM during start-up then resume, a poisoned journal line, a
hundred tasks at once. A "failed fast" session there is one stopped for the
designed reason (the full disk, the signal); after a resume, recovered is finished.

Each trial says what it expects (how many recovered, how many failed fast, and which
reasons are designed ones); the command exits 1 when any trial differs, loses anything,
leaves a process or an incomplete journal. An internal error is lost, never failed fast.

    python -m mala_tui.bench faults            # the long suite: dozens of each fault,
                                               # then 5,000 fuzzed inputs per parser
    python -m mala_tui.bench faults --quick    # the small one the tests run in CI
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mala_tui.bench.fault_harness import Expect, TrialRow, run_trial, trial_settings
from mala_tui.bench.fuzzing import run_fuzz
from mala_tui.bench.kill_trial import kill_mid_run, kills_table
from mala_tui.bench.model_faults import (
    TIGHT_WINDOW,
    error_sessions,
    reset_sessions,
    stall_sessions,
    too_long_sessions,
)


@dataclass(frozen=True)
class Scale:
    stall_sessions: int
    stall_over_limit: int
    error_sessions: int
    storm: int
    reset_sessions: int
    too_long_sessions: int
    kills: int
    idle_timeout: float
    disk_sessions: int = 2
    many_tasks: int = 100
    stop_sessions: int = 2
    """Sessions of the stop trials (Ctrl-C then resume, SIGTERM during start-up)."""
    hostile_each: int = 1
    """Sessions of the hostile endpoint trial: this many broken streams, and as many 401s."""


QUICK = Scale(3, 1, 1, 4, 1, 1, 1, idle_timeout=4.0)
LONG = Scale(
    12, 2, 6, 6, 6, 4, 3, idle_timeout=10.0, disk_sessions=4, stop_sessions=4, hostile_each=3
)

#: The designed reasons a session of these trials may fail fast for.
IDLE_LIMIT = r"^idle for .* max retries \(\d+\) exceeded$"
STOPPED_BY_SIGNAL = r"^stopped by SIG(TERM|HUP)$"


async def run_suite(scale: Scale, root: Path) -> list[tuple[TrialRow, Expect]]:
    """Every trial, each with what it must come to."""
    return [*await _model_trials(scale, root), *await _own_world_trials(scale, root)]


async def _model_trials(scale: Scale, root: Path) -> list[tuple[TrialRow, Expect]]:
    """The trials of a model that misbehaves on cue."""
    # One idle timeout for every trial: a storm's retries, a resumed CLI starting on a
    # loaded machine, are not stalls, and must not be taken for one.
    settings = trial_settings(idle_timeout_seconds=scale.idle_timeout)
    return [
        (
            await run_trial(
                "stalls (after message_start / before any byte)",
                stall_sessions(scale.stall_sessions, scale.stall_over_limit),
                root / "stalls",
                settings=settings,
            ),
            Expect(scale.stall_sessions, scale.stall_over_limit, (IDLE_LIMIT,)),
        ),
        (
            await run_trial(
                f"529 storms ({scale.storm} in a row, CLI retries 2)",
                error_sessions("overloaded", scale.error_sessions, scale.storm, 2),
                root / "overloaded",
                settings=settings,
            ),
            Expect(scale.error_sessions, 0),
        ),
        (
            await run_trial(
                f"500s ({scale.storm} in a row, CLI retries 2)",
                error_sessions("api_error", scale.error_sessions, scale.storm, 2),
                root / "api_error",
                settings=settings,
            ),
            Expect(scale.error_sessions, 0),
        ),
        (
            await run_trial(
                "connection reset mid-stream (2 in a row)",
                reset_sessions(scale.reset_sessions),
                root / "reset",
                settings=settings,
            ),
            Expect(scale.reset_sessions, 0),
        ),
        (
            await run_trial(
                f"prompt too long (a {TIGHT_WINDOW:,}-token window)",
                too_long_sessions(scale.too_long_sessions),
                root / "too_long",
                window=TIGHT_WINDOW,
                settings=settings,
            ),
            Expect(scale.too_long_sessions, 0),
        ),
    ]


async def _own_world_trials(scale: Scale, root: Path) -> list[tuple[TrialRow, Expect]]:
    """The trials of a hostile endpoint and of mala-tui's own world."""
    from mala_tui.bench.own_faults import many_tasks, poisoned_journal, signals
    from mala_tui.bench.own_faults.disk_full import DISK_FULL_REASON, disk_full_trial
    from mala_tui.bench.own_faults.hostile_endpoint import AUTH_FAILED, hostile_endpoint_trial

    rows = [
        (
            await hostile_endpoint_trial(root / "hostile", scale.hostile_each),
            Expect(scale.hostile_each, scale.hostile_each, (AUTH_FAILED,)),
        ),
        (
            await disk_full_trial(root / "disk_full", scale.disk_sessions),
            Expect(0, scale.disk_sessions, (DISK_FULL_REASON,)),
        ),
    ]
    for number in (signal.SIGTERM, signal.SIGHUP):
        row = await asyncio.to_thread(
            signals.signal_mid_run, root / f"signal-{number.name}", number
        )
        rows.append((row, Expect(0, signals.DEMO_SESSIONS, (STOPPED_BY_SIGNAL,))))
    rows += await stop_trials(scale, root)
    rows.append(
        (await poisoned_journal.poisoned_journal_trial(root / "poisoned"), Expect(1, 0)),
    )
    rows.append(
        (
            await many_tasks.many_tasks_trial(root / "many", scale.many_tasks),
            Expect(scale.many_tasks, 0),
        )
    )
    return rows


async def stop_trials(scale: Scale, root: Path) -> list[tuple[TrialRow, Expect]]:
    """Stops that must stay resumable: Ctrl-C (once, and twice to hurry it) mid-run, and
    SIGTERM during start-up; `resume` must then finish every session."""
    from mala_tui.bench.own_faults.stops import (
        ctrl_c_then_resume_trial,
        sigterm_during_start_up_trial,
    )

    sessions = scale.stop_sessions
    rows = []
    for presses in (1, 2):
        row = await ctrl_c_then_resume_trial(root / f"ctrl-c-{presses}", sessions, presses=presses)
        rows.append((row, Expect(sessions, 0)))
    row = await sigterm_during_start_up_trial(root / "start-up", sessions + 1)
    rows.append((row, Expect(sessions + 1, 0)))
    return rows


def rows_table(rows: Sequence[TrialRow], expected: Sequence[Expect] = ()) -> str:
    """The trials as a markdown table; with expectations, a column says whether each met its."""
    lines = [
        "| fault | sessions | faults injected | recovered | failed fast (reason) | lost "
        "| processes left | journal lines lost | journal complete | wall time |"
        + (" as designed |" if expected else ""),
        "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- | ---: |"
        + (" --- |" if expected else ""),
    ]
    for index, row in enumerate(rows):
        reasons = "; ".join(row.reasons)
        failed = f"{row.failed_fast}" + (f" ({reasons})" if reasons else "")
        line = (
            f"| {row.fault} | {row.sessions} | {row.injected} | {row.recovered} | {failed} "
            f"| {row.lost} | {row.processes_left} | {row.journal_lines_lost} "
            f"| {'yes' if row.journal_complete else 'NO'} | {row.wall_s} s |"
        )
        if expected:
            misses = expected[index].misses(row)
            line += " yes |" if not misses else f" NO: {'; '.join(misses)} |"
        lines.append(line)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mala_tui.bench faults")
    parser.add_argument("--quick", action="store_true", help="the small suite CI runs")
    parser.add_argument("--no-fuzz", action="store_true", help="skip the long fuzzing")
    parser.add_argument("--keep", type=Path, help="keep the trials' folders here")
    args = parser.parse_args(argv)
    scale = QUICK if args.quick else LONG
    root = args.keep or Path(tempfile.mkdtemp(prefix="mala-tui-faults-"))
    root.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    try:
        trials = asyncio.run(run_suite(scale, root))
        kills = [
            kill_mid_run(root / f"kill-{n}", after_lines=30 + 40 * n) for n in range(scale.kills)
        ]
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    rows = [row for row, _ in trials]
    expected = [expect for _, expect in trials]
    print(rows_table(rows, expected))
    print()
    print(kills_table(kills))
    fuzz_ok = True
    checkout = Path(__file__).resolve().parents[2]
    if not args.quick and not args.no_fuzz and (checkout / "tests").is_dir():
        table, fuzz_ok = run_fuzz(checkout)
        print()
        print(table)
    print(f"\n{time.monotonic() - started:.0f} s in all", file=sys.stderr)
    bad = (
        sum(len(expect.misses(row)) for row, expect in trials)
        + sum(k.processes_left + k.journal_lines_lost for k in kills)
        + sum(1 for k in kills if not (k.runs_lists_it and k.show_json_ok))
    )
    return 0 if bad == 0 and fuzz_ok else 1
