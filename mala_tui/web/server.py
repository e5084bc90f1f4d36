"""The web console: textual-serve's `Server`, extended for mala-tui.

Each browser tab gets its own app process, opened on one run: attached when the
run is live, read-only when it has ended. textual-serve 1.1 starts one command
for every tab, builds the page's WebSocket URL from the host it was told to
listen on, and leaves the page's title alone. Here:

- every request passes the access token first (`access.TokenGuard`); a refused
  request reaches no handler, so it starts no app process;
- the WebSocket URL is built from the Host header the browser sent, so the page
  connects back to wherever it was loaded from (`ssh -L`, a server on 0.0.0.0);
- the command a tab runs is one function of the run chosen (`TabCommand`);
- the page's title says what the run waits for, and follows it (`/title/...`), and the
  page raises a browser notification when a question starts to wait;
- each waiting question has an address of its own (`/?run=RUN&question=ID`): the run's
  page, its app opened at that question's dialog, or saying how it was settled;
- a page with no run chosen lists the runs to choose from, unless exactly one is live;
- journals are read off the event loop (`asyncio.to_thread`): a big one stalls no tab;
- a connection must send its request within `idle_timeout` seconds of opening, and is
  closed once idle that long between requests: connections opened and left silent (by
  anyone, the token is not needed to connect) cannot use up the server's file
  descriptors and lock out whoever holds the token.

The textual-serve surface used: `Server` (its app setup, static files and
download routes), `AppService` (the pipe protocol to a Textual app under its web
driver) with one override, `_open_app_process` (`tabs.Tab`), so the command runs without a
shell and in a session of its own (a Ctrl-C on the server's terminal reaches the
server, which closes each tab in turn, not every tab's app at once). pyproject
pins textual-serve to the minor version this was written against.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import aiohttp_jinja2
from aiohttp import web
from aiohttp.web_protocol import RequestHandler
from textual_serve.server import Server

from mala_tui.core.notices import waiting_notice
from mala_tui.core.text import clean, flatten, shorten
from mala_tui.runtime.consoles.serve_record import page_address
from mala_tui.web.access import Handler, TokenGuard, cookie_name
from mala_tui.web.runs import JournalError, RunBook, RunChoice
from mala_tui.web.tabs import Tab, TabCommand, clamped_int, pump

TEMPLATES = Path(__file__).parent / "templates"
TITLE_EVERY_MS = 2000
"""How often an open page asks for its title: a glance at a background tab is this fresh."""
FINISHED_LISTED = 50
"""Finished runs the picker lists (newest first); `mala-tui runs` lists them all."""
IDLE_SECONDS = 15.0
"""How long a connection may take to send its request, or stay idle between two
(`serve --idle-timeout`); an open tab's WebSocket is busy, never idle."""
FAVICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">'
    '<rect width="16" height="16" rx="3" fill="#0178d4"/>'
    '<path d="M3 12V4h2l3 4 3-4h2v8h-2V7l-3 4-3-4v5z" fill="#fff"/></svg>'
)
"""The tab's icon: an "M" on the console's blue."""


class ListenError(Exception):
    """The server cannot listen where it was asked to; the message says where and why."""


