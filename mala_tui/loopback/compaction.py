"""The API's server-side compaction (``compact_20260112``), simulated.

With the ``compact-2026-01-12`` beta and a ``compact_20260112`` edit, once a request's
input passes the trigger (150,000 tokens by default, 50,000 at the least) the API first
summarises the conversation, in a sampling step of its own, and answers on the summary:
the summary replaces every message before it. The client appends the answer, which opens
with the summary (a ``compaction`` block), and goes on sending its whole conversation; on
each later request the API drops everything before that block. A later request that
passes the trigger again is summarised again, the earlier summary with the rest.

The loopback cannot count on the client to send a ``compaction`` block back (Claude Code
does not know the block), so it keeps each conversation's summary itself, with what it
covered: the client's first ``covered`` messages, recognised by their content. A request
whose first messages are not those (another conversation, or history rewritten since) is
not edited.

Billing, as the documentation describes it: the summarising step reads the whole prompt
(at the cache state of the moment: the cached prefix as cache reads, the rest as input,
nothing written) and writes the summary (output); the answer is then billed on the
compacted prompt as any request is. The usage reported to the client is the answer's
alone, as the API's top-level usage leaves the compaction step out.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

EDIT_TYPE = "compact_20260112"
BETA = "compact-2026-01-12"
DEFAULT_TRIGGER_INPUT_TOKENS = 150_000
MIN_TRIGGER_INPUT_TOKENS = 50_000
#: How the summary opens in the prompt the model reads after a compaction.
SUMMARY_INTRO = "This conversation was compacted; the summary below replaces everything before it."


@dataclass(frozen=True)
class ServerCompaction:
    """One ``compact_20260112`` edit; the default trigger is the API's documented one."""

    trigger_input_tokens: int = DEFAULT_TRIGGER_INPUT_TOKENS

    def __post_init__(self) -> None:
        if self.trigger_input_tokens < MIN_TRIGGER_INPUT_TOKENS:
            raise ValueError(
                f"compact_20260112: the trigger must be at least {MIN_TRIGGER_INPUT_TOKENS:,} "
                f"input tokens, got {self.trigger_input_tokens:,}"
            )

    @classmethod
    def from_request(cls, body: Mapping[str, Any]) -> ServerCompaction | None:
        """The edit a request asks for in ``context_management.edits``, if any."""
        management = body.get("context_management")
        edits = management.get("edits") if isinstance(management, Mapping) else None
        for edit in edits if isinstance(edits, list) else []:
            if not isinstance(edit, Mapping) or edit.get("type") != EDIT_TYPE:
                continue
            trigger = edit.get("trigger")
            value = trigger.get("value") if isinstance(trigger, Mapping) else None
            if isinstance(value, int) and not isinstance(value, bool):
                return cls(trigger_input_tokens=value)
            return cls()
        return None


@dataclass(frozen=True)
class Compacted:
    """A conversation's latest summary and what of the client's conversation it replaces."""

    covered: int
    """The client's first messages the summary stands for."""
    digest: bytes
    summary: str


def messages_digest(messages: Sequence[Any]) -> bytes:
    """What identifies a run of messages: their content, cache markers left out (the
    client moves its cache_control markers from request to request)."""
    hasher = hashlib.sha256()
    for message in messages:
        hasher.update(json.dumps(_unmarked(message), sort_keys=True).encode())
        hasher.update(b"\0")
    return hasher.digest()


def _unmarked(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_unmarked(item) for item in value]
    return value


def compacted(body: Mapping[str, Any], summary: str) -> Compacted:
    """The state a compaction of this request leaves: its summary covers every message."""
    messages = list(body.get("messages") or [])
    return Compacted(len(messages), messages_digest(messages), summary)


def summary_message(summary: str) -> dict[str, Any]:
    """The summary as the model reads it, cached (the documentation suggests a breakpoint
    on the compaction block, so that later requests read it from the cache)."""
    return {
        "role": "user",
        "content": [
            {
                "type": "text",
                "text": f"{SUMMARY_INTRO}\n\n{summary}",
                "cache_control": {"type": "ephemeral"},
            }
        ],
    }


def apply_compaction(body: Mapping[str, Any], state: Compacted) -> Mapping[str, Any] | None:
    """The request as the model reads it: the summary in place of what it covered. None
    when the request does not continue that conversation."""
    messages = body.get("messages")
    if not isinstance(messages, list) or len(messages) < state.covered:
        return None
    if messages_digest(messages[: state.covered]) != state.digest:
        return None
    return {**body, "messages": [summary_message(state.summary), *messages[state.covered :]]}


def summarised_body(body: Mapping[str, Any], summary: str) -> Mapping[str, Any]:
    """The prompt the answer of a compacting request is made on: the summary alone."""
    return {**body, "messages": [summary_message(summary)]}
