"""`mala-tui run` (real agents, the user's credentials) and `mala-tui demo` (loopback, offline).

Everything a run can be refused for (the tasks, the approval mode without a terminal,
the prompt templates, the data dir) is checked before its journal is created, so a
refused run leaves no half-started run behind (commands.run_options). Once built, the
run goes on as `resume`'s does (commands.running): Ctrl-C, SIGTERM and SIGHUP all stop
every session the same way before the command exits.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
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
from mala_tui.core.events import RunMode
from mala_tui.core.text import clean

if TYPE_CHECKING:
    from mala_tui.runtime.cluster.ray_engine import RayEngine
    from mala_tui.runtime.git.worktree import Worktree
    from mala_tui.runtime.journal.writer import RunJournal
    from mala_tui.runtime.run.profiles import Profile
    from mala_tui.runtime.run.run_types import RunResult
    from mala_tui.runtime.run.signals import Shutdown
    from mala_tui.runtime.run.supervisor import Supervisor
    from mala_tui.runtime.run.task_plans import TaskPlan

# The runtime (and with it the SDK) is imported inside the commands: `--help` stays fast.
EXIT_USAGE = 2
#: The run's files cannot be written: a full disk, a read-only data dir (sysexits' EX_IOERR).
EXIT_STORAGE = 74


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = commands.add_parser("run", help="supervise real Claude Code agents on your tasks")
    run.add_argument("tasks", nargs="*", metavar="TASK", help="a task for one agent (repeatable)")
    run.add_argument(
        "--cwd",
        type=Path,
        help="folder the agents work in (default: the current folder; for a tasks file's "
        "task that names no cwd of its own, the tasks file's folder)",
    )
    run.add_argument(
        "--tasks",
        dest="tasks_file",
        type=Path,
        help="TOML/JSON file of [[task]] entries, each with its own profile if it likes "
        "(model, permissions, tools, MCP servers, environment, budgets, thresholds)",
    )
    run.add_argument(
        "--model",
        type=_model_name,
        help="model for every agent whose task names none in the tasks file "
        "(default: agent.model setting)",
    )
    run.add_argument(
        "--worktree",
        action="store_true",
        default=None,
        help="each agent works in its own git worktree and branch of --cwd's repository, "
        "kept after the run (default: the agent.worktree setting)",
    )
    run.add_argument(
        "--base",
        metavar="BRANCH",
        help="with --worktree: each agent's worktree starts from BRANCH's tip, its diff is "
        "against the merge-base with BRANCH, and `land` merges into BRANCH (a task's or "
        "profile's own `base` wins; default: the branch checked out in --cwd)",
    )
    run.add_argument(
        "--permissions",
        choices=("ask", "allow", "deny"),
        help="a tool use outside agent.allowed_tools: ask a person (in the app, or on the "
        "terminal when headless), allow it, or deny it (default: the agent.permissions setting)",
    )
    run.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="where the sessions run: here (local), or each on a host of a Ray cluster (ray; "
        "needs `pip install 'mala-tui[ray]'`)",
    )
    run.add_argument(
        "--ray-address",
        metavar="HOST:PORT",
        help="with --engine ray: the cluster's head, as `ray start --head` printed it "
        "(default: a local Ray started for the run and stopped after it)",
    )
    add_run_options(run)
    demo = commands.add_parser(
        "demo", help="four agents on a local scripted model: offline, no API key"
    )
    add_run_options(demo)


def _model_name(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty (leave --model out for the default)")
    return text


def run(args: argparse.Namespace, loaded: LoadedSettings, out: TextIO = sys.stdout) -> int:
    from mala_tui.runtime.run.signals import stop_requests

    detached = start_hosted(args, loaded, out)
    if detached is not None:
        return detached
    # Before anything is made: a signal during start-up stops it at its next step.
    with stop_requests() as shutdown:
        return _run(args, loaded, out, shutdown)


def _run(args: argparse.Namespace, loaded: LoadedSettings, out: TextIO, shutdown: Shutdown) -> int:
    loaded = with_permissions_flag(args, with_budget_flags(args, loaded))
    from mala_tui.runtime.git.worktree import WorktreeError, base_tip, repository_root
    from mala_tui.runtime.run.launch import oversized
    from mala_tui.runtime.run.task_plans import TaskFileError, plan_run, with_base

    try:
        plans, profiles = plan_run(args.tasks, args.tasks_file, args.cwd, loaded.settings)
    except TaskFileError as exc:
        print(f"mala-tui run: {exc}", file=sys.stderr)
        return EXIT_USAGE
    problem = oversized(plans, loaded.settings, args.model) or refusal(args, loaded)
    if problem is None and args.ray_address is not None and args.engine != "ray":
        problem = "--ray-address needs --engine ray"
    if problem is not None:
        print(f"mala-tui run: {problem}", file=sys.stderr)
        return EXIT_USAGE
    settings = loaded.settings
    use_worktrees = bool(args.worktree or settings.agent.worktree)
    try:
        plans = with_base(plans, args.base, worktree=use_worktrees)
    except TaskFileError as exc:
        print(f"mala-tui run: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if use_worktrees:
        try:
            for plan in plans:  # every folder (and base branch) checked before anything is made
                repository_root(plan.cwd)
                if plan.profile.base:
                    base_tip(plan.cwd, plan.profile.base)
        except WorktreeError as exc:
            print(f"mala-tui run: {exc}", file=sys.stderr)
            return EXIT_USAGE
    engine = None
    if args.engine == "ray":
        from mala_tui.runtime.cluster.ray_engine import RayEngine
        from mala_tui.runtime.cluster.ray_refusals import EngineRefused

        try:
            engine = RayEngine.connect(
                args.ray_address,
                local_slots=settings.agent.max_concurrent,
                memory_mb=settings.cluster.session_memory_mb,
            )
        except EngineRefused as exc:
            print(f"mala-tui run: {exc}", file=sys.stderr)
            return EXIT_USAGE
    try:
        return _run_on(
            args,
            loaded,
            plans,
            profiles=profiles,
            engine=engine,
            use_worktrees=use_worktrees,
            out=out,
            shutdown=shutdown,
        )
    finally:
        if engine is not None:
            engine.close()


def _run_on(
    args: argparse.Namespace,
    loaded: LoadedSettings,
    plans: list[TaskPlan],
    *,
    profiles: dict[str, Profile],
    engine: RayEngine | None,
    use_worktrees: bool,
    out: TextIO,
    shutdown: Shutdown,
) -> int:
    """The run, its sessions here or (with `engine`) each on a host of the cluster;
    `profiles`: the tasks file's named profiles, which a session added later may take."""
    from mala_tui.runtime.git.worktree import WorktreeError
    from mala_tui.runtime.journal.writer import StorageError
    from mala_tui.runtime.run.launch import open_journal

    where: dict[str, object] = {}
    if engine is not None:
        where = {"engine": "ray", "ray_address": engine.address}
    try:
        journal = open_journal(
            loaded, RunMode.RUN, plans, worktree=use_worktrees, where=where, profiles=profiles
        )
    except StorageError as exc:
        print(f"mala-tui run: {exc}", file=sys.stderr)
        return EXIT_STORAGE
    if engine is not None:
        engine.run_id = journal.run_id
        engine.log_to(journal.directory / "ray.log")
    worktrees: dict[str, Worktree] = {}
    if use_worktrees:
        try:
            worktrees = _make_worktrees(plans, journal, engine, shutdown)
        except WorktreeError as exc:
            journal.close()
            _discard_unstarted(journal)
            print(f"mala-tui run: {exc}", file=sys.stderr)
            return EXIT_USAGE
        # A session whose worktree was not made (the run stopped first) never starts; its
        # resume makes it one.
        plans = [
            replace(plan, cwd=worktrees[plan.name].cwd) if plan.name in worktrees else plan
            for plan in plans
        ]
    try:
        try:
            supervisor = _supervisor_for(
                args, loaded, journal, plans, profiles=profiles, engine=engine, worktrees=worktrees
            )
        except WorktreeError as exc:  # a repository its host's worktree cannot be made from
            print(f"mala-tui run: {exc}", file=sys.stderr)
            return EXIT_STORAGE
        out.write(f"run {journal.run_id}: journal in {journal.directory}\n")
        for name, worktree in worktrees.items():
            # The name came from a task: shown literally, on its one line.
            said = f"{name}: worktree {worktree.path} on branch {worktree.branch}"
            out.write(f"{clean(said, one_line=True)}\n")
        if worktrees and engine is not None:
            out.write("(each is made on its session's host, and here when the session ends)\n")

        async def main() -> RunResult | Shutdown | int:
            return await supervise(supervisor, args.headless, out, shutdown, args.host_fd)

        return finish(until_done(main), supervisor, out)
    finally:
        journal.close()


