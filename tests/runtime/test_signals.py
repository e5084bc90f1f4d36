"""Ctrl-C and SIGTERM stop a run resumably, then give the conventional status; SIGHUP (the
terminal gone) leaves it going."""

from __future__ import annotations

import asyncio
import io
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from mala_tui.commands.running import finish, supervise
from mala_tui.config import IdleSettings, Settings
from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.observations import Command, SessionIdentified
from mala_tui.core.operator_actions import SessionCommand
from mala_tui.runtime.backends.scripted import HANG, ScriptedClient
from mala_tui.runtime.journal.writer import RunJournal, read_events
from mala_tui.runtime.run.resume import plan_for, read_source
from mala_tui.runtime.run.signals import ROUTES, Shutdown, StopReason, stop_requests
from tests.support.backends import PerSession
from tests.support.polling import eventually
from tests.support.supervisors import build_supervisor


@pytest.fixture(autouse=True)
def foreground_signals() -> Iterator[None]:
    """Each test starts as a process in a terminal's foreground does. Run as a background
    job or under `nohup`, pytest inherits SIGINT or SIGHUP ignored, and `stop_requests`
    rightly leaves an inherited ignore alone: these tests would then see no signal."""
    numbers = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    before = {number: signal.getsignal(number) for number in numbers}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    try:
        yield
    finally:
        for number, handler in before.items():
            signal.signal(number, signal.SIG_DFL if handler is None else handler)


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[RunJournal]:
    with RunJournal.create(tmp_path, "run-1", {"mode": "test"}) as opened:
        yield opened


@pytest.mark.parametrize(
    ("number", "status", "cause"),
    [
        (signal.SIGTERM, 143, "stopped by SIGTERM"),
        (signal.SIGINT, 130, "interrupted by Ctrl-C"),
    ],
)
async def test_a_signal_stops_every_session_ends_the_journal_and_gives_its_status(
    number: signal.Signals, status: int, cause: str, journal: RunJournal, tmp_path: Path
) -> None:
    backend = PerSession(lambda name: ScriptedClient([[SessionIdentified(0, name), HANG]]))
    sup = build_supervisor(
        backend,
        ["a", "b"],
        cwd=tmp_path,
        journal=journal,
        settings=Settings(idle=IdleSettings(idle_timeout_seconds=30)),
    )
    running = asyncio.Event()
    sup.listeners.events.append(
        lambda e: running.set() if isinstance(e, ev.SessionStarted) and e.session == "b" else None
    )
    out = io.StringIO()
    before = signal.getsignal(number)

    async def send_when_running() -> None:
        await running.wait()
        os.kill(os.getpid(), number)

    sender = asyncio.create_task(send_when_running())
    with stop_requests() as shutdown:
        outcome = await asyncio.wait_for(supervise(sup, True, out, shutdown), 30)
    await sender
    assert isinstance(outcome, Shutdown) and outcome.signal is number
    assert sup.result().statuses == {"a": EndStatus.STOPPED, "b": EndStatus.STOPPED}
    assert all(client.disconnected for client in backend.clients.values())
    events = read_events(journal.events_path).events
    assert isinstance(events[-1], ev.RunEnded)
    assert events[-1].reason == cause
    ended = [e for e in events if isinstance(e, ev.SessionEnded)]
    assert {e.session for e in ended} == {"a", "b"}
    # Each session's own ending says why, not "stopped by the operator".
    assert {e.reason for e in ended} == {cause}
    # The handlers before the run are back once it is over.
    assert signal.getsignal(number) is before
    printed = io.StringIO()
    assert finish(outcome, sup, printed) == status
    assert printed.getvalue() == (
        f"{cause}: every session was stopped\n"
        "2 stopped with the run; carry on: mala-tui resume run-1\n"
    )


