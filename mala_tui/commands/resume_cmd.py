"""`mala-tui resume RUN`: carry on a run that ended before its sessions did, in its own folder.

Each session that had not ended continues (from its agent session, its latest
checkpoint, or its task: see core.resume_plan); the others are left as they ended.
The run goes on in the app, or headless, exactly as `run` does.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

from mala_tui.commands.console_cmd import start_hosted
from mala_tui.commands.run_options import (
    add_run_options,
    refusal,
    with_budget_flags,
    with_permissions_flag,
)
from mala_tui.commands.running import finish, supervise, until_done
from mala_tui.config_loading import LoadedSettings
from mala_tui.core.describe import gap

if TYPE_CHECKING:
    from mala_tui.runtime.cluster.ray_engine import RayEngine
    from mala_tui.runtime.run.run_source import ResumeSource
    from mala_tui.runtime.run.run_types import RunResult
    from mala_tui.runtime.run.signals import Shutdown

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
    add_run_options(resume)  # the options `run` has: approvals, headless, budgets, data dir


def resume(args: argparse.Namespace, loaded: LoadedSettings, out: TextIO = sys.stdout) -> int:
    from mala_tui.runtime.run.signals import stop_requests

    detached = start_hosted(args, loaded, out)
    if detached is not None:
        return detached
    # As `run`: a signal while the run is prepared stops it before any session starts.
    with stop_requests() as shutdown:
        return _resume(args, loaded, out, shutdown)


def _resume(
    args: argparse.Namespace, loaded: LoadedSettings, out: TextIO, shutdown: Shutdown
) -> int:
    from mala_tui.runtime.journal.writer import JournalError, find_run
    from mala_tui.runtime.run.resume import ResumeError, read_source

    loaded = with_permissions_flag(args, with_budget_flags(args, loaded))
    problem = refusal(args, loaded)
    if problem is not None:
        _say(problem)
        return EXIT_USAGE
    try:
        folder = find_run(loaded.settings.resolved_data_dir(), args.run)
        source = read_source(folder)
    except (JournalError, ResumeError) as exc:
        _say(str(exc))
        return EXIT_USAGE
    for skipped in source.contents.skipped:
        _say(f"skipped line {skipped.line}: {skipped.reason}")
    engine = None
    if source.meta.get("engine") == "ray":
        # The run's sessions ran on a cluster: the same one again (or a local Ray, as then).
        from mala_tui.runtime.cluster.ray_engine import RayEngine
        from mala_tui.runtime.cluster.ray_refusals import EngineRefused

        address = source.meta.get("ray_address")
        try:
            engine = RayEngine.connect(
                address if isinstance(address, str) else None,
                local_slots=loaded.settings.agent.max_concurrent,
                memory_mb=loaded.settings.cluster.session_memory_mb,
                run_id=folder.name,
            )
        except EngineRefused as exc:
            _say(str(exc))
            return EXIT_USAGE
    try:
        return _resume_on(args, loaded, out, shutdown, source=source, engine=engine)
    finally:
        if engine is not None:
            engine.close()


def _resume_on(
    args: argparse.Namespace,
    loaded: LoadedSettings,
    out: TextIO,
    shutdown: Shutdown,
    *,
    source: ResumeSource,
    engine: RayEngine | None,
) -> int:
    from mala_tui.core.text import safe_line
    from mala_tui.runtime.backends.claude import ClaudeBackend
    from mala_tui.runtime.journal.writer import StorageError
    from mala_tui.runtime.run.resume import ResumeError, prepare

    backend = ClaudeBackend.for_run(source.folder)
    if engine is not None:
        engine.log_to(source.folder / "ray.log")
    try:
        resumed = prepare(
            source,
            loaded,
            backend,
            args.approve,
            until=lambda: shutdown.requested,
            engine=engine,
            host_backend=ClaudeBackend.for_run if engine is not None else None,
        )
    except ResumeError as exc:
        _say(str(exc))
        return EXIT_USAGE
    except StorageError as exc:
        _say(str(exc))
        return EXIT_STORAGE
    journal, supervisor = resumed.journal, resumed.supervisor
    try:
        event = supervisor.resumed
        pause = gap(event.gap_seconds) if event is not None else "?"
        out.write(f"run {journal.run_id} resumed after {pause}: journal in {journal.directory}\n")
        for session in resumed.plan.sessions:
            # Names and reasons come from the journal: shown literally, on one line.
            out.write(f"{safe_line(session.name, 80)}: {safe_line(session.reason, 400)}\n")

        async def main() -> RunResult | Shutdown | int:
            return await supervise(supervisor, args.headless, out, shutdown, args.host_fd)

        return finish(until_done(main), supervisor, out)
    finally:
        journal.close()


def _say(why: str) -> None:
    """One line on stderr: a reason may quote the journal (its sessions' names, why each
    ended), shown literally, never as terminal escapes or a line of its own."""
    from mala_tui.core.text import clean

    print(f"mala-tui resume: {clean(why, one_line=True)}", file=sys.stderr)
