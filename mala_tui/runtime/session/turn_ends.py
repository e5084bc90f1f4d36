"""A backend that says when each of its agents' turns ends (runtime.cluster.session_host keeps the
working tree aside then): every call goes to the backend it wraps, unchanged."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path

from mala_tui.core.fold import FoldReport
from mala_tui.core.observations import TurnEnded
from mala_tui.runtime.backends.base import (
    AgentClient,
    Backend,
    PermissionGate,
    SessionSpec,
    StreamItem,
    ToolGate,
)


class TurnEndsClient:
    """One agent process; `on_turn_end` is called after each turn's last item is handed on."""

    def __init__(self, inner: AgentClient, on_turn_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_turn_end = on_turn_end

    @property
    def pid(self) -> int | None:
        return self._inner.pid

    async def connect(self) -> None:
        await self._inner.connect()

    async def query(self, prompt: str) -> None:
        await self._inner.query(prompt)

    async def stream(self) -> AsyncIterator[StreamItem]:
        async for item in self._inner.stream():
            yield item
            if isinstance(item, TurnEnded):
                self._on_turn_end()

    async def interrupt(self) -> None:
        await self._inner.interrupt()

    def stop_after_tools(self) -> bool:
        return self._inner.stop_after_tools()

    def set_tool_gate(self, gate: ToolGate | None) -> None:
        self._inner.set_tool_gate(gate)

    def set_permission_gate(self, gate: PermissionGate | None) -> None:
        self._inner.set_permission_gate(gate)

    async def disconnect(self) -> None:
        await self._inner.disconnect()


class TurnEnds:
    """`inner`, whose clients call `on_turn_end` when a turn ends."""

    def __init__(self, inner: Backend, on_turn_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_turn_end = on_turn_end

    def create(
        self, spec: SessionSpec, *, resume: str | None, clock: Callable[[], float]
    ) -> TurnEndsClient:
        inner = self._inner.create(spec, resume=resume, clock=clock)
        return TurnEndsClient(inner, self._on_turn_end)

    def transcript_path(self, spec: SessionSpec, session_id: str) -> Path | None:
        return self._inner.transcript_path(spec, session_id)

    async def mask_transcript(
        self, spec: SessionSpec, session_id: str, placeholders: Mapping[str, str]
    ) -> int:
        return await self._inner.mask_transcript(spec, session_id, placeholders)

    async def fold_transcript(
        self, spec: SessionSpec, session_id: str, notes: Sequence[str]
    ) -> FoldReport | None:
        return await self._inner.fold_transcript(spec, session_id, notes)

    async def keep_breakpoint(self, spec: SessionSpec, session_id: str) -> str | None:
        return await self._inner.keep_breakpoint(spec, session_id)
