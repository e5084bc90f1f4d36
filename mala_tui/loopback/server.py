"""The loopback model server: the Anthropic Messages API on 127.0.0.1, played by scripts.

Runs inside the caller's asyncio loop (the Textual app and the agent runtime share one),
or standalone through ``mala-tui loopback serve``. Several scenarios share one server, each
under its own path prefix, so ``ANTHROPIC_BASE_URL=http://127.0.0.1:PORT/agents/<route>``
picks the scenario (the CLI keeps the prefix: it calls ``<prefix>/v1/messages?beta=true``).
With a single route the bare base URL serves it too.

Per request: estimate the prompt (tokens.py, at the route's token density), put the
conversation's server-side compaction summary in place of what it covered when that is on
(compaction.py), apply the API's tool-result clearing when it is on (clearing.py), refuse
it above the window as the API does (1M with the 1M beta or a ``[1m]`` model name),
summarise the conversation first when it passes the compaction trigger, let the route's
scripted agent decide a reply (agent.py), apply a fault if one is due (faults.py), bill the
prompt against the simulated cache (cache.py, on the scenario's scaled clock), log it
(request_log.py) and stream the answer (wire.py).

A request carrying ``x-claude-code-agent-id`` is a subagent's, started by the route's main
agent through Claude Code's Agent tool: the subagent is the one its first user message
names (``[subagent NAME]``), played by a scripted agent of its own (its steps, its report
as final answer), kept per agent id and billed like the main agent. Faults apply to the
main agent's requests only.
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

from aiohttp import web

from mala_tui.loopback import wire
from mala_tui.loopback.api_edits import edited_prompt, summarise_first
from mala_tui.loopback.api_errors import (
    HTTP_ERROR_BODIES,
    ApiError,
    api_errors,
    check_breakpoints,
    json_body,
)
from mala_tui.loopback.cache import DEFAULT_TTL_S, PromptCache, write_price
from mala_tui.loopback.clearing import ClearToolUses
from mala_tui.loopback.compaction import Compacted, ServerCompaction
from mala_tui.loopback.exchange import (
    Answer,
    Exchange,
    Route,
    make_routes,
    new_exchange,
    note_played,
    only_route,
    request_record,
    route_of,
    shared_time_scale,
    subagent_player,
    window_for,
)
from mala_tui.loopback.faults import HTTP_ERROR_STATUS, FaultSpec
from mala_tui.loopback.request_book import RequestBook
from mala_tui.loopback.request_log import RequestRecord
from mala_tui.loopback.request_view import session_id_of
from mala_tui.loopback.responding import deliver, models_response
from mala_tui.loopback.scenario import Scenario
from mala_tui.loopback.tokens import check_token_ratio, output_tokens, prompt_blocks

DEFAULT_WINDOW = 200_000
MODEL_IDS = ("claude-sonnet-4-5",)
#: Set to "1", every server keeps its request bodies in its log unless told otherwise
#: (``keep_bodies``): a benchmark bills a run's requests again from them (what-if billing).
KEEP_BODIES_ENV = "MALA_TUI_LOOPBACK_KEEP_BODIES"
AGENT_ID_HEADER = "x-claude-code-agent-id"
PARENT_AGENT_ID_HEADER = "x-claude-code-parent-agent-id"


class LoopbackServer:
    """An Anthropic-compatible model server playing scripted agents.

    ``scenarios``: one Scenario, several (routed by name), or a mapping route -> Scenario
    (two agents playing the same scenario need two routes: each route keeps its own
    request count, faults and record of results seen, which is what "redone" is judged by).
    ``window``: prompt tokens above this get HTTP 400 prompt-too-long (1M with the 1M beta).
    ``response_delay_s``: overrides every scenario's pacing (tests pass 0).
    ``workspace``: where the workspace is when a request does not state its working
    directory (one path for all routes or a mapping per route).
    ``keep_bodies``: keep each request body in its log record (memory-hungry on long runs;
    by default, when ``MALA_TUI_LOOPBACK_KEEP_BODIES`` is "1").
    ``token_ratio``: token density for every route, overriding the scenarios' own
    ``token_ratio`` (counts are ``ratio`` times chars/4); ValueError unless positive, finite.
    ``clear_tool_uses``: apply the API's tool-result clearing to every request (a request's
    own ``context_management`` edit wins).
    ``server_compaction``: apply the API's server-side compaction to every request (a
    request's own ``compact_20260112`` edit wins).
    ``cache_ttl_s``: the prompt cache's lifetime in simulated seconds (300; 3,600 for the
    1-hour cache, whose writes are billed at 2x).
    ``time_scale``: simulated seconds per second of ``clock``, for the cache's lifetime
    (default: the scenarios', which must agree; 1 when they say nothing).
    """

    def __init__(
        self,
        scenarios: Scenario | Sequence[Scenario] | Mapping[str, Scenario],
        *,
        window: int = DEFAULT_WINDOW,
        host: str = "127.0.0.1",
        port: int = 0,
        response_delay_s: float | None = None,
        workspace: Path | Mapping[str, Path] | None = None,
        keep_bodies: bool | None = None,
        token_ratio: float | None = None,
        clear_tool_uses: ClearToolUses | None = None,
        server_compaction: ServerCompaction | None = None,
        cache_ttl_s: float = DEFAULT_TTL_S,
        time_scale: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        if token_ratio is not None:
            token_ratio = check_token_ratio(token_ratio)
        if not math.isfinite(cache_ttl_s) or cache_ttl_s <= 0:
            raise ValueError(f"the cache's lifetime must be above 0 seconds, got {cache_ttl_s!r}")
        self._routes = make_routes(
            scenarios,
            workspace=workspace,
            response_delay_s=response_delay_s,
            token_ratio=token_ratio,
        )
        self.time_scale = shared_time_scale(self._routes, time_scale)
        self.window = window
        self.clear_tool_uses = clear_tool_uses
        self.server_compaction = server_compaction
        self.host = host
        self._port = port
        self._keep_bodies = (
            os.environ.get(KEEP_BODIES_ENV) == "1" if keep_bodies is None else keep_bodies
        )
        self._clock = clock
        self._wall_clock = wall_clock
        self._cache = PromptCache(ttl_s=cache_ttl_s)
        self._write_price = write_price(cache_ttl_s)
        self._book = RequestBook()
        self._count_tokens_requests = 0
        self._runner: web.AppRunner | None = None
        self._closing: asyncio.Event | None = None
        self._base_url: str | None = None

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self) -> str:
        """Listen (port 0 picks a free one) and return the base URL."""
        if self._runner is not None:
            raise RuntimeError("the loopback server is already started")
        self._closing = asyncio.Event()
        self._book.restart()
        app = web.Application(client_max_size=256 * 1024 * 1024, middlewares=[api_errors])
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_post("/v1/messages/count_tokens", self._count_tokens)
        app.router.add_post("/agents/{route}/v1/messages", self._messages)
        app.router.add_post("/agents/{route}/v1/messages/count_tokens", self._count_tokens)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/agents/{route}/v1/models", self._models)
        app.router.add_get("/", self._health)
        app.router.add_route("*", "/{tail:.*}", self._not_found)
        # handler_cancellation: a client that hangs up cancels its handler, which is how a
        # stall "until the client goes away" ends.
        runner = web.AppRunner(
            app, handler_cancellation=True, shutdown_timeout=2.0, access_log=None
        )
        await runner.setup()
        site = web.TCPSite(runner, self.host, self._port)
        await site.start()
        self._runner = runner
        self._port = int(runner.addresses[0][1])
        self._base_url = f"http://{self.host}:{self._port}"
        return self._base_url

    async def stop(self) -> None:
        """End stalls, close connections, stop listening. Safe to call twice."""
        if self._runner is None:
            return
        if self._closing is not None:
            self._closing.set()
        runner, self._runner = self._runner, None
        await runner.cleanup()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    # -- public state --------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``; serves the route directly when there is only one."""
        if self._base_url is None:
            raise RuntimeError("the loopback server is not started")
        return self._base_url

    @property
    def port(self) -> int:
        return self._port

    @property
    def routes(self) -> tuple[str, ...]:
        return tuple(self._routes)

    def url_for(self, route: str) -> str:
        """The base URL that selects one route: ``http://127.0.0.1:PORT/agents/<route>``."""
        if route not in self._routes:
            raise KeyError(f"no route {route!r}; routes: {', '.join(self._routes)}")
        return f"{self.base_url}/agents/{route}"

    def scenario(self, route: str) -> Scenario:
        return self._routes[route].agent.scenario

    @property
    def request_log(self) -> list[RequestRecord]:
        """Every ``/v1/messages`` request so far, in arrival order (a copy)."""
        return self._book.records

    @property
    def count_tokens_requests(self) -> int:
        return self._count_tokens_requests

    def write_log(self, path: Path) -> None:
        """Write the request log as JSONL, one record a line."""
        self._book.write(path)

    def add_fault(self, fault: FaultSpec, route: str | None = None) -> None:
        """Arm a fault on a route (the only route when there is one)."""
        self._routes[route or self._only_route()].faults.add(fault)

    @property
    def abandoned_requests(self) -> tuple[int, ...]:
        """Indexes of requests whose client went away before the answer was complete."""
        return self._book.abandoned

    async def wait_for(
        self, predicate: Callable[[list[RequestRecord]], bool]
    ) -> list[RequestRecord]:
        """Wait until ``predicate(request_log)`` holds (checked at every log change,
        including a client going away); return the log then.

        Bound it with ``asyncio.timeout``: it waits as long as it takes.
        """
        return await self._book.wait_for(predicate)

    def simulated_now(self) -> float:
        """The clock the cache lives by: ``clock`` scaled by ``time_scale``."""
        return self._clock() * self.time_scale

    @property
    def cache_ttl_s(self) -> float:
        """The prompt cache's lifetime, in simulated seconds."""
        return self._cache.ttl_s

    # -- handlers ------------------------------------------------------------------------

    def _only_route(self) -> str:
        return only_route(self._routes)

    def _route_of(self, request: web.Request) -> Route:
        return route_of(self._routes, request.match_info.get("route"))

    async def _health(self, request: web.Request) -> web.Response:
        return web.Response(
            text=f"mala-tui loopback model server; routes: {', '.join(self._routes)}\n"
        )

    async def _not_found(self, request: web.Request) -> web.Response:
        raise ApiError(
            404, "not_found_error", f"{request.method} {request.path} is not served here"
        )

    async def _models(self, request: web.Request) -> web.Response:
        self._route_of(request)
        return models_response(MODEL_IDS)

    async def _count_tokens(self, request: web.Request) -> web.Response:
        route = self._route_of(request)
        body = await json_body(request)
        self._count_tokens_requests += 1
        blocks = prompt_blocks(body, route.token_ratio)
        return web.json_response({"input_tokens": sum(b.tokens for b in blocks)})

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        route = self._route_of(request)
        client_body = await json_body(request)
        check_breakpoints(client_body)
        agent_id = request.headers.get(AGENT_ID_HEADER) or None
        player = route.main if agent_id is None else subagent_player(route, agent_id, client_body)
        player.requests += 1
        compaction = ServerCompaction.from_request(client_body) or self.server_compaction
        conversation = session_id_of(client_body, request.headers) or ""
        if agent_id is not None:
            # A subagent shares its main agent's session id, not its conversation.
            conversation += f"#{agent_id}"
        edited = edited_prompt(
            client_body,
            route.token_ratio,
            earlier=route.compacted.get(conversation) if compaction is not None else None,
            clearing=ClearToolUses.from_request(client_body) or self.clear_tool_uses,
        )
        exchange = new_exchange(
            request,
            player,
            edited.body,
            edited.blocks,
            route=route,
            window=window_for(request.headers, edited.body, self.window),
            cleared=edited.cleared,
            default_model=MODEL_IDS[0],
            agent_id=agent_id,
            parent_agent_id=request.headers.get(PARENT_AGENT_ID_HEADER) or None,
        )
        if exchange.prompt > exchange.window:
            message = wire.prompt_too_long_message(exchange.prompt, exchange.window)
            self._record(exchange, None, status=400, error=message)
            raise ApiError(400, "invalid_request_error", message)
        # What the client sent, seen before a compaction summarises it: the results it
        # carries were seen, whatever the model reads next.
        sent = exchange.view
        blocks, invalid_from = edited.blocks, edited.invalid_from
        summarised: Compacted | None = None
        if compaction is not None and exchange.prompt > compaction.trigger_input_tokens:
            exchange, blocks, summarised = summarise_first(
                exchange, blocks, client_body, self._cache, self.simulated_now()
            )
            invalid_from = None

        reply = player.agent.reply(exchange.view)
        fault = (
            route.faults.take(player.requests, reply.step.id if reply.step else None)
            if player is route.main
            else None
        )
        if fault is not None and fault.kind in HTTP_ERROR_STATUS:
            status = HTTP_ERROR_STATUS[fault.kind]
            error_type, message = HTTP_ERROR_BODIES[fault.kind]
            self._record(exchange, Answer(reply, None, 0, fault), status=status, error=message)
            raise ApiError(status, error_type, message)
        if summarised is not None:
            route.compacted[conversation] = summarised

        split = self._cache.bill(blocks, self.simulated_now(), invalid_from=invalid_from)
        answer = Answer(reply, split, output_tokens(reply.content, route.token_ratio), fault)
        redone = note_played(player, sent, reply)
        self._record(exchange, answer, status=200, redone=redone)
        return await deliver(exchange, answer, self._pause, self._book)

    def _record(
        self,
        exchange: Exchange,
        answer: Answer | None,
        *,
        status: int,
        redone: bool = False,
        error: str | None = None,
    ) -> None:
        record = request_record(
            exchange,
            answer,
            index=len(self._book) + 1,
            time=self._wall_clock(),
            status=status,
            redone=redone,
            error=error,
            keep_body=self._keep_bodies,
            write_price=self._write_price,
        )
        self._book.add(record)

    async def _pause(self, seconds: float | None) -> bool:
        """Wait ``seconds`` (None: until the server stops). True if the server is stopping."""
        assert self._closing is not None
        try:
            await asyncio.wait_for(self._closing.wait(), timeout=seconds)
        except TimeoutError:
            return False
        return True
