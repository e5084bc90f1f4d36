"""What a console reads of a live run beyond its events: budgets, transcripts, windows.

The control channel (runtime.consoles.channel) serves these GET endpoints; the journal
does not hold them (a session's window whole, its transcript's path), or holds them
only as changes (the budget limits in force).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from mala_tui.core.budget import BudgetLimits
from mala_tui.core.transcript import Message, TextBlock, ToolCall, ToolResult
from mala_tui.runtime.private.redaction import redact
from mala_tui.runtime.run.supervisor import Supervisor


class RunReads:
    """The channel's reads of the run's supervisor."""

    def __init__(self, supervisor: Supervisor) -> None:
        self.supervisor = supervisor

    async def profiles(self, request: web.Request) -> web.Response:
        """The run's named profiles a session added from a console may be given."""
        return web.json_response({"profiles": self.supervisor.profile_names()})

    async def budget(self, request: web.Request) -> web.Response:
        watch = self.supervisor.budget
        return web.json_response(
            {
                "run": limits_json(watch.run_limits),
                "sessions": {
                    name: limits_json(watch.limits_for(name)) for name in self.supervisor.runners
                },
            }
        )

    async def transcript(self, request: web.Request) -> web.Response:
        session = request.query.get("session", "")
        if session not in self.supervisor.runners:
            return refused(404, "key", f"no session {session!r} in this run")
        path = self.supervisor.transcript_path(session)
        return web.json_response({"path": None if path is None else str(path)})

    async def window(self, request: web.Request) -> web.Response:
        """What fills the session's window (its conversation, whole, and its calibration):
        what the breakdown view draws, which a console cannot rebuild from the journal."""
        session = request.query.get("session", "")
        if session not in self.supervisor.runners:
            return refused(404, "key", f"no session {session!r} in this run")
        contents = self.supervisor.window_contents(session)
        if contents is None:
            return web.json_response({"contents": None})
        density = contents.density
        return web.json_response(
            {
                "contents": {
                    "messages": [_message_json(m) for m in contents.transcript],
                    "density": [density.ratio, density.measured, density.overhead],
                    "root": contents.root,
                }
            }
        )


def _message_json(message: Message) -> dict[str, Any]:
    """A conversation's message whole (redacted as the journal is), in the shape
    runtime.cluster.wire reads back."""
    blocks: list[dict[str, Any]] = []
    for block in message.blocks:
        if isinstance(block, TextBlock):
            blocks.append({"text": redact(block.text)})
        elif isinstance(block, ToolCall):
            blocks.append({"call": block.id, "name": block.name, "input": block.input})
        elif isinstance(block, ToolResult):
            blocks.append(
                {
                    "result": block.tool_use_id,
                    "content": redact(block.content),
                    "error": block.is_error,
                }
            )
    return {"role": message.role.value, "harness": message.from_harness, "blocks": blocks}


def limits_json(limits: BudgetLimits) -> dict[str, Any]:
    return {
        "max_cost_usd": limits.max_cost_usd,
        "max_turns": limits.max_turns,
        "max_minutes": limits.max_minutes,
        "near_fraction": limits.near_fraction,
    }


def refused(status: int, kind: str, message: str) -> web.Response:
    return web.json_response({"error": message, "kind": kind}, status=status)
