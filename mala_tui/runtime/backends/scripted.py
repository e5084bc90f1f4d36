"""A scripted backend: canned streams, hangs on cue, no process. For fast runtime tests.

Each client plays one script: a list of turns, one per query, each a list of
stream items. An observation is written with any time (0, say): it is timed by the
client's clock as the stream hands it on, as a real client times what it reads.
`HANG` makes the stream go silent until the client is disconnected or interrupted,
as a stuck CLI does. A tool result is shown to the tool gate before it is sent, as
the Claude client's post-tool hook does. An `AskPermission` waits for the permission
gate's answer, as the CLI does before a tool outside its allowed set, and the stream
stays silent meanwhile. The backend hands out clients in order and records what it
was asked.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Final

from mala_tui.core import events as ev
from mala_tui.core.fold import FoldReport
from mala_tui.core.observations import MessageObserved, TurnEnded
from mala_tui.core.transcript import ToolCall, ToolResult
from mala_tui.runtime.backends.base import (
    ActivityItem,
    MaskError,
    ModelItem,
    PermissionAsk,
    PermissionGate,
    PermissionVerdict,
    ProblemItem,
    RecordItem,
    SessionSpec,
    StreamItem,
    ToolGate,
    carries_tool_result,
)


class _Hang:
    def __repr__(self) -> str:
        return "HANG"


HANG: Final = _Hang()


@dataclass(frozen=True)
class AskPermission:
    """A point in a turn where the agent asks the permission gate and waits for its answer."""

    ask: PermissionAsk


Turn = Sequence[StreamItem | _Hang | AskPermission]


def _turn_end(
    subtype: str, reason: str, text: str = "", session_id: str | None = "sess-1"
) -> TurnEnded:
    return TurnEnded(
        0,
        subtype=subtype,
        is_error=subtype != "success",
        terminal_reason=reason,
        result_text=text,
        session_id=session_id,
    )


def finished(text: str = "Done.", session_id: str | None = "sess-1") -> TurnEnded:
    return _turn_end("success", "completed", text, session_id)


def hook_stopped(session_id: str | None = "sess-1") -> TurnEnded:
    """How the CLI ends a turn that a hook stopped after a tool result."""
    return _turn_end("success", "hook_stopped", session_id=session_id)


def aborted(session_id: str | None = "sess-1") -> TurnEnded:
    return _turn_end("error_during_execution", "aborted_streaming", session_id=session_id)


@dataclass
class ScriptedClient:
    turns: list[Turn]
    queries: list[str] = field(default_factory=list)
    connected: bool = False
    disconnected: bool = False
    interrupted: int = 0
    disconnect_delay: float = 0.0
    can_stop: bool = False
    """Honour stop_after_tools() as the Claude client's hook does; else the runner interrupts."""
    ignores_stop: bool = False
    """Promise the stop but carry on regardless, as a CLI that ignores its hook's answer."""
    stops: int = 0
    """Turns this client ended after a tool result (asked by stop_after_tools or the gate)."""
    pace: float = 0.0
    """Seconds between two items of a turn, as a model streaming at that rate (0: at once)."""
    clock: Callable[[], float] = time.time
    """What times the observations it hands on (the backend gives it the runner's)."""
    _stop_requested: bool = False
    _gate: ToolGate | None = None
    _permission_gate: PermissionGate | None = None
    verdicts: list[PermissionVerdict] = field(default_factory=list)
    """The permission gate's answers, in order (a refusal when there is no gate)."""
    _tool_names: dict[str, str] = field(default_factory=dict)
    _queue: asyncio.Queue[StreamItem | None] = field(default_factory=asyncio.Queue)
    _released: asyncio.Event = field(default_factory=asyncio.Event)
    _playing: asyncio.Task[None] | None = None

    @property
    def pid(self) -> int | None:
        return None

    async def connect(self) -> None:
        self.connected = True

    async def query(self, prompt: str) -> None:
        self.queries.append(prompt)
        self._stop_requested = False  # a stop asked for belongs to the turn before
        turn = self.turns.pop(0) if self.turns else [HANG]
        self._released.clear()
        self._playing = asyncio.create_task(self._play(turn))

    async def _play(self, turn: Turn) -> None:
        for item in turn:
            if isinstance(item, _Hang):
                await self._released.wait()
                return
            if isinstance(item, AskPermission):
                gate = self._permission_gate
                no_gate = PermissionVerdict(False, "not allowed (nobody to ask)")
                self.verdicts.append(await gate(item.ask) if gate is not None else no_gate)
                continue
            gate_says_stop = await self._ask_gate(item)
            await self._queue.put(item)
            stop = self._stop_requested or gate_says_stop
            if stop and not self.ignores_stop and carries_tool_result(item):
                self._stop_requested = False
                self.stops += 1
                await self._queue.put(hook_stopped())
                return
            await asyncio.sleep(self.pace)

    async def _ask_gate(self, item: StreamItem) -> bool:
        """The gate's answer for the tool results in this item (True if any says stop)."""
        if not isinstance(item, MessageObserved):
            return False
        stop = False
        for block in item.message.blocks:
            if isinstance(block, ToolCall):
                self._tool_names[block.id] = block.name
            elif isinstance(block, ToolResult) and self._gate is not None:
                name = self._tool_names.get(block.tool_use_id, "")
                try:
                    stop = self._gate(block.tool_use_id, name, len(block.content)) or stop
                except Exception as exc:  # as the Claude client's hook: the agent goes on
                    await self._queue.put(
                        ProblemItem(ev.Where.HOOK, f"the tool gate failed: {exc!r}")
                    )
        return stop

    def stop_after_tools(self) -> bool:
        if self.can_stop:
            self._stop_requested = True
        return self.can_stop

    def set_tool_gate(self, gate: ToolGate | None) -> None:
        self._gate = gate

    def set_permission_gate(self, gate: PermissionGate | None) -> None:
        self._permission_gate = gate

    async def stream(self) -> AsyncIterator[StreamItem]:
        while True:
            item = await self._queue.get()
            if item is None:
                return
            if isinstance(item, ModelItem | ProblemItem | ActivityItem | RecordItem):
                yield item
            else:
                yield replace(item, at=self.clock())

    async def interrupt(self) -> None:
        self.interrupted += 1
        if self._playing is not None and not self._playing.done():
            self._playing.cancel()
        self._released.set()
        await self._queue.put(aborted())

    async def disconnect(self) -> None:
        if self.disconnect_delay:
            await asyncio.sleep(self.disconnect_delay)
        self.disconnected = True
        self._released.set()
        if self._playing is not None and not self._playing.done():
            self._playing.cancel()
        await self._queue.put(None)


