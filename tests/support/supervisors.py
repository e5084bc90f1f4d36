"""The one way every tier builds a Supervisor for a test.

Sessions are given by name (a task "task NAME" in `cwd`) or as whole specs. A journal is
made in the folder `journal` names (run `run_id`, "run-1" unless given), or none with `journal=None`; each one
made here is closed after the test (the autouse fixture in tests/conftest.py), whatever
the test left open.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

from mala_tui.config import Settings
from mala_tui.core import events as ev
from mala_tui.prompt_files import load_prompts
from mala_tui.runtime.backends.base import Backend, SessionSpec
from mala_tui.runtime.journal.writer import RunJournal, read_events
from mala_tui.runtime.run.supervisor import Supervisor

_OPEN: list[RunJournal] = []
E = TypeVar("E", bound=ev.EventBase)


def build_supervisor(
    backend: Backend,
    sessions: Iterable[str | SessionSpec] = (),
    *,
    cwd: Path = Path("/ws"),
    settings: Settings | None = None,
    journal: Path | RunJournal | None = None,
    run_id: str = "run-1",
    **options: Any,
) -> Supervisor:
    """A supervisor over `backend` with these sessions; `options` go to Supervisor as they
    are (approval_mode, clock, mode, engine...)."""
    if isinstance(journal, Path):
        journal = RunJournal.create(journal, run_id, {"mode": "test"})
        _OPEN.append(journal)
    supervisor = Supervisor(
        settings=settings if settings is not None else Settings(),
        backend=backend,
        prompts=load_prompts(),
        journal=journal,
        **options,
    )
    for session in sessions:
        spec = (
            session
            if isinstance(session, SessionSpec)
            else SessionSpec(name=session, task=f"task {session}", cwd=cwd)
        )
        supervisor.add_session(spec)
    return supervisor


def close_journals() -> None:
    """Close every journal `build_supervisor` made."""
    while _OPEN:
        _OPEN.pop().close()


def journal_events(supervisor: Supervisor) -> list[ev.Event]:
    """Every event the supervisor's journal holds, read back from its file."""
    assert supervisor.journal is not None
    return read_events(supervisor.journal.events_path).events


def journaled(supervisor: Supervisor, kind: type[E]) -> list[E]:
    """The events of this kind the supervisor's journal holds."""
    return [event for event in journal_events(supervisor) if isinstance(event, kind)]
