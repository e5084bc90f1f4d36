"""The benchmark's operator: plays a scenario's waits, the same for every arm.

A scenario's waits (`[[waits]]`, in simulated minutes) are a person's: a permission
request answered late, a pause. The model server cannot play them; whoever runs the
agent does, and this is that person. Its waits pass on a clock of their own
(`SimulatedClock`): the model server's prompt cache and mala-tui's supervisor both read
the time from it, and a wait moves it on by its minutes at once instead of sleeping them.
So the cache's real 5-minute lifetime applies (a 6-minute wait lets it go cold, a busy
machine's slow step does not), and a wait costs no real time.

- a permission request Claude Code makes (a Bash command, with Bash left out of the
  allowed tools) is answered "allow" after the wait its step declares, at once when it
  declares none: through the SDK's `can_use_tool` for the CLI arms, at mala-tui's desk
  (as a person at its console would) for the managed arm;
- a pause begins once the server has played its step: the CLI arms are interrupted and,
  after the wait, told to continue (what an SDK user can do); mala-tui's session is
  paused and then resumed with its own commands.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from mala_tui.core import events as ev
from mala_tui.core.observations import Command
from mala_tui.core.operator_actions import AnswerPermission, SessionCommand
from mala_tui.core.permissions import PermissionAnswer
from mala_tui.core.phases import Phase
from mala_tui.loopback import LoopbackServer, RequestRecord, Scenario
from mala_tui.loopback.scenario_sections import WaitSpec
from mala_tui.runtime.run.supervisor import Supervisor

#: What an SDK user says to an agent it interrupted, to have it go on.
CONTINUE = "Continue with the task where you left off."


class SimulatedClock:
    """The real clocks, moved on by every wait played (seconds)."""

    def __init__(self) -> None:
        self.skipped = 0.0

    def monotonic(self) -> float:
        return time.monotonic() + self.skipped

    def wall(self) -> float:
        return time.time() + self.skipped

    def advance(self, seconds: float) -> None:
        self.skipped += seconds


class ScriptedOperator:
    """A person answering and pausing as the scenario says, on a simulated clock."""

    def __init__(self, scenario: Scenario, clock: SimulatedClock) -> None:
        self.scenario = scenario
        self.clock = clock
        self.waited: list[tuple[str, float]] = []
        """(step id, simulated seconds) of every wait played, in order."""
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def pauses(self) -> list[WaitSpec]:
        return [wait for wait in self.scenario.waits if wait.kind == "pause"]

    def _wait(self, wait: WaitSpec) -> None:
        self.waited.append((wait.step, wait.seconds))
        self.clock.advance(wait.seconds)

    # -- permission requests -------------------------------------------------------------

    async def permission_delay(self, tool: str, tool_input: Mapping[str, Any]) -> None:
        """Let as much time pass as the scenario says before this tool call is allowed."""
        wait = self.scenario.permission_wait(tool, tool_input)
        if wait is not None:
            self._wait(wait)
        await asyncio.sleep(0)

    def answer_at_the_desk(self, supervisor: Supervisor) -> Callable[[ev.Event], None]:
        """A listener for the managed arm: each waiting permission request is allowed,
        after its wait, through the supervisor, as a person at the console answers."""

        def on_event(event: ev.Event) -> None:
            if isinstance(event, ev.PermissionRequested) and event.waiting:
                tool_input = _input_of(event.input_text)
                self._spawn(self._answer(supervisor, event, tool_input))

        return on_event

    async def _answer(
        self, supervisor: Supervisor, event: ev.PermissionRequested, tool_input: Mapping[str, Any]
    ) -> None:
        await self.permission_delay(event.tool, tool_input)
        with contextlib.suppress(KeyError):  # withdrawn meanwhile: nothing to answer
            supervisor.act(
                AnswerPermission(
                    session=event.session,
                    request_id=event.request_id,
                    answer=PermissionAnswer.ALLOW_ONCE,
                )
            )

    # -- pauses --------------------------------------------------------------------------

    async def play_pauses(
        self,
        server: LoopbackServer,
        pause: Callable[[], Awaitable[None]],
        resume: Callable[[], Awaitable[None]],
    ) -> None:
        """Each pause in turn: once its step is played, `pause` (returning once the agent
        has stopped), the wait, `resume`."""
        for wait in self.pauses:
            await server.wait_for(_played(wait.step))
            await pause()
            self._wait(wait)
            await resume()

    def pause_session(
        self, server: LoopbackServer, supervisor: Supervisor, session: str
    ) -> asyncio.Task[None]:
        """The managed arm's pauses, with mala-tui's own pause and resume."""
        paused = asyncio.Event()

        def on_event(event: ev.Event) -> None:
            if isinstance(event, ev.PhaseChanged) and event.after is Phase.PAUSED:
                paused.set()

        supervisor.listeners.events.append(on_event)

        async def pause() -> None:
            paused.clear()
            supervisor.act(SessionCommand(session=session, command=Command.PAUSE))
            await paused.wait()
            # Paused at once, but the turn in flight ends on its own time (its request
            # may still go out): the wait starts once it has. Polled: the turn's end
            # need not record any event to wait on.
            manager = supervisor.runners[session].manager
            while manager.streaming:  # noqa: ASYNC110
                await asyncio.sleep(0.05)

        async def resume() -> None:
            supervisor.act(SessionCommand(session=session, command=Command.RESUME))

        return self._spawn(self.play_pauses(server, pause, resume))

    def _spawn(self, work: Awaitable[None]) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def close(self) -> None:
        """Whatever is still waiting stops: the arm is over."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


def _played(step_id: str) -> Callable[[list[RequestRecord]], bool]:
    def played(records: list[RequestRecord]) -> bool:
        return any(r.step_id == step_id and r.status == 200 for r in records)

    return played


def _input_of(text: str) -> Mapping[str, Any]:
    """The tool input a permission request journaled (JSON), or nothing."""
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
