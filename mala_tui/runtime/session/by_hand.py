"""A session taken over by hand: opened in the interactive Claude Code, then handed back.

The person gets the same Claude Code the session ran in (the CLI bundled with the SDK),
resumed by the session's id in its folder, with its config dir and the environment
mala-tui gives it (the model's URL, compaction off, its tools and permission mode). Only
one process may write a transcript, so the supervised process is ended first
(`Supervisor.take_over`). Inside tmux the CLI opens in a new window and the app stays
live; elsewhere the app suspends and the CLI has the terminal until it exits. Afterwards
the transcript is read again (`read_back`): the conversation the person left, and the
usage of the latest API call in it, which is the window's measure from then on.

Opening is only possible from a local terminal: a browser tab has no terminal to give
(`console_problem`), and a session whose host is another machine keeps its transcript
there.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from mala_tui.core.transcript import Message
from mala_tui.core.usage import CallUsage, UsageFieldError
from mala_tui.runtime.backends.base import SessionSpec
from mala_tui.runtime.backends.claude_history import read_conversation
from mala_tui.runtime.backends.cli_env import absolute, config_dir, private_home, session_env
from mala_tui.runtime.backends.cli_launcher import bundled_cli
from mala_tui.runtime.session.processes import pid_alive

#: What a browser tab's app runs under (`mala-tui serve`: Textual's web driver).
WEB_DRIVER: Final = "textual.drivers.web_driver"
#: Variables of mala-tui's own terminal that are not the new tmux window's.
NOT_PASSED: Final = frozenset(
    {"TMUX", "TMUX_PANE", "TERM", "COLUMNS", "LINES", "SHLVL", "PWD", "OLDPWD", "_"}
)
#: How often the tmux window's process is looked at while the person works in it.
POLL_SECONDS: Final = 0.25
#: Characters of an API key Claude Code keeps to remember it was approved.
KEY_TAIL: Final = 20
#: How Claude Code notes a stopped turn in a transcript, as if the user had said it.
INTERRUPTED: Final = "[Request interrupted"


class ByHandError(Exception):
    """The session cannot be opened by hand: one line says why."""


@dataclass(frozen=True)
class Interactive:
    """How to start the interactive Claude Code on a session: what `claude --resume` runs."""

    session: str
    session_id: str
    argv: tuple[str, ...]
    env: Mapping[str, str]
    """The whole environment the CLI runs with: the one the supervised CLI had (the run's
    host's, with the session's own over it), but for what belongs to a terminal (`TERM`,
    `TMUX`...), which is the terminal's it opens in."""
    cwd: Path

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "session_id": self.session_id,
            "argv": list(self.argv),
            "env": dict(self.env),
            "cwd": str(self.cwd),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Interactive:
        return cls(
            str(data["session"]),
            str(data["session_id"]),
            tuple(str(part) for part in data["argv"]),
            {str(key): str(value) for key, value in dict(data["env"]).items()},
            Path(str(data["cwd"])),
        )


def console_problem(environ: Mapping[str, str] | None = None) -> str | None:
    """Why this console cannot open a session by hand (a browser tab), or None."""
    env = os.environ if environ is None else environ
    if env.get("TEXTUAL_DRIVER", "").startswith(WEB_DRIVER):
        return (
            "a session can be opened by hand only from a terminal on the run's machine, "
            "not from a browser tab"
        )
    return None


def interactive(
    spec: SessionSpec, session_id: str, environ: Mapping[str, str] | None = None
) -> Interactive:
    """The interactive Claude Code on `session_id`, as `spec` runs it supervised (in a
    process whose environment is `environ`, by default this one's).

    Raises:
        ByHandError: no Claude Code CLI here.
    """
    cli = bundled_cli() or (Path(found) if (found := shutil.which("claude")) else None)
    if cli is None:
        raise ByHandError("no Claude Code CLI: neither the SDK's bundled one nor `claude`")
    argv = [str(cli), "--resume", session_id]
    if spec.model:
        argv += ["--model", spec.model]
    if spec.permission_mode:
        argv += ["--permission-mode", spec.permission_mode]
    if spec.allowed_tools:
        argv += ["--allowedTools", ",".join(spec.allowed_tools)]
    if spec.disallowed_tools:
        argv += ["--disallowedTools", ",".join(spec.disallowed_tools)]
    if spec.betas:
        argv += ["--betas", ",".join(spec.betas)]
    if spec.mcp_config is not None:
        argv += ["--mcp-config", str(absolute(spec.mcp_config))]
    if private_home(spec) is not None:
        argv.append("--setting-sources=")  # as supervised: the user's settings do not apply
    cwd = absolute(spec.cwd)
    inherited = os.environ if environ is None else environ
    own = session_env(spec, inherited, hooked=False)  # a person's CLI runs no hook of ours
    env = {k: v for k, v in inherited.items() if k not in NOT_PASSED} | own
    if private_home(spec) is not None:
        _ready_for_a_person(config_dir(spec, inherited), cwd, env.get("ANTHROPIC_API_KEY"))
    return Interactive(spec.name, session_id, tuple(argv), env, cwd)


