"""`mala-tui run` (real agents, the user's credentials) and `mala-tui demo` (loopback, offline).

Everything a run can be refused for (the tasks, the approval mode without a terminal,
the prompt templates, the data dir) is checked before its journal is created, so a
refused run leaves no half-started run behind. Once running, Ctrl-C, SIGTERM and SIGHUP
all stop every session the same way before the command exits.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from mala_tui.config import LoadedSettings
from mala_tui.core.events import RunMode
from mala_tui.core.permissions import PermissionPolicy
from mala_tui.core.pricing import Spend, format_cost

if TYPE_CHECKING:
    from mala_tui.runtime.backends.base import SessionSpec
    from mala_tui.runtime.journal import RunJournal
    from mala_tui.runtime.launch import TaskPlan
    from mala_tui.runtime.profiles import Profile
    from mala_tui.runtime.ray_engine import RayEngine
    from mala_tui.runtime.run_types import RunResult
    from mala_tui.runtime.signals import Shutdown
    from mala_tui.runtime.supervisor import Supervisor
    from mala_tui.runtime.worktree import Worktree
    from mala_tui.ui.app import MalaApp

# The runtime (and with it the SDK) is imported inside the commands: `--help` stays fast.
EXIT_USAGE = 2
#: The run's files cannot be written: a full disk, a read-only data dir (sysexits' EX_IOERR).
EXIT_STORAGE = 74
EXIT_INTERRUPTED = 130

BUDGET_FLAGS: tuple[tuple[str, type[int] | type[float], str], ...] = (
    ("max_cost_usd", float, "per session: estimated cost in US dollars, at list prices"),
    ("max_turns", int, "per session: model turns (API calls)"),
    ("max_minutes", float, "per session: wall-clock minutes"),
    ("run_max_cost_usd", float, "whole run: estimated cost in US dollars"),
    ("run_max_turns", int, "whole run: model turns"),
    ("run_max_minutes", float, "whole run: wall-clock minutes"),
)
"""[budget] settings that `run` and `demo` also take as flags: (key, type, what it limits)."""


def _positive(kind: type[int] | type[float]) -> Callable[[str], int | float]:
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            noun = "a whole number" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"{text!r} is not {noun}") from None
        if not value > 0:  # also refuses nan
            raise argparse.ArgumentTypeError(f"{text!r}: a limit must be above 0")
        return value

    return parse


def cost_line(spend: Spend) -> str:
    """The run's cost as the last lines of `run` and `demo` say it."""
    if not spend.calls:
        return ""
    rate = spend.cache_hit_rate
    cached = "" if rate is None else f", {rate:.0%} of prompt tokens from the cache"
    cost = format_cost(spend.cost_usd)
    if spend.priced:
        cost += " (estimate at list prices)"
    return f"cost: {cost} for {spend.calls} API calls{cached}\n"


def with_budget_flags(args: argparse.Namespace, loaded: LoadedSettings) -> LoadedSettings:
    """The settings with the budget flags (and --notify) given on the command line applied."""
    given = {
        flag: value
        for flag, _, _ in BUDGET_FLAGS
        if (value := getattr(args, f"budget_{flag}", None)) is not None
    }
    notify = bool(getattr(args, "notify", False))
    if not given and not notify:
        return loaded
    budget = loaded.settings.budget.model_copy(update=given)
    sources = dict(loaded.sources)
    for flag in given:
        sources[f"budget.{flag}"] = f"command line --{flag.replace('_', '-')}"
    update: dict[str, object] = {"budget": budget}
    if notify:
        update["ui"] = loaded.settings.ui.model_copy(update={"notify_headless": True})
        sources["ui.notify_headless"] = "command line --notify"
    settings = loaded.settings.model_copy(update=update)
    return LoadedSettings(settings, sources, loaded.config_file, loaded.config_file_exists)


def with_permissions_flag(args: argparse.Namespace, loaded: LoadedSettings) -> LoadedSettings:
    """The settings with `--permissions` applied over agent.permissions, when given."""
    policy = getattr(args, "permissions", None)
    if policy is None:
        return loaded
    agent = loaded.settings.agent.model_copy(update={"permissions": PermissionPolicy(policy)})
    sources = {**loaded.sources, "agent.permissions": "command line --permissions"}
    settings = loaded.settings.model_copy(update={"agent": agent})
    return LoadedSettings(settings, sources, loaded.config_file, loaded.config_file_exists)


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
    _common(run)
    demo = commands.add_parser(
        "demo", help="four agents on a local scripted model: offline, no API key"
    )
    _common(demo)


