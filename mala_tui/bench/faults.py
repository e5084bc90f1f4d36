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
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mala_tui.bench.fault_harness import (
    Expect,
    Planned,
    TrialRow,
    agent_processes_under,
    run_trial,
    trial_settings,
)
from mala_tui.loopback import (
    FaultSpec,
    Scenario,
    load_scenario,
)
from mala_tui.loopback.faults import FaultKind
from mala_tui.runtime.journal.writer import EVENTS_FILE, read_events

# -- the trials --------------------------------------------------------------------------------

STALLS: tuple[FaultKind, ...] = ("stall_after_message_start", "stall_before_bytes")


def stall_sessions(sessions: int, over_limit: int) -> list[Planned]:
    """Two stalls each (within max_idle_retries), and `over_limit` sessions with three."""
    base = load_scenario("quickstart")
    planned = []
    for index in range(sessions + over_limit):
        steps = ("s002", "s004", "s006") if index >= sessions else ("s002", "s005")
        faults = tuple(
            FaultSpec(kind=STALLS[(index + n) % 2], at_step=step) for n, step in enumerate(steps)
        )
        planned.append(Planned(f"stall-{index:02d}", base, faults))
    return planned


def error_sessions(kind: FaultKind, sessions: int, storm: int, cli_retries: int) -> list[Planned]:
    """`storm` errors in a row at one step: more than the CLI's own retries, so mala-tui's
    retry policy has to carry the session over the rest of the storm."""
    base = load_scenario("quickstart")
    return [
        Planned(
            f"{kind}-{index:02d}",
            base,
            (FaultSpec(kind=kind, at_step=f"s00{2 + index % 5}", times=storm),),
            {"CLAUDE_CODE_MAX_RETRIES": str(cli_retries)},
        )
        for index in range(sessions)
    ]


def reset_sessions(sessions: int) -> list[Planned]:
    base = load_scenario("quickstart")
    return [
        Planned(
            f"reset-{index:02d}",
            base,
            (FaultSpec(kind="connection_reset", at_step=f"s00{2 + index % 5}", times=2),),
        )
        for index in range(sessions)
    ]


#: Six 1,000-token notes and a digest: past a 19,000-token window partway through.
TIGHT = Scenario.model_validate(
    {
        "name": "tight",
        "task": "Read the six notes and write a digest to DIGEST.md.",
        "goal": "Read notes/n_1..6.txt, write DIGEST.md.",
        "final_answer": "DIGEST.md written.",
        "workspace": {
            "files": [{"path": "notes/n_{i}.txt", "count": 6, "size": 4000, "kind": "text"}]
        },
        "steps": [
            {"tool": "Read", "path": "notes/n_{i}.txt", "count": 6},
            {"tool": "Write", "path": "DIGEST.md", "content": "digest\n"},
        ],
    }
)
TIGHT_WINDOW = 19_000


def too_long_sessions(sessions: int) -> list[Planned]:
    return [Planned(f"tight-{index:02d}", TIGHT) for index in range(sessions)]


# -- kill -9 of mala-tui itself ---------------------------------------------------------------


@dataclass(frozen=True)
class KillRow:
    killed_after_lines: int
    processes_left: int
    journal_lines: int
    journal_lines_lost: int
    torn_last_line: bool
    runs_lists_it: bool
    show_json_ok: bool
    sessions_in_show: int


