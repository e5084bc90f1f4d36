"""Pushing a worktree session's branch for review: to its remote, then a draft pull request.

The branch (with the agent's uncommitted edits committed) goes to a remote, is read back
from it to be sure, and ``gh pr create --draft`` opens a pull request whose body is the
checkpoint; without ``gh`` the command to run is given instead. The event it returns is
the caller's to journal, as landing's is.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import time
from pathlib import Path

from mala_tui.core import events as ev
from mala_tui.core.commit_message import draft_subject
from mala_tui.core.text import for_git
from mala_tui.runtime.git.landing import (
    LandingError,
    Target,
    adopt,
    edits_commit,
    git_output,
    git_run,
    resolve,
)
from mala_tui.runtime.git.worktree import GIT_TIMEOUT_SECONDS, last_line


def _remote(target: Target) -> str:
    """The base branch's remote when it has one, else `origin`, else the only remote."""
    remotes = git_output(target, "remote").split()
    if not remotes:
        raise LandingError(
            f"{target.session}: {target.repository} has no remote to push to; add one "
            "(git remote add origin URL) or land without --pr"
        )
    if target.base_branch:
        done = git_run(["config", f"branch.{target.base_branch}.remote"], target.repository)
        if done.returncode == 0 and done.stdout.strip() in remotes:
            return done.stdout.strip()
    if "origin" in remotes:
        return "origin"
    if len(remotes) == 1:
        return remotes[0]
    raise LandingError(
        f"{target.session}: {target.repository} has several remotes ({', '.join(remotes)}) "
        f"and none is origin or {target.base_branch or 'the base branch'}'s; set "
        f"branch.{target.base_branch or '<base>'}.remote"
    )


def pr_command(target: Target, title: str, body_file: Path) -> list[str]:
    """`gh pr create --draft` for the session's branch, with the body from a file."""
    command = ["gh", "pr", "create", "--draft", "--head", target.branch, "--title", title]
    if target.base_branch:
        command += ["--base", target.base_branch]
    return [*command, "--body-file", str(body_file)]


def push(
    target: Target, message: str, body: str, body_file: Path, *, now: float | None = None
) -> ev.WorktreePushed:
    """Commit the agent's uncommitted edits with `message`, push the branch, check the
    remote has it, and open a draft pull request with `body` (or say how to).

    Raises:
        LandingError: no remote, the branch is gone, or git or `gh` failed (the line says
            what was done before).
    """
    remote = _remote(target)
    if resolve(target, target.branch_ref) is None:
        raise LandingError(f"{target.session}: branch {target.branch} is gone")
    edits = edits_commit(target, message)
    if edits is not None:
        adopt(target, edits)
    tip = resolve(target, target.branch_ref) or ""
    done_before = f" (its edits were committed as {edits[:10]})" if edits else ""
    try:
        git_output(target, "push", "--quiet", remote, f"{target.branch_ref}:{target.branch_ref}")
        there = git_output(target, "ls-remote", remote, target.branch_ref).split()
    except LandingError as exc:
        raise LandingError(f"{exc}{done_before}") from None
    if not there or there[0] != tip:
        raise LandingError(
            f"{target.session}: pushed {target.branch} to {remote}, but {remote} has "
            f"{there[0][:10] if there else 'no such branch'} instead of {tip[:10]}"
        )
    body_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    body_file.write_text(for_git(body), encoding="utf-8")
    command = pr_command(target, draft_subject(for_git(message)), body_file)
    url = ""
    if shutil.which("gh") is not None:
        url = _open_pr(target, command)
    return ev.WorktreePushed(
        at=time.time() if now is None else now,
        session=target.session,
        branch=target.branch,
        remote=remote,
        commit=tip,
        committed=edits or "",
        pr_url=url,
        pr_command="" if url else shlex.join(command),
    )


def _open_pr(target: Target, command: list[str]) -> str:
    try:
        done = subprocess.run(
            command,
            cwd=target.repository,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        reason = str(exc)
    else:
        if done.returncode == 0:
            lines = done.stdout.strip().splitlines()
            return lines[-1] if lines else "(gh gave no address)"
        reason = last_line(done)
    raise LandingError(
        f"{target.session}: {target.branch} is pushed, but gh pr create failed: {reason}; "
        f"run it yourself: {shlex.join(command)}"
    )