def _model_name(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty (leave --model out for the default)")
    return text


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--approve",
        choices=("ask", "auto", "deny"),
        help="restarts: ask a person, approve automatically, or deny (default: the "
        "context.require_approval setting)",
    )
    parser.add_argument(
        "--headless",
        action="store_true",
        help="no app: one line per event (needed without a terminal)",
    )
    parser.add_argument(
        "--detach",
        action="store_true",
        help="run in the background: print the run's id and how to attach, and return at "
        "once (the run goes on after this terminal closes; `mala-tui attach`, `mala-tui stop`)",
    )
    # Given by `--detach` to the run's host it starts (runtime.host): where to say "ready".
    parser.add_argument("--host-ready-fd", type=int, help=argparse.SUPPRESS)
    parser.add_argument(
        "--notify",
        action="store_true",
        help="headless too: ring the bell and raise a desktop notification when an approval "
        "waits or a session fails (default: the ui.notify_headless setting)",
    )
    budget = parser.add_argument_group(
        "budgets", "near a limit (90%) a session winds down and checkpoints; at it, it stops"
    )
    for flag, kind, what in BUDGET_FLAGS:
        budget.add_argument(
            f"--{flag.replace('_', '-')}",
            dest=f"budget_{flag}",
            type=_positive(kind),
            metavar="N",
            help=f"{what} (default: the budget.{flag} setting)",
        )
    parser.add_argument("--data-dir", type=Path, help="where runs are journaled")


def on_the_web() -> bool:
    """Whether this app is a browser tab's (`mala-tui serve` runs it with Textual's web driver,
    which draws on stdout and reads keys from stdin through pipes)."""
    return os.environ.get("TEXTUAL_DRIVER", "").startswith("textual.drivers.web_driver")


def has_terminal() -> bool:
    """The app draws on stdout and reads keys from stdin: both must be a terminal (or a
    browser tab's pipes)."""
    return on_the_web() or (sys.stdin.isatty() and sys.stdout.isatty())


def refusal(args: argparse.Namespace, loaded: LoadedSettings) -> str | None:
    """Why this run cannot start as asked, before anything is created; None if it can."""
    from mala_tui.core.prompts import PromptTemplateError
    from mala_tui.runtime.backends.cli_launcher import cli_problem
    from mala_tui.runtime.launch import HeadlessApprovalError, check_approval_mode, prompts_for

    # The run's host needs no terminal of its own: consoles attach to it.
    host = getattr(args, "host_fd", None) is not None
    if not host and not args.headless and not has_terminal():
        return "the app needs a terminal (stdin and stdout); without one, use --headless"
    missing = cli_problem()
    if missing is not None:
        return missing
    if not host and args.headless:
        try:
            check_approval_mode(args.approve, loaded.settings, sys.stdin.isatty())
        except HeadlessApprovalError as exc:
            return str(exc)
    try:
        prompts_for(loaded.settings)
    except PromptTemplateError as exc:
        return f"prompt template error: {exc}"
    return None


def run(args: argparse.Namespace, loaded: LoadedSettings, out: TextIO = sys.stdout) -> int:
    from mala_tui.commands.console_cmd import start_hosted
    from mala_tui.runtime.signals import stop_requests

    detached = start_hosted(args, loaded, out)
    if detached is not None:
        return detached
    # Before anything is made: a signal during start-up stops it at its next step.
    with stop_requests() as shutdown:
        return _run(args, loaded, out, shutdown)


