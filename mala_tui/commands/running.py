"""A run once built, in this process: in the app, headless, or as the run's host (a
detached run's, runtime.consoles.run_host), served to consoles however it runs; and what the
command says as the run ends (each session's end, the cost, how to carry it on).

`run`, `demo` and `resume` each build their run, then hand it here.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import sys
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, TextIO

from mala_tui.core.events import RunMode
from mala_tui.core.pricing import Spend, format_cost

if TYPE_CHECKING:
    from mala_tui.config import Settings
    from mala_tui.core import events as ev
    from mala_tui.runtime.consoles.channel import ControlChannel
    from mala_tui.runtime.consoles.notify import Notifier
    from mala_tui.runtime.run.run_types import RunResult
    from mala_tui.runtime.run.signals import Shutdown
    from mala_tui.runtime.run.supervisor import Supervisor
    from mala_tui.ui.app import MalaApp

EXIT_USAGE = 2
#: The run's files cannot be written: a full disk, a read-only data dir (sysexits' EX_IOERR).
EXIT_STORAGE = 74
EXIT_INTERRUPTED = 130


def resume_command(run_id: str, settings: Settings) -> str:
    """The command that resumes a run, as `show` suggests it."""
    return settings.command("resume", run_id)


def cost_line(spend: Spend, cli_cost: float | None = None) -> str:
    """The run's cost as the last lines of `run` and `demo` say it, checked against what
    Claude Code itself said it cost when it did."""
    if not spend.calls:
        return ""
    rate = spend.cache_hit_rate
    cached = "" if rate is None else f", {rate:.0%} of prompt tokens from the cache"
    cost = format_cost(spend.cost_usd)
    if spend.priced:
        cost += " (estimate at list prices)"
    return f"cost: {cost} for {spend.calls} API calls{cached}{cli_check(spend, cli_cost)}\n"


def cli_check(spend: Spend, cli_cost: float | None) -> str:
    """`; Claude Code says $0.21 (1.4% apart)`: the estimate beside the CLI's own figure."""
    if cli_cost is None:
        return ""
    said = f"; Claude Code says {format_cost(cli_cost)}"
    if spend.cost_usd is None or cli_cost <= 0:
        return said
    apart = abs(spend.cost_usd - cli_cost) / cli_cost
    return said + (" (the same)" if apart < 0.0005 else f" ({apart:.1%} apart)")


def resume_hint(supervisor: Supervisor) -> str:
    """How to carry on the sessions the run was stopped with, when it was stopped with any."""
    from mala_tui.core.actions import EndStatus

    cause, journal = supervisor.stop_cause, supervisor.journal
    if not cause or journal is None or supervisor.mode is RunMode.DEMO:
        return ""  # a demo's model server ended with it: it cannot be resumed
    result = supervisor.result()
    stopped = [
        name
        for name, status in result.statuses.items()
        if status is EndStatus.STOPPED and result.reasons[name].startswith(cause)
    ]
    if not stopped:
        return ""
    carry_on = resume_command(journal.run_id, supervisor.settings)
    return f"{len(stopped)} stopped with the run; carry on: {carry_on}\n"


def until_done(main: Callable[[], object]) -> RunResult | Shutdown | int:
    """asyncio.run; Ctrl-C (which asyncio turns into cancelling `main`) becomes 130."""
    try:
        return asyncio.run(main())  # type: ignore[arg-type]
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def finish(outcome: RunResult | Shutdown | int, supervisor: Supervisor | None, out: TextIO) -> int:
    from mala_tui.runtime.run.launch import run_status
    from mala_tui.runtime.run.signals import Shutdown
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
            out.write(cost_line(supervisor.state.spend, supervisor.state.cli_cost_usd))
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


