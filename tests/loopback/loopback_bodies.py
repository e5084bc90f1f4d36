"""Builders for Messages API request bodies shaped like the Claude Code CLI's.

The CLI puts its environment block (with the working directory) in a system-reminder in the
first user message, a cache_control marker on the last block of the last message, and
answers each tool_use with a tool_result in the next user message. These builders make
bodies of that shape so the decision rule and the server can be tested without a CLI.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

WORKSPACE = Path("/work/ws")
SYSTEM = [
    {
        "type": "text",
        "text": "x-anthropic-billing-header: cc_version=2.1.330.abc; cc_entrypoint=sdk-cli;",
    },
    {"type": "text", "text": "You are a Claude agent.", "cache_control": {"type": "ephemeral"}},
    {"type": "text", "text": "Use the tools. " * 400, "cache_control": {"type": "ephemeral"}},
]
TOOLS = [
    {"name": name, "description": f"The {name} tool. " * 40, "input_schema": {"type": "object"}}
    for name in ("Bash", "Edit", "Glob", "Grep", "Read", "Write")
]
_ids = itertools.count(1)


def environment_block(workspace: Path = WORKSPACE) -> dict[str, Any]:
    return {
        "type": "text",
        "text": (
            "<system-reminder>\n# Environment\n"
            f" - Primary working directory: {workspace}\n - Platform: linux\n</system-reminder>"
        ),
    }


class Conversation:
    """A growing conversation; ``body()`` renders the request the CLI would send now."""

    def __init__(self, task: str, workspace: Path = WORKSPACE) -> None:
        self.messages: list[dict[str, Any]] = [
            {
                "role": "user",
                "content": [environment_block(workspace), {"type": "text", "text": task}],
            }
        ]

    def call(
        self,
        name: str,
        tool_input: dict[str, Any],
        result: str = "ok",
        *,
        is_error: bool = False,
    ) -> str:
        """Append an assistant tool_use and the user's tool_result; return the tool_use id."""
        call_id = f"toolu_test{next(_ids):04d}"
        self.messages.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": call_id, "name": name, "input": tool_input}],
            }
        )
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": result}
        if is_error:
            block["is_error"] = True
        self.messages.append({"role": "user", "content": [block]})
        return call_id

    def assistant_text(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": [{"type": "text", "text": text}]})

    def user_text(self, text: str) -> None:
        self.messages.append({"role": "user", "content": [{"type": "text", "text": text}]})

    def mask(self, call_id: str, placeholder: str) -> None:
        """Replace one tool_result's content, as mala-tui's masking does."""
        for message in self.messages:
            for block in message["content"]:
                if block.get("type") == "tool_result" and block["tool_use_id"] == call_id:
                    block["content"] = placeholder

    def body(self, *, stream: bool = True) -> dict[str, Any]:
        messages = [
            {"role": m["role"], "content": [dict(b) for b in m["content"]]} for m in self.messages
        ]
        messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
        return {
            "model": "claude-sonnet-4-5",
            "max_tokens": 32000,
            "stream": stream,
            "system": SYSTEM,
            "tools": TOOLS,
            "messages": messages,
            "metadata": {"user_id": '{"device_id":"d","session_id":"session-from-metadata"}'},
        }


def read_input(relative: str, workspace: Path = WORKSPACE) -> dict[str, Any]:
    return {"file_path": str(workspace / relative)}