def _make_worktrees(
    plans: list[TaskPlan], journal: RunJournal, engine: RayEngine | None, shutdown: Shutdown
) -> dict[str, Worktree]:
    """Each session's worktree, made here; with `engine`, planned for its host to make (each
    host makes its own: runtime.cluster.mirror). None more once the run is stopped.

    Raises:
        WorktreeError: git would not make one.
    """
    from mala_tui.runtime.cluster.mirror import plan_all
    from mala_tui.runtime.git.worktree import create_all

    bases = {plan.name: plan.profile.base for plan in plans if plan.profile.base}
    folders = [(plan.name, plan.cwd) for plan in plans]
    if engine is not None:
        return plan_all(folders, journal.run_id, journal.directory / "worktrees", bases)
    return create_all(
        folders,
        journal.run_id,
        journal.directory / "worktrees",
        until=lambda: shutdown.requested,  # stopped meanwhile: make no more
        bases=bases,
    )


def _supervisor_for(
    args: argparse.Namespace,
    loaded: LoadedSettings,
    journal: RunJournal,
    plans: list[TaskPlan],
    *,
    profiles: dict[str, Profile],
    engine: RayEngine | None,
    worktrees: dict[str, Worktree],
) -> Supervisor:
    """The run's supervisor over `plans`; with worktrees, a session added later gets one of
    its own, and what each worktree changed is journaled as its session ends.

    Raises:
        WorktreeError: a repository its host's worktree cannot be made from.
    """
    from mala_tui.runtime.backends.claude import ClaudeBackend
    from mala_tui.runtime.git.worktree_journal import WorktreeTracker
    from mala_tui.runtime.run.launch import agent_spec, build_supervisor, plain_spec
    from mala_tui.runtime.run.new_sessions import Joining
    from mala_tui.runtime.run.runners import HostPlan
    from mala_tui.runtime.run.worktree_sessions import (
        ended_on_host,
        host_workspaces,
        worktree_joining,
    )

    settings = loaded.settings
    specs = [agent_spec(plan, settings, model=args.model) for plan in plans]
    template = plain_spec(plans[0], settings, model=args.model)
    on_hosts = engine is not None
    joining = Joining(profiles=profiles)
    if worktrees:
        joining = worktree_joining(
            template, worktrees, journal, on_hosts=on_hosts, profiles=profiles, base=args.base or ""
        )
    supervisor = build_supervisor(
        loaded=loaded,
        backend=ClaudeBackend.for_run(journal.directory),
        journal=journal,
        specs=specs,
        approval_mode=args.approve,
        mode=RunMode.RUN,
        profiles={plan.name: plan.profile for plan in plans},
        template=template,
        joining=joining,
        engine=engine,
        host_backend=ClaudeBackend.for_run if on_hosts else None,
        hosts=HostPlan(workspace_for=host_workspaces(worktrees, journal.run_id)),
    )
    if worktrees:
        supervisor.listeners.events.append(
            WorktreeTracker(
                worktrees,
                supervisor.record,
                prepare=ended_on_host(journal.run_id) if on_hosts else None,
            )
        )
    return supervisor


