"""Agent CLIs that end when mala-tui ends, even when mala-tui is killed outright.

A normal exit, Ctrl-C or an exception disconnects every agent (the supervisor sees to
it). A `kill -9` of mala-tui gives it no chance: its Claude Code CLIs, their stdin
closed, were measured still running a minute later (the fault suite's kill trial).
On Linux the kernel can do the cleanup: a process may ask for a signal when its
parent dies (PR_SET_PDEATHSIG), and util-linux's `setpriv --pdeathsig` asks for it
before it execs the CLI. The SDK is handed a two-line wrapper script as `cli_path`;
the process it starts is still the CLI itself (exec), so its PID is the one tracked.

Elsewhere, without `setpriv`, or when the wrapper does not run here, the SDK starts the
CLI as usual.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import platformdirs

WRAPPER_NAME = "claude-dies-with-parent"


def bundled_cli() -> Path | None:
    """The CLI inside the claude-agent-sdk wheel, as the SDK itself finds it."""
    import claude_agent_sdk

    path = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    return path if path.is_file() else None


REINSTALL = "pip install --force-reinstall claude-agent-sdk"


def cli_problem() -> str | None:
    """Why no Claude Code CLI can be started here, in one line; None when one can.

    Found as the SDK finds it: the one bundled with claude-agent-sdk, else `claude` on
    PATH. Checked before a run starts: without it every session would fail on its own
    with an internal error.
    """
    import claude_agent_sdk

    bundled = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    if bundled.is_file():
        if os.access(bundled, os.X_OK):
            return None
        return (
            f"Claude Code's CLI is not executable: {bundled} "
            f"(chmod +x it, or reinstall it: {REINSTALL})"
        )
    if shutil.which("claude"):
        return None
    return (
        f"Claude Code's CLI is missing: not at {bundled}, and no `claude` on PATH "
        f"(reinstall it: {REINSTALL})"
    )


def wrapper_text(setpriv: str, cli: Path) -> str:
    command = f"{shlex.quote(setpriv)} --pdeathsig KILL -- {shlex.quote(str(cli))}"
    return f'#!/bin/sh\nexec {command} "$@"\n'


@functools.cache
def cli_path() -> str | None:
    """A CLI path for ClaudeAgentOptions(cli_path=...), or None to let the SDK choose."""
    if not sys.platform.startswith("linux"):
        return None
    setpriv = shutil.which("setpriv")
    cli = bundled_cli() or (Path(found) if (found := shutil.which("claude")) else None)
    if setpriv is None or cli is None:
        return None
    # One wrapper per CLI: two installations of mala-tui must not rewrite each other's.
    digest = hashlib.sha256(str(cli).encode()).hexdigest()[:12]
    # Absolute: the SDK starts it from the session's folder (a relative XDG_CACHE_HOME).
    folder = Path(platformdirs.user_cache_dir("mala-tui", appauthor=False)).absolute() / "bin"
    script = folder / f"{WRAPPER_NAME}-{digest}"
    text = wrapper_text(setpriv, cli)
    try:
        if not script.is_file() or script.read_text(encoding="utf-8") != text:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            temp = folder / f".{script.name}.{os.getpid()}"
            temp.write_text(text, encoding="utf-8")
            temp.chmod(0o700)
            temp.replace(script)
    except OSError:
        return None  # an unwritable cache dir: run the CLI the usual way
    return str(script) if _runs(script) else None


def _runs(script: Path) -> bool:
    """The wrapper starts the CLI here: setpriv knows --pdeathsig (util-linux 2.33 and
    later) and the cache dir allows running programs. Checked once per process."""
    try:
        done = subprocess.run(
            [str(script), "--version"], capture_output=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0
