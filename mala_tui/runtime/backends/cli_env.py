"""The environment a Claude Code CLI is started with, its paths made absolute first.

The CLI runs in its session's folder, mala-tui in its own. A relative path handed to
the CLI (`CLAUDE_CONFIG_DIR=cfg`, a relative `--data-dir` a private home lives under)
would be read by the CLI from the session's folder: its transcripts would land where
mala-tui, looking from its own folder, never finds them, and every mask would fail.
So every path variable the CLI reads, whether mala-tui sets it or it is inherited, is
resolved against mala-tui's working folder before launch, and mala-tui looks for the
transcripts in the same place it told the CLI to keep them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from mala_tui.runtime.backends.base import SessionSpec

MANAGED_ENV: Final = {"DISABLE_AUTO_COMPACT": "1"}
"""Environment every managed session gets: the manager, not the CLI, manages the window."""

RETRIES_VARIABLE: Final = "CLAUDE_CODE_MAX_RETRIES"
"""How many times the CLI retries a failed API call before its turn ends with the error."""

PATH_VARIABLES: Final = (
    "CLAUDE_CONFIG_DIR",
    "TMPDIR",
    "TMP",
    "TEMP",
    "HOME",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
)
"""Variables the CLI (or what it runs) reads a folder from."""


def absolute(path: str | os.PathLike[str]) -> Path:
    """`path` with `~` expanded, against mala-tui's working folder when relative."""
    return Path(path).expanduser().absolute()


def private_home(spec: SessionSpec) -> Path | None:
    """The session's private home (config dir and TMPDIR under it), absolute."""
    return absolute(spec.private_home) if spec.private_home is not None else None


def session_env(spec: SessionSpec, inherited: Mapping[str, str] | None = None) -> dict[str, str]:
    """What the session's CLI gets on top of the environment it inherits (`inherited`,
    mala-tui's own by default): the spec's variables, the managed ones, the private
    home's folders, and every path variable whose value is relative, made absolute."""
    inherited = os.environ if inherited is None else inherited
    env = dict(spec.env)
    if not spec.own_compaction:
        env.update(MANAGED_ENV)
    # The user's own choice (inherited, or in the spec's env) stands.
    if spec.cli_retries is not None and RETRIES_VARIABLE not in {**inherited, **env}:
        env[RETRIES_VARIABLE] = str(spec.cli_retries)
    home = private_home(spec)
    if home is not None:
        env.setdefault("CLAUDE_CONFIG_DIR", str(home / "claude-config"))
        env.setdefault("TMPDIR", str(home / "tmp"))
    for name in PATH_VARIABLES:
        value = env.get(name, inherited.get(name))
        if value:  # an empty value means "unset" to the CLI: left as it is
            env[name] = str(absolute(value))
    return env


def config_dir(spec: SessionSpec, inherited: Mapping[str, str] | None = None) -> Path:
    """Where the session's CLI keeps its transcripts: the config dir it is given."""
    configured = session_env(spec, inherited).get("CLAUDE_CONFIG_DIR")
    return Path(configured) if configured else absolute(Path.home() / ".claude")
