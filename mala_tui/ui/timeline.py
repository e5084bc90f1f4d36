"""Where a session's clock starts, so every screen shows times as offsets from the same instant."""

from __future__ import annotations

from mala_tui.core.view import SessionState


def session_start(state: SessionState) -> float:
    """When the session began: its first event still held, or its first usage if earlier.

    The in-memory log keeps the newest lines only, so its first line is the
    SessionStarted event only until a long session overflows it; the usage,
    mask and restart histories are kept whole.
    """
    candidates = [
        *(event.at for event in list(state.log)[:1]),
        *(point.at for point in state.usage[:1]),
        *(mask.at for mask in state.masks[:1]),
        *(restart.at for restart in state.restarts[:1]),
        *(checkpoint.at for checkpoint in state.checkpoints[:1]),
    ]
    return min(candidates, default=state.updated_at)
