"""A `cache_control` marker written into Claude Code's transcript reaches the API request.

The real CLI (bundled in claude-agent-sdk) against the loopback, which keeps each request
body. The CLI puts two markers of its own on a request: the last system block and the
last block of the last message. A marker written into a block of its stored transcript
is loaded with the session on resume and sent on that block in every request after, so
a mask could keep a breakpoint of its own where it likes (two more at most: the API
takes four). With it kept, a later rewrite past the marker reads the prefix up to it
from the cache, not only the system prompt and tools.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, ResultMessage

from mala_tui.core.fold import is_digest
from mala_tui.loopback import (
    LoopbackServer,
    RequestRecord,
    Scenario,
    materialize_workspace,
    offline_cli_env,
)
from mala_tui.loopback.tokens import prompt_blocks
from mala_tui.runtime.backends.claude_fold import fold_transcript
from mala_tui.runtime.backends.claude_markers import DIGEST, keep_breakpoint
from mala_tui.runtime.backends.claude_transcripts import find_transcript, rewrite_transcript
from tests.integration.harness import cli_options

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

NOTES = Scenario.model_validate(
    {
        "name": "notes",
        "task": "Read the five notes.",
        "final_answer": "All five are read.",
        "workspace": {"files": [{"path": "n{i}.txt", "count": 5, "size": 6000}]},
        "steps": [{"tool": "Read", "path": "n{i}.txt", "count": 5}],
    }
)
#: The same with a shell: its steps are not file steps, which the fold keeps whole.
SHELL_NOTES = Scenario.model_validate(
    {
        "name": "shell-notes",
        "task": "Print the five notes.",
        "final_answer": "All five are printed.",
        "workspace": {"files": [{"path": "n{i}.txt", "count": 5, "size": 6000}]},
        "steps": [{"tool": "Bash", "command": "cat n{i}.txt", "count": 5}],
    }
)
MARKER = {"type": "ephemeral"}


async def one_turn(options: ClaudeAgentOptions, prompt: str) -> ResultMessage:
    client = ClaudeSDKClient(options)
    await client.connect()
    try:
        await client.query(prompt)
        messages = [message async for message in client.receive_response()]
    finally:
        await client.disconnect()
    return [m for m in messages if isinstance(m, ResultMessage)][-1]


def mark_result(transcript: Path, tool_use_id: str) -> None:
    """Put a cache_control marker on the result of `tool_use_id`, in every copy the
    transcript keeps of it (its entry and the request blobs)."""

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "tool_result" and node.get("tool_use_id") == tool_use_id:
                node["cache_control"] = MARKER
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    lines = []
    for line in transcript.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        walk(entry)
        lines.append(json.dumps(entry))
    transcript.write_text("\n".join(lines) + "\n", encoding="utf-8")


def markers(body: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Where a request's cache_control markers are: ("system", index) or (tool_use_id or
    block type, "message N")."""
    found = [
        ("system", str(index))
        for index, block in enumerate(body.get("system") or [])
        if "cache_control" in block
    ]
    for number, message in enumerate(body["messages"]):
        content = message["content"]
        for block in content if isinstance(content, list) else []:
            if "cache_control" in block:
                found.append((block.get("tool_use_id") or block["type"], f"message {number}"))
    return found


def result_ids(record: RequestRecord) -> list[str]:
    assert record.body is not None
    return [
        block["tool_use_id"]
        for message in record.body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


async def test_a_marker_written_into_the_transcript_is_sent_and_read_from_the_cache(
    tmp_path: Path,
) -> None:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    materialize_workspace(NOTES, workspace)
    async with LoopbackServer(NOTES, response_delay_s=0, keep_bodies=True) as server:
        env = offline_cli_env(server.base_url, home)

        def options(**extra: Any) -> ClaudeAgentOptions:
            return cli_options(NOTES, workspace, env, **extra)

        # Three Reads, then the turn stops; its last request carried the first two results.
        first = await one_turn(options(max_turns=3), NOTES.task)
        assert first.subtype == "error_max_turns"
        session = first.session_id
        stored = server.request_log
        own = markers(stored[-1].body or {})
        assert len(own) == 2 and own[0][0] == "system"  # the CLI's two: system, last block
        first_read, second_read = result_ids(stored[-1])
        transcript = find_transcript(home / "claude-config", session)
        mark_result(transcript, first_read)

        # Resumed: the marker is on the first result in every request of the turn, next
        # to the CLI's own two.
        resumed = await one_turn(options(resume=session, max_turns=2), "Go on.")
        assert resumed.session_id == session
        after_marking = server.request_log[len(stored) :]
        assert after_marking
        for record in after_marking:
            found = markers(record.body or {})
            assert (first_read, "message 2") in found
            assert len(found) == 3

        # A mask rewrites the second result, past the marker: the next request reads the
        # prefix up to the marked result from the cache, where without the marker it would
        # read the system prompt and tools only.
        assert rewrite_transcript(transcript, {second_read: "[masked]"}, None) == 1
        before = len(server.request_log)
        await one_turn(options(resume=session, max_turns=1), "Go on.")
        masked = server.request_log[before]
        assert masked.body is not None
        blocks = prompt_blocks(masked.body)
        marked_at = next(
            index
            for index, block in enumerate(blocks)
            if block.breakpoint and block.section == "messages"
        )
        head = sum(block.tokens for block in blocks if block.section != "messages")
        up_to_marker = sum(block.tokens for block in blocks[: marked_at + 1])
        assert masked.cache_read_input_tokens == up_to_marker
        assert up_to_marker > head + 1_000  # the task and the first 6 KB result with it


async def test_after_a_fold_the_digest_carries_the_breakpoint(tmp_path: Path) -> None:
    """A fold leaves no result before the newest: the breakpoint kept after the mask goes
    on the digest, the task entry's last text block, and the CLI sends it there."""
    workspace, home = tmp_path / "ws", tmp_path / "home"
    materialize_workspace(SHELL_NOTES, workspace)
    async with LoopbackServer(SHELL_NOTES, response_delay_s=0, keep_bodies=True) as server:
        env = offline_cli_env(server.base_url, home)

        def options(**extra: Any) -> ClaudeAgentOptions:
            return cli_options(SHELL_NOTES, workspace, env, **extra)

        first = await one_turn(options(max_turns=3), SHELL_NOTES.task)
        session = first.session_id
        first_read, second_read = result_ids(server.request_log[-1])
        transcript = find_transcript(home / "claude-config", session)
        # The two results masked and folded: only the digest comes before what follows.
        masked = {
            first_read: "[Bash result masked -- cat, 60 lines]",
            second_read: "[Bash result masked -- cat, 60 lines]",
        }
        assert rewrite_transcript(transcript, masked, None) == 2
        folded = fold_transcript(transcript)
        assert folded is not None and folded.steps >= 1
        assert keep_breakpoint(transcript) == DIGEST

        before = len(server.request_log)
        await one_turn(options(resume=session, max_turns=1), "Go on.")
        resumed = server.request_log[before]
        assert resumed.body is not None
        found = markers(resumed.body)
        assert ("text", "message 0") in found and len(found) == 3
        task_blocks = resumed.body["messages"][0]["content"]
        assert is_digest(task_blocks[-1]["text"]) and "cache_control" in task_blocks[-1]
