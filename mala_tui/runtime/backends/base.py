"""The backend protocol: what the session runner needs from an agent, and what it gets back.

A backend turns the agent's stream into the core's observations (and two items
the runtime keeps to itself), so the runner and the core never see SDK types.
Clients are short-lived: one per process of the CLI; resuming a session (after a
mask, an idle timeout) is a new client.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from mala_tui.core import events as ev
from mala_tui.core.fold import FoldReport
from mala_tui.core.observations import (
    ApiRetrying,
    BackgroundChanged,
    CompactionObserved,
    MessageObserved,
    SessionIdentified,
    TurnEnded,
    UsageObserved,
)
from mala_tui.core.subagent_window import SubagentLimits
from mala_tui.core.transcript import ToolResult


@dataclass(frozen=True)
class SessionSpec:
    """How to start an agent for one session."""

    name: str
    task: str
    cwd: Path
    model: str | None = None
    allowed_tools: tuple[str, ...] = ()
    disallowed_tools: tuple[str, ...] = ()
    """Tools the agent may not use at all (a profile's `disallowed_tools`)."""
    permission_mode: str | None = None
    mcp_config: Path | None = None
    """An MCP config file (as `claude --mcp-config` takes) giving the agent its MCP servers."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Extra environment for the agent process (the loopback model's URL, a temp config dir...)."""
    betas: tuple[str, ...] = ()
    private_home: Path | None = None
    """When mala-tui provides the model: CLAUDE_CONFIG_DIR and TMPDIR live under here."""
    own_compaction: bool = False
    """Leave the agent's own compaction on (management mode `off`: mala-tui only watches)."""
    cli_retries: int | None = None
    """How many times the CLI retries a failed API call itself (CLAUDE_CODE_MAX_RETRIES),
    fitted to the bound on a failing endpoint; None: the CLI's own default."""
    fork_of: str | None = None
    """The agent session this one forks: resumed by that id, the agent copies it into a new
    session of its own (the SDK's `fork_session`) instead of going on in it."""
    subagent_limits: SubagentLimits | None = None
    """Where the session's subagents are wound down and their results withheld (None: not
    at all, mala-tui only watches them)."""


@dataclass(frozen=True)
class ModelItem:
    """The model an API answer names (its message_start), when it is a new one."""

    model: str


@dataclass(frozen=True)
class ProblemItem:
    """Something in the stream that could not be used (a malformed usage field, say)."""

    where: ev.Where
    message: str


@dataclass(frozen=True)
class ActivityItem:
    """A sign of life from the agent's background work (a subagent's message, a task's
    progress): not the main window's, but the agent is at work, not hung."""

    what: str


@dataclass(frozen=True)
class RecordItem:
    """An event the backend read beside the stream (a subagent's call from its transcript):
    journaled as it is, for the person watching; the manager does not decide on it."""

    event: ev.Event


AgentObservation = (
    UsageObserved
    | MessageObserved
    | SessionIdentified
    | CompactionObserved
    | TurnEnded
    | ApiRetrying
    | BackgroundChanged
)
"""What an agent's stream tells its session's manager: the core's own observations, each
timed by the clock the client was made with (`Backend.create`)."""

StreamItem = AgentObservation | ModelItem | ProblemItem | ActivityItem | RecordItem
"""An item of an agent's stream: an observation, or what the runtime keeps to itself (the
model an answer names, which is journaled; a part of the stream that could not be used)."""


def carries_tool_result(item: StreamItem | None) -> bool:
    """A message holding a tool's result: the end of a step, where a turn can stop cleanly."""
    return isinstance(item, MessageObserved) and any(
        isinstance(block, ToolResult) for block in item.message.blocks
    )


ToolGate = Callable[[str, str, int], bool]
"""Asked after each main-thread tool call, before the model request its result would go
into: (tool_use_id, tool name, characters of the result). True ends the turn there."""


@dataclass(frozen=True)
class PermissionAsk:
    """A tool use the agent asks permission for: one outside its allowed tools."""

    tool_use_id: str
    tool: str
    tool_input: Mapping[str, Any]


@dataclass(frozen=True)
class PermissionVerdict:
    allow: bool
    message: str = ""
    """For a deny: what the agent reads as the tool's result."""


PermissionGate = Callable[[PermissionAsk], Awaitable[PermissionVerdict]]
"""Asked when the agent wants a tool outside its allowed tools; the tool waits for the answer.
Cancelled when the agent gives up asking (its process ends, its turn is interrupted)."""


@runtime_checkable
class KeepsRecords(Protocol):
    """A client with records beside its stream (subagents' transcripts) still to be read
    after its process has closed."""

    def last_records(self) -> list[ev.Event]: ...


class AgentClient(Protocol):
    """One agent process."""

    @property
    def pid(self) -> int | None:
        """The agent process's id once connected (None for in-process fakes)."""

    async def connect(self) -> None: ...

    async def query(self, prompt: str) -> None: ...

    def stream(self) -> AsyncIterator[StreamItem]:
        """Every item the agent sends, across turns, until it disconnects."""

    async def interrupt(self) -> None: ...

    def stop_after_tools(self) -> bool:
        """End the turn once the running tool calls have their results, before the next
        model request. Returns False when this client cannot; the runner then interrupts,
        which throws away the model request in flight."""

    def set_tool_gate(self, gate: ToolGate | None) -> None:
        """Ask `gate` at each main-thread tool result from now on (None: ask nothing).

        When it answers True the turn ends there, as after `stop_after_tools()`. A gate
        that raises counts as False: the agent's hook must not break.
        """

    def set_permission_gate(self, gate: PermissionGate | None) -> None:
        """Ask `gate` before a tool use outside the allowed tools (None: the agent's own
        rule applies, which refuses them). Given before `connect()`."""

    async def disconnect(self) -> None: ...


class Backend(Protocol):
    """Makes clients, finds and rewrites a stored session for masking."""

    def create(
        self, spec: SessionSpec, *, resume: str | None, clock: Callable[[], float]
    ) -> AgentClient:
        """A client for the session (resuming the agent session `resume`), whose stream's
        observations are timed by `clock` (the runner's: the manager's notion of now)."""

    def transcript_path(self, spec: SessionSpec, session_id: str) -> Path | None:
        """Where the agent keeps its own transcript of this session; None if it keeps none
        or it cannot be found."""

    async def mask_transcript(
        self, spec: SessionSpec, session_id: str, placeholders: Mapping[str, str]
    ) -> int:
        """Replace these tool results in the stored session; returns how many were replaced.

        Raises:
            MaskError: the session's transcript could not be found or rewritten.
        """

    async def fold_transcript(
        self, spec: SessionSpec, session_id: str, notes: Sequence[str]
    ) -> FoldReport | None:
        """Fold the stored session's masked steps into its digest (core.fold), after a mask;
        `notes` are the resume notes sent after earlier masks. None when nothing folded
        (or the agent keeps no transcript to fold).

        Raises:
            MaskError: the session's transcript could not be found or rewritten.
        """

    async def keep_breakpoint(self, spec: SessionSpec, session_id: str) -> str | None:
        """After a mask, mark the stored session's result before its newest for the prompt
        cache (runtime/backends/claude_markers.py); the marked result's id, None when
        nothing was marked (or the agent keeps no transcript).

        Raises:
            MaskError: the session's transcript could not be found or rewritten.
        """


class MaskError(Exception):
    """Masking the stored transcript failed; the message says where and why."""