async def test_a_hangup_leaves_a_headless_run_going_until_sigterm_stops_it(
    journal: RunJournal, tmp_path: Path
) -> None:
    backend = PerSession(lambda name: ScriptedClient([[SessionIdentified(0, name), HANG]]))
    sup = build_supervisor(
        backend,
        ["a", "b"],
        cwd=tmp_path,
        journal=journal,
        settings=Settings(idle=IdleSettings(idle_timeout_seconds=30)),
    )
    running = asyncio.Event()
    sup.listeners.events.append(
        lambda e: running.set() if isinstance(e, ev.SessionStarted) and e.session == "b" else None
    )
    after_hangup: list[object] = []

    async def hang_up_then_terminate() -> None:
        await running.wait()
        os.kill(os.getpid(), signal.SIGHUP)
        # The handler has run; what a stop would do is scheduled on the loop: let it run.
        for _ in range(3):
            await asyncio.sleep(0)
        after_hangup.extend([shutdown.requested, sup.stop_cause])
        sup.record(ev.WarningRecorded(at=0.0, where=ev.Where.RUNTIME, message="still recording"))
        os.kill(os.getpid(), signal.SIGTERM)

    with stop_requests() as shutdown:
        sender = asyncio.create_task(hang_up_then_terminate())
        outcome = await asyncio.wait_for(supervise(sup, True, io.StringIO(), shutdown), 30)
    await sender
    assert shutdown.detached
    # After the hangup nothing was stopped: no stop asked for, no session ended.
    assert after_hangup == [False, ""]
    assert isinstance(outcome, Shutdown) and outcome.exit_status == 143
    events = read_events(journal.events_path).events
    assert isinstance(events[-1], ev.RunEnded) and events[-1].reason == "stopped by SIGTERM"
    warned = [
        e for e in events if isinstance(e, ev.WarningRecorded) and e.message == "still recording"
    ]
    assert warned and not any(
        isinstance(e, ev.SessionEnded) for e in events[: events.index(warned[0])]
    )


async def test_a_session_stopped_with_x_stays_ended_when_ctrl_c_stops_the_rest(
    journal: RunJournal, tmp_path: Path
) -> None:
    """Ctrl-C stops the run resumably; a session stopped one by one before it stays ended,
    and its line says so, not the run's cause."""
    sup = build_supervisor(
        PerSession(lambda name: ScriptedClient([[SessionIdentified(0, name), HANG]])),
        ["a", "b"],
        cwd=tmp_path,
        journal=journal,
        settings=Settings(idle=IdleSettings(idle_timeout_seconds=30)),
    )
    seen: list[ev.Event] = []
    sup.listeners.events.append(seen.append)

    async def stop_a_then_interrupt() -> None:
        await eventually(
            lambda: {e.session for e in seen if isinstance(e, ev.SessionStarted)} == {"a", "b"},
            what="both sessions started",
        )
        sup.act(SessionCommand(session="a", command=Command.STOP))  # `x` on a's card
        await eventually(
            lambda: any(isinstance(e, ev.SessionEnded) for e in seen), what="a session ended"
        )
        os.kill(os.getpid(), signal.SIGINT)

    sender = asyncio.create_task(stop_a_then_interrupt())
    with stop_requests() as shutdown:
        outcome = await asyncio.wait_for(supervise(sup, True, io.StringIO(), shutdown), 30)
    await sender
    assert isinstance(outcome, Shutdown) and outcome.exit_status == 130
    assert sup.result().reasons == {"a": "stopped by the operator", "b": "interrupted by Ctrl-C"}
    plan = plan_for(read_source(journal.directory))
    assert [s.name for s in plan.resuming] == ["b"]
    (a,) = [s for s in plan.sessions if s.name == "a"]
    assert a.reason == "ended stopped: stopped by the operator"


def test_stop_requests_leave_an_ignored_signal_ignored() -> None:
    """`nohup` (SIGHUP ignored) and a background job (SIGINT ignored) keep them ignored."""
    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with stop_requests():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN)
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, before)


def test_every_reason_has_a_route_and_a_cause_a_resume_can_tell_apart() -> None:
    causes = {reason.cause for reason in StopReason}
    assert len(causes) == len(StopReason) and "stopped by the operator" not in causes
    assert set(ROUTES) == set(StopReason)
    assert [r.exit_status for r in StopReason] == [130, None, 143, 129]


async def test_a_request_made_before_the_run_listens_is_acted_on_as_it_starts() -> None:
    """A signal between start-up's last look and the loop's listening is not lost."""
    shutdown = Shutdown()
    shutdown.request(StopReason.TERMINATE, signal.SIGTERM)
    seen: list[int] = []
    called = asyncio.Event()

    def act(times: int) -> None:
        seen.append(times)
        called.set()

    with shutdown.acted_on(act):
        await asyncio.wait_for(called.wait(), 10)
        shutdown.request(StopReason.INTERRUPT, signal.SIGINT)  # again: acted on as well
        called.clear()
        await asyncio.wait_for(called.wait(), 10)
    assert seen == [1, 2] and shutdown.cause == "stopped by SIGTERM"
    assert shutdown.exit_status == 143