@dataclass
class ScriptedBackend:
    """Hands out the given clients in order; the last one repeats when they run out."""

    clients: list[ScriptedClient]
    created: list[tuple[str, str | None]] = field(default_factory=list)
    masked: list[dict[str, str]] = field(default_factory=list)
    mask_error: str | None = None
    fold_error: str | None = None
    """Set: folding fails with this, as a transcript the fold cannot rewrite would."""
    breakpoint_error: str | None = None
    """Set: keeping the cache breakpoint fails with this."""
    transcripts: dict[str, Path] = field(default_factory=dict)
    """Stored transcripts by session id, for `transcript_path`."""
    _index: int = 0

    @classmethod
    def of(cls, *scripts: Iterable[Turn]) -> ScriptedBackend:
        return cls([ScriptedClient([list(turn) for turn in script]) for script in scripts])

    def create(
        self, spec: SessionSpec, *, resume: str | None, clock: Callable[[], float] = time.time
    ) -> ScriptedClient:
        self.created.append((spec.name, resume))
        client = self.clients[min(self._index, len(self.clients) - 1)]
        client.clock = clock
        self._index += 1
        return client

    def transcript_path(self, spec: SessionSpec, session_id: str) -> Path | None:
        return self.transcripts.get(session_id)

    async def mask_transcript(
        self, spec: SessionSpec, session_id: str, placeholders: Mapping[str, str]
    ) -> int:
        if self.mask_error is not None:
            raise MaskError(self.mask_error)
        self.masked.append(dict(placeholders))
        return len(placeholders)

    async def fold_transcript(
        self, spec: SessionSpec, session_id: str, notes: Sequence[str]
    ) -> FoldReport | None:
        if self.fold_error is not None:
            raise MaskError(self.fold_error)
        return None  # a scripted session keeps no transcript to fold

    async def keep_breakpoint(self, spec: SessionSpec, session_id: str) -> str | None:
        if self.breakpoint_error is not None:
            raise MaskError(self.breakpoint_error)
        return None  # nor any to mark