def _discard_unstarted(journal: RunJournal) -> None:
    """A run refused after its folder was made (a worktree git would not add): nothing
    ran, so nothing is left to be listed as "running?"."""
    import shutil

    shutil.rmtree(journal.directory, ignore_errors=True)


def demo(args: argparse.Namespace, loaded: LoadedSettings, out: TextIO = sys.stdout) -> int:
    from mala_tui.runtime.run.signals import stop_requests

    detached = start_hosted(args, loaded, out)
    if detached is not None:
        return detached
    with stop_requests() as shutdown:
        return _demo(args, loaded, out, shutdown)


def _demo(args: argparse.Namespace, loaded: LoadedSettings, out: TextIO, shutdown: Shutdown) -> int:
    loaded = with_budget_flags(args, loaded)
    from mala_tui.runtime.journal.writer import StorageError
    from mala_tui.runtime.run.demo import demo_run

    problem = refusal(args, loaded)
    if problem is not None:
        print(f"mala-tui demo: {problem}", file=sys.stderr)
        return EXIT_USAGE
    supervisors: list[Supervisor] = []

    async def main() -> RunResult | Shutdown | int:
        async with demo_run(loaded, approval_mode=args.approve) as started:
            supervisors.append(started.supervisor)
            out.write(
                f"demo run {started.journal.run_id}: journal in {started.journal.directory}\n"
            )
            return await supervise(started.supervisor, args.headless, out, shutdown, args.host_fd)

    try:
        outcome = until_done(main)
    except StorageError as exc:
        print(f"mala-tui demo: {exc}", file=sys.stderr)
        return EXIT_STORAGE
    return finish(outcome, supervisors[0] if supervisors else None, out)
