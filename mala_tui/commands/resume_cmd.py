"""`mala-tui resume RUN`: carry on a run that ended before its sessions did, in its own folder.

Each session that had not ended continues (from its agent session, its latest
checkpoint, or its task: see core.resume_plan); the others are left as they ended.
The run goes on in the app, or headless, exactly as `run` does.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

from mala_tui.commands import run_cmd
from mala_tui.config import LoadedSettings
from mala_tui.core.describe import gap

if TYPE_CHECKING:
    from mala_tui.runtime.run_types import RunResult
    from mala_tui.runtime.signals import Shutdown

EXIT_USAGE = 2
EXIT_STORAGE = 74


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    resume = commands.add_parser(
        "resume", help="carry on a run whose sessions had not ended (after a quit, crash, kill)"
    )
    resume.add_argument("run", help="run id, a unique prefix of it, or 'latest'")
    resume.add_argument(
        "--permissions",
        choices=("ask", "allow", "deny"),
        help="a tool use outside agent.allowed_tools: ask a person, allow it, or deny it "
        "(default: the agent.permissions setting)",
    )
    run_cmd._common(resume)  # the options `run` has: approvals, headless, budgets, data dir


def resume_command(run_id: str) -> str:
    """The command that resumes a run, as `show` suggests it."""
    return f"mala-tui resume {run_id}"


def resume(args: argparse.Namespace, loaded: LoadedSettings, out: TextIO = sys.stdout) -> int:
    from mala_tui.runtime.signals import stop_requests

    # As `run`: a signal while the run is prepared stops it before any session starts.
    with stop_requests() as shutdown:
        return _resume(args, loaded, out, shutdown)


def _resume(
    args: argparse.Namespace, loaded: LoadedSettings, out: TextIO, shutdown: Shutdown
) -> int:
    from mala_tui.commands.run_cmd import _finish, _in_worktree, _supervise, _until_done, refusal
    from mala_tui.runtime.backends.claude import ClaudeBackend
    from mala_tui.runtime.headless import one_line
    from mala_tui.runtime.journal import JournalError, StorageError, find_run
    from mala_tui.runtime.resume import ResumeError, prepare, read_source
    from mala_tui.runtime.worktree import WorktreeTracker

    loaded = run_cmd.with_permissions_flag(args, run_cmd.with_budget_flags(args, loaded))
    problem = refusal(args, loaded)
    if problem is not None:
        print(f"mala-tui resume: {problem}", file=sys.stderr)
        return EXIT_USAGE
    try:
        folder = find_run(loaded.settings.resolved_data_dir(), args.run)
        source = read_source(folder)
    except (JournalError, ResumeError) as exc:
        print(f"mala-tui resume: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for skipped in source.contents.skipped:
        print(f"mala-tui resume: skipped line {skipped.line}: {skipped.reason}", file=sys.stderr)
    backend = ClaudeBackend.for_run(folder)
    try:
        resumed = prepare(source, loaded, backend, args.approve, until=lambda: shutdown.requested)
    except ResumeError as exc:
        print(f"mala-tui resume: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except StorageError as exc:
        print(f"mala-tui resume: {exc}", file=sys.stderr)
        return EXIT_STORAGE
    journal, supervisor = resumed.journal, resumed.supervisor
    trackers = [t for t in supervisor.listeners.events if isinstance(t, WorktreeTracker)]
    if trackers and supervisor.runners:
        # A session added to the resumed run gets a worktree of its own, as in `run`.
        supervisor.spec_for_new = _in_worktree(resumed.template, trackers[0].worktrees, journal)
    try:
        event = supervisor.resumed
        pause = gap(event.gap_seconds) if event is not None else "?"
        out.write(f"run {journal.run_id} resumed after {pause}: journal in {journal.directory}\n")
        for session in resumed.plan.sessions:
            # Names and reasons come from the journal: shown literally, on one line.
            out.write(f"{one_line(session.name, 80)}: {one_line(session.reason, 400)}\n")

        async def main() -> RunResult | Shutdown | int:
            return await _supervise(supervisor, args.headless, out, shutdown)

        return _finish(_until_done(main), supervisor, out)
    finally:
        journal.close()
