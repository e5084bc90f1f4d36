"""Settings: layering, provenance, and one clear message for every kind of bad input."""

from __future__ import annotations

import io
import os
import tomllib
from pathlib import Path

import pytest

from mala_tui.config import Settings
from mala_tui.config_loading import ConfigError, load_settings, parse_override


def write_config(text: str) -> Path:
    path = Path(os.environ["MALA_TUI_CONFIG_FILE"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_defaults_when_there_is_no_file() -> None:
    loaded = load_settings()
    assert loaded.settings == Settings()
    assert not loaded.config_file_exists
    context = loaded.settings.context
    assert (context.soft_threshold, context.hard_threshold, context.context_limit) == (
        0.15,
        0.80,
        200_000,
    )
    # The masking defaults come from the economy benchmark's knob sweep (docs/BENCHMARKS.md).
    assert (
        context.mask_target_threshold,
        context.keep_recent_observations,
        context.mask_min_batch_tokens,
    ) == (0.0, 1, 10_000)
    assert (context.carryover_turns, context.require_approval) == (5, False)
    assert loaded.settings.idle.max_idle_retries == 2
    assert loaded.settings.idle.idle_retry_backoff == (0.0, 5.0, 15.0)
    assert loaded.settings.idle.disconnect_timeout_seconds == 10.0
    assert all(source == "default" for _, _, source, _ in loaded.rows())


def test_layers_file_then_env_then_command_line() -> None:
    path = write_config("[context]\nsoft_threshold = 0.6\nhard_threshold = 0.8\nmax_restarts = 3\n")
    env = dict(
        os.environ,
        MALA_TUI_CONTEXT__HARD_THRESHOLD="0.85",
        MALA_TUI_AGENT__ALLOWED_TOOLS='["Read"]',
    )
    loaded = load_settings(env=env, overrides=[("context.max_restarts", 9, "command line --set")])
    context = loaded.settings.context
    assert (context.soft_threshold, context.hard_threshold, context.max_restarts) == (0.6, 0.85, 9)
    assert loaded.settings.agent.allowed_tools == ("Read",)
    assert loaded.sources["context.soft_threshold"] == f"file {path}"
    assert loaded.sources["context.hard_threshold"] == "env MALA_TUI_CONTEXT__HARD_THRESHOLD"
    assert loaded.sources["context.max_restarts"] == "command line --set"


def test_every_field_has_a_description() -> None:
    rows = load_settings().rows()
    assert len(rows) > 15
    assert [key for key, _, _, doc in rows if not doc.strip()] == []


def message_for(text: str) -> str:
    write_config(text)
    with pytest.raises(ConfigError) as caught:
        load_settings()
    return str(caught.value)


def test_soft_not_below_hard_names_both_values_and_origins() -> None:
    path = os.environ["MALA_TUI_CONFIG_FILE"]
    assert message_for("[context]\nsoft_threshold = 0.95\n") == (
        f"context.soft_threshold = 0.95 (file {path}) must be below context.hard_threshold = 0.8 (default)"
    )
    assert message_for("[context]\nmask_target_threshold = 0.75\n") == (
        f"context.mask_target_threshold = 0.75 (file {path}) must not be above context.soft_threshold = 0.15 (default)"
    )


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        (
            "[context]\nsoft_threshold = 1.5",
            "context.soft_threshold = 1.5 (file {path}): Input should be less than or equal to 1; allowed: a number > 0 and <= 1",
        ),
        (
            "[context]\nhard_threshold = 0",
            "context.hard_threshold = 0 (file {path}): Input should be greater than 0; allowed: a number > 0 and <= 1",
        ),
        (
            "[idle]\nmax_idle_retries = -1",
            "idle.max_idle_retries = -1 (file {path}): Input should be greater than or equal to 0; allowed: a whole number >= 0",
        ),
        (
            "[context]\nkeep_recent_observations = -3",
            "context.keep_recent_observations = -3 (file {path}): Input should be greater than or equal to 0; allowed: a whole number >= 0",
        ),
        (
            "[context]\nsotf_threshold = 0.5",
            "context.sotf_threshold = 0.5 (file {path}): unknown key (did you mean 'soft_threshold'?); allowed keys in [context]: ",
        ),
        (
            "[contxt]\na = 1",
            "[contxt] = {{'a': 1}} (file {path}): unknown section (did you mean 'context'?); allowed sections: context, idle, agent, storage, ui",
        ),
        (
            "[idle]\nidle_retry_backoff = [0, -5]",
            "idle.idle_retry_backoff = [0, -5] (file {path}): every backoff delay must be 0 or more seconds",
        ),
        (
            "[context]\nmax_restarts = 'lots'",
            "context.max_restarts = 'lots' (file {path}): Input should be a valid integer",
        ),
        ("context = 3", "context = 3 (file {path}): must be a table, e.g. [context]"),
        (
            "[context]\nmanage = 'sometimes'",
            "context.manage = 'sometimes' (file {path}): Input should be 'full', 'mask' or 'off'",
        ),
        (
            "[context]\napproval_timeout_decision = 'edit'",
            "context.approval_timeout_decision = 'edit' (file {path}): Input should be 'approve' or 'deny'",
        ),
        (
            "[agent]\npermission_timeout_answer = 'ask'",
            "agent.permission_timeout_answer = 'ask' (file {path}): Input should be 'allow' or 'deny'",
        ),
        (
            "[context.model_windows]\nmy-model = -5",
            "context.model_windows = {{'my-model': -5}} (file {path}): Input should be greater than 0",
        ),
    ],
)
def test_bad_values_name_key_value_file_and_what_is_allowed(toml: str, expected: str) -> None:
    message = message_for(toml)
    assert message.startswith(expected.format(path=os.environ["MALA_TUI_CONFIG_FILE"]))