def _run(args: argparse.Namespace, loaded: LoadedSettings, out: TextIO, shutdown: Shutdown) -> int:
    loaded = with_permissions_flag(args, with_budget_flags(args, loaded))
    from mala_tui.runtime.launch import TaskFileError, oversized, plan_run
    from mala_tui.runtime.worktree import WorktreeError, repository_root

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
    if use_worktrees:
        try:
            for plan in plans:  # every folder checked before anything is made
                repository_root(plan.cwd)
        except WorktreeError as exc:
            print(f"mala-tui run: {exc}", file=sys.stderr)
            return EXIT_USAGE
    engine = None
    if args.engine == "ray":
        from mala_tui.runtime.ray_engine import EngineRefused, RayEngine

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
    from mala_tui.runtime.backends.claude import ClaudeBackend
    from mala_tui.runtime.journal import StorageError
    from mala_tui.runtime.launch import agent_spec, build_supervisor, open_journal, plain_spec
    from mala_tui.runtime.mirror import plan_all
    from mala_tui.runtime.worktree import WorktreeError, WorktreeTracker, create_all

    settings = loaded.settings
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
            if engine is not None:  # each host makes its own (runtime.mirror)
                worktrees = plan_all(
                    [(plan.name, plan.cwd) for plan in plans],
                    journal.run_id,
                    journal.directory / "worktrees",
                )
            else:
                worktrees = create_all(
                    [(plan.name, plan.cwd) for plan in plans],
                    journal.run_id,
                    journal.directory / "worktrees",
                    until=lambda: shutdown.requested,  # stopped meanwhile: make no more
                )
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
    specs = [agent_spec(plan, settings, model=args.model) for plan in plans]
    template = plain_spec(plans[0], settings, model=args.model)
    try:
        supervisor = build_supervisor(
            loaded=loaded,
            backend=ClaudeBackend.for_run(journal.directory),
            journal=journal,
            specs=specs,
            approval_mode=args.approve,
            mode=RunMode.RUN,
            profiles={plan.name: plan.profile for plan in plans},
            template=template,
            engine=engine,
            host_backend=ClaudeBackend.for_run if engine is not None else None,
        )
        supervisor.profiles = profiles
        if worktrees:
            on_hosts = engine is not None
            if on_hosts:
                try:
                    host_worktrees(supervisor, worktrees, journal.run_id)
                except WorktreeError as exc:
                    print(f"mala-tui run: {exc}", file=sys.stderr)
                    return EXIT_STORAGE
            supervisor.listeners.events.append(
                WorktreeTracker(
                    worktrees,
                    supervisor.record,
                    prepare=ended_on_host(journal.run_id) if on_hosts else None,
                )
            )
            supervisor.spec_for_new = _in_worktree(template, worktrees, journal, on_hosts=on_hosts)
            supervisor.spec_for_fork = _fork_in_worktree(worktrees, journal, on_hosts=on_hosts)
        out.write(f"run {journal.run_id}: journal in {journal.directory}\n")
        for name, worktree in worktrees.items():
            out.write(f"{name}: worktree {worktree.path} on branch {worktree.branch}\n")
        if worktrees and engine is not None:
            out.write("(each is made on its session's host, and here when the session ends)\n")

        async def main() -> RunResult | Shutdown | int:
            return await _supervise(supervisor, args.headless, out, shutdown, args.host_fd)

        return _finish(_until_done(main), supervisor, out)
    finally:
        journal.close()


def _discard_unstarted(journal: RunJournal) -> None:
    """A run refused after its folder was made (a worktree git would not add): nothing
    ran, so nothing is left to be listed as "running?"."""
    import shutil

    shutil.rmtree(journal.directory, ignore_errors=True)


def host_worktrees(supervisor: Supervisor, worktrees: dict[str, Worktree], run_id: str) -> None:
    """On a cluster, each session's host makes its worktree from its own mirror of the
    repository (runtime.mirror): the sessions there now, and those added later.

    Raises:
        WorktreeError: a repository cannot be written (its base ref).
    """
    set_up = host_worktree_setter(worktrees, run_id)
    for name, runner in supervisor.runners.items():
        set_up(name, runner)
    supervisor.on_added.append(set_up)


def host_worktree_setter(
    worktrees: dict[str, Worktree], run_id: str
) -> Callable[[str, object], None]:
    """Hands a session's runner on a cluster the worktree its host is to make (raises
    WorktreeError when the repository cannot be written)."""
    from mala_tui.runtime.mirror import workspace
    from mala_tui.runtime.remote_runner import RemoteRunner

    def set_up(name: str, runner: object) -> None:
        if isinstance(runner, RemoteRunner) and name in worktrees:
            runner.workspace = workspace(worktrees[name], run_id)

    return set_up


