"""A worktree run's work landed, refused, pushed and discarded, on real git, after real
Claude Code sessions against the loopback; and a task's profile reaching the model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.loopback import LoopbackServer, Scenario, load_scenario, offline_cli_env
from mala_tui.runtime.journal.writer import list_runs, read_events
from tests.integration.test_run_command import run_cli

pytestmark = pytest.mark.integration

APP = "VERSION = 1\nprint('hi')\n"
#: Each agent's script: `left` and `clash` change the same line differently, `right`
#: commits a file of its own, `review` only reads (in plan mode, by its profile).
SCENARIOS = {
    "left": """
task = "Bump VERSION in src/app.py to 2 and write LEFT.md."
final_answer = "Done: VERSION is 2 and LEFT.md is written."
[[steps]]
tool = "Read"
path = "src/app.py"
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
    "right": """
task = "Add a file RIGHT.md and commit it."
final_answer = "Done: RIGHT.md is committed."
[[steps]]
tool = "Write"
path = "RIGHT.md"
content = "right\\n"
[[steps]]
tool = "Bash"
command = "git add RIGHT.md && git commit -q -m 'Add RIGHT.md'"
""",
    "clash": """
task = "Bump VERSION in src/app.py to 3."
final_answer = "Done: VERSION is 3."
[[steps]]
tool = "Read"
path = "src/app.py"
[[steps]]
tool = "Edit"
path = "src/app.py"
old = "VERSION = 1"
new = "VERSION = 3"
""",
    "review": """
task = "Review src/app.py and say what it does."
final_answer = "Reviewed: src/app.py prints a greeting."
[[steps]]
tool = "Read"
path = "src/app.py"
[[steps]]
tool = "Grep"
pattern = "VERSION"
path = "src"
""",
}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def scenarios(folder: Path) -> dict[str, Scenario]:
    found = {}
    for name, text in SCENARIOS.items():
        path = folder / f"{name}.toml"
        path.write_text(f'name = "{name}"\nresponse_delay_s = 0\n{text}')
        found[name] = load_scenario(path)
    return found


def tasks_file(folder: Path, server: LoopbackServer, scripts: dict[str, Scenario]) -> Path:
    """Each task's own environment picks its route; `review` has a profile of its own."""
    lines = [
        "[profile.review]",
        'model = "claude-haiku-4-5"',
        'permission_mode = "plan"',
        f'env = {{ ANTHROPIC_BASE_URL = "{server.url_for("review")}" }}',
    ]
    for name, scenario in scripts.items():
        lines += ["[[task]]", f'name = "{name}"', f"task = {json.dumps(scenario.task)}"]
        lines.append('cwd = "project"')
        if name == "review":
            lines.append('profile = "review"')
        else:
            lines.append(f'env = {{ ANTHROPIC_BASE_URL = "{server.url_for(name)}" }}')
    path = folder / "tasks.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def without_gh(folder: Path, env: dict[str, str]) -> dict[str, str]:
    """The environment with a PATH that has git and nothing else: no `gh` to open a PR."""
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    git_path = shutil.which("git")
    assert git_path is not None
    (bin_dir / "git").symlink_to(git_path)
    return dict(env, PATH=str(bin_dir))


