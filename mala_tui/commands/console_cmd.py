"""Consoles of live runs: `mala-tui attach`, `mala-tui stop`, and what `--detach` starts.

A run is served to consoles by whoever runs its supervisor (runtime.consoles.channel): a
detached run's host (runtime.consoles.run_host), or a foreground run's own process (both in
commands.running). `attach` opens a console on it from any terminal (the app, or
`--headless` event lines) and leaves it alone on the way out; `stop` stops it,
resumably, as Ctrl-C in a foreground run does.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Final, TextIO

from mala_tui.commands.run_options import has_terminal, on_the_web
from mala_tui.commands.running import cost_line
from mala_tui.config_loading import LoadedSettings
from mala_tui.core.events import RunMode

if TYPE_CHECKING:
    from mala_tui.runtime.consoles.live_run import RemoteRun
    from mala_tui.runtime.consoles.run_host import Started

EXIT_OK: Final = 0
EXIT_NOT_ALL_DONE: Final = 1
EXIT_USAGE: Final = 2
STOP_WAIT_SECONDS: Final = 60.0
"""How long `stop` waits for the run to end (each session's stop is bounded at 10 s)."""


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    attach = commands.add_parser(
        "attach", help="open a console on a live run (the app, or --headless event lines)"
    )
    attach.add_argument("run", help="run id, a unique prefix of it, or 'latest' (live run)")
    attach.add_argument(
        "--headless",
        action="store_true",
        help="no app: the run's event lines, then each new one (questions are asked on "
        "the terminal, when there is one)",
    )
    attach.add_argument("--data-dir", type=Path, help="where runs are journaled")
    attach.add_argument(
        "--question",
        metavar="ID",
        help="open this waiting question's dialog at once (the id a web console's link "
        "names, e.g. fix-tests/permission/3)",
    )
    stop = commands.add_parser(
        "stop", help="stop a live run, resumably (as Ctrl-C does in a foreground run)"
    )
    stop.add_argument("run", help="run id, a unique prefix of it, or 'latest' (live run)")
    stop.add_argument("--data-dir", type=Path, help="where runs are journaled")


# -- --detach, and the console of a run this process starts ---------------------------------------


def start_hosted(args: argparse.Namespace, loaded: LoadedSettings, out: TextIO) -> int | None:
    """How `run`, `resume` and `demo` start: the exit status when this process only
    starts the run's host (runtime.consoles.run_host) and is done, or is the app console
    of the run it hosts; None when the run is to be built in this process.

    - this process is the host (`--host-ready-fd`; then `args.host_fd`): None;
    - `--detach`: the host is started, this says how to reach it, and exits 0;
    - the app in a terminal: the host is started, and this process is its console, as a
      console that `attach` opens is, but the run's own: Ctrl-C and SIGTERM are passed on
      to the host (the run stops, resumably, and this exits with the host's status),
      while a closed terminal (SIGHUP), `D`, or `q` then detach leave the run going;
    - headless (or the app with no command line to start again, as `show`'s resume):
      None, the run here. A headless run outlives a closed terminal in place.
    """
    from mala_tui.runtime.consoles.run_host import spawn

    args.host_fd = getattr(args, "host_ready_fd", None)
    if args.host_fd is not None:
        # The host has no terminal to lose: a hangup is no reason to stop (SIGTERM is).
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        return None
    argv = getattr(args, "argv", None)
    detach = bool(getattr(args, "detach", False))
    if argv is None or not (detach or (not args.headless and has_terminal() and not on_the_web())):
        return None
    started = spawn(argv, args.command)
    if isinstance(started, int):
        return started  # it said why on stderr
    if not detach:
        return _console_of(started, loaded, out)
    command = loaded.settings.command
    out.write(
        f"running in the background (host pid {started.pid}); this terminal can close\n"
        f"attach: {command('attach', started.run_id)}\n"
        f"stop:   {command('stop', started.run_id)}\n"
    )
    out.flush()
    return EXIT_OK


def _console_of(started: Started, loaded: LoadedSettings, out: TextIO) -> int:
    """The app on a run this process just started the host of (its child)."""
    from mala_tui.runtime.consoles.live_run import RemoteRun
    from mala_tui.runtime.consoles.run_host import wait
    from mala_tui.runtime.consoles.sockets import ChannelError

    try:
        remote = RemoteRun.attach(started.folder, prices=loaded.settings.pricing.table())
    except ChannelError as exc:  # gone already (killed as it started, say)
        print(f"mala-tui: {exc}", file=sys.stderr)
        return wait(started.pid)
    try:
        return asyncio.run(_attached(remote, loaded, False, out, host=started.pid))
    except KeyboardInterrupt:
        return wait(started.pid)


# -- attach ---------------------------------------------------------------------------------------


def _find_live(args: argparse.Namespace, loaded: LoadedSettings, command: str) -> Path | int:
    """The run's folder; an exit status (said why) when there is no such run."""
    from mala_tui.runtime.consoles.sockets import live_host
    from mala_tui.runtime.journal.writer import JournalError, find_run, list_runs

    data_dir = getattr(args, "data_dir", None) or loaded.settings.resolved_data_dir()
    try:
        if args.run == "latest":
            for run in list_runs(data_dir):
                if not run.ended and live_host(run.directory) is not None:
                    return run.directory
            print(f"mala-tui {command}: no live run under {data_dir / 'runs'}", file=sys.stderr)
            return EXIT_USAGE
        return find_run(data_dir, args.run)
    except JournalError as exc:
        print(f"mala-tui {command}: {exc}", file=sys.stderr)
        return EXIT_USAGE


def attach(args: argparse.Namespace, loaded: LoadedSettings, out: TextIO = sys.stdout) -> int:
    from mala_tui.runtime.consoles.live_run import RemoteRun
    from mala_tui.runtime.consoles.sockets import ChannelError
    from mala_tui.runtime.journal.writer import JournalError

    folder = _find_live(args, loaded, "attach")
    if isinstance(folder, int):
        return folder
    if not args.headless and not has_terminal():  # a terminal, or a browser tab's pipes
        print(
            "mala-tui attach: the app needs a terminal (stdin and stdout); without one, "
            "use --headless",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        remote = RemoteRun.attach(folder, prices=loaded.settings.pricing.table())
    except ChannelError as exc:
        command = loaded.settings.command
        print(
            f"mala-tui attach: {exc} (`{command('show', folder.name)}` opens it, "
            f"`{command('resume', folder.name)}` carries it on)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    except JournalError as exc:
        print(f"mala-tui attach: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        question = getattr(args, "question", None)
        return asyncio.run(_attached(remote, loaded, args.headless, out, question=question))
    except KeyboardInterrupt:  # before the handlers were in place: a detach all the same
        return EXIT_OK


async def _attached(
    remote: RemoteRun,
    loaded: LoadedSettings,
    headless: bool,
    out: TextIO,
    host: int | None = None,
    *,
    question: str | None = None,
) -> int:
    """Follow the run until it ends, its host goes away, or this console detaches.

    A console that `attach` opened detaches on Ctrl-C, SIGTERM and SIGHUP: the run goes
    on. The console of a foreground run (`host`: its host, this process's child) passes
    Ctrl-C and SIGTERM on to the host, which stops the run as it would have in this
    process, and exits with the host's status; only SIGHUP (its terminal gone) detaches."""
    from mala_tui.ui.app import MalaApp, run_app_async

    main = asyncio.current_task()
    assert main is not None
    loop = asyncio.get_running_loop()
    detached: list[str] = []
    apps: list[MalaApp] = []

    def detach(cause: str) -> None:
        if detached:
            return
        detached.append(cause)
        if apps:
            apps[0].call_later(apps[0].close_console)  # the app's exit restores the terminal
        else:
            main.cancel()

    def pass_on(number: signal.Signals) -> None:
        assert host is not None
        with contextlib.suppress(ProcessLookupError):
            os.kill(host, number)
        if apps:  # leave once the run has stopped, as a quit does
            apps[0].call_later(apps[0].stop_and_exit, ask=False)

    signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    for number in signals:
        if host is not None and number is not signal.SIGHUP:
            loop.add_signal_handler(number, pass_on, number)
        else:
            loop.add_signal_handler(number, detach, number.name)
    try:
        if headless:
            await _headless(remote, out)
        else:
            status = await run_app_async(
                remote, loaded.settings, apps.append, attached=True, question=question
            )
            if status:
                return status
            if apps and apps[0].detached:
                detached.append("the app")
    except asyncio.CancelledError:
        if not detached:
            raise
        main.uncancel()
    finally:
        for number in signals:
            loop.remove_signal_handler(number)
        remote.close()
    if host is not None and not detached:
        return await _host_ended(remote, loaded, out, host)
    return _ending(remote, loaded, out, detached=bool(detached))


async def _host_ended(remote: RemoteRun, loaded: LoadedSettings, out: TextIO, host: int) -> int:
    """The foreground run's end: its sessions as the run left them, and the host's status."""
    from mala_tui.runtime.consoles.run_host import wait

    status = await asyncio.to_thread(wait, host)
    _ending(remote, loaded, out, detached=False)
    return status


async def _headless(remote: RemoteRun, out: TextIO) -> None:
    from mala_tui.runtime.consoles.serve_record import notice_address
    from mala_tui.ui.headless import printer, read_stdin_line
    from mala_tui.ui.terminal_questions import answer_from_terminal

    run_id, data_dir = remote.folder.name, remote.folder.parent.parent  # DATA/runs/RUN
    show = printer(out, address=lambda question: notice_address(data_dir, run_id, question))
    for event in remote.skipped.events if remote.skipped is not None else []:
        show(event)
    out.write(f"attached to run {remote.folder.name}: live from here (Ctrl-C detaches)\n")
    out.flush()
    remote.listeners.events.append(show)
    asker = None
    if sys.stdin.isatty():
        asker = asyncio.create_task(answer_from_terminal(remote, out, read_stdin_line))
    try:
        await remote.run()
    finally:
        if asker is not None:
            asker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asker


def _ending(remote: RemoteRun, loaded: LoadedSettings, out: TextIO, *, detached: bool) -> int:
    """What the console says as it leaves, and its exit status."""
    from mala_tui.core.actions import EndStatus
    from mala_tui.core.text import safe_line
    from mala_tui.runtime.private.redaction import redact

    run_id = remote.folder.name
    ended = remote.ended
    command = loaded.settings.command
    with contextlib.suppress(OSError):  # after SIGHUP the terminal may be gone
        if detached or (ended is None and not remote.lost):
            out.write(f"detached: run {run_id} goes on ({command('attach', run_id)})\n")
            out.flush()
            return EXIT_OK
        if ended is None:
            print(
                f"mala-tui: {remote.lost}; `{command('resume', run_id)}` carries it on",
                file=sys.stderr,
            )
            return EXIT_NOT_ALL_DONE
        stopped = 0
        for name, session in remote.state.sessions.items():
            status = session.status.value if session.status is not None else "?"
            reason = safe_line(session.end_reason, 400)
            line = f"{safe_line(name, 80)}: {status}{' - ' + reason if reason else ''}"
            out.write(redact(line) + "\n")
            cause = ended.reason
            if session.status is EndStatus.STOPPED and cause and reason.startswith(cause):
                stopped += 1
        if stopped and remote.mode is not RunMode.DEMO:  # a demo's model server went with it
            out.write(f"{stopped} stopped with the run; carry on: {command('resume', run_id)}\n")
        out.write(cost_line(remote.state.spend, remote.state.cli_cost_usd))
        out.flush()
    return EXIT_OK if ended is not None and ended.ok else EXIT_NOT_ALL_DONE


# -- stop -----------------------------------------------------------------------------------------


def stop(args: argparse.Namespace, loaded: LoadedSettings, out: TextIO = sys.stdout) -> int:
    import time

    from mala_tui.runtime.consoles.channel import WHEN_STOPPED
    from mala_tui.runtime.consoles.live_run import RemoteRun
    from mala_tui.runtime.consoles.sockets import ChannelError, live_host
    from mala_tui.runtime.session.processes import pid_alive

    folder = _find_live(args, loaded, "stop")
    if isinstance(folder, int):
        return folder
    host = live_host(folder)
    if host is None:
        print(f"mala-tui stop: run {folder.name} is not live: nothing to stop", file=sys.stderr)
        return EXIT_USAGE
    try:
        RemoteRun(folder, host).stop_for(WHEN_STOPPED)
    except (ChannelError, ValueError, KeyError) as exc:
        print(f"mala-tui stop: {exc}", file=sys.stderr)
        return EXIT_USAGE
    deadline = time.monotonic() + STOP_WAIT_SECONDS

    def stopping() -> bool:  # its agents are gone once its host is: they die with it
        return pid_alive(host.pid) or live_host(folder) is not None

    while stopping() and time.monotonic() < deadline:
        time.sleep(0.1)
    if stopping():
        print(
            f"mala-tui stop: run {folder.name} was asked to stop and is still stopping "
            f"(host pid {host.pid})",
            file=sys.stderr,
        )
        return EXIT_NOT_ALL_DONE
    said = f"run {folder.name} stopped: every session was stopped with it"
    if _mode(folder) != "demo":  # a demo's model server went with it: it cannot go on
        said += f" (carry it on: {loaded.settings.command('resume', folder.name)})"
    out.write(said + "\n")
    return EXIT_OK


def _mode(folder: Path) -> str:
    """What started the run (run, demo), as its run.json says; "" when it cannot say."""
    import json

    try:
        meta = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return ""
    mode = meta.get("mode") if isinstance(meta, dict) else None
    return mode if isinstance(mode, str) else ""
