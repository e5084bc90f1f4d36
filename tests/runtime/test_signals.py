"""SIGTERM and SIGHUP stop a run the way Ctrl-C does, then give the conventional status."""

from __future__ import annotations

import asyncio
import io
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from mala_tui.commands.run_cmd import _finish, _supervise
from mala_tui.config import IdleSettings, Settings
from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.prompt_files import load_prompts
from mala_tui.runtime.backends.base import SessionIdItem, SessionSpec
from mala_tui.runtime.backends.scripted import HANG, ScriptedBackend, ScriptedClient
from mala_tui.runtime.journal import RunJournal, read_events
from mala_tui.runtime.signals import Shutdown
from mala_tui.runtime.supervisor import Supervisor


class PerName:
    def __init__(self) -> None:
        self.clients: dict[str, ScriptedClient] = {}

    def create(self, spec: SessionSpec, *, resume: str | None) -> ScriptedClient:
        client = ScriptedClient([[SessionIdItem(spec.name), HANG]])
        self.clients[spec.name] = client
        return ScriptedBackend([client]).create(spec, resume=resume)

    async def mask_transcript(
        self, spec: SessionSpec, session_id: str, placeholders: object
    ) -> int:
        return 0


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[RunJournal]:
    with RunJournal.create(tmp_path, "run-1", {"mode": "test"}) as opened:
        yield opened


@pytest.mark.parametrize(("number", "status"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
async def test_a_signal_stops_every_session_ends_the_journal_and_gives_its_status(
    number: signal.Signals, status: int, journal: RunJournal, tmp_path: Path
) -> None:
    backend = PerName()
    sup = Supervisor(
        settings=Settings(idle=IdleSettings(idle_timeout_seconds=30)),
        backend=backend,  # type: ignore[arg-type]
        prompts=load_prompts(),
        journal=journal,
    )
    for name in ("a", "b"):
        sup.add_session(SessionSpec(name=name, task=f"task {name}", cwd=tmp_path))
    running = asyncio.Event()
    sup.listeners.events.append(
        lambda e: running.set() if isinstance(e, ev.SessionStarted) and e.session == "b" else None
    )
    out = io.StringIO()

    async def send_when_running() -> None:
        await running.wait()
        os.kill(os.getpid(), number)

    sender = asyncio.create_task(send_when_running())
    outcome = await asyncio.wait_for(_supervise(sup, True, out), 30)
    await sender
    assert isinstance(outcome, Shutdown) and outcome.signal is number
    assert sup.result().statuses == {"a": EndStatus.STOPPED, "b": EndStatus.STOPPED}
    assert all(client.disconnected for client in backend.clients.values())
    events = read_events(journal.events_path).events
    assert isinstance(events[-1], ev.RunEnded)
    assert events[-1].reason == f"stopped by {number.name}"
    ended = [e for e in events if isinstance(e, ev.SessionEnded)]
    assert {e.session for e in ended} == {"a", "b"}
    # Each session's own ending says why, not "stopped by the operator".
    assert {e.reason for e in ended} == {f"stopped by {number.name}"}
    # The default handlers are back once the run is over.
    assert signal.getsignal(number) is signal.SIG_DFL
    printed = io.StringIO()
    assert _finish(outcome, sup, printed) == status
    assert printed.getvalue() == f"stopped by {number.name}: every session was stopped\n"