async def test_worktree_sessions_are_landed_refused_pushed_and_discarded(tmp_path: Path) -> None:
    repo = tmp_path / "project"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "app.py").write_text(APP)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Land Test")
    git(repo, "config", "user.email", "land@example.com")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    start = git(repo, "rev-parse", "HEAD")
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    scripts = scenarios(tmp_path)
    async with LoopbackServer(scripts, response_delay_s=0, keep_bodies=True) as server:
        env = dict(os.environ, **offline_cli_env(server.base_url, tmp_path / "claude-home"))
        env["MALA_TUI_STORAGE__DATA_DIR"] = str(tmp_path / "data")
        code, out, err = await run_cli(
            *("--set", "agent.model=claude-sonnet-4-5", "run"),
            *("--tasks", str(tasks_file(tmp_path, server, scripts)), "--worktree"),
            *("--headless", "--approve", "auto", "--permissions", "deny"),
            env=env,
        )
        requests = server.request_log
    assert code == 0, out + err
    (run,) = list_runs(tmp_path / "data")
    events = read_events(run.directory / "events.jsonl").events
    trees = {e.session: e for e in events if isinstance(e, ev.WorktreeCreated)}
    assert {e.base_branch for e in trees.values()} == {"main"}

    # The profile reached the model: its model, and Claude Code in plan mode.
    def bodies(route: str) -> list[str]:
        return [json.dumps(r.body) for r in requests if r.route == route and r.body]

    assert bodies("review") and bodies("left")
    assert all('"model": "claude-haiku-4-5"' in body for body in bodies("review"))
    assert all("Plan mode is active" in body for body in bodies("review"))
    assert all('"model": "claude-sonnet-4-5"' in body for body in bodies("left"))
    assert not any("Plan mode is active" in body for body in bodies("left"))
    models = {e.session: e.model for e in events if isinstance(e, ev.SessionStarted)}
    assert models == {name: "claude-sonnet-4-5" for name in ("left", "right", "clash")} | {
        "review": "claude-haiku-4-5"
    }

    no_gh = without_gh(tmp_path, env)

    async def mala(*args: str) -> tuple[int, str, str]:
        return await run_cli(*args, env=no_gh)

    async def to_land() -> dict[str, str]:
        code, shown, err = await run_cli("show", run.run_id, "--json", env=env)
        assert code == 0, err
        return {n: s["worktree"]["to_land"] for n, s in json.loads(shown)["sessions"].items()}

    assert await to_land() == {
        "left": "uncommitted edits to land",
        "right": "1 commit to land",
        "clash": "uncommitted edits to land",
        "review": "nothing to land",
    }

    # Two sessions landed one after the other: a fast-forward, then a merge commit.
    code, out, err = await mala("land", run.run_id, "left")
    assert code == 0, err
    assert out.startswith(f"left: landed 1 commit of {trees['left'].branch} on main (fast-forward")
    assert git(repo, "log", "-1", "--format=%B", "main").startswith(
        "Bump VERSION in src/app.py to 2 and write LEFT.md.\n\n"
        "Done: VERSION is 2 and LEFT.md is written."
    )
    code, out, err = await mala("land", run.run_id[:12], "right")
    assert code == 0, err
    assert "(merge commit," in out
    assert (repo / "src" / "app.py").read_text() == APP.replace("1", "2")
    assert (repo / "LEFT.md").read_text() == "left\n" and (repo / "RIGHT.md").is_file()
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "rev-list", "--count", f"{start}..main") == "3"  # 2 commits and a merge

    # A conflict is refused with one line naming the file, and nothing changes.
    refs = git(repo, "for-each-ref")
    clash = Path(trees["clash"].path)
    code, out, err = await mala("land", run.run_id, "clash")
    assert (code, out) == (2, "")
    assert err == (
        f"mala-tui land: clash: {trees['clash'].branch} conflicts with main in src/app.py; "
        "nothing was changed (merge it by hand, or discard it)\n"
    )
    assert git(repo, "for-each-ref") == refs
    assert git(clash, "status", "--porcelain") == "M src/app.py"

    # Discarding unmerged work needs --force.
    code, _, err = await mala("discard", run.run_id, "clash")
    assert code == 2 and "uncommitted edits; land it first, or discard --force" in err
    assert clash.is_dir()

    # Pushed for a pull request instead: the remote has it, and without gh the command is given.
    code, out, err = await mala("land", run.run_id, "clash", "--pr")
    assert code == 0, err
    pushed = git(remote, "rev-parse", trees["clash"].branch)
    assert pushed == git(repo, "rev-parse", trees["clash"].branch)
    body = run.directory / "pull-requests" / "clash.md"
    assert out == (
        f"clash: pushed {trees['clash'].branch} to origin at {pushed[:10]}, its edits committed "
        f"as {pushed[:10]}; open the PR: gh pr create --draft --head {trees['clash'].branch} "
        f"--title 'Bump VERSION in src/app.py to 3.' --base main --body-file {body}\n"
    )
    assert body.read_text() == "Done: VERSION is 3.\n"

    code, out, err = await mala("discard", run.run_id, "clash", "--force")
    assert code == 0, err
    assert not clash.exists() and git(repo, "branch", "--list", trees["clash"].branch) == ""
    assert await to_land() == {
        "left": "merged",
        "right": "merged",
        "clash": "discarded",
        "review": "nothing to land",
    }
    kinds = [e.type for e in read_events(run.directory / "events.jsonl").events]
    assert kinds[-4:] == [
        "worktree_landed",
        "worktree_landed",
        "worktree_pushed",
        "worktree_discarded",
    ]
