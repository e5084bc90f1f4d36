"""The Claude Code CLI alone, driven through the SDK as people run it today.

Its options for one arm (the same tools as the managed arm, since the tool definitions are
part of every prompt), the conversation (the scripted operator's pauses interrupt it and
tell it to go on), and how its run ended, in a few words.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from mala_tui.bench.operator import CONTINUE, ScriptedOperator
from mala_tui.loopback import MODEL, LoopbackServer, Scenario, offline_cli_env
from mala_tui.runtime.backends.cli_stderr import StderrLog

if TYPE_CHECKING:
    from claude_agent_sdk import ClaudeAgentOptions, ResultMessage

BETA_1M: Final = "context-1m-2025-08-07"


def _kept_in(log: StderrLog) -> Callable[[str], None]:
    def keep(line: str) -> None:
        log.add(line)

    return keep


async def converse(
    client: Any, task: str, operator: ScriptedOperator, server: LoopbackServer
) -> Any:
    """The task to the CLI and its answer; the operator's pauses interrupt it and, after
    the wait, tell it to continue. Returns the last ResultMessage (None without one)."""
    from claude_agent_sdk import ResultMessage

    prompts: asyncio.Queue[str] = asyncio.Queue()
    prompts.put_nowait(task)
    interrupted = False
    turn_over = asyncio.Event()

    async def pause() -> None:
        nonlocal interrupted
        interrupted = True
        turn_over.clear()
        await client.interrupt()
        await turn_over.wait()  # paused once the interrupted turn has ended

    async def resume() -> None:
        prompts.put_nowait(CONTINUE)

    pausing = operator.play_pauses(server, pause, resume) if operator.pauses else None
    pauses = asyncio.ensure_future(pausing) if pausing is not None else None
    result = None
    try:
        while True:
            await client.query(await prompts.get())
            async for message in client.receive_response():
                if isinstance(message, ResultMessage):
                    result = message
            turn_over.set()
            if not interrupted:
                return result
            interrupted = False  # the pause ended this turn: wait to be told to go on
    finally:
        if pauses is not None:
            pauses.cancel()


def cli_options(
    scenario: Scenario,
    workspace: Path,
    url: str,
    folder: Path,
    operator: ScriptedOperator,
    *,
    auto_compact_window: int | None,
    one_million_window: bool,
) -> ClaudeAgentOptions:
    """The CLI's options for one arm: the model at ``url``, its files under ``folder``, the
    CLI's own compaction on at ``auto_compact_window`` (off without one), and every tool
    it asks about answered after the operator's wait; ``one_million_window`` asks for the
    1M-token window (the ``context-1m`` beta)."""
    from claude_agent_sdk import (
        ClaudeAgentOptions,
        PermissionResult,
        PermissionResultAllow,
        ToolPermissionContext,
    )

    async def can_use_tool(
        tool: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResult:
        await operator.permission_delay(tool, tool_input)
        return PermissionResultAllow()

    env = offline_cli_env(
        url,
        folder / "home",
        auto_compact=auto_compact_window is not None,
        auto_compact_window=auto_compact_window,
    )
    return ClaudeAgentOptions(
        cwd=str(workspace),
        model=MODEL,
        # The CLI's default tool set, as in the managed arm: the tool definitions are
        # part of every prompt, so the arms must carry the same ones.
        allowed_tools=list(scenario.allowed_tools),
        permission_mode="acceptEdits",
        env=env,
        setting_sources=[],
        betas=[BETA_1M] if one_million_window else [],
        can_use_tool=can_use_tool,
        # Kept as the runtime keeps it (cleaned, redacted, in a file): what an endpoint
        # says can reach the CLI's stderr, and must never reach the terminal raw.
        stderr=_kept_in(StderrLog(folder / CLI_STDERR)),
    )


def cli_ending(result: ResultMessage | None, timed_out_after: float | None) -> str:
    """How the CLI's run ended, in a few words; ``timed_out_after`` is the arm's timeout
    when it was reached."""
    if timed_out_after is not None:
        return f"timed out after {timed_out_after:g} s"
    if result is None:
        return "no result from the CLI"
    if result.is_error:
        return f"{result.terminal_reason or result.subtype}: {(result.result or '')[:80]}"
    return "completed"


CLI_STDERR = "stderr.log"
"""What a CLI-only arm's Claude Code printed on stderr, kept in its folder (cleaned)."""
