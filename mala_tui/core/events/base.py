"""What every event has: a wall-clock time, the session it belongs to, its place in
the run."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class EventBase(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    at: float
    """Wall-clock time, seconds since the epoch."""
    session: str = ""
    """The session's name; empty for run-level events."""
    seq: int = 0
    """The event's place in its run, from 1, given when it is recorded (runtime.run.recorder):
    what a console resumes its stream from. 0 before that, and in journals written
    before events were numbered."""
