"""Reading the SDK's messages into the core's observations (the backend's stream items).

What is kept, and why: the raw `message_start` stream event carries each API
call's input and cache fields and `message_delta` its final output count (the
per-call figure is the context); messages with a `parent_tool_use_id` belong to
subagents, signs of life but not the main window's; the background work the CLI
lists is kept (claude_background), since a turn's end is not the task's while it
runs; a refused call's zero usage says nothing about the window. No CLI is started
here: `ClaudeClient` feeds it what its process sends.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping
from typing import Any, TypedDict

from claude_agent_sdk import (
    AssistantMessage,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    UserMessage,
)
from claude_agent_sdk import TextBlock as SdkTextBlock
from claude_agent_sdk import ToolResultBlock as SdkToolResultBlock
from claude_agent_sdk import ToolUseBlock as SdkToolUseBlock

from mala_tui.core import events as ev
from mala_tui.core.observations import (
    ApiRetrying,
    BackgroundChanged,
    CompactionObserved,
    MessageObserved,
    SessionIdentified,
    TurnEnded,
    UsageObserved,
)
from mala_tui.core.transcript import Block, Message, Role, TextBlock, ToolCall, ToolResult
from mala_tui.core.usage import CallUsage, UsageFieldError
from mala_tui.runtime.backends.base import ActivityItem, ModelItem, ProblemItem, StreamItem
from mala_tui.runtime.backends.claude_background import BackgroundReader
from mala_tui.runtime.backends.claude_history import flatten_content


class StreamConverter:
    """One agent process's messages in, stream items out; remembers each call's usage.
    Each observation is timed by `clock` when its message is read."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._usage: dict[str, CallUsage] = {}
        self._last_message_id: str | None = None
        self._model: str | None = None
        """The model this process's answers named last."""
        self._error_kind: str | None = None
        """The kind of error of the message Claude Code wrote in the agent's place this turn."""
        self._background = BackgroundReader()

    def convert(self, message: object) -> list[StreamItem]:
        """The stream items one SDK message stands for (none for what is not used)."""
        match message:
            case StreamEvent() | AssistantMessage() | UserMessage() if message.parent_tool_use_id:
                return [ActivityItem("subagent")]  # a subagent's: not the main window
            case StreamEvent():
                return self._from_stream_event(message.event)
            case AssistantMessage():
                return self._from_assistant(message)
            case UserMessage():
                return self._from_user(message)
            case SystemMessage():
                return self._from_system(message)
            case ResultMessage():
                self._background.turn_ends()
                return [self._from_result(message)]
        return []

    def _background_now(self) -> BackgroundChanged:
        return BackgroundChanged(self._clock(), self._background.tasks, self._background.reports)

    def _from_stream_event(self, event: Mapping[str, Any]) -> list[StreamItem]:
        kind = event.get("type")
        if kind == "message_start":
            body = event.get("message") or {}
            message_id = str(body.get("id") or "")
            try:
                call, notes = CallUsage.parse(body.get("usage"))
            except UsageFieldError as exc:
                return [ProblemItem(ev.Where.USAGE, str(exc))]
            call = call.with_output(0)  # message_start's output count is a placeholder
            self._usage[message_id] = call
            self._last_message_id = message_id
            # Said before the call's usage, so that the call is priced as its model.
            return [
                *self._model_named(body.get("model")),
                UsageObserved(self._clock(), call, notes, starts_call=True),
            ]
        if kind == "message_delta" and self._last_message_id is not None:
            start = self._usage.get(self._last_message_id)
            usage = event.get("usage") or {}
            try:
                delta, notes = CallUsage.parse({"output_tokens": usage.get("output_tokens")})
            except UsageFieldError as exc:
                return [ProblemItem(ev.Where.USAGE, str(exc))]
            if start is None:
                return []
            return [UsageObserved(self._clock(), start.with_output(delta.output_tokens), notes)]
        return []

    def _from_assistant(self, message: AssistantMessage) -> list[StreamItem]:
        items: list[StreamItem] = []
        message_id = message.message_id or ""
        # A refused call (prompt too long, say) comes back as an error message with zero
        # usage: it says nothing about the window, and must not read as an empty one.
        if (
            message_id
            and message_id not in self._usage
            and message.usage is not None
            and message.error is None
        ):
            # No stream event for this call (partial messages unavailable): its usage
            # is right but for a stale output count, and shared by every block: take it once.
            try:
                call, notes = CallUsage.parse(message.usage)
                self._usage[message_id] = call
                items += self._model_named(message.model)
                items.append(UsageObserved(self._clock(), call, notes, starts_call=True))
            except UsageFieldError as exc:
                items.append(ProblemItem(ev.Where.USAGE, str(exc)))
        blocks: list[Block] = []
        for block in message.content:
            if isinstance(block, SdkTextBlock):
                blocks.append(TextBlock(block.text))
            elif isinstance(block, SdkToolUseBlock):
                blocks.append(ToolCall(block.id, block.name, dict(block.input)))
        if blocks:
            # An error (prompt too long, say) comes as a message the CLI wrote in the
            # agent's place: shown in the log, but not the agent's work to carry over.
            not_the_agents = message.error is not None
            if message.error is not None:
                self._error_kind = str(message.error)
            message_seen = Message(Role.ASSISTANT, tuple(blocks), not_the_agents)
            items.append(MessageObserved(self._clock(), message_seen))
        return items

    def _model_named(self, model: object) -> list[StreamItem]:
        """A ModelItem for the model an answer names, when it is not the one named last.
        Claude Code's own messages (an error in the agent's place) name `<synthetic>`."""
        if not isinstance(model, str) or not model.strip() or model.startswith("<"):
            return []
        if model == self._model:
            return []
        self._model = model
        return [ModelItem(model)]

    def _from_user(self, message: UserMessage) -> list[StreamItem]:
        if isinstance(message.content, str):
            return [MessageObserved(self._clock(), Message.user_text(message.content))]
        blocks: list[Block] = []
        for block in message.content:
            if isinstance(block, SdkToolResultBlock):
                blocks.append(
                    ToolResult(
                        block.tool_use_id, flatten_content(block.content), bool(block.is_error)
                    )
                )
            elif isinstance(block, SdkTextBlock):
                blocks.append(TextBlock(block.text))
        if not blocks:
            return []
        return [MessageObserved(self._clock(), Message(Role.USER, tuple(blocks)))]

    def _from_system(self, message: SystemMessage) -> list[StreamItem]:
        data = message.data or {}
        if message.subtype == "init":
            # Every main turn begins so, the CLI's own turns (a report handed in) too.
            items: list[StreamItem] = []
            if self._background.turn_begins():
                items.append(self._background_now())
            if data.get("session_id"):
                items.append(SessionIdentified(self._clock(), str(data["session_id"])))
            return items
        if message.subtype == "background_tasks_changed":
            changed = self._background.tasks_listed(data.get("tasks"))
            return [self._background_now()] if changed else [ActivityItem("background")]
        if message.subtype == "task_notification":
            changed = self._background.task_ended(data)
            return [self._background_now()] if changed else [ActivityItem("background")]
        if message.subtype in ("task_started", "task_progress", "task_updated"):
            return [ActivityItem("background")]
        if message.subtype == "api_retry":
            # The CLI is retrying a failed API call (529, 500, a dropped connection, a 401)
            # after a backoff: the agent is alive, but its endpoint may be gone for good.
            error = data.get("error")
            return [
                ApiRetrying(
                    self._clock(),
                    status=_int_or_none(data.get("error_status")),
                    error=error if isinstance(error, str) else "",
                    attempt=_int_or_none(data.get("attempt")),
                    of=_int_or_none(data.get("max_retries")),
                )
            ]
        if message.subtype == "compact_boundary":
            meta = data.get("compact_metadata") or {}
            return [
                CompactionObserved(
                    self._clock(),
                    trigger=str(meta.get("trigger", "auto")),
                    blocked=False,
                    pre_tokens=_int_or_none(meta.get("pre_tokens")),
                    post_tokens=_int_or_none(meta.get("post_tokens")),
                )
            ]
        return []

    def _from_result(self, message: ResultMessage) -> TurnEnded:
        summed: CallUsage | None = None
        if message.usage is not None:
            with contextlib.suppress(UsageFieldError):
                summed, _ = CallUsage.parse(message.usage)
        window = None
        for model_usage in (message.model_usage or {}).values():
            value = _int_or_none(model_usage.get("contextWindow"))
            if value:
                window = max(window or 0, value)
        kind, self._error_kind = self._error_kind, None  # the next turn starts clean
        return TurnEnded(
            self._clock(),
            subtype=message.subtype,
            is_error=message.is_error,
            terminal_reason=message.terminal_reason,
            result_text=message.result or "",
            summed_usage=summed,
            context_window=window,
            session_id=message.session_id,
            api_error_status=message.api_error_status,
            api_error_kind=kind,
            api_calls=message.num_turns if isinstance(message.num_turns, int) else None,
        )


