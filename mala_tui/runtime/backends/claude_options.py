"""The Claude Code CLI's options for one session, and the hook that refuses it a wakeup.

Every path is made absolute (the CLI runs in the session's folder, not in mala-tui's), a
private home means the user's settings do not apply, only the first process of a fork
forks, and the CLI's stderr is always piped, never inherited: what it prints can come from
the endpoint. A wakeup the agent schedules (``ScheduleWakeup``, ``CronCreate``) is refused to
it with the reason: the session ends when its work does, so nothing would wake it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from claude_agent_sdk import (
    ClaudeAgentOptions,
    HookContext,
    HookInput,
    HookJSONOutput,
    HookMatcher,
)

from mala_tui.runtime.backends import cli_launcher
from mala_tui.runtime.backends.base import (
    SessionSpec,
)
from mala_tui.runtime.backends.cli_env import absolute, private_home, session_env


def build_options(
    spec: SessionSpec,
    *,
    resume: str | None,
    hooks: dict[Any, list[HookMatcher]],
    stderr: Callable[[str], None] | None = None,
) -> ClaudeAgentOptions:
    # Every path absolute: the CLI runs in the session's folder, not in mala-tui's.
    home = private_home(spec)
    if home is not None:
        (home / "claude-config").mkdir(parents=True, exist_ok=True)
        (home / "tmp").mkdir(parents=True, exist_ok=True)
    return ClaudeAgentOptions(
        cwd=str(absolute(spec.cwd)),
        model=spec.model,
        allowed_tools=list(spec.allowed_tools),
        disallowed_tools=list(spec.disallowed_tools),
        mcp_servers=spec.mcp_config if spec.mcp_config is not None else {},
        permission_mode=spec.permission_mode,  # type: ignore[arg-type]
        env=session_env(spec),
        resume=resume,
        # Only the first process of a fork forks: later ones resume the fork's own id.
        fork_session=resume is not None and resume == spec.fork_of,
        include_partial_messages=True,
        betas=list(spec.betas),  # type: ignore[arg-type]
        # A private home means a model mala-tui provides: the user's settings do not apply.
        setting_sources=[] if home is not None else None,
        hooks=hooks,
        cli_path=cli_launcher.cli_path(),
        # Piped, whatever the caller gives: an inherited stderr writes to the terminal raw.
        stderr=stderr or _drop,
    )


WAKEUP_TOOLS = "ScheduleWakeup|CronCreate"
"""The tools with which an agent schedules its session to wake later (a regex, as the
hook matcher takes it)."""

WAKEUP_REFUSED = (
    "mala-tui supervises this session and ends it when its work is done: it cannot wake "
    "it later. Do not schedule a wakeup; wait for the work now (a background task's "
    "report comes to you by itself), or finish and say what is left."
)


async def refuse_wakeup(
    hook_input: HookInput, tool_use_id: str | None, context: HookContext
) -> HookJSONOutput:
    """A scheduled wakeup would fire after mala-tui ended the session (nothing keeps a
    finished session's process alive), so it is refused to the agent, with the reason."""
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": WAKEUP_REFUSED,
        }
    }


def _drop(line: str) -> None:
    """What the CLI prints on stderr when nobody keeps it: not printed either."""
