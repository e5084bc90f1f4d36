"""A run's life: what started it, its end, its resumes, and the sessions added to it
while it runs."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from mala_tui.core.events.base import EventBase


class RunMode(StrEnum):
    """What started a run (`run_started`'s `mode`)."""

    RUN = "run"
    """`mala-tui run` (and its resumes)."""
    DEMO = "demo"
    """`mala-tui demo`: the loopback's scripted agents; it cannot be resumed."""
    FAULTS = "faults"
    """The fault bench (`python -m mala_tui.bench faults`)."""
    BENCH = "bench"
    """The other benchmarks."""
    SAMPLE = "sample"
    """The UI's sample run (mala_tui.dev), for screenshots and the UI's tests."""


class RunStarted(EventBase):
    type: Literal["run_started"] = "run_started"
    run_id: str
    sessions: tuple[str, ...]
    mode: RunMode


class RunEnded(EventBase):
    type: Literal["run_ended"] = "run_ended"
    run_id: str
    ok: bool
    reason: str = ""


class RunResumed(EventBase):
    """`mala-tui resume` picked the run up again, in the same journal."""

    type: Literal["run_resumed"] = "run_resumed"
    run_id: str
    gap_seconds: float
    """From the journal's last event before the resume to the resume."""
    resumed: dict[str, str]
    """Each session that continues, and how: session_id, checkpoint or task."""
    pid: int | None = None
    """The mala-tui process that writes the journal from here on."""


class SessionAdded(EventBase):
    """A session added to a run while it runs (its task, as the operator gave it)."""

    type: Literal["session_added"] = "session_added"
    task: str
    cwd: str
    profile: str = ""
    """The run's named profile it runs with ("" for the run's own settings)."""
    forked_from: str = ""
    """The session whose conversation it was forked from ("" for a new task)."""
    fork_of: str = ""
    """The agent session it forked (that session's id then, not this one's)."""
