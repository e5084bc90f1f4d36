"""Profiles in a tasks file: each task's model, tools, environment, budgets and management."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mala_tui.config import Settings
from mala_tui.config_loading import LoadedSettings
from mala_tui.core.budget import BudgetLimits
from mala_tui.core.events import RunMode
from mala_tui.core.operator_actions import AddSession
from mala_tui.core.phases import ManageMode
from mala_tui.runtime.backends.base import SessionSpec
from mala_tui.runtime.backends.claude_options import build_options
from mala_tui.runtime.backends.scripted import ScriptedBackend
from mala_tui.runtime.questions.approvals import ApprovalMode
from mala_tui.runtime.run.launch import agent_spec, build_supervisor, like, open_journal, plain_spec
from mala_tui.runtime.run.new_sessions import Joining
from mala_tui.runtime.run.profiles import Profile, ProfileError
from mala_tui.runtime.run.task_plans import TaskFileError, plan_run, plan_tasks

TASKS = """
[profile.review]
model = "claude-opus-4-1"
permission_mode = "plan"
allowed_tools = ["Read", "Grep"]
disallowed_tools = ["Bash"]
mcp_config = "mcp.json"
env = { REVIEW_MODE = "strict" }
manage = "mask"
soft_threshold = 0.5
hard_threshold = 0.9
max_turns = 40

[[task]]
name = "review"
task = "Review the parser"
profile = "review"

[[task]]
name = "fast-review"
task = "Skim the parser"
profile = "review"
model = "claude-haiku-4-5"
max_cost_usd = 0.5
env = { EXTRA = "1" }