def ended_on_host(run_id: str) -> Callable[[Worktree], object]:
    """The driver's worktree of a session its host ran, made as the session ends."""
    from mala_tui.runtime.mirror import materialize
    from mala_tui.runtime.wip import wip_ref

    return lambda worktree: materialize(worktree, wip_ref(run_id, worktree.session))


def _in_worktree(
    template: SessionSpec, worktrees: dict[str, Worktree], journal: RunJournal, *, on_hosts: bool
) -> Callable[[str, str, Path], SessionSpec]:
    """A session added to a worktree run gets a worktree of its own, like the others (on a
    cluster, one its host makes)."""
    from mala_tui.runtime.mirror import plan
    from mala_tui.runtime.worktree import WorktreeError, create

    def spec(name: str, task: str, cwd: Path) -> SessionSpec:
        try:
            made = plan if on_hosts else create
            worktree = made(cwd, journal.run_id, name, journal.directory / "worktrees")
        except WorktreeError as exc:
            raise ValueError(str(exc)) from None
        worktrees[name] = worktree  # the tracker journals it when the session starts
        return replace(template, name=name, task=task, cwd=worktree.cwd)

    return spec


def _fork_in_worktree(
    worktrees: dict[str, Worktree], journal: RunJournal, *, on_hosts: bool
) -> Callable[[SessionSpec, str, str], SessionSpec]:
    """A fork in a worktree run gets a worktree of its own, made from its parent's."""
    from mala_tui.runtime.worktree import WorktreeError, fork

    def spec(parent: SessionSpec, name: str, instruction: str) -> SessionSpec:
        made = worktrees.get(parent.name)
        if made is None:
            raise ValueError(f"{parent.name} has no worktree to fork")
        if on_hosts:  # its files are on its host until it ends
            raise ValueError(
                f"a worktree session on a cluster cannot be forked yet ({parent.name}'s "
                "worktree is on its host); add a session instead"
            )
        try:
            worktree = fork(made, journal.run_id, name, journal.directory / "worktrees")
        except WorktreeError as exc:
            raise ValueError(str(exc)) from None
        worktrees[name] = worktree  # the tracker journals it when the session starts
        return replace(parent, name=name, task=instruction, cwd=worktree.cwd)

    return spec


def demo(args: argparse.Namespace, loaded: LoadedSettings, out: TextIO = sys.stdout) -> int:
    from mala_tui.commands.console_cmd import start_hosted
    from mala_tui.runtime.signals import stop_requests

    detached = start_hosted(args, loaded, out)
    if detached is not None:
        return detached
    with stop_requests() as shutdown:
        return _demo(args, loaded, out, shutdown)


def _demo(args: argparse.Namespace, loaded: LoadedSettings, out: TextIO, shutdown: Shutdown) -> int:
    loaded = with_budget_flags(args, loaded)
    from mala_tui.runtime.demo import demo_run
    from mala_tui.runtime.journal import StorageError

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
            return await _supervise(started.supervisor, args.headless, out, shutdown, args.host_fd)

    try:
        outcome = _until_done(main)
    except StorageError as exc:
        print(f"mala-tui demo: {exc}", file=sys.stderr)
        return EXIT_STORAGE
    return _finish(outcome, supervisors[0] if supervisors else None, out)


def _until_done(main: Callable[[], object]) -> RunResult | Shutdown | int:
    """asyncio.run; Ctrl-C (which asyncio turns into cancelling `main`) becomes 130."""
    try:
        return asyncio.run(main())  # type: ignore[arg-type]
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def _finish(outcome: RunResult | Shutdown | int, supervisor: Supervisor | None, out: TextIO) -> int:
    from mala_tui.runtime.launch import run_status
    from mala_tui.runtime.signals import Shutdown
    from mala_tui.ui.headless import exit_status

    result = None if isinstance(outcome, int | Shutdown) else outcome
    if result is not None:
        outcome = run_status(result)  # the run's own, whether or not it can be said
    try:  # after SIGHUP the terminal may be gone, or the reader of a pipe (`| head -1`)
        if isinstance(outcome, int) and outcome == EXIT_INTERRUPTED:
            out.write("interrupted: every session was stopped\n")
        elif isinstance(outcome, Shutdown):
            out.write(f"{outcome.cause}: every session was stopped\n")
        elif result is not None:
            exit_status(result, out)
        if supervisor is not None:
            out.write(resume_hint(supervisor))
            out.write(cost_line(supervisor.state.spend))
        out.flush()
    except OSError:
        _silence(out)
    if isinstance(outcome, Shutdown):
        return outcome.exit_status or EXIT_INTERRUPTED
    if supervisor is not None and supervisor.storage_failure is not None:
        print(f"mala-tui: {supervisor.stop_cause}; every session was stopped", file=sys.stderr)
        return EXIT_STORAGE
    return outcome if isinstance(outcome, int) else 1


