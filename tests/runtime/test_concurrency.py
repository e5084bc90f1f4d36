"""agent.max_concurrent: at most that many sessions at once, the rest queued in order."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from mala_tui.config import AgentSettings, IdleSettings, Settings, max_concurrent_for
from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.observations import Command, SessionIdentified
from mala_tui.core.operator_actions import SessionCommand
from mala_tui.runtime.backends.scripted import HANG, ScriptedClient, finished
from mala_tui.runtime.run.supervisor import Supervisor
from mala_tui.ui.format import state_label
from tests.support.backends import PerSession
from tests.support.supervisors import build_supervisor, journal_events


def agents(hang: bool) -> PerSession:
    """One scripted client per session name; records which sessions were ever started."""
    return PerSession(
        lambda name: ScriptedClient(
            [[SessionIdentified(0, name), HANG if hang else finished("done", name)]]
        )
    )


def supervisor(tmp_path: Path, backend: PerSession, sessions: int, limit: int) -> Supervisor:
    settings = Settings(
        agent=AgentSettings(max_concurrent=limit), idle=IdleSettings(idle_timeout_seconds=30)
    )
    names = [f"s{index}" for index in range(sessions)]
    return build_supervisor(backend, names, cwd=tmp_path, journal=tmp_path, settings=settings)


def sessions_started(sup: Supervisor, count: int) -> asyncio.Event:
    """Set once `count` sessions have started."""
    reached = asyncio.Event()
    seen: list[str] = []

    def listen(event: ev.Event) -> None:
        if isinstance(event, ev.SessionStarted):
            seen.append(event.session)
            if len(seen) >= count:
                reached.set()

    sup.listeners.events.append(listen)
    return reached


def most_at_once(events: list[ev.Event]) -> int:
    running: set[str] = set()
    most = 0
    for event in events:
        if isinstance(event, ev.SessionStarted):
            running.add(event.session)
            most = max(most, len(running))
        elif isinstance(event, ev.SessionEnded):
            running.discard(event.session)
    return most


def test_the_default_is_twice_the_cores_and_at_most_eight() -> None:
    assert [max_concurrent_for(cores) for cores in (1, 2, 3, 4, 64)] == [2, 4, 6, 8, 8]
    assert Settings().agent.max_concurrent >= 2


async def test_sessions_past_the_limit_wait_queued_and_start_in_order(tmp_path: Path) -> None:
    backend = agents(hang=False)
    sup = supervisor(tmp_path, backend, sessions=5, limit=2)
    result = await asyncio.wait_for(sup.run(), 30)
    assert result.ok
    events = journal_events(sup)
    assert most_at_once(events) == 2
    assert backend.created == ["s0", "s1", "s2", "s3", "s4"]
    queued = [e for e in events if isinstance(e, ev.WarningRecorded) and e.where is ev.Where.QUEUE]
    assert [e.session for e in queued] == ["s2", "s3", "s4"]
    assert queued[0].message == (
        "queued (1 of 3): at most 2 sessions at a time (agent.max_concurrent)"
    )
    # Every queued session waited for one that came before it to end.
    order = [
        (type(e).__name__, e.session)
        for e in events
        if isinstance(e, ev.SessionStarted | ev.SessionEnded)
    ]
    assert order.index(("SessionStarted", "s2")) > order.index(("SessionEnded", "s0"))


async def test_queued_sessions_show_as_queued_until_a_slot_frees(tmp_path: Path) -> None:
    sup = supervisor(tmp_path, agents(hang=True), sessions=3, limit=1)
    started = sessions_started(sup, 1)
    run = asyncio.create_task(sup.run())
    await started.wait()
    labels = {name: state_label(snap) for name, snap in sup.snapshots().items()}
    assert labels == {"s0": "running", "s1": "queued", "s2": "queued"}
    assert sup.queued == ["s1", "s2"]
    second = sessions_started(sup, 1)
    sup.act(SessionCommand(session="s0", command=Command.STOP))
    await second.wait()
    assert state_label(sup.snapshots()["s1"]) == "running"
    assert sup.queued == ["s2"]
    sup.stop_all()
    await asyncio.wait_for(run, 30)
    queued = [
        e
        for e in journal_events(sup)
        if isinstance(e, ev.WarningRecorded) and e.where is ev.Where.QUEUE
    ]
    assert queued[0].message == (
        "queued (1 of 2): at most 1 session at a time (agent.max_concurrent)"
    )


async def test_stopping_ends_queued_sessions_without_starting_them(tmp_path: Path) -> None:
    backend = agents(hang=True)
    sup = supervisor(tmp_path, backend, sessions=4, limit=2)
    started = sessions_started(sup, 2)
    run = asyncio.create_task(sup.run())
    await started.wait()
    sup.stop_all()
    result = await asyncio.wait_for(run, 30)
    assert backend.created == ["s0", "s1"]
    assert set(result.statuses.values()) == {EndStatus.STOPPED}
    assert result.reasons["s3"] == "stopped by the operator (it was queued, never started)"
    events = journal_events(sup)
    ended = {e.session: e.status for e in events if isinstance(e, ev.SessionEnded)}
    assert ended == {f"s{index}": "stopped" for index in range(4)}
    assert isinstance(events[-1], ev.RunEnded)


async def test_stopping_one_queued_session_ends_it_at_once(tmp_path: Path) -> None:
    backend = agents(hang=True)
    sup = supervisor(tmp_path, backend, sessions=3, limit=1)
    started = sessions_started(sup, 1)
    run = asyncio.create_task(sup.run())
    await started.wait()
    sup.act(SessionCommand(session="s2", command=Command.STOP))
    assert sup.snapshots()["s2"].status == "stopped"
    assert sup.queued == ["s1"]
    sup.stop_all()
    result = await asyncio.wait_for(run, 30)
    assert "s2" not in backend.created
    assert result.statuses["s2"] is EndStatus.STOPPED


async def test_cancelling_ends_queued_sessions_in_the_journal(tmp_path: Path) -> None:
    sup = supervisor(tmp_path, agents(hang=True), sessions=3, limit=1)
    started = sessions_started(sup, 1)
    run = asyncio.create_task(sup.run())
    await started.wait()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    events = journal_events(sup)
    ended = {e.session for e in events if isinstance(e, ev.SessionEnded)}
    assert ended == {"s0", "s1", "s2"}
    assert isinstance(events[-1], ev.RunEnded) and events[-1].reason == "cancelled"
