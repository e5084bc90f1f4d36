"""A waiting session's card says how long its prompt cache stays warm, and counts down."""

from __future__ import annotations

import pytest

from mala_tui.core import events as ev
from mala_tui.core.permissions import AnsweredBy, PermissionAnswer
from mala_tui.core.run_view import RunState
from mala_tui.core.session_records import SessionSnapshot
from mala_tui.core.usage import UsageSource
from mala_tui.dev.fake_source import FakeLiveSource
from mala_tui.dev.sample_session import T0
from mala_tui.ui.format import cache_text
from mala_tui.ui.screens.dashboard import DashboardScreen
from mala_tui.ui.widgets.session_card import SessionCard
from tests.support.polling import eventually

from .helpers import SIZE, make_app, screen_text


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def waiting_run(*, ttl: float | None = 300.0) -> list[ev.Event]:
    """A session whose last request went out at T0 + 10, now waiting for permission."""
    return [
        ev.RunStarted(at=T0, run_id="r", sessions=("reader",), mode=ev.RunMode.RUN),
        ev.SessionStarted(
            at=T0,
            session="reader",
            task="Read the modules.",
            cwd="/work/reader",
            window=200_000,
            soft_threshold=0.3,
            hard_threshold=0.8,
            max_restarts=5,
            require_approval=False,
            cache_ttl_seconds=ttl,
        ),
        ev.UsageRecorded(
            at=T0 + 10,
            session="reader",
            tokens=70_000,
            window=200_000,
            source=UsageSource.PER_CALL,
            call_started=True,
        ),
        # The same call's final report: later, but the request was sent at T0 + 10.
        ev.UsageRecorded(
            at=T0 + 14, session="reader", tokens=70_100, window=200_000, source=UsageSource.PER_CALL
        ),
        ev.PermissionRequested(
            at=T0 + 15,
            session="reader",
            request_id="1",
            tool="Bash",
            summary="sh -c 'make release'",
            input_text='{"command": "sh -c \'make release\'"}',
        ),
    ]


def snapshot_of(events: list[ev.Event]) -> SessionSnapshot:
    return RunState().apply_all(events).sessions["reader"].snapshot()


def test_the_cache_time_counts_from_the_last_request_and_only_while_waiting() -> None:
    events = waiting_run()
    waiting = snapshot_of(events)
    assert waiting.waiting
    assert cache_text(waiting, T0 + 10 + 300 - 192) == "cache warm 3:12"
    assert cache_text(waiting, T0 + 10 + 299.5) == "cache warm 0:01"
    assert cache_text(waiting, T0 + 10 + 300) == "cache cold"
    answered = snapshot_of(
        [
            *events,
            ev.PermissionDecided(
                at=T0 + 20,
                session="reader",
                request_id="1",
                tool="Bash",
                answer=PermissionAnswer.ALLOW_ONCE,
                decided_by=AnsweredBy.OPERATOR,
            ),
        ]
    )
    assert not answered.waiting and cache_text(answered, T0 + 20) == ""
    # A journal from before the lifetime was recorded: nothing is claimed.
    assert cache_text(snapshot_of(waiting_run(ttl=None)), T0 + 20) == ""


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    ticking = Clock(T0 + 10 + 300 - 192)
    monkeypatch.setattr(SessionCard, "clock", ticking)
    return ticking


async def test_the_card_shows_the_warm_time_and_counts_it_down(clock: Clock) -> None:
    app = make_app(FakeLiveSource(waiting_run()))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
        shown = screen_text(app)
        assert "waiting for permission" in shown
        assert "cache warm 3:12 \u00b7 masked 0" in shown
        clock.now += 192
        # The card ticks by itself once a second: no new event is needed.
        await eventually(
            lambda: "cache cold \u00b7 masked 0" in screen_text(app),
            what="the card's own tick to show the cache cold",
            seen=lambda: screen_text(app),
        )
