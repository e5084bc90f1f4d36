"""Running the real Claude Code CLI (through the SDK) on a delegation scenario.

``delegation_server`` starts the loopback server on 127.0.0.1 with the shipped
``delegation`` (two background subagents) or ``delegation-foreground`` scenario, without
pacing; ``cli_options`` gives the SDK options for a session on it (the scenario's workspace
written under ``root``, the Agent tool offered and allowed); ``read_until`` reads
``receive_messages()`` (each turn ends with its own ResultMessage: a waiting main agent's
turn ends before the reports come back) until a ResultMessage passes ``done``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, Message, ResultMessage

from mala_tui.loopback import (
    MODEL,
    LoopbackServer,
    Scenario,
    load_scenario,
    materialize_workspace,
    offline_cli_env,
)


@asynccontextmanager
async def delegation_server(name: str = "delegation") -> AsyncIterator[LoopbackServer]:
    """The loopback server playing a shipped delegation scenario, answers unpaced."""
    async with LoopbackServer(load_scenario(name), response_delay_s=0) as server:
        yield server


def cli_options(server: LoopbackServer, scenario: Scenario, root: Path) -> ClaudeAgentOptions:
    """A session on ``server``: workspace ``root/ws``, the CLI's home ``root/home``."""
    workspace = root / "ws"
    materialize_workspace(scenario, workspace)
    return ClaudeAgentOptions(
        cwd=str(workspace),
        env=offline_cli_env(server.base_url, root / "home"),
        model=MODEL,
        tools=scenario.tools,
        allowed_tools=scenario.tools,
        permission_mode="acceptEdits",
        setting_sources=[],
    )


async def read_until(
    client: ClaudeSDKClient, done: Callable[[ResultMessage], bool], timeout_s: float
) -> list[Message]:
    """Every message up to the first ResultMessage that ``done`` accepts, within
    ``timeout_s`` in all (TimeoutError otherwise)."""
    messages: list[Message] = []

    async def read() -> list[Message]:
        async for message in client.receive_messages():
            messages.append(message)
            if isinstance(message, ResultMessage) and done(message):
                return messages
        raise AssertionError("the CLI's stream ended before the awaited result")

    return await asyncio.wait_for(read(), timeout_s)
