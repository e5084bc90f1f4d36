"""A question that keeps its session waiting past half the cache's lifetime says so, once."""

from __future__ import annotations

import asyncio
from pathlib import Path

from mala_tui.config import ContextSettings, Settings
from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.describe import summary
from mala_tui.core.observations import MessageObserved, SessionIdentified, UsageObserved
from mala_tui.core.operator_actions import AnswerPermission
from mala_tui.core.permissions import PermissionAnswer
from mala_tui.core.questions import PermissionQuestion
from mala_tui.core.transcript import Message, Role, ToolCall, ToolResult
from mala_tui.core.usage import CallUsage
from mala_tui.runtime.backends.base import PermissionAsk
from mala_tui.runtime.backends.scripted import (
    AskPermission,
    ScriptedBackend,
    ScriptedClient,
    finished,
)
from mala_tui.runtime.journal.writer import RunJournal, read_events
from mala_tui.runtime.session.cache_watch import CacheWatch
from mala_tui.ui.attention import Attention, Desktop
from tests.support.supervisors import build_supervisor


class Clock:
    """A clock that a fake sleep moves on."""

    def __init__(self, now: float) -> None:
        self.now = now
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def watch(clock: Clock, cold_at: float | None) -> tuple[CacheWatch, list[ev.Event]]:
    said: list[ev.Event] = []
    return (
        CacheWatch(
            session="a",
            warm_until=lambda: cold_at,
            ttl=300.0,
            clock=clock,
            emit=said.append,
            sleep=clock.sleep,
        ),
        said,
    )


async def settled(cache: CacheWatch) -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_half_way_to_cold_the_wait_is_journaled_with_the_time_left() -> None:
    clock = Clock(1_100.0)  # the last request at 1,000: cold at 1,300, half-way at 1,150
    cache, said = watch(clock, 1_300.0)
    cache.start("q1", "permission to use Bash")
    await settled(cache)
    assert clock.slept == [50.0]
    (cooling,) = said
    assert isinstance(cooling, ev.CacheCooling)
    assert (cooling.at, cooling.cold_in, cooling.waiting_for) == (
        1_150.0,
        150.0,
        "permission to use Bash",
    )
    assert summary(cooling) == (
        "waiting for permission to use Bash past half the prompt cache's lifetime (5 min 0 s): "
        "it goes cold in 2 min 30 s"
    )
    attention = Attention(lambda _t: None, bell=False, desktop=Desktop.OFF)
    attention(cooling)
    assert attention.raised == [
        (
            "mala-tui",  # one title: the body says what waits, as every notice does
            "a still waits for permission to use Bash: its prompt cache goes cold in 2:30",
        )
    ]


async def test_an_answer_before_half_way_says_nothing() -> None:
    clock = Clock(1_100.0)
    cache, said = watch(clock, 1_300.0)
    cache.start("q1", "approval of checkpoint #1")
    cache.stop("q1")
    await settled(cache)
    assert said == []


async def test_past_half_way_at_once_and_once_cold_not_at_all() -> None:
    clock = Clock(1_200.0)
    cache, said = watch(clock, 1_300.0)
    cache.start("q1", "approval of checkpoint #1")
    await settled(cache)
    assert [e.cold_in for e in said if isinstance(e, ev.CacheCooling)] == [100.0]
    clock.now = 1_400.0
    cache.start("q2", "permission to use Bash")
    await settled(cache)
    assert len(said) == 1
    unknown, nothing = watch(clock, None)
    unknown.start("q3", "permission to use Bash")
    await unknown.close()
    assert nothing == []


async def test_a_permission_request_waiting_past_half_the_lifetime_is_journaled(
    tmp_path: Path,
) -> None:
    """A real runner and supervisor, a scripted agent, a 0.6 s lifetime: the request
    waits, the journal says the cache is about to go cold, the answer lets it go on."""
    call = MessageObserved(
        0, Message(Role.ASSISTANT, (ToolCall("t1", "Bash", {"command": "make"}),))
    )
    result = MessageObserved(0, Message(Role.USER, (ToolResult("t1", "done"),)))
    client = ScriptedClient(
        [
            [
                SessionIdentified(0, "s"),
                UsageObserved(0, CallUsage(cache_read_input_tokens=20_000), starts_call=True),
                call,
                AskPermission(PermissionAsk("t1", "Bash", {"command": "make"})),
                result,
                finished(),
            ]
        ]
    )
    journal = RunJournal.create(tmp_path, "run-1", {"mode": "test"})
    try:
        sup = build_supervisor(
            ScriptedBackend([client]),
            ["a"],
            cwd=tmp_path,
            journal=journal,
            settings=Settings(context=ContextSettings(cache_ttl_seconds=0.6)),
        )
        cooling = asyncio.Event()
        sup.listeners.events.append(
            lambda e: cooling.set() if isinstance(e, ev.CacheCooling) else None
        )
        run = asyncio.create_task(sup.run())
        await asyncio.wait_for(cooling.wait(), 10)
        (request,) = sup.state.questions()
        assert isinstance(request, PermissionQuestion)
        sup.act(
            AnswerPermission(
                session="a", request_id=request.request_id, answer=PermissionAnswer.ALLOW_ONCE
            )
        )
        outcome = await asyncio.wait_for(run, 10)
    finally:
        journal.close()
    assert outcome.statuses == {"a": EndStatus.DONE}
    events = read_events(journal.events_path).events
    (said,) = [e for e in events if isinstance(e, ev.CacheCooling)]
    assert said.waiting_for == "permission to use Bash"
    assert 0 < said.cold_in <= 0.3
    started = next(e for e in events if isinstance(e, ev.SessionStarted))
    assert started.cache_ttl_seconds == 0.6
