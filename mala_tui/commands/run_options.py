"""What `run`, `demo` and `resume` share before a run is built: their common options
(approvals, headless, detach, budgets), those options applied over the settings, and
why a run cannot start as asked (checked before anything is created, so a refused run
leaves no half-started run behind).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TypeVar

from mala_tui.config_loading import LoadedSettings
from mala_tui.core.permissions import PermissionPolicy
from mala_tui.runtime.questions.approvals import ApprovalMode

Choice = TypeVar("Choice", bound=StrEnum)

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


def enum_choice(enum: type[Choice]) -> Callable[[str], Choice]:
    """An argparse `type` that parses a flag's value into `enum`, the command line being the
    edge where a string becomes one of the core's values; a bad one is argparse's one-line
    usage error."""

    def parse(text: str) -> Choice:
        try:
            return enum(text)
        except ValueError:
            known = ", ".join(member.value for member in enum)
            raise argparse.ArgumentTypeError(
                f"invalid choice: {text!r} (choose from {known})"
            ) from None

    return parse


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


def add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--approve",
        type=enum_choice(ApprovalMode),
        choices=tuple(mode.value for mode in ApprovalMode),
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
    # Given by `--detach` to the run's host it starts (runtime.consoles.run_host): where to
    # say "ready".
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
    from mala_tui.runtime.run.launch import HeadlessApprovalError, check_approval_mode, prompts_for

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
