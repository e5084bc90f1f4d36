"""`mala-tui loopback serve`: run the loopback model server in the foreground.

Registering the subcommand needs only the standard library; the server (aiohttp, pydantic)
is imported when the command runs, so ``mala-tui --help`` stays fast.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

EXIT_USAGE = 2
DEFAULT_WINDOW = 200_000
_SCENARIO_DIR = Path(__file__).resolve().parent.parent / "loopback" / "scenarios"


def register(commands: Any) -> None:
    """Add ``loopback serve`` to the top-level subparsers."""
    loopback = commands.add_parser(
        "loopback", help="a scripted Anthropic-compatible model server for offline runs"
    )
    actions = loopback.add_subparsers(dest="loopback_command", metavar="ACTION")
    shipped = ", ".join(sorted(path.stem for path in _SCENARIO_DIR.glob("*.toml")))
    serve = actions.add_parser(
        "serve",
        help="serve a scenario until Ctrl-C",
        description=f"Serve a scenario on 127.0.0.1 until Ctrl-C. Shipped scenarios: {shipped}",
    )
    serve.add_argument("--scenario", required=True, metavar="FILE_OR_NAME")
    serve.add_argument(
        "--port", type=_port, default=0, help="0 picks a free port (default); at most 65535"
    )
    serve.add_argument(
        "--window", type=_positive_int, default=DEFAULT_WINDOW, help="prompt token limit"
    )
    serve.add_argument(
        "--token-ratio",
        type=_token_ratio,
        metavar="X",
        help="token density: report X times the chars/4 count for every prompt, "
        "count_tokens and output (default: the scenario's token_ratio, else 1)",
    )
    serve.add_argument(
        "--cache-ttl",
        type=_cache_ttl,
        default=300.0,
        metavar="SECONDS",
        help="the prompt cache's lifetime in simulated seconds: 300 (the default, the "
        "API's 5-minute cache) or 3600 for the 1-hour cache, whose writes are billed at 2x",
    )
    serve.add_argument(
        "--time-scale",
        type=_time_scale,
        metavar="X",
        help="simulated seconds per second, for the cache's lifetime (default: the "
        "scenario's time_scale, else 1): at 60, a 6-minute wait takes 6 seconds",
    )
    serve.add_argument(
        "--compact-at",
        type=_compact_at,
        metavar="TOKENS",
        help="apply the API's server-side compaction (compact_20260112) to every request, "
        "summarising past this many input tokens (the API's default is 150000; at least 50000)",
    )
    serve.add_argument("--log", type=Path, metavar="FILE", help="write the request log (JSONL)")
    serve.add_argument(
        "--delay",
        type=_delay,
        metavar="SECONDS",
        help="pause after each message_start (default: the scenario's response_delay_s)",
    )
    serve.add_argument(
        "--workspace",
        type=Path,
        metavar="DIR",
        help="generate the scenario's workspace files in DIR (also used when a request "
        "does not state its working directory)",
    )
    serve.add_argument(
        "--home",
        type=Path,
        metavar="DIR",
        help="where the printed env puts the CLI's config and temp dirs (default: a temp dir)",
    )


def _port(text: str) -> int:
    port = _int(text)
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port: 0 to 65535")
    return port


def _positive_int(text: str) -> int:
    number = _int(text)
    if number <= 0:
        raise argparse.ArgumentTypeError(f"{number}: must be more than 0")
    return number


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def _delay(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise argparse.ArgumentTypeError(f"{text}: must be 0 or more seconds")
    return seconds


def _positive_float(text: str, what: str, largest: float) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of {what}") from None
    if not math.isfinite(value) or value <= 0 or value > largest:
        raise argparse.ArgumentTypeError(f"{text}: must be above 0 and at most {largest:g}")
    return value


def _cache_ttl(text: str) -> float:
    return _positive_float(text, "seconds", 86_400.0)


def _time_scale(text: str) -> float:
    return _positive_float(text, "simulated seconds per second", 3_600.0)


# The API's floor for compact_20260112's trigger; kept here so registering imports nothing.
_MIN_COMPACT_AT = 50_000


def _compact_at(text: str) -> int:
    tokens = _int(text)
    if tokens < _MIN_COMPACT_AT:
        raise argparse.ArgumentTypeError(
            f"{tokens}: the API compacts at {_MIN_COMPACT_AT} input tokens at the least"
        )
    return tokens


def _check_log(path: Path) -> str | None:
    """The log is written at the end: find out now, not at Ctrl-C, that it cannot be."""
    existed = path.exists()
    try:
        with path.open("a", encoding="utf-8"):
            pass
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return f"--log {path}: cannot be written: {reason}"
    if not existed:
        path.unlink()
    return None


# Same bound as the server's; kept here so registering the command imports nothing heavy.
_MAX_TOKEN_RATIO = 64.0


def _token_ratio(text: str) -> float:
    """``--token-ratio``: a finite number above 0 (at most 64), or argparse's usage error."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value <= 0 or value > _MAX_TOKEN_RATIO:
        raise argparse.ArgumentTypeError(
            f"{text!r} must be a finite number above 0 and at most {_MAX_TOKEN_RATIO:g} "
            "(2 means twice the chars/4 count)"
        )
    return value


def run(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    """Dispatch ``loopback ACTION``; returns the exit status."""
    if args.loopback_command != "serve":
        out.write("usage: mala-tui loopback serve --scenario FILE_OR_NAME [--port N]\n")
        return EXIT_USAGE
    # Deferred so that registering the subcommand does not import the server.
    from mala_tui.loopback import ScenarioError, load_scenario
    from mala_tui.loopback.standalone import ServeOptions, serve_forever

    try:
        scenario = load_scenario(args.scenario)
    except ScenarioError as exc:
        print(f"mala-tui: {exc}", file=sys.stderr)
        return EXIT_USAGE
    problem = _check_log(args.log) if args.log is not None else None
    if problem is not None:
        print(f"mala-tui: {problem}", file=sys.stderr)
        return EXIT_USAGE
    options = ServeOptions(
        port=args.port,
        window=args.window,
        home=args.home or Path(tempfile.mkdtemp(prefix="mala-tui-loopback-")),
        log=args.log,
        delay_s=args.delay,
        workspace=args.workspace,
        token_ratio=getattr(args, "token_ratio", None),
        cache_ttl_s=args.cache_ttl,
        time_scale=args.time_scale,
        compact_at=args.compact_at,
    )
    try:
        serve_forever(scenario, options, out)
    except OSError as exc:
        if exc.filename is not None:  # the workspace or the log, not the port
            print(f"mala-tui: {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
        else:
            print(
                f"mala-tui: cannot serve on port {args.port}: {exc.strerror or exc}",
                file=sys.stderr,
            )
        return 1
    return 0