MODEL_USAGE_KINDS = {
    "input_tokens": "inputTokens",
    "cache_creation_input_tokens": "cacheCreationInputTokens",
    "cache_read_input_tokens": "cacheReadInputTokens",
    "output_tokens": "outputTokens",
}
"""The result's `modelUsage` counts (per model, cumulative over the agent session), by the
names mala-tui's usage has."""


class UsageTotals(TypedDict, total=False):
    """A result's `modelUsage` summed: the four counts, or none of them. Typed so that
    passing it to `CliCostReported(**totals)` is checked against the event's fields."""

    input_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    output_tokens: int


def model_usage_totals(model_usage: object) -> UsageTotals:
    """A result's `modelUsage` summed over its models, by kind; {} when any count is
    missing or malformed (then nothing is said rather than a wrong sum)."""
    if not isinstance(model_usage, Mapping) or not model_usage:
        return {}
    totals = dict.fromkeys(MODEL_USAGE_KINDS, 0)
    for counts in model_usage.values():
        if not isinstance(counts, Mapping):
            return {}
        for ours, theirs in MODEL_USAGE_KINDS.items():
            value = _int_or_none(counts.get(theirs))
            if value is None or value < 0:
                return {}
            totals[ours] += value
    return UsageTotals(
        input_tokens=totals["input_tokens"],
        cache_creation_input_tokens=totals["cache_creation_input_tokens"],
        cache_read_input_tokens=totals["cache_read_input_tokens"],
        output_tokens=totals["output_tokens"],
    )


def result_size(response: object) -> int:
    """Characters of a tool's response as the hook got it, serialised as JSON.

    An upper bound on what the model will read (the CLI may trim it); anything that
    does not serialise is counted by its str().
    """
    try:
        return len(json.dumps(response, default=str, ensure_ascii=False))
    except (TypeError, ValueError, RecursionError):
        return len(str(response))


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