[[task]]
name = "plain"
task = "Fix the tests"
"""


def write(tmp_path: Path, text: str, name: str = "tasks.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    (tmp_path / "mcp.json").write_text('{"mcpServers": {}}\n')
    return path


def loaded(settings: Settings) -> LoadedSettings:
    return LoadedSettings(settings, {}, Path("/nowhere/config.toml"), False)


def test_a_named_profile_and_a_tasks_own_keys_become_its_session_spec(tmp_path: Path) -> None:
    path = write(tmp_path, TASKS)
    settings = Settings()
    review, fast, plain = plan_tasks([], path, tmp_path, settings)

    spec = agent_spec(review, settings, model="from-the-command-line")
    assert (spec.model, spec.permission_mode, spec.allowed_tools, spec.disallowed_tools) == (
        "claude-opus-4-1",
        "plan",
        ("Read", "Grep"),
        ("Bash",),
    )
    assert spec.mcp_config == tmp_path / "mcp.json"
    assert dict(spec.env) == {"REVIEW_MODE": "strict"}
    assert not spec.own_compaction  # mask still manages the window

    faster = agent_spec(fast, settings)
    assert faster.model == "claude-haiku-4-5" and faster.permission_mode == "plan"
    assert dict(faster.env) == {"REVIEW_MODE": "strict", "EXTRA": "1"}
    assert fast.profile.name == "review"

    # No profile: the settings, and --model counts.
    bare = agent_spec(plain, settings, model="from-the-command-line")
    assert (bare.model, bare.permission_mode, bare.disallowed_tools, bare.mcp_config) == (
        "from-the-command-line",
        "acceptEdits",
        (),
        None,
    )


def test_the_sdk_is_given_the_disallowed_tools_and_the_mcp_config(tmp_path: Path) -> None:
    (review, *_) = plan_tasks([], write(tmp_path, TASKS), tmp_path)
    options = build_options(agent_spec(review, Settings()), resume=None, hooks={})
    assert options.disallowed_tools == ["Bash"]
    assert options.mcp_servers == tmp_path / "mcp.json"
    assert options.permission_mode == "plan" and options.model == "claude-opus-4-1"
    assert options.env["REVIEW_MODE"] == "strict"


def test_the_supervisor_gives_each_session_its_profiles_limits_and_budget(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, TASKS)
    run_settings = Settings.model_validate({"storage": {"data_dir": str(tmp_path / "data")}})
    plans = plan_tasks([], path, tmp_path, run_settings)
    journal = open_journal(loaded(run_settings), RunMode.RUN, plans)
    with journal:
        supervisor = build_supervisor(
            loaded=loaded(run_settings),
            backend=ScriptedBackend([]),
            journal=journal,
            specs=[agent_spec(plan, run_settings) for plan in plans],
            approval_mode=ApprovalMode.AUTO,
            mode=RunMode.RUN,
            profiles={plan.name: plan.profile for plan in plans},
            template=plain_spec(plans[0], run_settings),
        )
    # A session added while the run runs gets the run's settings, not the first task's profile.
    assert supervisor.new_sessions.joining.spec_for_new is not None
    added = supervisor.new_sessions.joining.spec_for_new("added", "a new task", tmp_path)
    assert (added.model, added.permission_mode, added.disallowed_tools, dict(added.env)) == (
        None,
        "acceptEdits",
        (),
        {},
    )
    limits = {name: runner.manager.limits for name, runner in supervisor.runners.items()}
    assert (limits["review"].soft_threshold, limits["review"].hard_threshold) == (0.5, 0.9)
    assert limits["review"].manage is ManageMode.MASK
    assert (limits["plain"].soft_threshold, limits["plain"].manage) == (0.15, ManageMode.FULL)
    assert supervisor.budget.limits_for("review") == BudgetLimits(None, 40, None, 0.9)
    assert supervisor.budget.limits_for("fast-review") == BudgetLimits(0.5, 40, None, 0.9)
    assert supervisor.budget.limits_for("plain") == BudgetLimits()
    # run.json keeps each profile, so `resume` starts the session with it again.
    tasks = json.loads((journal.directory / "run.json").read_text())["tasks"]
    assert tasks[2] == {"name": "plain", "task": "Fix the tests", "cwd": str(tmp_path)}
    kept = Profile.from_json(tasks[1]["profile"])
    assert kept == plans[1].profile


def test_a_json_tasks_file_has_the_same_profiles(tmp_path: Path) -> None:
    data = {
        "profile": {"cheap": {"model": "claude-haiku-4-5", "max_cost_usd": 1}},
        "task": [{"task": "x", "profile": "cheap"}],
    }
    path = write(tmp_path, json.dumps(data), "tasks.json")
    (plan,) = plan_tasks([], path, tmp_path)
    assert agent_spec(plan, Settings()).model == "claude-haiku-4-5"
    assert plan.profile.apply(Settings()).budget.max_cost_usd == 1


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            '[profile.review]\nsoft_treshold = 0.5\n[[task]]\ntask = "x"\n',
            "profile review: unknown key 'soft_treshold' (did you mean 'soft_threshold'?); "
            "allowed: model, permission_mode",
        ),
        (
            '[profile.review]\npermission_mode = "yolo"\n[[task]]\ntask = "x"\n',
            "profile review: permission_mode = 'yolo': Input should be 'default', "
            "'acceptEdits', 'plan' or 'bypassPermissions'",
        ),
        (
            '[profile.review]\nsoft_threshold = 1.5\n[[task]]\ntask = "x"\n',
            "profile review: soft_threshold = 1.5: Input should be less than or equal to 1; "
            "allowed: a number > 0 and <= 1",
        ),
        (
            '[[task]]\ntask = "x"\nsoft_threshold = 0.85\n',
            "task 1: soft_threshold must be below hard_threshold "
            "(soft_threshold = 0.85, hard_threshold = 0.8)",
        ),
        (
            '[[task]]\ntask = "x"\nprofile = "reveiw"\n[profile.review]\nmodel = "m"\n',
            "task 1: profile 'reveiw' is not defined (did you mean 'review'?); profiles: review",
        ),
        ('[[task]]\ntask = "x"\nprofile = "nope"\n', "task 1: profile 'nope' is not defined"),
        (
            '[[task]]\ntask = "x"\nenv = { N = 5 }\n',
            "task 1: env.N = 5: must be a string",
        ),
        (
            '[[task]]\ntask = "x"\nmcp_config = "missing.json"\n',
            "task 1: mcp_config = 'missing.json': no such file",
        ),
        (
            '[[task]]\ntask = "x"\ndisallowed_tools = "Bash"\n',
            "task 1: disallowed_tools = 'Bash': must be a list of tool names",
        ),
        (
            '[[task]]\ntask = "x"\nmax_turns = 0\n',
            "task 1: max_turns = 0: Input should be greater than 0",
        ),
        (
            '[profiles.review]\nmodel = "m"\n[[task]]\ntask = "x"\n',
            "unknown table 'profiles' (did you mean 'profile'?); allowed: task, profile",
        ),
        ('profile = 3\n[[task]]\ntask = "x"\n', "profile must be tables of settings"),
    ],
)
def test_a_bad_profile_is_one_line_naming_the_file_the_entry_and_the_key(
    tmp_path: Path, text: str, said: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(TaskFileError) as refused:
        plan_tasks([], path, tmp_path)
    message = str(refused.value)
    assert message.startswith(f"tasks file {path}, {said}") or message.startswith(
        f"tasks file {path}: {said}"
    ), message
    assert "\n" not in message


def test_profiles_are_checked_against_the_settings_the_run_has(tmp_path: Path) -> None:
    path = write(tmp_path, '[[task]]\ntask = "x"\nhard_threshold = 0.6\n')
    plan_tasks([], path, tmp_path)  # over the defaults (soft 0.15) it holds
    settings = Settings.model_validate({"context": {"soft_threshold": 0.7, "hard_threshold": 0.9}})
    with pytest.raises(TaskFileError, match=r"soft_threshold = 0\.7, hard_threshold = 0\.6"):
        plan_tasks([], path, tmp_path, settings)


def test_a_damaged_profile_in_run_json_is_refused() -> None:
    with pytest.raises(ProfileError, match="expected a table"):
        Profile.from_json(["model"])
    with pytest.raises(ProfileError, match="unknown key 'colour'"):
        Profile.from_json({"colour": "red"})


def test_the_docs_profiles_example_is_a_tasks_file_that_works(tmp_path: Path) -> None:
    page = (Path(__file__).parents[2] / "docs" / "running.md").read_text()
    after = page[page.index("## Profiles") :]
    start = after.index("```toml\n") + len("```toml\n")
    example = after[start : after.index("\n```", start)]
    review, cli = plan_tasks([], write(tmp_path, example), tmp_path, Settings())
    assert review.profile.name == cli.profile.name == "review"
    spec = agent_spec(cli, Settings())
    assert (spec.model, spec.permission_mode, spec.disallowed_tools) == (
        "claude-haiku-4-5",
        "plan",
        ("Bash", "WebFetch"),
    )


def test_a_named_profile_over_a_session_made_like_the_runs(tmp_path: Path) -> None:
    """What a session added with a profile gets: the profile's model, tools, permission
    mode, MCP servers and environment over the run's template (whose own variables win)."""
    from mala_tui.runtime.run.profiles import with_profile

    path = write(tmp_path, TASKS)
    _, profiles = plan_run([], path, tmp_path, Settings())
    assert list(profiles) == ["review"]
    template = plain_spec(plan_tasks([], path, tmp_path)[2], Settings(), env={"URL": "run"})
    spec = with_profile(template, profiles["review"], Settings())
    assert (spec.name, spec.task, spec.cwd) == (template.name, template.task, template.cwd)
    assert (spec.model, spec.permission_mode, spec.allowed_tools, spec.disallowed_tools) == (
        "claude-opus-4-1",
        "plan",
        ("Read", "Grep"),
        ("Bash",),
    )
    assert spec.mcp_config == tmp_path / "mcp.json"
    assert dict(spec.env) == {"REVIEW_MODE": "strict", "URL": "run"}
    off = Profile("quiet", {"manage": "off"})
    assert with_profile(template, off, Settings()).own_compaction


