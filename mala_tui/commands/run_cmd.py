"""`mala-tui run` (real agents, the user's credentials) and `mala-tui demo` (loopback, offline)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from mala_tui.config import LoadedSettings

if TYPE_CHECKING:
    from mala_tui.runtime.supervisor import RunResult, Supervisor

# The runtime (and with it the SDK) is imported inside the commands: `--help` stays fast.
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = commands.add_parser("run", help="supervise real Claude Code agents on your tasks")
    run.add_argument("tasks", nargs="*", metavar="TASK", help="a task for one agent (repeatable)")
    run.add_argument("--cwd", type=Path, default=Path.cwd(), help="folder the agents work in")
    run.add_argument(
        "--tasks", dest="tasks_file", type=Path, help="TOML/JSON file of [[task]] entries"
    )
    run.add_argument("--model", help="model for every agent (default: agent.model setting)")
    _common(run)
    demo = commands.add_parser(
        "demo", help="four agents on a local scripted model: offline, no API key"
    )
    _common(demo)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--approve",
        choices=("ask", "auto", "deny"),
        help="restarts: ask a person, approve automatically, or deny (default: the "
        "context.require_approval setting)",
    )
    parser.add_argument("--headless", action="store_true", help="no app: one line per event")
    parser.add_argument("--data-dir", type=Path, help="where runs are journaled")


def run(args: argparse.Namespace, loaded: LoadedSettings, out: TextIO = sys.stdout) -> int:
    from mala_tui.core.prompts import PromptTemplateError
    from mala_tui.runtime.backends.claude import ClaudeBackend
    from mala_tui.runtime.launch import (
        TaskFileError,
        agent_spec,
        build_supervisor,
        open_journal,
        plan_tasks,
    )

    try:
        plans = plan_tasks(args.tasks, args.tasks_file, args.cwd.resolve())
    except TaskFileError as exc:
        print(f"mala-tui run: {exc}", file=sys.stderr)
        return EXIT_USAGE
    settings = loaded.settings
    specs = [agent_spec(plan, settings, model=args.model) for plan in plans]
    journal = open_journal(loaded, "run", plans)
    try:
        supervisor = build_supervisor(
            loaded=loaded,
            backend=ClaudeBackend(backup_dir=journal.directory / "transcripts"),
            journal=journal,
            specs=specs,
            approval_mode=args.approve,
            mode="run",
        )
    except PromptTemplateError as exc:
        journal.close()
        print(f"mala-tui: prompt template error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    out.write(f"run {journal.run_id}: journal in {journal.directory}\n")
    try:
        return _drive(supervisor, args.headless, out)
    finally:
        journal.close()


def demo(args: argparse.Namespace, loaded: LoadedSettings, out: TextIO = sys.stdout) -> int:
    from mala_tui.core.prompts import PromptTemplateError
    from mala_tui.runtime.demo import demo_run
    from mala_tui.runtime.launch import exit_status

    async def main() -> RunResult | int:
        async with demo_run(loaded, approval_mode=args.approve) as started:
            out.write(
                f"demo run {started.journal.run_id}: journal in {started.journal.directory}\n"
            )
            if args.headless:
                return await _headless(started.supervisor, out)
            return await _app(started.supervisor)

    try:
        result = asyncio.run(main())
    except KeyboardInterrupt:
        out.write("interrupted: every session was stopped\n")
        return EXIT_INTERRUPTED
    except PromptTemplateError as exc:
        print(f"mala-tui: prompt template error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return result if isinstance(result, int) else exit_status(result, out)


def _drive(supervisor: Supervisor, headless: bool, out: TextIO) -> int:
    from mala_tui.runtime.launch import exit_status

    async def main() -> RunResult | int:
        if headless:
            return await _headless(supervisor, out)
        return await _app(supervisor)

    try:
        result = asyncio.run(main())
    except KeyboardInterrupt:
        out.write("interrupted: every session was stopped\n")
        return EXIT_INTERRUPTED
    return result if isinstance(result, int) else exit_status(result, out)


async def _app(supervisor: Supervisor) -> int:
    from mala_tui.ui.app import run_app_async

    return await run_app_async(supervisor, supervisor.settings)


async def _headless(supervisor: Supervisor, out: TextIO) -> RunResult | int:
    from mala_tui.runtime.launch import (
        HeadlessApprovalError,
        check_headless_approvals,
        read_stdin_line,
        run_headless,
    )

    interactive = sys.stdin.isatty()
    try:
        check_headless_approvals(supervisor, interactive)
    except HeadlessApprovalError as exc:
        print(f"mala-tui: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return await run_headless(supervisor, out, read_line=read_stdin_line if interactive else None)
