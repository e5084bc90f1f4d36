"""The bounds a session's runner keeps: how long it waits for an agent, a turn, a session."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RunnerLimits:
    """The runner's bounds. The configurable ones have no defaults here: the settings
    give them (`runtime.run.session_limits.runner_limits_from`)."""

    idle_timeout: float
    disconnect_timeout: float
    session_timeout: float | None
    drain_timeout: float = 30.0
    """How long to wait for an interrupted turn to end before disconnecting it."""
    clean_point_timeout: float = 120.0
    """How long to wait for the running tool call to finish before interrupting anyway."""