def _ready_for_a_person(root: Path, cwd: Path, key: str | None) -> None:
    """A private config dir (mala-tui provides the model) has never seen the interactive
    Claude Code, which would first show its onboarding (and reach for the network), ask to
    trust the folder and whether to use the API key. mala-tui made that config dir, the
    folder and the key: it answers for them, as a person does once in their own."""
    path = root / ".claude.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    data["hasCompletedOnboarding"] = True
    data.setdefault("theme", "dark")
    projects = data.setdefault("projects", {})
    if isinstance(projects, dict):
        project = projects.setdefault(str(cwd), {})
        if isinstance(project, dict):
            project["hasTrustDialogAccepted"] = True
            project["hasCompletedProjectOnboarding"] = True
    if key:
        answers = data.setdefault("customApiKeyResponses", {"approved": [], "rejected": []})
        approved = answers.setdefault("approved", []) if isinstance(answers, dict) else None
        if isinstance(approved, list) and key[-KEY_TAIL:] not in approved:
            approved.append(key[-KEY_TAIL:])
    root.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    path.chmod(0o600)


@dataclass(frozen=True)
class ReadBack:
    """The session's transcript after the person: its conversation, the latest main-thread
    API call's usage in it (None when it has none), and the prompts the person typed."""

    history: tuple[Message, ...]
    call: CallUsage | None
    prompts: int = 0


def size_of(path: Path | None) -> int:
    """Bytes in the transcript now: where what the person adds to it will start."""
    try:
        return path.stat().st_size if path is not None else 0
    except OSError:
        return 0


def read_back(path: Path | None, since: int = 0) -> ReadBack:
    """The conversation and the latest call's usage, read from the transcript at `path`,
    and the prompts written to it past byte `since` (what the person typed)."""
    if path is None:
        return ReadBack((), None)
    return ReadBack(tuple(read_conversation(path)), last_usage(path), _prompts(path, since))


def _prompts(path: Path, since: int) -> int:
    """Main-thread prompts (a user entry of text, not a tool's result) past byte `since`."""
    try:
        with path.open("rb") as handle:
            handle.seek(since)
            tail = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return 0
    found = 0
    for line in tail.splitlines():
        try:
            entry = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            continue
        if not isinstance(entry, dict) or entry.get("type") != "user":
            continue
        if entry.get("isSidechain") or entry.get("isMeta"):
            continue
        message = entry.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            found += _typed(content)
        elif isinstance(content, list) and content:
            texts = [
                part["text"]
                for part in content
                if isinstance(part, dict)
                and part.get("type") == "text"
                and isinstance(part.get("text"), str)
            ]
            found += len(texts) == len(content) and all(_typed(text) for text in texts)
    return found


def last_usage(path: Path) -> CallUsage | None:
    """The usage of the last main-thread assistant entry that has one: the latest API
    call's, which measures the window (an entry per content block repeats it).

    Read by the same rule as the stream's usage (`CallUsage.parse`). An entry whose usage
    is not counts (text, a fraction) is passed over for the call before it: a guessed
    number on the gauge would be worse than a slightly older one.
    """
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            entry = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            continue
        if (
            not isinstance(entry, dict)
            or entry.get("isSidechain")
            or entry.get("type") != ("assistant")
        ):
            continue
        message = entry.get("message")
        usage = message.get("usage") if isinstance(message, dict) else None
        if isinstance(usage, dict) and not entry.get("isApiErrorMessage"):
            try:
                return CallUsage.parse(usage)[0]
            except UsageFieldError:
                continue
    return None


# -- running it ------------------------------------------------------------------------------


def in_tmux(environ: Mapping[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return bool(env.get("TMUX")) and shutil.which("tmux") is not None


async def run_in_tmux(how: Interactive) -> None:
    """In a new tmux window, until the CLI there exits.

    tmux starts the window's process from its server's environment, not mala-tui's: the
    whole environment goes in a private script (the session's variables may hold a key,
    which a command line would show to every process), removed once the CLI has started.

    Raises:
        ByHandError: tmux would not open the window.
    """
    env = {k: v for k, v in how.env.items() if k not in NOT_PASSED}
    folder = Path(tempfile.mkdtemp(prefix="mala-by-hand-"))
    script = folder / "open.sh"
    lines = ["#!/bin/sh", f"rm -rf {shlex.quote(str(folder))}"]
    lines += [f"export {name}={shlex.quote(value)}" for name, value in env.items() if _name(name)]
    lines += [f"cd {shlex.quote(str(how.cwd))}", f"exec {shlex.join(how.argv)}"]
    script.write_text("\n".join(lines) + "\n", encoding="utf-8")
    script.chmod(0o700)
    window = f"{how.session} (by hand)"
    done = await asyncio.to_thread(
        subprocess.run,
        ["tmux", "new-window", "-P", "-F", "#{pane_pid}", "-n", window, str(script)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0 or not done.stdout.strip().isdigit():
        shutil.rmtree(folder, ignore_errors=True)
        said = (done.stderr or done.stdout).strip().splitlines()
        raise ByHandError(f"tmux would not open a window: {said[-1] if said else 'no reason'}")
    pid = int(done.stdout.strip())
    # The window's process is tmux's child, not ours: nothing tells us it ended but looking.
    while pid_alive(pid):  # noqa: ASYNC110
        await asyncio.sleep(POLL_SECONDS)


async def run_here(how: Interactive) -> int:
    """In this terminal (the app has given it up), until the CLI exits; its exit status."""
    terminal = {k: v for k, v in os.environ.items() if k in NOT_PASSED}
    process = await asyncio.create_subprocess_exec(
        *how.argv, cwd=how.cwd, env={**how.env, **terminal}
    )
    return await process.wait()


def _typed(text: str) -> bool:
    """A prompt a person typed, not the note Claude Code writes when a turn is stopped."""
    return bool(text.strip()) and not text.startswith(INTERRUPTED)


def _name(name: str) -> bool:
    return name.replace("_", "a").isalnum() and not name[0].isdigit()
