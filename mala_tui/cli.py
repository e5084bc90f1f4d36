"""The `mala-tui` command: parses arguments, loads settings, dispatches.

Heavy imports (textual, the SDK) happen inside the commands that need them so
`mala-tui --help` and `mala-tui config ...` stay fast.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from mala_tui import __version__
from mala_tui.commands import (
    console_cmd,
    land_cmd,
    loopback_cmd,
    open_cmd,
    resume_cmd,
    run_cmd,
    runs_cmd,
    serve_cmd,
)
from mala_tui.commands.internal_error import report_internal_error
from mala_tui.config import absolute_path
from mala_tui.config_loading import ConfigError, LoadedSettings, load_settings, parse_override
from mala_tui.runtime.journal.writer import forget_opened_runs

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
#: `--set`, before the command or after it (`mala-tui run --set agent.model=X TASK`).
SET_OPTION: Final[dict[str, Any]] = {
    "action": "append",
    "metavar": "SECTION.KEY=VALUE",
    "help": "override one setting (repeatable), e.g. --set context.soft_threshold=0.6",
}
#: Where a subcommand's own `--set` is kept (per depth: a subcommand's subcommand parses
#: into a namespace of its own, copied over its parent's), merged after parsing.
_LATE_SETS = "overrides_after_command_"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mala-tui",
        description=(
            "Watch Claude Code agent sessions live and manage their context windows: "
            "mask old tool output, checkpoint and restart before the window fills."
        ),
    )
    parser.add_argument("--version", action="version", version=f"mala-tui {__version__}")
    parser.add_argument("--set", dest="overrides", default=[], **SET_OPTION)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    config = commands.add_parser("config", help="show the effective configuration")
    config_commands = config.add_subparsers(dest="config_command", metavar="ACTION")
    show = config_commands.add_parser(
        "show", help="every setting, its value, where it came from, and what it does"
    )
    show.add_argument("--json", action="store_true", help="print as JSON")
    config_commands.add_parser("path", help="the config file mala-tui reads")
    run_cmd.register(commands)
    runs_cmd.register(commands)
    loopback_cmd.register(commands)
    resume_cmd.register(commands)
    land_cmd.register(commands)
    open_cmd.register(commands)
    serve_cmd.register(commands)
    console_cmd.register(commands)
    _finish_subcommands(parser)
    return parser


def _finish_subcommands(parser: argparse.ArgumentParser, depth: int = 1) -> None:
    """Every subcommand's help page gets its one-line description (the help its command
    list gives) and takes `--set` too, so it may come after the command."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {choice.dest: choice.help for choice in action._choices_actions}
        for name, sub in action.choices.items():
            said = helps.get(name)
            if sub.description is None and said:
                sub.description = said[0].upper() + said[1:] + "."
            sub.add_argument(
                "--set", dest=f"{_LATE_SETS}{depth}", default=argparse.SUPPRESS, **SET_OPTION
            )
            _finish_subcommands(sub, depth + 1)


def _merge_late_sets(args: argparse.Namespace) -> None:
    """`--set`s after the command, after those before it (the later one wins)."""
    late = [name for name in vars(args) if name.startswith(_LATE_SETS)]
    for name in sorted(late, key=lambda name: int(name.removeprefix(_LATE_SETS))):
        args.overrides = [*args.overrides, *getattr(args, name)]
        delattr(args, name)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; whatever goes wrong, the user gets one line and an exit status.

    Exit statuses: 0 done, 1 not every session finished, 2 bad input (one line says
    which), 70 internal error (details in error.log), 74 the run's files cannot be
    written, 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP (each after every session stopped).
    """
    forget_opened_runs()
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "data_dir", None) is not None:
        # Absolute at once, against the folder mala-tui was started from: `--cwd` and
        # git (worktrees are made from the repository) must not move it.
        args.data_dir = absolute_path(args.data_dir)
    _merge_late_sets(args)
    # As typed: `--detach` starts the same command again as the run's host
    # (runtime.consoles.run_host).
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        loaded = _load(args)
    except ConfigError as exc:
        print(f"mala-tui: config error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return _dispatch(args, loaded, parser)
    except BrokenPipeError:
        # Output piped into `head` and the like: stop quietly, as other tools do.
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("mala-tui: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # the last line of defence: no traceback reaches the user
        return report_internal_error(exc, _data_dir(args, loaded))


def _load(args: argparse.Namespace) -> LoadedSettings:
    overrides: list[tuple[str, Any, str]] = []
    for text in args.overrides:
        key, value = parse_override(text)
        overrides.append((key, value, f"command line --set {key}"))
    return load_settings(overrides=overrides)


def _dispatch(
    args: argparse.Namespace, loaded: LoadedSettings, parser: argparse.ArgumentParser
) -> int:
    data_dir = getattr(args, "data_dir", None)
    if data_dir is not None:
        loaded = _with_data_dir(loaded, data_dir)
    if args.command == "run":
        return run_cmd.run(args, loaded)
    if args.command == "demo":
        return run_cmd.demo(args, loaded)
    if args.command == "runs":
        return runs_cmd.runs(args, loaded)
    if args.command == "show":
        return runs_cmd.show(args, loaded)
    if args.command == "config":
        from mala_tui.commands import config_cmd

        if args.config_command == "path":
            return config_cmd.path(loaded, sys.stdout)
        if args.config_command == "show":
            return config_cmd.show(loaded, sys.stdout, as_json=args.json)
        parser.parse_args(["config", "--help"])
    if args.command == "loopback":
        return loopback_cmd.run(args)
    if args.command == "resume":
        return resume_cmd.resume(args, loaded)
    if args.command == "land":
        return land_cmd.land(args, loaded)
    if args.command == "discard":
        return land_cmd.discard(args, loaded)
    if args.command == "open":
        return open_cmd.open_session(args, loaded)
    if args.command == "serve":
        return serve_cmd.serve(args, loaded)
    if args.command == "attach":
        return console_cmd.attach(args, loaded)
    if args.command == "stop":
        return console_cmd.stop(args, loaded)
    parser.print_help()
    return EXIT_USAGE


def _data_dir(args: argparse.Namespace, loaded: LoadedSettings) -> Path | None:
    with contextlib.suppress(Exception):
        return getattr(args, "data_dir", None) or loaded.settings.resolved_data_dir()
    return None


def _with_data_dir(loaded: LoadedSettings, data_dir: Path) -> LoadedSettings:
    storage = loaded.settings.storage.model_copy(update={"data_dir": data_dir})
    sources = dict(loaded.sources, **{"storage.data_dir": "command line --data-dir"})
    settings = loaded.settings.model_copy(update={"storage": storage})
    return LoadedSettings(settings, sources, loaded.config_file, loaded.config_file_exists)
