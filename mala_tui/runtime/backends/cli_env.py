"""The environment a Claude Code CLI is started with, its paths made absolute first.

The CLI runs in its session's folder, mala-tui in its own. A relative path handed to
the CLI (`CLAUDE_CONFIG_DIR=cfg`, a relative `--data-dir` a private home lives under)
would be read by the CLI from the session's folder: its transcripts would land where
mala-tui, looking from its own folder, never finds them, and every mask would fail.
So every path variable the CLI reads, whether mala-tui sets it or it is inherited, is
resolved against mala-tui's working folder before launch, and mala-tui looks for the
transcripts in the same place it told the CLI to keep them.

A managed session's compaction is the CLI's own, except on the main thread: the
backend's PreCompact hook blocks the main thread's and lets a subagent's through (the
hook's input names the subagent, `agent_id`). `DISABLE_AUTO_COMPACT` is not set then:
the CLI reads it once for the whole process, subagents included, and a subagent whose
window filled could then only die "Prompt is too long". Only a CLI that runs without
that hook (the interactive one a person opens by hand) gets the variable.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from mala_tui.runtime.backends.base import SessionSpec

HOOKLESS_ENV: Final = {"DISABLE_AUTO_COMPACT": "1"}
"""What a managed session's CLI gets when no PreCompact hook guards its main thread: the
CLI's compaction off (its subagents' too, which is the price of having no hook)."""

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


def session_env(
    spec: SessionSpec, inherited: Mapping[str, str] | None = None, *, hooked: bool = True
) -> dict[str, str]:
    """What the session's CLI gets on top of the environment it inherits (`inherited`,
    mala-tui's own by default): the spec's variables, `HOOKLESS_ENV` for a managed
    session whose CLI runs without mala-tui's PreCompact hook (`hooked=False`), the
    private home's folders, and every path variable whose value is relative, made
    absolute. A `DISABLE_AUTO_COMPACT` the user set (inherited, or in the spec's env)
    stands, as the CLI alone would read it."""
    inherited = os.environ if inherited is None else inherited
    env = dict(spec.env)
    if not spec.own_compaction and not hooked:
        env.update(HOOKLESS_ENV)
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