def kill_mid_run(folder: Path, *, after_lines: int = 40, mala_tui: Sequence[str] = ()) -> KillRow:
    """`kill -9` a headless demo mid-run, then read its journal back with `runs` and `show`."""
    command = list(mala_tui) or [sys.executable, "-m", "mala_tui"]
    data = folder / "data"
    env = dict(os.environ, MALA_TUI_CONFIG_FILE=str(folder / "none.toml"))
    process = subprocess.Popen(
        [*command, "demo", "--headless", "--data-dir", str(data)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        journal: Path | None = None
        while time.monotonic() < deadline and process.poll() is None:
            found = list((data / "runs").glob(f"*/{EVENTS_FILE}")) if data.exists() else []
            if found and _line_count(found[0]) >= after_lines:
                journal = found[0]
                break
            time.sleep(0.05)
        if journal is None:
            raise RuntimeError("the demo wrote too few journal lines before the kill")
        os.kill(process.pid, signal.SIGKILL)
        process.wait(10)
    finally:
        if process.poll() is None:
            process.kill()
    # The agent CLIs lose their parent with it: their stdin closes and they must go.
    left: list[int] = []
    for _ in range(100):
        left = agent_processes_under(data)
        if not left:
            break
        time.sleep(0.1)
    for pid in left:  # reported above; not left running after the trial either
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    raw = journal.read_bytes()
    lines = [line for line in raw.split(b"\n") if line.strip()]
    torn = bool(raw) and not raw.endswith(b"\n")
    contents = read_events(journal)
    lost = len(lines) - len(contents.events) - (1 if torn else 0)
    run_id = journal.parent.name
    runs = subprocess.run(
        [*command, "runs", "--data-dir", str(data)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    show = subprocess.run(
        [*command, "show", run_id, "--json", "--data-dir", str(data)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    sessions = 0
    if show.returncode == 0:
        sessions = len(json.loads(show.stdout).get("sessions", []))
    return KillRow(
        killed_after_lines=len(lines),
        processes_left=len(left),
        journal_lines=len(lines),
        journal_lines_lost=lost,
        torn_last_line=torn,
        runs_lists_it=runs.returncode == 0 and run_id in runs.stdout,
        show_json_ok=show.returncode == 0,
        sessions_in_show=sessions,
    )


def _line_count(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except OSError:
        return 0


# -- the command -------------------------------------------------------------------------------


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
    from mala_tui.bench import own_faults

    # One idle timeout for every trial: a storm's retries, a resumed CLI starting on a
    # loaded machine, are not stalls, and must not be taken for one.
    settings = trial_settings(idle_timeout_seconds=scale.idle_timeout)
    rows = [
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
        (
            await own_faults.hostile_endpoint_trial(root / "hostile", scale.hostile_each),
            Expect(scale.hostile_each, scale.hostile_each, (own_faults.AUTH_FAILED,)),
        ),
        (
            await own_faults.disk_full_trial(root / "disk_full", scale.disk_sessions),
            Expect(0, scale.disk_sessions, (own_faults.DISK_FULL_REASON,)),
        ),
    ]
    for number in (signal.SIGTERM, signal.SIGHUP):
        row = await asyncio.to_thread(
            own_faults.signal_mid_run, root / f"signal-{number.name}", number
        )
        rows.append((row, Expect(0, own_faults.DEMO_SESSIONS, (STOPPED_BY_SIGNAL,))))
    rows += await stop_trials(scale, root)
    rows.append(
        (await own_faults.poisoned_journal_trial(root / "poisoned"), Expect(1, 0)),
    )
    rows.append(
        (
            await own_faults.many_tasks_trial(root / "many", scale.many_tasks),
            Expect(scale.many_tasks, 0),
        )
    )
    return rows


async def stop_trials(scale: Scale, root: Path) -> list[tuple[TrialRow, Expect]]:
    """Stops that must stay resumable: Ctrl-C (once, and twice to hurry it) mid-run, and
    SIGTERM during start-up; `resume` must then finish every session."""
    from mala_tui.bench import own_faults

    sessions = scale.stop_sessions
    rows = []
    for presses in (1, 2):
        row = await own_faults.ctrl_c_then_resume_trial(
            root / f"ctrl-c-{presses}", sessions, presses=presses
        )
        rows.append((row, Expect(sessions, 0)))
    row = await own_faults.sigterm_during_start_up_trial(root / "start-up", sessions + 1)
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


def kills_table(kills: Sequence[KillRow]) -> str:
    lines = [
        "| kill -9 after | processes left | journal lines lost | torn last line "
        "| `runs` lists it | `show --json` | sessions shown |",
        "| ---: | ---: | ---: | --- | --- | --- | ---: |",
    ]
    for k in kills:
        lines.append(
            f"| {k.killed_after_lines} lines | {k.processes_left} | {k.journal_lines_lost} "
            f"| {'yes' if k.torn_last_line else 'no'} | {'yes' if k.runs_lists_it else 'NO'} "
            f"| {'ok' if k.show_json_ok else 'FAILED'} | {k.sessions_in_show} |"
        )
    return "\n".join(lines)


#: The property tests that fuzz every parser of outside input (run from a checkout).
FUZZ_TESTS = (
    "tests/faults/test_fuzz.py",
    "tests/core/test_checkpoint.py",
    "tests/core/test_usage.py",
    "tests/core/test_masking.py",
    "tests/core/test_transcript.py",
    "tests/loopback/test_tokens.py",
)
_TEST_HEADER = re.compile(r"^tests/\S+::(\S+):$", re.MULTILINE)
_PHASE_COUNTS = re.compile(r"- (\d+) passing, (\d+) failing")


def fuzz_counts(statistics: str) -> list[tuple[str, int, int]]:
    """(test, passing, failing) summed over the phases of hypothesis' statistics output."""
    headers = list(_TEST_HEADER.finditer(statistics))
    counts = []
    for index, header in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(statistics)
        phases = _PHASE_COUNTS.findall(statistics[header.end() : end])
        counts.append(
            (header.group(1), sum(int(p) for p, _ in phases), sum(int(f) for _, f in phases))
        )
    return counts


def run_fuzz(checkout: Path) -> tuple[str, bool]:
    """The fuzz tests at 5,000 examples each (hypothesis profile "long"); a table, and ok."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--hypothesis-show-statistics",
            *FUZZ_TESTS,
        ],
        cwd=checkout,
        env=dict(os.environ, HYPOTHESIS_PROFILE="long"),
        capture_output=True,
        text=True,
        check=False,
    )
    rows = ["| fuzzed | examples | crashes or losses |", "| --- | ---: | ---: |"]
    for test, passing, failing in fuzz_counts(done.stdout):
        rows.append(f"| {test} | {passing} | {failing} |")
    if done.returncode != 0:
        rows.append(f"\n{done.stdout[-3000:]}")
    return "\n".join(rows), done.returncode == 0


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