class ConsoleServer(Server):
    """`mala-tui serve`: the app for every run under a data dir, one process per browser tab."""

    def __init__(
        self,
        *,
        data_dir: Path,
        tab_command: TabCommand,
        token: str,
        host: str = "127.0.0.1",
        port: int = 8000,
        idle_timeout: float = IDLE_SECONDS,
    ) -> None:
        super().__init__("mala-tui", host=host, port=port, templates_path=TEMPLATES)
        self.idle_timeout = idle_timeout
        self.book = RunBook(data_dir)
        self.tab_command = tab_command
        self.guard = TokenGuard(token, cookie_name(port))
        self.tabs: set[Tab] = set()
        """The app processes open now, one per connected tab."""
        self.opened = 0
        """App processes started since the server started."""
        self._stopping: asyncio.Event | None = None
        self._heard: set[RequestHandler] = set()
        """Connections opened within the last `idle_timeout` that have sent a request."""

    # -- the aiohttp application -------------------------------------------------------------------

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.insert(0, self.guard.middleware)  # before every route, the static files too
        app.middlewares.insert(0, _guarded_headers)  # on every response, refusals included
        app.middlewares.insert(0, self._heard_from)  # any request, a refused one too
        app.router.add_get("/ws/{run}", self.handle_websocket, name="tab")
        # At a question: in the path, since textual-serve's page adds its own query
        # (`?width=..&height=..`) to the address it is given, whole.
        app.router.add_get("/ws/{run}/question/{question}", self.handle_websocket)
        app.router.add_get("/title/{run}", self.handle_title, name="title")
        app.router.add_get("/favicon.ico", _favicon, name="favicon")
        app.router.add_get("/favicon.svg", _favicon)
        return app

    @web.middleware
    async def _heard_from(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        self._heard.add(request.protocol)
        return await handler(request)

    def _connection(self, server: web.Server) -> RequestHandler:
        """A new connection's handler, closed unless it sends a request within `idle_timeout`.

        aiohttp's keep-alive timeout bounds the wait between two requests (a request
        begun and not finished included), but not, in every aiohttp this runs with, the
        wait for the first: this does.
        """
        connection = server()
        asyncio.get_running_loop().call_later(self.idle_timeout, self._unless_heard, connection)
        return connection

    def _unless_heard(self, connection: RequestHandler) -> None:
        if connection in self._heard:
            self._heard.discard(connection)  # from now on, keep-alive's timeout bounds it
        else:
            connection.force_close()

    async def on_startup(self, app: web.Application) -> None:
        """Nothing printed here: `run` announces the URL once the port is bound."""

    async def on_shutdown(self, app: web.Application) -> None:
        """Every tab's app quits (or is killed) before the server's process ends."""
        await asyncio.gather(*(tab.close() for tab in list(self.tabs)))

    async def run(self, announce: Callable[[int], object]) -> None:
        """Serve until `stop()`; `announce(port)` once listening (the port is known then).

        Raises:
            ListenError: the address cannot be listened on (in use, not this machine's).
        """
        self._stopping = asyncio.Event()
        asyncio.get_running_loop().set_exception_handler(_accept_trouble_in_one_line)
        runner = web.AppRunner(
            await self._make_app(),
            handle_signals=False,
            access_log=None,
            keepalive_timeout=self.idle_timeout,
        )
        await runner.setup()
        server = runner.server
        assert server is not None  # set up
        listening: asyncio.Server | None = None
        try:
            try:
                # Not aiohttp's TCPSite: each connection is watched from its opening.
                listening = await asyncio.get_running_loop().create_server(
                    lambda: self._connection(server), self.host, self.port
                )
            except OSError as exc:
                reason = exc.strerror or str(exc)
                raise ListenError(f"cannot listen on {self.host}:{self.port}: {reason}") from None
            port = int(listening.sockets[0].getsockname()[1])
            self.guard.cookie = cookie_name(port)
            announce(port)
            await self._stopping.wait()
        finally:
            if listening is not None:
                listening.close()  # no new connections; the runner closes the open ones
            await runner.cleanup()

    def stop(self) -> None:
        if self._stopping is not None:
            self._stopping.set()

    # -- pages -------------------------------------------------------------------------------------

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        """A run's app page (`?run=`), or the list of runs to choose from."""
        wanted = request.query.get("run")
        if wanted is None:
            choices = await asyncio.to_thread(self._choices)
            live = [choice for choice in choices if choice.live]
            if len(live) == 1:  # nothing to choose: the one live run, under its own address
                raise web.HTTPFound(location=_page_path(live[0].run_id))
            return self._picker(request, choices)
        choice = await self._find(wanted)
        font_size = clamped_int(request.query.get("fontsize"), 16, 6, 64)
        scheme = "wss" if request.secure else "ws"
        # Where the browser reached this page (Host), never where the server listens.
        websocket_url = f"{scheme}://{request.host}/ws/{quote(choice.run_id, safe='')}"
        question = request.query.get("question", "")
        said = ""
        if question:
            waits, said = choice.question_status(question)
            if waits:  # the tab's app opens at its dialog
                websocket_url += f"/question/{quote(question, safe='')}"
            else:
                named = shorten(flatten(clean(question, one_line=True)), 120)
                said = f"{named}: {said}"
        context = {
            "title": choice.title,
            "heading": choice.title,
            "static_url": "/static/",
            "websocket_url": websocket_url,
            "question": question,
            "question_said": said,
            "title_url": f"/title/{quote(choice.run_id, safe='')}",
            "title_every_ms": TITLE_EVERY_MS,
            "picker_url": "/",
            "font_size": font_size,
        }
        response = aiohttp_jinja2.render_template("app_index.html", request, context)
        response.headers["Cache-Control"] = "no-store"
        return response

    def _picker(self, request: web.Request, choices: list[RunChoice]) -> web.StreamResponse:
        live = [choice for choice in choices if choice.live]
        finished = [choice for choice in choices if not choice.live]
        context = {
            "title": f"mala-tui \u2014 {len(live)} live runs" if live else "mala-tui \u2014 runs",
            "live": [_row(choice) for choice in live],
            "finished": [_row(choice) for choice in finished[:FINISHED_LISTED]],
            "more": max(0, len(finished) - FINISHED_LISTED),
        }
        response = aiohttp_jinja2.render_template("picker.html", request, context)
        response.headers["Cache-Control"] = "no-store"
        return response

    async def handle_title(self, request: web.Request) -> web.StreamResponse:
        """The page's title, and the questions that wait, each with its page's address (the
        page raises a browser notification for each new one)."""
        choice = await self._find(request.match_info["run"])
        questions = [
            {"id": q.id, "notice": waiting_notice(q), "url": _page_path(choice.run_id, q.id)}
            for q in choice.questions
        ]
        return web.json_response(
            {"title": choice.title, "live": choice.live, "questions": questions},
            headers={"Cache-Control": "no-store"},
        )

    # -- a tab's app -------------------------------------------------------------------------------

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """The WebSocket of one tab: its app process runs while the socket is open."""
        if not _same_origin(request):
            # A page of another site cannot drive an app here, even with the cookie.
            raise web.HTTPForbidden(text="mala-tui serve: a WebSocket from another origin\n")
        choice = await self._find(request.match_info.get("run", ""))
        question = request.match_info.get("question")
        if question is not None and not choice.question_status(question)[0]:
            question = None  # answered meanwhile: the app opens on the run, as without it
        width = clamped_int(request.query.get("width"), 80, 10, 1000)
        height = clamped_int(request.query.get("height"), 24, 5, 1000)
        websocket = web.WebSocketResponse(heartbeat=15)
        await websocket.prepare(request)
        tab = Tab(
            self.tab_command(choice, question),
            write_bytes=websocket.send_bytes,
            write_str=websocket.send_str,
            close=websocket.close,
            download_manager=self.download_manager,
            debug=self.debug,
        )
        self.tabs.add(tab)
        self.opened += 1
        try:
            await tab.start(width, height)
            await pump(websocket, tab)
        except asyncio.CancelledError:
            await websocket.close()
        finally:
            await tab.close()
            self.tabs.discard(tab)
        return websocket

    # -- runs --------------------------------------------------------------------------------------

    def _choices(self) -> list[RunChoice]:
        """Every run (blocking: called off the event loop)."""
        try:
            return self.book.choices()
        except JournalError as exc:
            raise web.HTTPInternalServerError(text=f"mala-tui serve: {exc}\n") from None

    async def _find(self, run: str) -> RunChoice:
        """The run a request names, its journal read off the event loop; 404 if none."""
        try:
            choice = await asyncio.to_thread(self.book.find, run)
        except JournalError as exc:
            raise web.HTTPInternalServerError(text=f"mala-tui serve: {exc}\n") from None
        if choice is None:
            shown = shorten(flatten(clean(run, one_line=True)), 80)
            raise web.HTTPNotFound(text=f"mala-tui serve: no run {shown!r}; / lists them\n")
        return choice


GUARDED_HEADERS = {
    # No other site may frame the console and have a person click "allow" unawares.
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'",
    # The first address carries the token: no request from the page may pass it on.
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}


@web.middleware
async def _guarded_headers(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        response = await handler(request)
    except web.HTTPException as refusal:  # a refusal, a redirect: a response all the same
        refusal.headers.update(GUARDED_HEADERS)
        raise
    if not response.prepared:  # a WebSocket's headers are sent before its handler returns
        response.headers.update(GUARDED_HEADERS)
    return response


def _accept_trouble_in_one_line(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """A connection the server could not take (out of file descriptors: asyncio tries again
    a second later) is said in one line; anything else as asyncio says it."""
    exception = context.get("exception")
    if isinstance(exception, OSError) and context.get("message", "").startswith("socket.accept"):
        reason = exception.strerror or str(exception)
        print(f"mala-tui serve: cannot take a connection now: {reason}", file=sys.stderr)
        return
    loop.default_exception_handler(context)


async def _favicon(request: web.Request) -> web.StreamResponse:
    return web.Response(
        text=FAVICON, content_type="image/svg+xml", headers={"Cache-Control": "max-age=86400"}
    )


def _same_origin(request: web.Request) -> bool:
    """Whether the request's Origin (sent by every browser on a WebSocket) is this page's host."""
    origin = request.headers.get("Origin")
    if origin is None:
        return True  # not a browser; the token was checked all the same
    return urlsplit(origin).netloc.lower() == request.host.lower()


def _page_path(run_id: str, question: str = "") -> str:
    """A run's page, at `question`'s dialog when one is named (serve_record.page_address's
    path: the address a notification links to)."""
    return page_address("", run_id, question)


def _row(choice: RunChoice) -> dict[str, str]:
    started = (
        time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(choice.started_at))
        if choice.started_at
        else "?"
    )
    return {
        "run_id": choice.run_id,
        "url": _page_path(choice.run_id),
        "started": started,
        # Names come from the journal: one line each; the template escapes them for HTML.
        "sessions": shorten(flatten(clean(", ".join(choice.sessions), one_line=True)), 200),
        "waits": "; ".join(choice.waiting) or "nothing",
    }
