"""`run --permissions`: over agent.permissions, a bad value refused; the settings' defaults."""

from __future__ import annotations

import argparse

import pytest

from mala_tui.commands import run_cmd, run_options
from mala_tui.config import AgentSettings
from mala_tui.config_loading import load_settings


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command")
    run_cmd.register(commands)
    return parser.parse_args(["run", "task", *argv])


def test_the_flag_overrides_the_setting_and_says_so() -> None:
    loaded = run_options.with_permissions_flag(parse("--permissions", "deny"), load_settings())
    assert loaded.settings.agent.permissions == "deny"
    assert loaded.sources["agent.permissions"] == "command line --permissions"


def test_without_the_flag_the_settings_stay_and_ask_is_the_default() -> None:
    loaded = load_settings()
    assert run_options.with_permissions_flag(parse(), loaded) is loaded
    agent = AgentSettings()
    assert (agent.permissions, agent.permission_timeout, agent.permission_timeout_answer) == (
        "ask",
        300.0,
        "deny",
    )


def test_a_bad_value_is_refused_with_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse("--permissions", "sometimes")
    assert exit_info.value.code == 2
    assert "--permissions: invalid choice: 'sometimes'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("field", "value"),
    [("permissions", "maybe"), ("permission_timeout", 0), ("permission_timeout_answer", "ask")],
)
def test_bad_settings_are_refused(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        AgentSettings.model_validate({field: value})
