"""`run --worktree` refused before it starts: no worktree or branch is left behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def test_a_bad_prompt_template_leaves_no_worktree(tmp_path: Path, isolated_dirs: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.txt").write_text("a\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    prompts = isolated_dirs / "config" / "mala-tui" / "prompts"
    prompts.mkdir(parents=True)
    (prompts / "wind_down.md").write_text("Wrap up {nope}.\n")
    done = subprocess.run(
        [
            *(sys.executable, "-m", "mala_tui", "run", "t1", "t2", "--cwd", str(repo)),
            *("--worktree", "--headless", "--approve", "auto"),
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, MALA_TUI_STORAGE__DATA_DIR=str(tmp_path / "data")),
        timeout=60,
    )
    assert done.returncode == 2
    assert "prompt template error" in done.stderr
    assert git(repo, "branch", "--list", "mala/*") == ""
    assert git(repo, "worktree", "list").count("\n") == 1  # the repository's own checkout only
    assert not list((tmp_path / "data").glob("runs/*/worktrees/*"))
