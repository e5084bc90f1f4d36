"""`[context.subagents]`: the subagents' thresholds, from the file, the environment, the
command line and a task's profile, each bad value refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from mala_tui.config import Settings
from mala_tui.config_loading import ConfigError, load_settings
from mala_tui.core.subagent_window import SubagentLimits
from mala_tui.runtime.run.launch import agent_spec
from mala_tui.runtime.run.profiles import ProfileError, parse_profile
from mala_tui.runtime.run.task_plans import TaskPlan


def loaded(tmp_path: Path, text: str = "", **env: str) -> Settings:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return load_settings(env={"MALA_TUI_CONFIG_FILE": str(path), **env}).settings


def test_the_subagents_thresholds_come_from_every_layer(tmp_path: Path) -> None:
    assert (
        Settings().context.subagents.soft_threshold,
        Settings().context.subagents.hard_threshold,
    ) == (0.85, 0.95)
    settings = loaded(tmp_path, "[context.subagents]\nhard_threshold = 0.9\n")
    assert settings.context.subagents.hard_threshold == 0.9
    settings = loaded(
        tmp_path,
        "[context.subagents]\nhard_threshold = 0.9\n",
        MALA_TUI_CONTEXT__SUBAGENTS__SOFT_THRESHOLD="0.5",
    )
    assert (
        settings.context.subagents.soft_threshold,
        settings.context.subagents.hard_threshold,
    ) == (0.5, 0.9)
    env = {"MALA_TUI_CONFIG_FILE": "/dev/null"}
    over = load_settings(env=env, overrides=[("context.subagents.hard_threshold", 0.97, "--set")])
    assert over.settings.context.subagents.hard_threshold == 0.97


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        (
            "context.subagents.hard_threshold",
            1.5,
            "context.subagents.hard_threshold = 1.5 (--set): ",
        ),
        ("context.subagents.hard", 0.9, "context.subagents.hard = 0.9 (--set): unknown key"),
        (
            "context.subagents.soft_threshold",
            0.99,
            "soft_threshold must be below hard_threshold: "
            "context.subagents.soft_threshold = 0.99 (--set), context.subagents.hard_threshold = 0.95",
        ),
        ("context.subagents", 3, "context.subagents = 3 (--set): must be a table"),
    ],
)
def test_a_bad_subagents_value_is_one_line_naming_it(key: str, value: object, said: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(env={"MALA_TUI_CONFIG_FILE": "/dev/null"}, overrides=[(key, value, "--set")])
    assert str(caught.value).startswith(said) and "\n" not in str(caught.value)


def test_a_profile_sets_its_tasks_subagents_thresholds_over_the_runs() -> None:
    settings = Settings.model_validate({"context": {"subagents": {"soft_threshold": 0.6}}})
    profile = parse_profile({"subagents": {"hard_threshold": 0.9}}, Path("/"))
    spec = agent_spec(
        TaskPlan("t", "do it", Path("/w"), profile), settings, model="claude-sonnet-4-5"
    )
    assert spec.subagent_limits == SubagentLimits(200_000, 0.6, 0.9)
    watch_only = parse_profile({"manage": "off"}, Path("/"))
    assert (
        agent_spec(TaskPlan("t", "do it", Path("/w"), watch_only), settings).subagent_limits is None
    )
    with pytest.raises(ProfileError, match=r"^subagents.hard_threshold = 1.9: "):
        parse_profile({"subagents": {"hard_threshold": 1.9}}, Path("/")).apply(settings)


def test_config_show_gives_the_subagents_table_as_a_table() -> None:
    loaded = load_settings(env={"MALA_TUI_CONFIG_FILE": "/dev/null"})
    rows = {key: value for key, value, _, _ in loaded.rows()}
    assert rows["context.subagents"] == {"soft_threshold": 0.85, "hard_threshold": 0.95}
