"""The run's control channel: how consoles attach to a live run, from any terminal.

Whoever runs the supervisor (the run's host, or a foreground run's own process) serves
this channel: HTTP on a Unix domain socket (aiohttp), readable only by its owner, in a
short per-user folder (runtime.consoles.sockets), its path recorded in the run's folder
(`host.json`). A console sends what the operator does as one JSON value (POST `/act`:
core.operator_actions, validated as it enters, then `Supervisor.act`), and follows the
run on a WebSocket, `/events?after=N`: every event whose sequence number is above N, as
its journal line, then each new one as it is recorded. A console reads the journal
itself first (it is a file of its own user's), then asks for what came after its last
line: it misses no event and gets none twice, however often it reconnects.

The host keeps the most recent lines in memory for those reconnects; older ones are
read back from the journal. A console that falls far behind (stopped, or on a link
slower than the run) is let go rather than held in memory: it attaches again from
its last line. Consoles only listen on the stream; a console that goes away, even
killed, costs the run nothing but its connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from aiohttp import web

from mala_tui.core import events as ev
from mala_tui.core.operator_actions import CONSOLE_NAME_CHARS, action_from_json
from mala_tui.core.operator_messages import MessageError
from mala_tui.core.text import clean, shorten
from mala_tui.runtime.consoles.run_reads import RunReads, refused
from mala_tui.runtime.consoles.sockets import (
    PROTOCOL,
    HostRecord,
    bind_socket,
    remove_host_file,
    socket_path,
    write_host_file,
)
from mala_tui.runtime.git.landing import LandingError
from mala_tui.runtime.questions.desk import QuestionClosed
from mala_tui.runtime.run.supervisor import Supervisor
from mala_tui.runtime.session.by_hand import ByHandError

BACKLOG_LINES: Final = 10_000
"""Recent journal lines kept for consoles that attach or reconnect (older: from the file)."""
CONSOLE_BEHIND: Final = 50_000
"""Lines a console may fall behind before it is let go (it attaches again from its last)."""
CHUNK_LINES: Final = 500
"""Lines per WebSocket message when catching a console up."""
CLOSE_SECONDS: Final = 2.0
"""How long the end of a run waits for its consoles to take the last lines."""
FELL_BEHIND: Final = 4000
"""WebSocket close code: the console fell too far behind; attach again from the last line."""
RUN_OVER: Final = 4001
"""WebSocket close code: the run is over; its host is going away."""
WHEN_STOPPED: Final = "stopped by mala-tui stop"
"""Why the run stopped when a console stopped it: the run's cause, which a resume carries on."""


@dataclass(eq=False)
class _Console:
    """One attached console's stream: the lines it has not been sent yet."""

    name: str
    limit: int = CONSOLE_BEHIND
    pending: deque[str] = field(default_factory=deque)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    behind: bool = False
    closing: bool = False

    def put(self, line: str) -> None:
        if len(self.pending) >= self.limit:
            self.behind = True
        else:
            self.pending.append(line)
        self.wake.set()


