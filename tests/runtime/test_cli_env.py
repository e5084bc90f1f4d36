"""Paths handed to the CLI are absolute: it runs in the session's folder, not in mala-tui's."""

from __future__ import annotations

from pathlib import Path

import pytest
from claude_agent_sdk import HookContext

from mala_tui.core.observations import CompactionObserved
from mala_tui.runtime.backends.base import SessionSpec
from mala_tui.runtime.backends.claude import ClaudeClient
from mala_tui.runtime.backends.claude_options import build_options
from mala_tui.runtime.backends.cli_env import config_dir, session_env


def test_relative_paths_inherited_or_given_are_made_absolute_against_mala_tuis_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    spec = SessionSpec(name="s", task="t", cwd=Path("project"), env={"TMPDIR": "scratch"})
    env = session_env(spec, {"CLAUDE_CONFIG_DIR": "cfg", "HOME": "/home/me", "XDG_CACHE_HOME": ""})
    assert env["CLAUDE_CONFIG_DIR"] == str(tmp_path / "cfg")
    assert env["TMPDIR"] == str(tmp_path / "scratch")
    assert env["HOME"] == "/home/me"
    assert "XDG_CACHE_HOME" not in env  # empty means unset: not invented
    assert config_dir(spec, {"CLAUDE_CONFIG_DIR": "cfg"}) == tmp_path / "cfg"


def test_the_options_carry_an_absolute_folder_and_private_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    spec = SessionSpec(name="s", task="t", cwd=Path("work"), private_home=Path("runs/x/home"))
    options = build_options(spec, resume=None, hooks={})
    assert options.cwd == str(tmp_path / "work")
    assert options.env["CLAUDE_CONFIG_DIR"] == str(tmp_path / "runs/x/home/claude-config")
    assert options.env["TMPDIR"] == str(tmp_path / "runs/x/home/tmp")
    assert (tmp_path / "runs/x/home/claude-config").is_dir()
    assert config_dir(spec) == tmp_path / "runs/x/home/claude-config"


def test_the_clis_own_retries_are_fitted_to_the_api_failure_bound_unless_set() -> None:
    spec = SessionSpec(name="s", task="t", cwd=Path("/ws"), cli_retries=5)
    assert session_env(spec, {})["CLAUDE_CODE_MAX_RETRIES"] == "5"
    # The user's own setting (inherited, or a profile's env) is theirs: left alone.
    assert "CLAUDE_CODE_MAX_RETRIES" not in session_env(spec, {"CLAUDE_CODE_MAX_RETRIES": "9"})
    given = SessionSpec(
        name="s", task="t", cwd=Path("/ws"), cli_retries=5, env={"CLAUDE_CODE_MAX_RETRIES": "1"}
    )
    assert session_env(given, {})["CLAUDE_CODE_MAX_RETRIES"] == "1"
    plain = SessionSpec(name="s", task="t", cwd=Path("/ws"))
    assert "CLAUDE_CODE_MAX_RETRIES" not in session_env(plain, {})


def test_a_run_fits_the_clis_retries_to_its_setting() -> None:
    from mala_tui.config import Settings
    from mala_tui.runtime.run.launch import agent_spec
    from mala_tui.runtime.run.task_plans import TaskPlan

    settings = Settings.model_validate({"idle": {"api_failure_seconds": 600}})
    plan = TaskPlan("s", "t", Path("/ws"))
    assert agent_spec(plan, Settings()).cli_retries == 5
    assert agent_spec(plan, settings).cli_retries == 10
    unbounded = Settings.model_validate({"idle": {"api_failure_seconds": None}})
    assert agent_spec(plan, unbounded).cli_retries is None


def test_a_managed_session_leaves_the_clis_compaction_on_for_its_subagents() -> None:
    # DISABLE_AUTO_COMPACT holds for the whole CLI process: set, a subagent whose window
    # filled could not compact and died "Prompt is too long". The main thread is kept by
    # the PreCompact hook instead; only a CLI without that hook (by hand) gets the variable.
    managed = SessionSpec(name="s", task="t", cwd=Path("/ws"))
    assert "DISABLE_AUTO_COMPACT" not in session_env(managed, {})
    assert "DISABLE_AUTO_COMPACT" not in build_options(managed, resume=None, hooks={}).env
    assert session_env(managed, {}, hooked=False)["DISABLE_AUTO_COMPACT"] == "1"
    own = SessionSpec(name="s", task="t", cwd=Path("/ws"), own_compaction=True)
    assert "DISABLE_AUTO_COMPACT" not in session_env(own, {}, hooked=False)
    # The user's own choice is read by the CLI as it would be without mala-tui.
    chosen = SessionSpec(name="s", task="t", cwd=Path("/ws"), env={"DISABLE_AUTO_COMPACT": "1"})
    assert session_env(chosen, {})["DISABLE_AUTO_COMPACT"] == "1"


async def test_the_precompact_hook_blocks_the_main_threads_compaction_only() -> None:
    client = ClaudeClient(
        SessionSpec(name="s", task="t", cwd=Path("/ws")), resume=None, clock=lambda: 2.0
    )
    (matcher,) = client._client.options.hooks["PreCompact"]  # type: ignore[index]
    (hook,) = matcher.hooks
    main = {"session_id": "x", "hook_event_name": "PreCompact", "trigger": "auto"}
    sub = {**main, "agent_id": "a3ce42ea38fed4acc", "agent_type": "general-purpose"}
    context: HookContext = {"signal": None}
    assert await hook(sub, None, context) == {}  # type: ignore[arg-type]
    assert client._side.empty(), "a subagent's compaction is not the session's"
    answer = await hook(main, None, context)  # type: ignore[arg-type]
    assert answer.get("decision") == "block"
    assert client._side.get_nowait() == CompactionObserved(2.0, "auto", blocked=True)
