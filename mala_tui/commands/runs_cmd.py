"""`mala-tui runs` and `mala-tui show RUN`: what was journaled, listed and dumped."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, TextIO

from mala_tui.config import Settings
from mala_tui.config_loading import LoadedSettings
from mala_tui.core.pricing import PriceTable, Spend, format_cost
from mala_tui.core.run_view import RunState
from mala_tui.core.session_records import WorktreeRecord
from mala_tui.core.subagents import SubagentGauge
from mala_tui.core.text import safe_line
from mala_tui.runtime.consoles.sockets import live_host
from mala_tui.runtime.journal.writer import (
    EVENTS_FILE,
    JournalError,
    find_run,
    list_runs,
    read_events,
)
from mala_tui.runtime.run.launch import EXIT_USAGE


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    runs = commands.add_parser("runs", help="list journaled runs, newest first")
    runs.add_argument("--data-dir", type=Path, help="where runs are journaled")
    show = commands.add_parser("show", help="open a finished run (or dump it with --json)")
    show.add_argument("run", help="run id, a unique prefix of it, or 'latest'")
    show.add_argument(
        "--json",
        action="store_true",
        help="print sessions, restarts, checkpoints, masks, subagents",
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
    prices = loaded.settings.pricing.table()
    out.write(
        f"{'RUN':<22} {'STARTED':<19} {'MODE':<5} {'STATE':<11} "
        f"{'COST (EST.)':>11} {'CACHE':>5} SESSIONS\n"
    )
    for run in found:
        started = _when(run.started_at)
        state = "ok" if run.ok else "not all ok"
        if not run.ended:
            # Served by a host that answers: live (`mala-tui attach`). Else it ended without
            # saying so (a crash, kill -9): `mala-tui resume` carries it on.
            state = "live" if live_host(run.directory) is not None else "running?"
        # Names come from the journal: shown literally, never as terminal escapes.
        names = safe_line(", ".join(run.sessions), 400)
        cost, cache = _spend_columns(run.directory, prices)
        out.write(
            f"{safe_line(run.run_id, 40):<22} {started:<19} {run.mode or '?':<5} "
            f"{state:<11} {cost:>11} {cache:>5} {names}\n"
        )
    out.write("costs are estimates from list prices ([pricing] in the config file)\n")
    return 0


def _when(at: float | None) -> str:
    """A journal's time as local time; "?" for none, or one no calendar has (a damaged line)."""
    if not at:
        return "?"
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))
    except (OverflowError, OSError, ValueError):
        return "?"


def _spend_columns(directory: Path, prices: PriceTable) -> tuple[str, str]:
    """A run's estimated cost and cache-hit rate as `runs` shows them; "?" when unreadable."""
    try:
        events = read_events(directory / EVENTS_FILE).events
    except JournalError:
        return "?", "?"
    spend = RunState(prices=prices).apply_all(events).spend
    rate = spend.cache_hit_rate
    return format_cost(spend.cost_usd), "-" if rate is None else f"{rate * 100:.0f}%"


def _worktree_json(worktree: WorktreeRecord | None) -> dict[str, Any] | None:
    """Where the session worked (with --worktree), what it changed there, and what is left
    to land (read from git when `show` ran; else as journaled)."""
    if worktree is None:
        return None
    status = worktree.status
    return {
        "path": worktree.path,
        "branch": worktree.branch,
        "base_branch": worktree.base_branch or None,
        "base_commit": worktree.base_commit,
        "base": worktree.base or None,
        "repository": worktree.repository,
        "files": None if worktree.files is None else [file.model_dump() for file in worktree.files],
        "lines_added": worktree.lines_added,
        "lines_deleted": worktree.lines_deleted,
        "error": worktree.error,
        "commits_ahead": None if status is None else status.ahead,
        "uncommitted": None if status is None else status.uncommitted,
        "merged": None if status is None else status.merged,
        "discarded": status is not None and status.discarded,
        "to_land": None if status is None else status.label,
        "landed": None if worktree.landed is None else worktree.landed.model_dump(mode="json"),
        "pushed": None if worktree.pushed is None else worktree.pushed.model_dump(mode="json"),
    }


def spend_as_json(spend: Spend) -> dict[str, Any]:
    """Tokens by kind, API calls, cache-hit rate and the cost estimate of a session or run."""
    return {
        "estimated_cost_usd": spend.cost_usd,
        "basis": "estimate from list prices" if spend.priced else "no price for the model",
        "api_calls": spend.calls,
        "input_tokens": spend.input_tokens,
        "cache_write_tokens": spend.cache_write_tokens,
        "cache_read_tokens": spend.cache_read_tokens,
        "output_tokens": spend.output_tokens,
        "cache_hit_rate": spend.cache_hit_rate,
    }