def test_toml_syntax_error_names_the_file_and_position() -> None:
    message = message_for("[context\nsoft_threshold = 0.5\n")
    assert message.startswith(
        f"config file {os.environ['MALA_TUI_CONFIG_FILE']}: TOML syntax error: "
    )
    assert "line 1" in message


def test_unreadable_file_is_named() -> None:
    path = write_config("")
    path.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(ConfigError, match="cannot be read"):
        load_settings()


def test_bad_environment_variable_is_named() -> None:
    env = dict(os.environ, MALA_TUI_CONTEXT__SOFT_THRESHOLD="high")
    with pytest.raises(ConfigError) as caught:
        load_settings(env=env)
    assert str(caught.value).startswith(
        "context.soft_threshold = 'high' (env MALA_TUI_CONTEXT__SOFT_THRESHOLD): Input should be a valid number"
    )
    with pytest.raises(
        ConfigError, match=r"MALA_TUI_SOFT: not a setting; use MALA_TUI_<SECTION>__<KEY>"
    ):
        load_settings(env=dict(os.environ, MALA_TUI_SOFT="1"))


def test_override_parsing() -> None:
    assert parse_override("context.soft_threshold=0.6") == ("context.soft_threshold", 0.6)
    assert parse_override("agent.model=claude-sonnet-4-5") == ("agent.model", "claude-sonnet-4-5")
    assert parse_override("idle.idle_retry_backoff=[1, 2]") == ("idle.idle_retry_backoff", [1, 2])
    with pytest.raises(ConfigError, match=r"expected section\.key=value"):
        parse_override("context.soft_threshold")
    with pytest.raises(ConfigError, match=r"\(command line\): unknown section"):
        load_settings(overrides=[("ctx.a", 1, "command line")])


def test_a_text_setting_takes_the_text_as_written_from_set_and_env() -> None:
    # `true` and `42` are commands here, not a boolean and a number the setting refuses.
    assert parse_override("ui.notify_command=true") == ("ui.notify_command", "true")
    assert parse_override('ui.notify_command="notify-send hi"') == (
        "ui.notify_command",
        "notify-send hi",
    )
    loaded = load_settings(env={**os.environ, "MALA_TUI_UI__NOTIFY_COMMAND": "42"})
    assert loaded.settings.ui.notify_command == "42"
    # A typed setting still refuses what it cannot take.
    with pytest.raises(ConfigError, match=r"ui\.bell = 3"):
        load_settings(overrides=[("ui.bell", parse_override("ui.bell=3")[1], "command line")])


def test_model_windows_add_to_the_built_in_table_and_show_as_toml() -> None:
    from mala_tui.commands.config_cmd import show
    from mala_tui.runtime.run.session_limits import window_for

    write_config('[context.model_windows]\n"my-proxy" = 1000000\n')
    loaded = load_settings()
    window = window_for(loaded.settings, "my-proxy-large")
    assert (window.tokens, window.source.value) == (1_000_000, "model table")
    assert window_for(loaded.settings, "claude-sonnet-4-5").tokens == 200_000
    assert window_for(loaded.settings, "claude-sonnet-4-5[1m]").tokens == 1_000_000
    out = io.StringIO()
    show(loaded, out)
    assert tomllib.loads(out.getvalue())["context"]["model_windows"] == {"my-proxy": 1_000_000}


def test_no_model_named_is_claude_codes_default_unless_a_limit_is_set() -> None:
    from mala_tui.runtime.run.session_limits import window_for

    # Claude Code given no model answers as its default (claude-opus-5-5, 1M window).
    window = window_for(load_settings().settings, None)
    assert (window.tokens, window.source.value) == (1_000_000, "model table")
    # A window set in the config is what a session with no model name is judged by.
    write_config("[context]\ncontext_limit = 150000\n")
    window = window_for(load_settings().settings, None)
    assert (window.tokens, window.source.value) == (150_000, "default")
    assert window_for(load_settings().settings, "claude-opus-5-5").tokens == 1_000_000
