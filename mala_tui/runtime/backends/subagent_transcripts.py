"""A session's subagents, read from the transcripts Claude Code writes for them.

Each subagent writes `<session>/subagents/agent-<id>.jsonl` beside the session's own
transcript, and `agent-<id>.meta.json` (its type, description, depth, whether it runs
in the background, its model). Observed with the bundled CLI 2.1.330:
- an `assistant` entry carries its API call's final usage (the stream's own copy of a
  subagent's usage has a placeholder output count), one entry a content block, all of
  one call sharing `message.id`;
- a compaction is a `system` entry of subtype `compact_boundary`;
- subagents nested in subagents write here too, and nowhere else: their messages never
  reach the stream.
The files are read as they grow, each line once; a line still being written waits for
the next read. What cannot be read is passed over: a subagent's record is a help to
the person watching, never a reason to stop the session.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mala_tui.core import events as ev
from mala_tui.core.events.subagents import SubagentEnd

_ENDS = {
    "completed": SubagentEnd.COMPLETED,
    "failed": SubagentEnd.FAILED,
    "killed": SubagentEnd.KILLED,
    "stopped": SubagentEnd.KILLED,
}


@dataclass
class _Call:
    """One API call of a subagent's, gathered over its content blocks' entries."""

    message_id: str
    usage: Mapping[str, Any]
    model: str | None
    tool_uses: int = 0


@dataclass
class _Agent:
    agent_id: str
    offset: int = 0
    started: bool = False
    ended: bool = False
    nested: bool = False
    pending: _Call | None = None
    seen: set[str] = field(default_factory=set)


class SubagentTranscripts:
    """Reads one session's subagent transcripts; each `read` gives the events since the
    last one, timed by `clock`."""

    def __init__(self, session: str, clock: Callable[[], float]) -> None:
        self._session = session
        self._clock = clock
        self._folder: Path | None = None
        self._agents: dict[str, _Agent] = {}
        self._in_stream: set[str] = set()
        """Agent ids the stream named (task ids of the main thread's subagents)."""
        self._ends: dict[str, tuple[SubagentEnd, str]] = {}
        """Ends the CLI reported before the subagent's transcript was read."""

    def follow(self, folder: Path) -> None:
        """The session's subagents folder (`<session>/subagents`), once it is known."""
        self._folder = folder

    def in_stream(self, agent_id: str) -> None:
        """The stream named this subagent (its task started): it is not a nested one."""
        self._in_stream.add(agent_id)

    def ended(self, agent_id: str, status: str, summary: str = "") -> list[ev.Event]:
        """The CLI reported a task's end (`task_notification`): a subagent's, if known."""
        how = _ENDS.get(status, SubagentEnd.FAILED if status else SubagentEnd.COMPLETED)
        reason = "" if how is SubagentEnd.COMPLETED else summary[:300]
        self._ends[agent_id] = (how, reason)
        events = self.read()
        agent = self._agents.get(agent_id)
        if agent is not None and agent.started and not agent.ended:
            events += self._end(agent, how, reason)
        return events

    def read(self) -> list[ev.Event]:
        """What the transcripts added since the last read."""
        folder = self._folder
        if folder is None:
            return []
        try:
            files = sorted(folder.glob("agent-*.jsonl"))
        except OSError:
            return []
        events: list[ev.Event] = []
        for path in files:
            agent_id = path.stem.removeprefix("agent-")
            agent = self._agents.setdefault(agent_id, _Agent(agent_id))
            events += self._read_agent(agent, path)
        return events

    def final(self) -> list[ev.Event]:
        """The last read, once the agent process has closed: every line is whole now, and
        each subagent's last call with it."""
        events = self.read()
        for agent in self._agents.values():
            events += self._flush(agent)
        return events

    def _read_agent(self, agent: _Agent, path: Path) -> list[ev.Event]:
        events: list[ev.Event] = []
        meta = _json_file(path.with_name(f"agent-{agent.agent_id}.meta.json"))
        if not agent.started:
            agent.started = True
            agent.nested = agent.agent_id not in self._in_stream and _depth(meta) > 1
            events.append(self._started(agent, meta))
        try:
            with path.open("rb") as stream:
                stream.seek(agent.offset)
                data = stream.read()
        except OSError:
            return events
        complete = data.rfind(b"\n") + 1  # a line still being written waits
        agent.offset += complete
        for raw in data[:complete].splitlines():
            with contextlib.suppress(ValueError):
                entry = json.loads(raw)
                if isinstance(entry, dict):
                    events += self._entry(agent, entry)
        if agent.ended:
            # Its last answer may be written after its end was reported: whole by now.
            return events + self._flush(agent)
        end = self._ends.get(agent.agent_id)
        if end is not None:
            events += self._end(agent, *end)
        elif agent.nested and meta.get("finished") is True:
            events += self._end(agent, SubagentEnd.COMPLETED, "")
        return events

    def _started(self, agent: _Agent, meta: Mapping[str, Any]) -> ev.SubagentStarted:
        parent = meta.get("parentAgentId") or meta.get("parentId") or ""
        model = meta.get("model")
        return ev.SubagentStarted(
            at=self._clock(),
            session=self._session,
            agent_id=agent.agent_id,
            agent_type=str(meta.get("agentType") or ""),
            description=str(meta.get("description") or "")[:300],
            depth=_depth(meta),
            parent=str(parent),
            background=meta.get("requestShape", "background") == "background",
            model=model if isinstance(model, str) else None,
            nested=agent.nested,
        )

    def _entry(self, agent: _Agent, entry: Mapping[str, Any]) -> list[ev.Event]:
        message = entry.get("message")
        if entry.get("type") == "assistant" and isinstance(message, Mapping):
            message_id = str(message.get("id") or "")
            usage = message.get("usage")
            if not message_id or not isinstance(usage, Mapping) or message_id in agent.seen:
                return []
            tool_uses = sum(
                1
                for block in message.get("content") or ()
                if isinstance(block, Mapping) and block.get("type") == "tool_use"
            )
            pending = agent.pending
            if pending is not None and pending.message_id == message_id:
                pending.usage, pending.tool_uses = usage, pending.tool_uses + tool_uses
                return []
            model = message.get("model")
            flushed = self._flush(agent)
            agent.pending = _Call(
                message_id, usage, model if isinstance(model, str) else None, tool_uses
            )
            return flushed
        events = self._flush(agent)
        if entry.get("type") == "system" and entry.get("subtype") == "compact_boundary":
            meta = entry.get("compactMetadata") or entry.get("compact_metadata") or {}
            events.append(
                ev.SubagentCompacted(
                    at=self._clock(),
                    session=self._session,
                    agent_id=agent.agent_id,
                    pre_tokens=_count(meta, "preTokens", "pre_tokens"),
                    post_tokens=_count(meta, "postTokens", "post_tokens"),
                )
            )
        return events

    def _flush(self, agent: _Agent) -> list[ev.Event]:
        """The call gathered so far is whole (an entry of another kind came after it)."""
        call, agent.pending = agent.pending, None
        if call is None:
            return []
        agent.seen.add(call.message_id)
        usage = call.usage
        return [
            ev.SubagentCall(
                at=self._clock(),
                session=self._session,
                agent_id=agent.agent_id,
                input_tokens=_count(usage, "input_tokens") or 0,
                cache_creation_input_tokens=_count(usage, "cache_creation_input_tokens") or 0,
                cache_read_input_tokens=_count(usage, "cache_read_input_tokens") or 0,
                output_tokens=_count(usage, "output_tokens") or 0,
                model=call.model,
                tool_uses=call.tool_uses,
            )
        ]

    def _end(self, agent: _Agent, how: SubagentEnd, reason: str) -> list[ev.Event]:
        agent.ended = True
        events = self._flush(agent)
        events.append(
            ev.SubagentEnded(
                at=self._clock(),
                session=self._session,
                agent_id=agent.agent_id,
                how=how,
                reason=reason,
            )
        )
        return events


def _json_file(path: Path) -> Mapping[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _depth(meta: Mapping[str, Any]) -> int:
    depth = meta.get("spawnDepth")
    return depth if isinstance(depth, int) and not isinstance(depth, bool) and depth > 0 else 1


def _count(data: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = data.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None
