"""A live run served by another process, as a console sees it: `RemoteRun`.

A console attached to a run (`mala-tui attach`, or a foreground run whose host is its
child) has no supervisor of its own. `RemoteRun` has the shape the app and the
headless printer use of one (ui.source.LiveSource, BudgetSource): the run's view,
its listeners, the operator's commands and answers. It reads the run's journal first,
then follows the host's event stream from the journal's last sequence number
(runtime.consoles.channel): the view is the one the host has, event by event, and a reconnect
neither misses an event nor applies one twice.

Commands and answers are short requests to the host, made synchronously: the app acts
on a key and says at once how it went ("approved", or "answered already: approved by
the operator at the console on /dev/pts/3"), as it does with a supervisor in its own
process. What the person did goes as one value (core.operator_actions, POST `/act`);
on the host's side it is one `Supervisor.act`, so a round trip over the local socket
takes about a millisecond.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import aiohttp

from mala_tui.core import events as ev
from mala_tui.core.breakdown import WindowContents
from mala_tui.core.budget import BudgetCheck, BudgetLimits
from mala_tui.core.calibration import Density
from mala_tui.core.operator_actions import (
    AnswerApproval,
    AnswerPermission,
    OperatorAction,
    SetBudget,
    action_json,
)
from mala_tui.core.run_view import RunState
from mala_tui.core.session_records import SessionSnapshot
from mala_tui.core.transcript import Transcript
from mala_tui.runtime.cluster.wire import message_from_json
from mala_tui.runtime.consoles.channel import FELL_BEHIND, RUN_OVER, WHEN_STOPPED
from mala_tui.runtime.consoles.host_requests import REQUEST_SECONDS, quote, request
from mala_tui.runtime.consoles.live_landings import RemoteLandings
from mala_tui.runtime.consoles.sockets import PROTOCOL, ChannelError, HostRecord, live_host
from mala_tui.runtime.journal.writer import EVENTS_FILE, JournalContents, read_events
from mala_tui.runtime.run.budget_watch import BudgetWatch
from mala_tui.runtime.run.recorder import Listeners, RunRecorder
from mala_tui.runtime.session.by_hand import Interactive

HAND_OVER_SECONDS: Final = 120.0
"""How long taking a session over may take at the host: its turn is stopped first (the
supervisor's own bound is a minute past the disconnect's)."""
RECONNECT_TRIES: Final = 5
RECONNECT_PAUSE: Final = 0.2


def console_name() -> str:
    """How this console is named to others when it answers a question: its terminal and
    pid ("the console on /dev/pts/3 (pid 4242)")."""
    for stream in (sys.stdin, sys.stdout):
        try:
            return f"the console on {os.ttyname(stream.fileno())} (pid {os.getpid()})"
        except (OSError, ValueError, AttributeError):
            continue
    return f"a console without a terminal (pid {os.getpid()})"


class RemoteRun:
    """A live run reached through its host's control channel."""

    def __init__(
        self,
        folder: Path,
        host: HostRecord,
        *,
        prices: Any = None,
        name: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.folder = folder
        self.host = host
        self.name = name or console_name()
        """How this console is named to the others (when it answers a question)."""
        self.clock = clock
        kwargs = {} if prices is None else {"prices": prices}
        self.recorder = RunRecorder(
            journal=None,
            state=RunState(run_id=folder.name, **kwargs),
            on_storage_failure=lambda _exc: None,
        )
        self.skipped: JournalContents | None = None
        self.ended: ev.RunEnded | None = None
        """The run's end, once the stream has carried it."""
        self.lost = ""
        """Why the stream ended before the run did (its host gone), when it did."""
        self.reconnects = 0
        self.mode: ev.RunMode | None = None
        """What started the run (run, demo), from its `run_started`."""
        self._budget: BudgetWatch | None = None
        self.landings = RemoteLandings(
            folder, self.recorder, self._request, lambda: self.ended is not None or bool(self.lost)
        )
        """Landing and discarding the run's worktree sessions: read here, done at the host."""
        self._closing = False
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._closer: asyncio.Task[bool] | None = None

    @classmethod
    def attach(cls, folder: Path, **kwargs: Any) -> RemoteRun:
        """The run in `folder`, read from its journal, ready to follow its host.

        Raises:
            ChannelError: nothing serves the run (it is over, or its host is gone).
        """
        host = live_host(folder)
        if host is None:
            raise ChannelError(f"run {folder.name} is not live: no host answers for it")
        if host.protocol != PROTOCOL:
            raise ChannelError(
                f"run {folder.name}'s host speaks the console protocol {host.protocol}, this "
                f"mala-tui {PROTOCOL}: attach with the mala-tui that started the run, or stop "
                "it and resume it with this one"
            )
        remote = cls(folder, host, **kwargs)
        remote.replay()
        return remote

    # -- what the app reads --------------------------------------------------------------------

    @property
    def state(self) -> RunState:
        return self.recorder.state

    @property
    def listeners(self) -> Listeners:
        return self.recorder.listeners

    @property
    def last_seq(self) -> int:
        """The sequence number of the last event applied: what the stream resumes after."""
        return self.recorder.seq

    def snapshots(self) -> dict[str, SessionSnapshot]:
        return self.recorder.snapshots()

    def alive_pids(self) -> list[int]:
        return []  # the agents are the host's; a console has none of its own to leave behind

    # -- following the run ---------------------------------------------------------------------

    def replay(self) -> None:
        """Read the journal so far into the view (the stream goes on from its last line)."""
        contents = read_events(self.folder / EVENTS_FILE)
        self.skipped = contents
        for event in contents.events:
            self._take(event)

    async def run(self) -> ev.RunEnded | None:
        """Follow the run until it ends (its `run_ended`, returned), its host is gone
        (None, with `lost` saying so), or this console closes (None)."""
        if self.ended is not None:
            return self.ended  # the journal read has the run's end: no host follows it
        failures = 0
        while not self._closing:
            try:
                code = await self._follow()
            except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                code, failures = None, failures + 1
                if failures >= RECONNECT_TRIES:
                    self.lost = f"the run's host cannot be reached ({exc})"
                    return None
                await asyncio.sleep(RECONNECT_PAUSE)
                continue
            if self.ended is not None or code == RUN_OVER:
                return self.ended
            if code == FELL_BEHIND:
                self.reconnects += 1
                continue  # from the last line it had
            if self.closing:
                return None
            # Closed some other way: the host went away (killed, say), or a blip.
            failures += 1
            if failures >= RECONNECT_TRIES or live_host(self.folder) is None:
                self.lost = "the run's host went away before the run ended"
                return None
            self.reconnects += 1
            await asyncio.sleep(RECONNECT_PAUSE)
        return None

    @property
    def closing(self) -> bool:
        """True once this console has detached."""
        return self._closing

    def close(self) -> None:
        """Stop following (detach): the run goes on without this console."""
        self._closing = True
        ws = self._ws
        if ws is not None:
            self._closer = asyncio.get_running_loop().create_task(ws.close())

    async def _follow(self) -> int | None:
        """One connection: take every line it carries; the close code when it ends."""
        connector = aiohttp.UnixConnector(path=str(self.host.socket))
        async with aiohttp.ClientSession(connector=connector) as client:
            params = {"after": str(self.last_seq), "console": self.name}
            async with client.ws_connect(
                "http://localhost/events", params=params, heartbeat=30.0, max_msg_size=0
            ) as ws:
                self._ws = ws
                try:
                    async for message in ws:
                        if message.type is aiohttp.WSMsgType.TEXT:
                            self._lines(message.data)
                        elif message.type is aiohttp.WSMsgType.ERROR:
                            break
                        if self.ended is not None:
                            break  # nothing follows a run's end
                finally:
                    self._ws = None
                return ws.close_code

    def _lines(self, data: str) -> None:
        for line in data.split("\n"):
            if not line:
                continue
            try:
                event = ev.parse_event(json.loads(line))
            except (ValueError, ev.UnknownEventError, ev.BadEventError):
                continue  # what a newer host writes that this console cannot read
            self._take(event)

    def _take(self, event: ev.Event) -> None:
        if event.seq and event.seq <= self.recorder.seq:
            return  # had it already (from the journal, or before a reconnect)
        self.recorder.follow(event)
        if isinstance(event, ev.RunStarted):
            self.mode = event.mode
        if isinstance(event, ev.RunEnded):
            self.ended = event
        elif isinstance(event, ev.RunResumed):
            self.ended = None

    # -- requests to the host ------------------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        timeout: float = REQUEST_SECONDS,
    ) -> Any:
        """One request to the run's host (runtime.consoles.host_requests)."""
        return request(self.host.socket, method, path, body, timeout)

    def act(self, action: OperatorAction) -> None:
        """Send what the person did to the run's host (POST `/act`), as the run's own
        console would do it; an answer names this console, for whoever answers too late."""
        if isinstance(action, AnswerApproval | AnswerPermission) and not action.console:
            action = action.model_copy(update={"console": self.name})
        self._request("POST", "/act", json.loads(action_json(action)))
        if isinstance(action, SetBudget):
            self._watch().set_limits(action.session, action.limits)

    async def take_over(self, session: str) -> Interactive:
        """The host ends the session's process; how to open it here, on the same machine."""
        answer = await asyncio.to_thread(
            self._request, "POST", "/take_over", {"session": session}, HAND_OVER_SECONDS
        )
        try:
            return Interactive.from_json(answer)
        except (KeyError, TypeError, ValueError):
            raise ChannelError("the run's host answered without how to open it") from None

    async def hand_back(self, session: str, *, go_on: bool) -> None:
        await asyncio.to_thread(
            self._request, "POST", "/hand_back", {"session": session, "go_on": go_on}
        )

    def profile_names(self) -> list[str]:
        answer = self._request("GET", "/profiles")
        found = answer.get("profiles") if isinstance(answer, dict) else None
        return [str(name) for name in found] if isinstance(found, list) else []

    def stop_for(self, cause: str) -> None:
        """Stop the whole run, resumably (`mala-tui stop`, or stop chosen at `q`)."""
        self._request("POST", "/stop", {"cause": cause})

    def stop_all(self) -> None:
        self.stop_for(WHEN_STOPPED)

    def hurry(self) -> None:
        """The stop was asked for again: the host kills the agents now."""
        self._request("POST", "/hurry", {})

    def transcript_path(self, session: str) -> Path | None:
        answer = self._request("GET", f"/transcript?session={quote(session)}")
        path = answer.get("path") if isinstance(answer, dict) else None
        return Path(path) if isinstance(path, str) else None

    def window_contents(self, session: str) -> WindowContents | None:
        """The session's conversation and calibration, as the host has them now (the
        journal has the figures only): asked for when the breakdown view opens."""
        answer = self._request("GET", f"/window?session={quote(session)}")
        data = answer.get("contents") if isinstance(answer, dict) else None
        if not isinstance(data, dict):
            return None
        try:
            messages = [message_from_json(item) for item in data["messages"]]
            ratio, measured, overhead = data["density"]
            density = Density(float(ratio), bool(measured), int(overhead))
        except (KeyError, TypeError, ValueError):
            return None
        return WindowContents(Transcript(messages), density, str(data.get("root", "")))

    # -- budgets -------------------------------------------------------------------------------

    def _watch(self, refresh: bool = False) -> BudgetWatch:
        if self._budget is None or refresh:
            answer = self._request("GET", "/budget")
            watch = BudgetWatch(run_limits=_limits(answer.get("run")))
            for name, limits in (answer.get("sessions") or {}).items():
                watch.overrides[name] = _limits(limits)
            self._budget = watch
        return self._budget

    def budget_limits(self, session: str) -> tuple[BudgetLimits, BudgetLimits]:
        watch = self._watch(refresh=True)
        return watch.limits_for(session), watch.run_limits

    def budget_check(self, session: str) -> BudgetCheck:
        return self._watch().session_check(self.state.sessions[session], self.clock())


def _limits(data: object) -> BudgetLimits:
    if not isinstance(data, dict):
        return BudgetLimits()
    known = ("max_cost_usd", "max_turns", "max_minutes", "near_fraction")
    return BudgetLimits(**{key: data[key] for key in known if key in data})
