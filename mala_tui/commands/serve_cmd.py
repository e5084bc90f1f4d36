"""`mala-tui serve`: the app in a browser, every run under the data dir, behind an access token."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import signal
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from mala_tui.config_loading import LoadedSettings

if TYPE_CHECKING:
    from mala_tui.web.runs import RunChoice

EXIT_USAGE = 2
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
IDLE_SECONDS = 15.0
"""`--idle-timeout`'s default (web.server.IDLE_SECONDS, not imported: serve's
dependencies load only when it runs)."""


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = commands.add_parser(
        "serve",
        help="the app in a browser: each tab opens a run (live: attached; ended: read-only)",
    )
    serve.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help="address to listen on (default: 127.0.0.1, this machine only; reach it from "
        "elsewhere through `ssh -L`)",
    )
    serve.add_argument(
        "--port", type=_port, default=DEFAULT_PORT, help="port (default: 8000; 0: any free one)"
    )
    serve.add_argument("--data-dir", type=Path, help="where runs are journaled")
    serve.add_argument(
        "--idle-timeout",
        type=_seconds,
        default=IDLE_SECONDS,
        metavar="SECONDS",
        help=f"close a connection that sends no request for this long (default: "
        f"{IDLE_SECONDS:g}); an open tab is never idle",
    )


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r}: a port is 0 to 65535")
    return port


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < seconds <= 3600:
        raise argparse.ArgumentTypeError(f"{text!r}: more than 0 and at most 3600 seconds")
    return seconds


def tab_command(
    choice: RunChoice, mala: Sequence[str], data_dir: Path, question: str | None = None
) -> list[str]:
    """The command one browser tab runs: the app on the run the tab opens.

    A live run opens attached (`attach`: every operator action works, and closing
    the tab detaches), at `question`'s dialog when one is named; one that has ended
    opens read-only (`show`).
    """
    if not choice.live:
        return [*mala, "show", choice.run_id, "--data-dir", str(data_dir)]
    at = ["--question", question] if question else []
    return [*mala, "attach", choice.run_id, "--data-dir", str(data_dir), *at]


def is_loopback(host: str) -> bool:
    """Whether `host` is reachable from this machine only (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(args: argparse.Namespace, loaded: LoadedSettings, out: TextIO = sys.stdout) -> int:
    from mala_tui.runtime.consoles.serve_record import forget_serve, record_serve
    from mala_tui.web.access import new_token
    from mala_tui.web.server import ConsoleServer, ListenError

    data_dir: Path = args.data_dir or loaded.settings.resolved_data_dir()
    # Each tab's app gets the settings given to serve (--set), the same data dir.
    mala = [sys.executable, "-m", "mala_tui"]
    for override in args.overrides:
        mala += ["--set", override]
    token = new_token()
    server = ConsoleServer(
        data_dir=data_dir,
        tab_command=lambda choice, question=None: tab_command(choice, mala, data_dir, question),
        token=token,
        host=args.host,
        port=args.port,
        idle_timeout=args.idle_timeout,
    )

    def announce(port: int) -> None:
        # Every interface: the URL names this machine (the token is the same whichever name).
        shown = socket.gethostname() if args.host in ("0.0.0.0", "::", "") else args.host
        if ":" in shown:
            shown = f"[{shown}]"
        if not is_loopback(args.host):
            print(
                f"mala-tui serve: warning: listening on {args.host}, not this machine only: "
                "anyone who has the URL below can approve tools on this machine",
                file=sys.stderr,
            )
        # Where notifications link to (the address, never the token), while this runs:
        # recorded before the address is printed, so whoever reads it finds it.
        try:
            record_serve(data_dir, f"http://{shown}:{port}")
        except OSError as exc:
            print(
                f"mala-tui serve: warning: notifications will not link here: {data_dir}: "
                f"{exc.strerror or exc}",
                file=sys.stderr,
            )
        out.write(f"mala-tui serve: runs under {data_dir}\n")
        out.write(f"open http://{shown}:{port}/?token={token}\n")
        out.write("Ctrl-C stops the server and closes every tab's app\n")
        out.flush()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, server.stop)
        try:
            await server.run(announce)
        finally:
            forget_serve(data_dir)
            for signum in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(ValueError, RuntimeError):
                    loop.remove_signal_handler(signum)

    try:
        asyncio.run(main())
    except ListenError as exc:
        print(f"mala-tui serve: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return 0
