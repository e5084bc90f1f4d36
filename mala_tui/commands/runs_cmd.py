"""`mala-tui runs` and `mala-tui show RUN`: what was journaled, listed and dumped."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, TextIO

from mala_tui.config import LoadedSettings
from mala_tui.core.view import RunState
from mala_tui.runtime.headless import one_line
from mala_tui.runtime.journal import EVENTS_FILE, JournalError, find_run, list_runs, read_events
from mala_tui.runtime.launch import EXIT_USAGE


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    runs = commands.add_parser("runs", help="list journaled runs, newest first")
    runs.add_argument("--data-dir", type=Path, help="where runs are journaled")
    show = commands.add_parser("show", help="open a finished run (or dump it with --json)")
    show.add_argument("run", help="run id, a unique prefix of it, or 'latest'")
    show.add_argument(
        "--json", action="store_true", help="print sessions, restarts, checkpoints, masks"
    )
    show.add_argument("--data-dir", type=Path, help="where runs are journaled")


def data_dir(args: argparse.Namespace, loaded: LoadedSettings) -> Path:
    return args.data_dir or loaded.settings.resolved_data_dir()


def runs(args: argparse.Namespace, loaded: LoadedSettings, out: TextIO = sys.stdout) -> int:
    try:
        found = list_runs(data_dir(args, loaded))
    except JournalError as exc:
        print(f"mala-tui runs: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not found:
        out.write(f"no runs under {data_dir(args, loaded) / 'runs'}\n")
        return 0
    out.write(f"{'RUN':<22} {'STARTED':<19} {'MODE':<5} {'STATE':<11} SESSIONS\n")
    for run in found:
        started = _when(run.started_at)
        state = "running?" if not run.ended else ("ok" if run.ok else "not all ok")
        # Names and modes come from the journal: shown literally, never as terminal escapes.
        names = one_line(", ".join(run.sessions), 400)
        out.write(
            f"{one_line(run.run_id, 40):<22} {started:<19} {one_line(run.mode, 12):<5} "
            f"{state:<11} {names}\n"
        )
    return 0


def _when(at: float | None) -> str:
    """A journal's time as local time; "?" for none, or one no calendar has (a damaged line)."""
    if not at:
        return "?"
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))
    except (OverflowError, OSError, ValueError):
        return "?"


def load_run(args: argparse.Namespace, loaded: LoadedSettings) -> tuple[Path, RunState, list[str]]:
    folder = find_run(data_dir(args, loaded), args.run)
    contents = read_events(folder / EVENTS_FILE)
    notes = [f"line {s.line}: {s.reason}" for s in contents.skipped]
    return folder, RunState(run_id=folder.name).apply_all(contents.events), notes


def show(args: argparse.Namespace, loaded: LoadedSettings, out: TextIO = sys.stdout) -> int:
    try:
        folder, state, notes = load_run(args, loaded)
    except JournalError as exc:
        print(f"mala-tui show: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for note in notes:
        print(f"mala-tui show: skipped {note}", file=sys.stderr)
    if args.json:
        out.write(json.dumps(run_as_json(folder, state, notes), indent=2) + "\n")
        return 0
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        print(
            "mala-tui show: the app needs a terminal (stdin and stdout); without one, use --json",
            file=sys.stderr,
        )
        return EXIT_USAGE
    from mala_tui.ui.app import run_app

    return run_app(state, loaded.settings)


def run_as_json(folder: Path, state: RunState, skipped: list[str]) -> dict[str, Any]:
    sessions = {}
    for name, session in state.sessions.items():
        snapshot = session.snapshot()
        sessions[name] = {
            "task": session.task,
            "cwd": session.cwd,
            "status": session.status,
            "end_reason": session.end_reason,
            "phase": session.phase,
            "tokens": snapshot.tokens,
            "window": snapshot.window,
            "window_source": snapshot.window_source,
            "source": snapshot.source,
            "density": {
                "tokens_per_chars4_token": snapshot.density,
                "measured": snapshot.density_measured,
            },
            "manage": snapshot.manage,
            "masked_total": session.masked_total,
            "idle_retries": session.idle_retries,
            "restarts": [asdict(r) for r in session.restarts],
            "checkpoints": [asdict(c) for c in session.checkpoints],
            "masks": [asdict(m) for m in session.masks],
            "usage_points": len(session.usage),
            "peak_tokens": max((p.tokens for p in session.usage), default=0),
            "agent_processes": {
                str(pid): "ended" if ended else "not seen ending"
                for pid, ended in session.pids.items()
            },
            "last_error": session.last_error,
        }
    return {
        "run_id": state.run_id,
        "folder": str(folder),
        "started_at": state.started_at,
        "ended_at": state.ended_at,
        "ok": state.ok,
        "skipped_lines": skipped,
        "sessions": sessions,
    }