def test_run_json_keeps_the_named_profiles_and_a_resume_gives_added_sessions_theirs(
    tmp_path: Path,
) -> None:
    from mala_tui.core import events as ev
    from mala_tui.runtime.run.resume import named_profiles, profiles_of
    from mala_tui.runtime.run.run_source import ResumeError, read_source

    path = write(tmp_path, TASKS)
    run_settings = Settings.model_validate({"storage": {"data_dir": str(tmp_path / "data")}})
    plans, profiles = plan_run([], path, tmp_path, run_settings)
    with open_journal(loaded(run_settings), RunMode.RUN, plans, profiles=profiles) as journal:
        journal.write(ev.RunStarted(at=0.0, run_id=journal.run_id, sessions=(), mode=RunMode.RUN))
        journal.write(
            ev.SessionAdded(at=1.0, session="late", task="x", cwd=str(tmp_path), profile="review")
        )
    source = read_source(journal.directory)
    assert named_profiles(source) == profiles
    found = profiles_of(source)
    assert found["late"] == profiles["review"]
    assert found["review"] == plans[0].profile  # a task's own, as before

    # A journal naming a profile run.json lacks is refused with one line.
    meta = json.loads((journal.directory / "run.json").read_text())
    del meta["profiles"]
    (journal.directory / "run.json").write_text(json.dumps(meta))
    with pytest.raises(ResumeError, match=r"^late: its profile 'review' is not in run.json$"):
        profiles_of(read_source(journal.directory))


def test_a_session_added_with_a_profile_the_run_lacks_is_refused_before_anything_is_made(
    tmp_path: Path,
) -> None:
    run_settings = Settings.model_validate({"storage": {"data_dir": str(tmp_path / "data")}})
    plans = plan_tasks(["a task"], None, tmp_path, run_settings)
    made: list[str] = []
    specs = [agent_spec(plan, run_settings) for plan in plans]
    template = like(specs[0])

    def counted(name: str, task: str, cwd: Path) -> SessionSpec:
        made.append(name)
        return template(name, task, cwd)

    joining = Joining(spec_for_new=counted, profiles={"review": Profile("review", {"model": "m"})})
    with open_journal(loaded(run_settings), RunMode.RUN, plans) as journal:
        supervisor = build_supervisor(
            loaded=loaded(run_settings),
            backend=ScriptedBackend([]),
            journal=journal,
            specs=specs,
            approval_mode=ApprovalMode.AUTO,
            mode=RunMode.RUN,
            joining=joining,
        )
    with pytest.raises(ValueError, match=r"^this run has no profile 'reveiw'; profiles: review$"):
        supervisor.act(AddSession(name="late", task="x", cwd=tmp_path, profile="reveiw"))
    assert made == []  # no worktree (nor anything else) was made for it