def _silence(out: TextIO) -> None:
    """Output nobody reads any more: what is still buffered, and what is written after,
    goes nowhere, so the interpreter's own last flush does not fail (and set 120)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, out.fileno())
        os.close(devnull)


def resume_hint(supervisor: Supervisor) -> str:
    """How to carry on the sessions the run was stopped with, when it was stopped with any."""
    from mala_tui.commands.resume_cmd import resume_command
    from mala_tui.core.actions import EndStatus

    cause, journal = supervisor.stop_cause, supervisor.journal
    if not cause or journal is None or supervisor.mode == "demo":
        return ""  # a demo's model server ended with it: it cannot be resumed
    result = supervisor.result()
    stopped = [
        name
        for name, status in result.statuses.items()
        if status is EndStatus.STOPPED and result.reasons[name].startswith(cause)
    ]
    if not stopped:
        return ""
    return f"{len(stopped)} stopped with the run; carry on: {resume_command(journal.run_id)}\n"


async def _supervise(
    supervisor: Supervisor,
    headless: bool,
    out: TextIO,
    shutdown: Shutdown,
    host_fd: int | None = None,
) -> RunResult | Shutdown | int:
    """Run in the app, headless, or as the run's host (`host_fd`: a detached run's, see
    runtime.host) until the run ends or a stop is asked for (Ctrl-C, SIGTERM, SIGHUP:
    `shutdown`, whose handlers the command installed before start-up). However it runs,
    consoles can attach to it (runtime.channel).

    A stop asked for before the run started (during start-up) ends every session
    before any starts; asked for again while stopping, the agents are killed at once."""
    from mala_tui.commands.console_cmd import hosted, serving
    from mala_tui.runtime.signals import StopRoute

    if shutdown.requested:
        supervisor.set_stop_cause(shutdown.cause)
        await supervisor.run()
        return shutdown
    main = asyncio.current_task()
    assert main is not None
    apps: list[MalaApp] = []

    acted: list[int] = []

    def act(times: int) -> None:
        if acted:  # asked again while stopping
            supervisor.hurry()
            return
        acted.append(times)
        if shutdown.route is StopRoute.STOP:
            if apps:
                supervisor.stop_for(shutdown.cause)
                apps[0].call_later(apps[0].action_quit)  # the app's own quit waits for it
            else:
                supervisor.set_stop_cause(shutdown.cause)
                main.cancel()  # each session stops as its task is cancelled
        if times > 1:
            supervisor.hurry()

    with shutdown.acted_on(act):
        try:
            if host_fd is not None:
                result = await hosted(supervisor, out, host_fd)
            else:
                async with serving(supervisor):
                    if headless:
                        result = await _headless(supervisor, out)
                    else:
                        result = await _app(supervisor, apps.append)
        except asyncio.CancelledError:
            if shutdown.reason is None:  # (`requested` reads as still False to mypy)
                raise
            main.uncancel()
    return result if shutdown.reason is None else shutdown


async def _app(supervisor: Supervisor, on_app: Callable[[MalaApp], object]) -> RunResult | int:
    """The app until it is quit; then the run's own status, as headless gives it (the app's
    when it ended on an error or left an agent process behind)."""
    from mala_tui.ui.app import run_app_async

    status = await run_app_async(supervisor, supervisor.settings, on_app)
    return status if status else supervisor.result()


async def _headless(supervisor: Supervisor, out: TextIO) -> RunResult | int:
    from mala_tui.runtime.launch import HeadlessApprovalError, check_headless_approvals
    from mala_tui.ui.headless import read_stdin_line, run_headless

    interactive = sys.stdin.isatty()
    try:
        check_headless_approvals(supervisor, interactive)
    except HeadlessApprovalError as exc:
        print(f"mala-tui: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return await run_headless(supervisor, out, read_line=read_stdin_line if interactive else None)
