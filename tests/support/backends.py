"""Scripted agents for the tiers that run sessions: a backend per session, common steps."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from mala_tui.core.fold import FoldReport
from mala_tui.core.observations import MessageObserved
from mala_tui.core.transcript import Message, Role, ToolCall, ToolResult
from mala_tui.runtime.backends.base import PermissionAsk, SessionSpec, StreamItem
from mala_tui.runtime.backends.scripted import AskPermission, ScriptedBackend, ScriptedClient


class PerSession:
    """Hands each session the clients scripted for its name, in order (the last repeats),
    or, given a function, a new client it makes for the name at each start."""

    def __init__(
        self,
        clients: Mapping[str, Sequence[ScriptedClient]] | Callable[[str], ScriptedClient],
    ) -> None:
        self._make: Callable[[str], ScriptedClient] | None = None
        self.by_name: dict[str, ScriptedBackend] = {}
        """Each session's own scripted backend (what it was asked: `created`, `masked`)."""
        if isinstance(clients, Mapping):
            self.by_name = {name: ScriptedBackend(list(found)) for name, found in clients.items()}
        else:
            self._make = clients
        self.created: list[str] = []
        """The sessions started, in order (a restart or a resume adds its name again)."""
        self.clients: dict[str, ScriptedClient] = {}
        """Each session's latest client."""

    def create(
        self, spec: SessionSpec, *, resume: str | None, clock: Callable[[], float]
    ) -> ScriptedClient:
        self.created.append(spec.name)
        if self._make is not None:
            made = ScriptedBackend([self._make(spec.name)])
            client = made.create(spec, resume=resume, clock=clock)
        else:
            client = self.by_name[spec.name].create(spec, resume=resume, clock=clock)
        self.clients[spec.name] = client
        return client

    def transcript_path(self, spec: SessionSpec, session_id: str) -> Path | None:
        return None

    async def mask_transcript(
        self, spec: SessionSpec, session_id: str, placeholders: Mapping[str, str]
    ) -> int:
        return 0

    async def fold_transcript(
        self, spec: SessionSpec, session_id: str, notes: Sequence[str]
    ) -> FoldReport | None:
        return None

    async def keep_breakpoint(self, spec: SessionSpec, session_id: str) -> str | None:
        return None


def bash(command: str, tool_id: str) -> list[StreamItem | AskPermission]:
    """A Bash call the agent asks permission for before it runs, then the call's result
    (the scripted result is the same whatever the answer)."""
    call = MessageObserved(
        0, Message(Role.ASSISTANT, (ToolCall(tool_id, "Bash", {"command": command}),))
    )
    result = MessageObserved(0, Message(Role.USER, (ToolResult(tool_id, "done"),)))
    return [call, AskPermission(PermissionAsk(tool_id, "Bash", {"command": command})), result]


class NoLocalBackend:
    """The backend of a process where no session may run: a cluster's driver, whose
    sessions all run on hosts. Asked for anything, it fails the test."""

    def create(
        self, spec: SessionSpec, *, resume: str | None, clock: Callable[[], float]
    ) -> ScriptedClient:
        raise AssertionError(f"{spec.name} was started here, not on a host")

    def transcript_path(self, spec: SessionSpec, session_id: str) -> Path | None:
        raise AssertionError(f"{spec.name}'s transcript was looked for here, not on a host")

    async def mask_transcript(
        self, spec: SessionSpec, session_id: str, placeholders: Mapping[str, str]
    ) -> int:
        raise AssertionError(f"{spec.name} was masked here, not on a host")

    async def fold_transcript(
        self, spec: SessionSpec, session_id: str, notes: Sequence[str]
    ) -> FoldReport | None:
        raise AssertionError(f"{spec.name} was folded here, not on a host")

    async def keep_breakpoint(self, spec: SessionSpec, session_id: str) -> str | None:
        raise AssertionError(f"{spec.name} was marked here, not on a host")
