"""A real terminal for the app: tmux, and what its pane shows."""

from __future__ import annotations

import subprocess


def tmux(*args: str, socket: str | None = None) -> str:
    """Run a tmux command (on the server of `socket`, when given) and return its output."""
    server = ["-L", socket] if socket is not None else []
    return subprocess.run(
        ["tmux", *server, *args], capture_output=True, text=True, check=True
    ).stdout


def screen(target: str, socket: str | None = None) -> str:
    """The text the pane of `target` shows now."""
    return tmux("capture-pane", "-t", target, "-p", socket=socket)
