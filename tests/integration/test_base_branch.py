"""`run --worktree --base BRANCH` on real git, after real Claude Code sessions against the
loopback: each session starts from BRANCH's tip, its diff is against the merge-base with
BRANCH, and `land` merges into BRANCH (the branch checked out in the repository is left
alone). A branch that does not exist is refused before anything is made."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.loopback import LoopbackServer, Scenario, load_scenario, offline_cli_env
from mala_tui.runtime.git.worktree_diffs import compared_with, diff_text
from mala_tui.runtime.journal.writer import list_runs, read_events
from tests.integration.test_landing import APP, git, without_gh
from tests.integration.test_run_command import run_cli

pytestmark = pytest.mark.integration

#: `left` edits the line `clash` edits too (differently); both leave their edits uncommitted.
SCRIPTS = {
    "left": """
task = "Bump VERSION in src/app.py to 2 and write LEFT.md."
final_answer = "Done: VERSION is 2 and LEFT.md is written."
[[steps]]
tool = "Edit"
path = "src/app.py"
old = "VERSION = 1"
new = "VERSION = 2"
[[steps]]
tool = "Write"
path = "LEFT.md"
content = "left\\n"
""",
    "clash": """
task = "Bump VERSION in src/app.py to 3."
final_answer = "Done: VERSION is 3."
[[steps]]
tool = "Edit"
path = "src/app.py"
old = "VERSION = 1"
new = "VERSION = 3"
""",
}


def scenarios(folder: Path) -> dict[str, Scenario]:
    found = {}
    for name, text in SCRIPTS.items():
        path = folder / f"{name}.toml"
        path.write_text(f'name = "{name}"\nresponse_delay_s = 0\n{text}')
        found[name] = load_scenario(path)
    return found


def tasks_file(folder: Path, server: LoopbackServer, scripts: dict[str, Scenario]) -> Path:
    lines = []
    for name, scenario in scripts.items():
        lines += ["[[task]]", f'name = "{name}"', f"task = {json.dumps(scenario.task)}"]
        lines += ['cwd = "project"', f'env = {{ ANTHROPIC_BASE_URL = "{server.url_for(name)}" }}']
    path = folder / "tasks.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def repository(tmp_path: Path) -> Path:
    """`main` checked out; `feature` branched from it with a commit of its own, then a
    commit on `main` that `feature` does not have."""
    repo = tmp_path / "project"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "app.py").write_text(APP)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Base Test")
    git(repo, "config", "user.email", "base@example.com")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "FEATURE.md").write_text("feature\n")
    git(repo, "add", "FEATURE.md")
    git(repo, "commit", "-q", "-m", "feature work")
    git(repo, "checkout", "-q", "main")
    (repo / "MAIN.md").write_text("main\n")
    git(repo, "add", "MAIN.md")
    git(repo, "commit", "-q", "-m", "main moves on")
    return repo


async def test_a_base_branch_that_does_not_exist_is_refused_before_anything(
    tmp_path: Path,
) -> None:
    repo = repository(tmp_path)
    refs = git(repo, "for-each-ref")
    env = dict(os.environ, MALA_TUI_STORAGE__DATA_DIR=str(tmp_path / "data"))
    code, out, err = await run_cli(
        *("run", "a task", "--cwd", str(repo), "--worktree", "--base", "nope", "--headless"),
        env=env,
    )
    assert (code, out) == (2, "")
    assert err == f"mala-tui run: base nope: no branch nope in {repo}\n"
    assert not (tmp_path / "data").exists()  # no run folder, no journal
    assert git(repo, "for-each-ref") == refs  # no branch made
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1

    # A base without a worktree run is refused the same way.
    code, out, err = await run_cli(
        *("run", "a task", "--cwd", str(repo), "--base", "feature", "--headless"), env=env
    )
    assert (code, out) == (2, "")
    assert err == (
        "mala-tui run: --base needs --worktree (the base is where each worktree starts)\n"
    )
    assert not (tmp_path / "data").exists()


async def test_a_worktree_run_on_a_base_branch_lands_into_it(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    main_before = git(repo, "rev-parse", "main")
    feature_start = git(repo, "rev-parse", "feature")
    scripts = scenarios(tmp_path)
    async with LoopbackServer(scripts, response_delay_s=0) as server:
        env = dict(os.environ, **offline_cli_env(server.base_url, tmp_path / "claude-home"))
        env["MALA_TUI_STORAGE__DATA_DIR"] = str(tmp_path / "data")
        code, out, err = await run_cli(
            *("--set", "agent.model=claude-sonnet-4-5", "run"),
            *("--tasks", str(tasks_file(tmp_path, server, scripts))),
            *("--worktree", "--base", "feature"),
            *("--headless", "--approve", "auto", "--permissions", "deny"),
            env=env,
        )
    assert code == 0, out + err
    (run,) = list_runs(tmp_path / "data")
    events = read_events(run.directory / "events.jsonl").events
    trees = {e.session: e for e in events if isinstance(e, ev.WorktreeCreated)}
    assert {(e.base, e.base_branch, e.base_commit) for e in trees.values()} == {
        ("feature", "feature", feature_start)
    }
    left = Path(trees["left"].path)
    # Started from feature's tip: its commit is there, main's later one is not.
    assert (left / "FEATURE.md").is_file() and not (left / "MAIN.md").exists()

    # Feature moves on after the run (a file of its own: no conflict with the sessions).
    git(repo, "checkout", "-q", "feature")
    (repo / "LATER.md").write_text("later\n")
    git(repo, "add", "LATER.md")
    git(repo, "commit", "-q", "-m", "feature moves on")
    git(repo, "checkout", "-q", "main")

    # The diff is the session's work alone: against the merge-base with feature, so
    # neither main's commit nor feature's (before or since) is in it.
    since = compared_with(left, trees["left"].base_commit, "feature")
    assert since == git(repo, "merge-base", "feature", trees["left"].branch) == feature_start
    diff = diff_text(left, since)
    assert "+++ b/LEFT.md" in diff and "+VERSION = 2" in diff
    assert "MAIN.md" not in diff and "FEATURE.md" not in diff and "LATER.md" not in diff
    code, shown, err = await run_cli("show", run.run_id, "--json", env=env)
    assert code == 0, err
    worktree = json.loads(shown)["sessions"]["left"]["worktree"]
    assert (worktree["base"], worktree["base_branch"]) == ("feature", "feature")
    assert {f["path"] for f in worktree["files"]} == {"src/app.py", "LEFT.md"}
    assert worktree["to_land"] == "uncommitted edits to land"

    # Landed into feature (moved on since: a merge commit), main untouched.
    no_gh = without_gh(tmp_path, env)
    code, out, err = await run_cli("land", run.run_id, "left", env=no_gh)
    assert code == 0, err
    assert out.startswith(f"left: landed 1 commit of {trees['left'].branch} on feature (merge")
    assert git(repo, "rev-parse", "main") == main_before
    assert git(repo, "show", "feature:src/app.py") == APP.replace("1", "2").strip()
    assert git(repo, "show", "feature:LEFT.md") == "left"
    assert git(repo, "show", "feature:LATER.md") == "later"  # feature's own commit kept
    assert git(repo, "status", "--porcelain") == ""  # main's checkout untouched
    assert not (repo / "LEFT.md").exists()

    # The other session now conflicts with feature: refused in one line, nothing moved.
    refs = git(repo, "for-each-ref")
    code, out, err = await run_cli("land", run.run_id, "clash", env=no_gh)
    assert (code, out) == (2, "")
    assert err == (
        f"mala-tui land: clash: {trees['clash'].branch} conflicts with feature in src/app.py; "
        "nothing was changed (merge it by hand, or discard it)\n"
    )
    assert git(repo, "for-each-ref") == refs
    code, shown, err = await run_cli("show", run.run_id, "--json", env=env)
    assert code == 0, err
    left_now = json.loads(shown)["sessions"]["left"]["worktree"]
    assert left_now["to_land"] == "merged"