def subagent_as_json(gauge: SubagentGauge) -> dict[str, Any]:
    """One subagent of a session: its window (exact, from its transcript), its peak, its
    calls and their cost estimate, how long it ran and how it ended (null: not seen ending,
    still running when the journal was read or lost with its session)."""
    return {
        "agent_id": gauge.agent_id,
        "label": gauge.label,
        "type": gauge.agent_type,
        "depth": gauge.depth,
        "parent": gauge.parent or None,
        "background": gauge.background,
        "nested": gauge.nested,
        "tokens": gauge.tokens,
        "peak_tokens": gauge.peak,
        "api_calls": gauge.calls,
        "tool_uses": gauge.tool_uses,
        "compactions": gauge.compactions,
        "started_at": gauge.started_at,
        "ended_at": gauge.ended_at,
        "duration_seconds": None if gauge.ended_at is None else gauge.seconds(gauge.ended_at),
        "ended": None if gauge.how is None else gauge.how.value,
        "reason": gauge.reason,
        "cost": spend_as_json(gauge.spend),
    }


def load_run(args: argparse.Namespace, loaded: LoadedSettings) -> tuple[Path, RunState, list[str]]:
    """The run's view from its journal, with each worktree's branch status read from git."""
    from mala_tui.runtime.git.landing import refresh_statuses

    folder = find_run(data_dir(args, loaded), args.run)
    contents = read_events(folder / EVENTS_FILE)
    notes = [f"line {s.line}: {s.reason}" for s in contents.skipped]
    state = RunState(run_id=folder.name, prices=loaded.settings.pricing.table())
    state.apply_all(contents.events)
    refresh_statuses(state)
    return folder, state, notes


def show(args: argparse.Namespace, loaded: LoadedSettings, out: TextIO = sys.stdout) -> int:
    try:
        folder, state, notes = load_run(args, loaded)
    except JournalError as exc:
        print(f"mala-tui show: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for note in notes:
        print(f"mala-tui show: skipped {note}", file=sys.stderr)
    resume = resume_as_json(folder, loaded.settings)
    if args.json:
        data = run_as_json(folder, state, notes)
        data["resume"] = resume
        out.write(json.dumps(data, indent=2) + "\n")
        return 0
    from mala_tui.commands.run_options import has_terminal, on_the_web

    if not has_terminal():
        print(
            "mala-tui show: the app needs a terminal (stdin and stdout); without one, use --json",
            file=sys.stderr,
        )
        return EXIT_USAGE
    from mala_tui.runtime.run.landings import FinishedRun
    from mala_tui.ui.app import run_app

    resumed: list[int] = []

    def resume_now() -> int:
        from mala_tui.commands.resume_cmd import resume as resume_run

        again = argparse.Namespace(run=folder.name, headless=False, approve=None)
        resumed.append(resume_run(again, loaded, out))
        return resumed[-1]

    # A run resumed from a browser tab would end with the tab: the page only shows it.
    command = resume["command"] if resume is not None and not on_the_web() else None
    finished = FinishedRun(folder, state)  # its worktree sessions can be landed from the app
    status = run_app(
        state, loaded.settings, resume_command=command, resume=resume_now, finished=finished
    )
    if command is not None and not resumed:  # said on the terminal the app leaves behind
        out.write(f"this run can be resumed: {command}\n")
    for line in worktree_lines(state, folder.name, loaded.settings):
        out.write(line + "\n")
    return status


def worktree_lines(state: RunState, run_id: str, settings: Settings) -> list[str]:
    """Per worktree session: its branch and what is left to land, and how to land it."""
    lines = []
    for name, session in state.sessions.items():
        tree = session.worktree
        if tree is None or tree.status is None:
            continue
        said = f"{name}: branch {tree.branch}, {tree.status.label}"
        if tree.status.to_land:
            said += f" ({settings.command('land', run_id, name)})"
        lines.append(safe_line(said, 600))  # names come from the journal: shown literally
    return lines


def resume_as_json(folder: Path, settings: Settings) -> dict[str, Any] | None:
    """How to resume the run, and how each session would go on; None when it cannot be.

    Whether each transcript is still there is checked by `resume` itself: here every
    unfinished session that has an agent session counts as resuming by its id.
    """
    from mala_tui.commands.running import resume_command
    from mala_tui.runtime.run.resume import ResumeError, plan_for, read_source, still_live

    try:
        source = read_source(folder)
    except ResumeError:
        return None
    if source.meta.get("mode") == "demo" or still_live(source) is not None:
        return None
    plan = plan_for(source)
    if not plan.resuming:
        return None
    return {
        "command": resume_command(folder.name, settings),
        "sessions": {s.name: s.how.value for s in plan.resuming if s.how is not None},
        "reasons": {s.name: s.reason for s in plan.sessions},
    }


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
            "model": session.model,
            "cost": spend_as_json(session.spend),
            "worktree": _worktree_json(session.worktree),
            "subagents": [subagent_as_json(gauge) for gauge in snapshot.subagents],
        }
    return {
        "run_id": state.run_id,
        "folder": str(folder),
        "started_at": state.started_at,
        "ended_at": state.ended_at,
        "ok": state.ok,
        "skipped_lines": skipped,
        "cost": spend_as_json(state.spend),
        "sessions": sessions,
        "resumed": [
            {"at": r.at, "gap_seconds": r.gap_seconds, "sessions": dict(r.resumed)}
            for r in state.resumed
        ],
    }
