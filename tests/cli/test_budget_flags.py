"""Budget limits on the command line: over the [budget] settings, bad values refused."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest

from mala_tui.commands import run_cmd, run_options
from mala_tui.config_loading import load_settings


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command")
    run_cmd.register(commands)
    return parser.parse_args(["run", "task", *argv])


def test_flags_override_the_settings_and_say_so() -> None:
    loaded = run_options.with_budget_flags(
        parse("--max-cost-usd", "2.5", "--run-max-turns", "300"), load_settings()
    )
    budget = loaded.settings.budget
    assert (budget.max_cost_usd, budget.run_max_turns, budget.max_turns) == (2.5, 300, None)
    assert loaded.sources["budget.max_cost_usd"] == "command line --max-cost-usd"
    assert loaded.sources["budget.run_max_turns"] == "command line --run-max-turns"


def test_no_flags_leave_the_settings_alone() -> None:
    loaded = load_settings()
    assert run_options.with_budget_flags(parse(), loaded) is loaded


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--max-turns", "0"), "argument --max-turns: '0': a limit must be above 0"),
        (("--max-turns", "2.5"), "argument --max-turns: '2.5' is not a whole number"),
        (("--max-cost-usd", "nan"), "argument --max-cost-usd: 'nan': a limit must be above 0"),
        (("--run-max-minutes", "soon"), "argument --run-max-minutes: 'soon' is not a number"),
    ],
)
def test_bad_limits_exit_2_naming_the_flag(argv: tuple[str, ...], message: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mala_tui", "run", "task", *argv],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=60,
    )
    assert done.returncode == 2
    assert message in done.stderr


def test_notify_turns_on_the_bell_and_notifications_headless() -> None:
    loaded = run_options.with_budget_flags(parse("--headless", "--notify"), load_settings())
    assert loaded.settings.ui.notify_headless is True
    assert loaded.sources["ui.notify_headless"] == "command line --notify"
    assert load_settings().settings.ui.notify_headless is False
