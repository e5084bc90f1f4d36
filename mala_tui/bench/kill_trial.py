"""``kill -9`` of mala-tui itself mid-run: what its journal and its agents are left as.

A headless demo is killed once its journal has some lines; its agent CLIs must go with it
(their stdin closes), and ``runs`` and ``show --json`` must read the journal back with
at most its torn last line lost.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mala_tui.bench.fault_harness import agent_processes_under
from mala_tui.runtime.journal.writer import EVENTS_FILE, read_events


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
