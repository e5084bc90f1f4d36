"""A scripted agent at a steady pace, for runs too large for real CLIs (the cluster benchmark).

Each session reads files one after another: a usage report, the tool call, its
result, at `hz` items a second (each item journals an event or two), then finishes.
Its backend is made on the session's host from `paced_backend(...)`, a value that
pickles (a partial of a module function), so a cluster can ship it to any host.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from mala_tui.core.observations import MessageObserved, SessionIdentified, UsageObserved
from mala_tui.core.transcript import Message, Role, TextBlock, ToolCall, ToolResult
from mala_tui.core.usage import CallUsage
from mala_tui.runtime.backends.base import Backend, StreamItem
from mala_tui.runtime.backends.scripted import ScriptedBackend, ScriptedClient, finished
from mala_tui.runtime.cluster.session_host import BackendFactory


def steps(count: int, *, base_tokens: int = 8_000, step_tokens: int = 300) -> list[StreamItem]:
    """One turn of `count` Read steps, each growing the context by `step_tokens` (timed as
    they are played: see runtime.backends.scripted)."""
    items: list[StreamItem] = [SessionIdentified(0, "paced-1")]
    for index in range(count):
        tokens = base_tokens + index * step_tokens
        tool_id = f"toolu_{index:04d}"
        path = f"/work/src/module_{index:03d}.py"
        items.append(UsageObserved(0, CallUsage(input_tokens=3, cache_read_input_tokens=tokens)))
        items.append(
            MessageObserved(
                0,
                Message(
                    Role.ASSISTANT,
                    (TextBlock(f"Reading {path}."), ToolCall(tool_id, "Read", {"file_path": path})),
                ),
            )
        )
        items.append(MessageObserved(0, Message(Role.USER, (ToolResult(tool_id, "x = 1\n" * 40),))))
    tokens = base_tokens + count * step_tokens
    items.append(UsageObserved(0, CallUsage(input_tokens=3, cache_read_input_tokens=tokens)))
    items.append(MessageObserved(0, Message(Role.ASSISTANT, (TextBlock("All modules read."),))))
    items.append(finished("Read every module.", session_id="paced-1"))
    return items


def _make(count: int, hz: float, folder: Path) -> Backend:
    # Every client plays the same turn: a restarted session (a fresh client) does the
    # work again from its checkpoint, as a real agent would go on.
    clients = [ScriptedClient([steps(count)], pace=1.0 / hz) for _ in range(4)]
    return ScriptedBackend(clients)


def paced_backend(count: int, hz: float) -> BackendFactory:
    """A backend factory whose sessions take `count` steps at `hz` items a second."""
    return partial(_make, count, hz)
