"""What every event has: a wall-clock time and the session it belongs to (core.events)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class EventBase(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    at: float
    """Wall-clock time, seconds since the epoch."""
    session: str = ""
    """The session's name; empty for run-level events."""
