"""A session's subagents: each a context window of its own, read from its transcript.

Claude Code's subagents (the `Agent` tool) write their conversations beside the
session's (`<session>/subagents/agent-<id>.jsonl`, with a `.meta.json`): every API
call's final usage, their compactions, and, for subagents nested in others, the only
record there is (their messages never reach the stream). These events are what
mala-tui read there, and how each subagent ended, as the CLI reported it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from mala_tui.core.events.base import EventBase
from mala_tui.core.usage import CallUsage


class SubagentEnd(StrEnum):
    """How a subagent ended."""

    COMPLETED = "completed"
    FAILED = "failed"
    KILLED = "killed"
    """Ended with its session's agent process (a stop, a restart, a hang)."""


class SubagentStarted(EventBase):
    type: Literal["subagent_started"] = "subagent_started"
    agent_id: str
    agent_type: str = ""
    """What kind of subagent (`general-purpose`, `Explore`, ...)."""
    description: str = ""
    depth: int = 1
    """1 for one the main thread started; 2 and more for subagents of subagents."""
    parent: str = ""
    """The agent id of the subagent that started it ("" for the main thread)."""
    background: bool = True
    model: str | None = None
    nested: bool = False
    """Known from its transcript only: nested subagents never reach the stream."""


class SubagentCall(EventBase):
    """One API call of a subagent's, with its final usage: that call's window."""

    type: Literal["subagent_call"] = "subagent_call"
    agent_id: str
    input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    output_tokens: int = 0
    model: str | None = None
    tool_uses: int = 0
    """Tool calls the answer made."""

    @property
    def call(self) -> CallUsage:
        return CallUsage(
            input_tokens=self.input_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens,
            output_tokens=self.output_tokens,
        )


class SubagentCompacted(EventBase):
    """The CLI compacted a subagent's window (its own protection, kept for subagents)."""

    type: Literal["subagent_compacted"] = "subagent_compacted"
    agent_id: str
    pre_tokens: int | None = None
    post_tokens: int | None = None


class SubagentEnded(EventBase):
    type: Literal["subagent_ended"] = "subagent_ended"
    agent_id: str
    how: SubagentEnd
    reason: str = ""


class SubagentWoundDown(EventBase):
    """mala-tui told a subagent near its window's soft threshold to return its findings
    now (with one of its tool results, through the hook that fires inside it)."""

    type: Literal["subagent_wound_down"] = "subagent_wound_down"
    agent_id: str
    tool: str = ""
    tokens: int = 0
    """Its window before the result (its latest call's prompt, exact; 0: not known)."""
    estimate: int = 0
    """Its window with the result, estimated (the result at chars/4)."""
    window: int = 0


class SubagentResultWithheld(EventBase):
    """A tool result that would have taken a subagent past its window's hard threshold,
    replaced before its model read it (it was told to return its findings instead)."""

    type: Literal["subagent_result_withheld"] = "subagent_result_withheld"
    agent_id: str
    tool: str = ""
    tokens: int = 0
    result_tokens: int = 0
    """The result withheld, estimated (chars/4)."""
    window: int = 0
