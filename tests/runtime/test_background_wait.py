"""A session waiting on its subagents: their signs of life keep it, a silence is a hang."""

from __future__ import annotations

import asyncio
from pathlib import Path

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.background import BackgroundKind, BackgroundTask
from mala_tui.core.manager import ContextManager
from mala_tui.core.observations import BackgroundChanged, SessionIdentified
from mala_tui.prompt_files import load_prompts
from mala_tui.runtime.backends.base import ActivityItem, SessionSpec
from mala_tui.runtime.backends.scripted import HANG, ScriptedBackend, ScriptedClient, finished
from mala_tui.runtime.session.runner import SessionRunner
from tests.support.factories import default_limits, default_runner_limits

IDLE = 0.3
SUB = BackgroundTask(id="a1", kind=BackgroundKind.SUBAGENT, description="logs")


def runner(backend: ScriptedBackend, events: list[ev.Event]) -> SessionRunner:
    def sink(event: ev.Event) -> ev.Event:
        events.append(event)
        return event

    manager = ContextManager(
        name="s1", task="t", limits=default_limits(context_limit=100_000), prompts=load_prompts()
    )
    return SessionRunner(
        spec=SessionSpec(name="s1", task="t", cwd=Path("/ws")),
        backend=backend,
        manager=manager,
        limits=default_runner_limits(idle_timeout=IDLE, disconnect_timeout=1.0),
        sink=sink,
    )


async def test_a_subagent_at_work_past_the_idle_timeout_is_no_hang() -> None:
    working = [ActivityItem("subagent")] * 4  # one every 0.6 x IDLE: 2.4 x IDLE in all
    client = ScriptedClient(
        [
            [
                SessionIdentified(0, "sess-1"),
                BackgroundChanged(0, (SUB,), 0),
                finished("Waiting for 1 subagent."),
                *working,
                BackgroundChanged(0, (), 1),
                SessionIdentified(0, "sess-1"),  # the CLI's own turn, for the report
                finished("All done, with the report."),
            ]
        ],
        pace=IDLE * 0.6,
    )
    events: list[ev.Event] = []
    status = await asyncio.wait_for(runner(ScriptedBackend([client]), events).run(), 10)
    assert status is EndStatus.DONE
    assert not [e for e in events if isinstance(e, ev.IdleTimeoutSeen)]
    assert [e.tasks for e in events if isinstance(e, ev.BackgroundWaiting)] == [(SUB,)]


async def test_a_silent_subagent_is_a_hang_recovered_and_said_lost() -> None:
    stuck = ScriptedClient(
        [[SessionIdentified(0, "sess-1"), BackgroundChanged(0, (SUB,), 0), finished(), HANG]]
    )
    resumed = ScriptedClient([[finished("Carried on without it.")]])
    events: list[ev.Event] = []
    status = await asyncio.wait_for(runner(ScriptedBackend([stuck, resumed]), events).run(), 10)
    assert status is EndStatus.DONE
    assert stuck.disconnected
    (seen,) = [e for e in events if isinstance(e, ev.IdleTimeoutSeen)]
    assert seen.idle_seconds >= IDLE
    (lost,) = [e for e in events if isinstance(e, ev.BackgroundStopped)]
    assert lost.tasks == (SUB,)