async def supervise(
    supervisor: Supervisor,
    headless: bool,
    out: TextIO,
    shutdown: Shutdown,
    host_fd: int | None = None,
) -> RunResult | Shutdown | int:
    """Run in the app, headless, or as the run's host (`host_fd`: a detached run's, see
    runtime.consoles.run_host) until the run ends or a stop is asked for (Ctrl-C, SIGTERM, SIGHUP:
    `shutdown`, whose handlers the command installed before start-up). However it runs,
    consoles can attach to it (runtime.consoles.channel).

    A stop asked for before the run started (during start-up) ends every session
    before any starts; asked for again while stopping, the agents are killed at once."""
    from mala_tui.runtime.run.signals import StopRoute

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
    from mala_tui.runtime.run.launch import HeadlessApprovalError, check_headless_approvals
    from mala_tui.ui.headless import read_stdin_line, run_headless

    interactive = sys.stdin.isatty()
    try:
        check_headless_approvals(supervisor, interactive)
    except HeadlessApprovalError as exc:
        print(f"mala-tui: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return await run_headless(supervisor, out, read_line=read_stdin_line if interactive else None)


# -- serving the run to consoles -------------------------------------------------------------------


async def hosted(supervisor: Supervisor, out: TextIO, ready: int) -> RunResult | int:
    """The run as its host runs it: served to consoles, its event lines in `host.log`."""
    from mala_tui.runtime.consoles.channel import ControlChannel
    from mala_tui.runtime.consoles.run_host import say_ready
    from mala_tui.runtime.consoles.sockets import ChannelError
    from mala_tui.ui.headless import printer

    journal = supervisor.journal
    assert journal is not None
    channel = ControlChannel(supervisor, journal.directory)
    try:
        path = await channel.start()
    except ChannelError as exc:
        print(f"mala-tui: consoles could not reach the run: {exc}", file=sys.stderr)
        return EXIT_USAGE
    say_ready(ready, journal.directory, path)
    supervisor.listeners.events.append(printer(out))
    notifiers = _notifiers(supervisor, channel)
    try:
        return await supervisor.run()
    finally:
        for notify in notifiers:
            await notify.close()
        await channel.close()


def _notifiers(supervisor: Supervisor, channel: ControlChannel) -> list[Notifier]:
    """`ui.notify_command` and `ui.notify_url`, told when the run needs a person and no
    console is attached; each notice links to its question on the data folder's `serve`."""
    from mala_tui.runtime.consoles.notify import (
        Notifier,
        NotifyCommand,
        NotifyFormat,
        NotifyPost,
        Sender,
    )
    from mala_tui.runtime.consoles.serve_record import notice_address

    ui = supervisor.settings.ui
    journal = supervisor.journal
    if journal is None or not (ui.notify_command.strip() or ui.notify_url):
        return []
    run_id = journal.run_id
    data_dir = supervisor.settings.resolved_data_dir()

    def record(event: ev.Event) -> None:
        if supervisor.state.ended_at is None:  # nothing is journaled after the run's end
            supervisor.record(event)

    def address(question: str) -> str:
        return notice_address(data_dir, run_id, question)

    senders: list[Sender] = []
    if ui.notify_command.strip():
        attach = f"mala-tui attach {run_id} --data-dir {shlex.quote(str(data_dir))}"
        senders.append(NotifyCommand(ui.notify_command, run_id=run_id, attach=attach))
    if ui.notify_url:
        form = NotifyFormat(ui.notify_format)
        senders.append(NotifyPost(ui.notify_url, run_id=run_id, form=form))
    notifiers = [
        Notifier(
            sender,
            run_id=run_id,
            consoles=lambda: channel.consoles,
            record=record,
            address=address,
        )
        for sender in senders
    ]
    supervisor.listeners.events.extend(notifiers)
    return notifiers


@contextlib.asynccontextmanager
async def serving(supervisor: Supervisor) -> AsyncIterator[None]:
    """A foreground run served to consoles too, while it runs (a warning if it cannot be)."""
    from mala_tui.runtime.consoles.channel import ControlChannel
    from mala_tui.runtime.consoles.sockets import ChannelError

    journal = supervisor.journal
    if journal is None:
        yield
        return
    channel = ControlChannel(supervisor, journal.directory)
    try:
        await channel.start()
    except ChannelError as exc:
        print(f"mala-tui: consoles cannot attach to this run: {exc}", file=sys.stderr)
        yield
        return
    try:
        yield
    finally:
        await channel.close()
