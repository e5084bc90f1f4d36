"""Builders for the events the spend and cost views read: a session's start and its calls."""

from __future__ import annotations

from mala_tui.core import events as ev
from mala_tui.core.usage import CallUsage, UsageSource


def started(name: str, model: str | None, *, at: float = 0.0, cwd: str = "/") -> ev.SessionStarted:
    return ev.SessionStarted(
        at=at,
        session=name,
        task="t",
        cwd=cwd,
        model=model,
        window=200_000,
        soft_threshold=0.4,
        hard_threshold=0.8,
        max_restarts=1,
        require_approval=False,
    )


def usage(name: str, at: float, call: CallUsage) -> ev.UsageRecorded:
    return ev.UsageRecorded(
        at=at,
        session=name,
        tokens=call.context_tokens,
        window=200_000,
        source=UsageSource.PER_CALL,
        input_tokens=call.input_tokens,
        cache_creation_input_tokens=call.cache_creation_input_tokens,
        cache_read_input_tokens=call.cache_read_input_tokens,
        output_tokens=call.output_tokens,
    )


def reported_twice(name: str, at: float, call: CallUsage) -> list[ev.UsageRecorded]:
    """A call as the runtime reports it: at message_start (output 0), then with its output."""
    return [usage(name, at, call.with_output(0)), usage(name, at + 0.5, call)]