class ControlChannel:
    """Serves one supervisor's run to the consoles that attach to it."""

    def __init__(
        self,
        supervisor: Supervisor,
        folder: Path,
        *,
        stop: Callable[[str], None] | None = None,
        backlog: int = BACKLOG_LINES,
        console_behind: int = CONSOLE_BEHIND,
    ) -> None:
        self.supervisor = supervisor
        self.reads = RunReads(supervisor)
        """What consoles read beyond the events (runtime.consoles.run_reads)."""
        self.folder = folder
        """The run's folder: its journal, and where `host.json` says how to reach it."""
        self._stop = stop or supervisor.stop_for
        self._backlog: deque[tuple[int, str]] = deque(maxlen=backlog)
        self._console_behind = console_behind
        self._consoles: set[_Console] = set()
        self._writers: set[asyncio.Task[None]] = set()
        self._runner: web.AppRunner | None = None
        self.path: Path | None = None
        """The socket, once serving."""
        self.on_consoles: list[Callable[[int], None]] = []
        """Told how many consoles are attached whenever that changes."""

    @property
    def consoles(self) -> int:
        """How many consoles follow the run now."""
        return len(self._consoles)

    # -- serving -------------------------------------------------------------------------------

    async def start(self) -> Path:
        """Bind the socket (replacing a stale one a crash left), record it, and serve.

        Raises:
            ChannelError: no private folder for the socket, or another process serves the run.
        """
        run_id = self.folder.name
        path = socket_path(run_id)
        sock = bind_socket(path)
        app = web.Application(client_max_size=4 * 1024 * 1024)
        app.add_routes(
            [
                web.get("/info", self._info),
                web.get("/events", self._events),
                web.get("/budget", self.reads.budget),
                web.get("/transcript", self.reads.transcript),
                web.get("/window", self.reads.window),
                web.get("/profiles", self.reads.profiles),
                web.post("/take_over", self._post(self._take_over)),
                web.post("/land", self._post(self._land)),
                web.post("/discard", self._post(self._discard)),
                web.post("/hand_back", self._post(self._hand_back)),
                web.post("/act", self._post(self._act)),
                web.post("/stop", self._post(self._stop_run)),
                web.post("/hurry", self._post(self._hurry)),
            ]
        )
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        try:
            await web.SockSite(runner, sock).start()
            write_host_file(self.folder, HostRecord(socket=path, pid=os.getpid(), run_id=run_id))
        except BaseException:
            await runner.cleanup()
            sock.close()
            with contextlib.suppress(OSError):
                path.unlink()
            raise
        self._runner, self.path = runner, path
        self.supervisor.listeners.lines.append(self._on_line)
        return path

    async def close(self) -> None:
        """Send each console what it has not had, end their streams, stop serving, and
        remove the socket and `host.json` (a crash leaves them; the next host replaces them)."""
        if self._on_line in self.supervisor.listeners.lines:
            self.supervisor.listeners.lines.remove(self._on_line)
        for console in self._consoles:
            console.closing = True
            console.wake.set()
        if self._writers:
            await asyncio.wait(set(self._writers), timeout=CLOSE_SECONDS)
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        remove_host_file(self.folder)
        if self.path is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()

    def _on_line(self, event: ev.Event, line: str) -> None:
        self._backlog.append((event.seq, line))
        for console in self._consoles:
            console.put(line)

    def _changed(self) -> None:
        for tell in list(self.on_consoles):
            tell(len(self._consoles))

    # -- the stream ----------------------------------------------------------------------------

    async def _events(self, request: web.Request) -> web.StreamResponse:
        try:
            after = int(request.query.get("after", "0"))
        except ValueError:
            raise web.HTTPBadRequest(text="after: a sequence number") from None
        name = _name(request.query.get("console", "")) or "a console"
        ws = web.WebSocketResponse(heartbeat=30.0)
        await ws.prepare(request)
        # Subscribed and the high mark read with no await between: every line up to the
        # mark is sent from the backlog (or the journal), every one after it is queued.
        console = _Console(name, self._console_behind)
        self._consoles.add(console)
        upto = self.supervisor.recorder.seq
        self._changed()
        writer = asyncio.create_task(self._feed(ws, console, after, upto))
        self._writers.add(writer)
        try:
            async for _message in ws:
                pass  # consoles only listen here; their commands come as requests
        finally:
            self._consoles.discard(console)
            self._changed()
            if not console.closing:
                writer.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await writer
            self._writers.discard(writer)
        return ws

    async def _feed(
        self, ws: web.WebSocketResponse, console: _Console, after: int, upto: int
    ) -> None:
        try:
            lines = self._since(after, upto)
            if lines is None:
                lines = await asyncio.to_thread(_journal_lines, self.supervisor, after, upto)
            for start in range(0, len(lines), CHUNK_LINES):
                await ws.send_str("\n".join(lines[start : start + CHUNK_LINES]))
            while True:
                if console.pending:
                    lines = list(console.pending)
                    console.pending.clear()
                    await ws.send_str("\n".join(lines))
                    continue
                if console.behind:
                    await ws.close(code=FELL_BEHIND, message=b"fell behind: attach again")
                    return
                if console.closing:
                    await ws.close(code=RUN_OVER, message=b"the run is over")
                    return
                console.wake.clear()
                await console.wake.wait()
        except ConnectionError:
            return  # the console went away; its reader ends the connection

    def _since(self, after: int, upto: int) -> list[str] | None:
        """The lines after `after` up to `upto` from memory; None when memory does not
        reach back that far."""
        if after >= upto:
            return []
        if not self._backlog or self._backlog[0][0] > after + 1:
            return None
        return [line for seq, line in self._backlog if after < seq <= upto]

    # -- requests ------------------------------------------------------------------------------

    def _post(
        self,
        handle: Callable[
            [dict[str, Any]], dict[str, Any] | Awaitable[dict[str, Any] | None] | None
        ],
    ) -> Callable[[web.Request], Any]:
        async def endpoint(request: web.Request) -> web.Response:
            try:
                body = await request.json()
            except (ValueError, UnicodeDecodeError):
                return refused(400, "value", "the request is not JSON")
            except RecursionError:  # nested deeper than the parser goes: no request of ours
                return refused(400, "value", "the request's JSON is nested too deeply")
            if not isinstance(body, dict):
                return refused(400, "value", "the request is not a JSON object")
            try:
                answer = handle(body)
                if inspect.isawaitable(answer):
                    answer = await answer
            except QuestionClosed as exc:
                reply = exc.reply
                return web.json_response(
                    {
                        "error": str(exc),
                        "kind": "closed",
                        "question": exc.question,
                        "answer": str(reply.answer),
                        "by": reply.by,
                        "reason": reply.reason,
                        "console": reply.console,
                    },
                    status=409,
                )
            except KeyError as exc:
                return refused(404, "key", exc.args[0] if exc.args else str(exc))
            except MessageError as exc:
                return refused(400, "message", str(exc))
            except (ValueError, TypeError) as exc:
                return refused(400, "value", str(exc))
            return web.json_response(answer or {"ok": True})

        return endpoint

    async def _info(self, request: web.Request) -> web.Response:
        supervisor = self.supervisor
        return web.json_response(
            {
                "protocol": PROTOCOL,
                "run_id": self.folder.name,
                "pid": os.getpid(),
                "seq": supervisor.recorder.seq,
                "mode": supervisor.mode,
                "consoles": sorted(console.name for console in self._consoles),
            }
        )

    def _act(self, body: dict[str, Any]) -> None:
        """What a person did at a console (core.operator_actions), validated as it enters."""
        self.supervisor.act(action_from_json(body))

    async def _take_over(self, body: dict[str, Any]) -> dict[str, Any]:
        """The console that asks opens the session by hand: it is on this machine (the
        socket is a local one), and a browser tab's console refuses before it asks."""
        try:
            how = await self.supervisor.take_over(_text(body, "session"))
        except ByHandError as exc:
            raise ValueError(str(exc)) from None
        return how.to_json()

    async def _hand_back(self, body: dict[str, Any]) -> None:
        go_on = body.get("go_on")
        if not isinstance(go_on, bool):
            raise ValueError("go_on must be true or false")
        await self.supervisor.hand_back(_text(body, "session"), go_on=go_on)

    async def _land(self, body: dict[str, Any]) -> dict[str, Any]:
        try:
            event = await self.supervisor.landings.land(
                _text(body, "session"), _text(body, "message")
            )
        except LandingError as exc:
            raise ValueError(str(exc)) from None
        return {"event": event.model_dump(mode="json")}

    async def _discard(self, body: dict[str, Any]) -> dict[str, Any]:
        force = body.get("force")
        if not isinstance(force, bool):
            raise ValueError("force must be true or false")
        try:
            event = await self.supervisor.landings.discard(_text(body, "session"), force=force)
        except LandingError as exc:
            raise ValueError(str(exc)) from None
        return {"event": event.model_dump(mode="json")}

    def _hurry(self, body: dict[str, Any]) -> None:
        self.supervisor.hurry()

    def _stop_run(self, body: dict[str, Any]) -> None:
        self._stop(_optional_text(body, "cause") or WHEN_STOPPED)


def _journal_lines(supervisor: Supervisor, after: int, upto: int) -> list[str]:
    """The journal's lines numbered after `after` up to `upto`, read from its file."""
    journal = supervisor.journal
    if journal is None:
        return []
    with journal.events_path.open("rb") as file:
        raw = file.read()
    return list(_numbered(raw.split(b"\n"), after, upto))


def _numbered(lines: Iterable[bytes], after: int, upto: int) -> Iterable[str]:
    for line in lines:
        try:
            data = json.loads(line)
        except (ValueError, RecursionError):
            continue
        seq = data.get("seq") if isinstance(data, dict) else None
        if isinstance(seq, int) and after < seq <= upto:
            yield line.decode("utf-8")


def _text(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str):
        raise ValueError(f"{key}: a string is needed")
    return value


def _optional_text(body: dict[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{key}: a string or null")
    return value


def _name(text: str) -> str:
    """A console's name as others are told it: one line, no control characters, short."""
    return shorten(clean(text, one_line=True), CONSOLE_NAME_CHARS)


__all__ = ["ControlChannel"]
