"""Reading a session's phase afresh after the calls that change it."""

from __future__ import annotations

from typing import Protocol

from mala_tui.core.phases import Phase


class HasPhase(Protocol):
    @property
    def phase(self) -> Phase: ...


def phase_now(holder: HasPhase) -> Phase:
    """The phase as it is now.

    mypy keeps ``x.phase`` narrowed by an earlier ``assert x.phase is ...`` across the
    calls that change it, and would call the next check of it unreachable; the result of
    a call is never narrowed.
    """
    return holder.phase
