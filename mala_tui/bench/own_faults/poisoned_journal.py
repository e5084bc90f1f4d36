"""A poisoned journal: lines of every wrong shape spliced into a finished run's journal.

``runs`` and ``show --json`` must read every good line and name every bad one.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mala_tui.bench.fault_harness import Planned, TrialRow, journal_complete, run_trial
from mala_tui.loopback import load_scenario
from mala_tui.runtime.journal.writer import EVENTS_FILE, read_events

#: One line of each wrong shape: unhashable and missing types, wrong field types, out of
#: range values, escapes, not an object, not JSON, nested past any parser's patience.
POISON = (
    '{"type":["x"]}',
    '{"type":{}}',
    '{"type":null,"at":1}',
    '{"at":1.0,"session":"s"}',
    '{"type":"run_started","at":1e999,"run_id":[],"sessions":"x","mode":1}',
    '{"type":"session_ended","session":"x","status":"exploded","at":0}',
    '{"type":"usage","at":"soon","session":{"a":1},"tokens":-1,"window":0,"source":"x"}',
    '{"type":"\\u001b]0;owned\\u0007"}',
    '[{"type":"run_ended"}]',
    '"run_ended"',
    "null",
    "{not json",
    "[" * 100_000 + "]" * 100_000,
)


async def poisoned_journal_trial(folder: Path, *, mala_tui: Sequence[str] = ()) -> TrialRow:
    """A real finished run, its journal spliced with POISON; then `runs` and `show --json`."""
    base = load_scenario("quickstart")
    made = await run_trial("poisoned (the run)", [Planned("poisoned-00", base)], folder)
    (run,) = list((folder / "data" / "runs").iterdir())
    return await asyncio.to_thread(_read_poisoned, folder, run, made, mala_tui)


def _read_poisoned(folder: Path, run: Path, made: TrialRow, mala_tui: Sequence[str]) -> TrialRow:
    journal = run / EVENTS_FILE
    good = journal.read_text(encoding="utf-8").splitlines()
    middle = len(good) // 2
    spliced = [*good[:middle], *POISON[:6], *good[middle:], *POISON[6:]]
    journal.write_text("\n".join(spliced) + "\n", encoding="utf-8")
    command = list(mala_tui) or [sys.executable, "-m", "mala_tui"]
    env = dict(os.environ, MALA_TUI_CONFIG_FILE=str(folder / "none.toml"))
    data = str(folder / "data")
    problems: list[str] = []
    runs = subprocess.run(
        [*command, "runs", "--data-dir", data],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    if runs.returncode != 0 or run.name not in runs.stdout or "\x1b" in runs.stdout:
        problems.append(f"`runs` failed: {runs.returncode} {runs.stderr.strip()[:200]}")
    show = subprocess.run(
        [*command, "show", run.name, "--json", "--data-dir", data],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    shown: dict[str, Any] = {}
    if show.returncode != 0:
        problems.append(f"`show --json` failed: {show.returncode} {show.stderr.strip()[:200]}")
    else:
        shown = json.loads(show.stdout)
        skipped = len(shown.get("skipped_lines", ()))
        if skipped != len(POISON):
            problems.append(f"`show --json` skipped {skipped} lines of {len(POISON)}")
    contents = read_events(journal)
    session = shown.get("sessions", {}).get("poisoned-00", {})
    done = session.get("status") == "done"
    return TrialRow(
        fault=f"a poisoned journal ({len(POISON)} bad lines of every shape)",
        sessions=1,
        injected=len(POISON),
        recovered=1 if done and made.recovered == 1 else 0,
        failed_fast=0,
        lost=0 if done else 1,
        reasons=(),
        processes_left=made.processes_left,
        journal_lines_lost=len(good) - len(contents.events),
        wall_s=made.wall_s,
        journal_complete=journal_complete(contents.events, ["poisoned-00"]),
        problems=tuple(problems),
    )
