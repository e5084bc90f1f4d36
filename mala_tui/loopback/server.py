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
import json
import math
import socket
import struct
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from aiohttp import web

from mala_tui.loopback import wire
from mala_tui.loopback.agent import ScriptedAgent, ScriptedReply
from mala_tui.loopback.cache import DEFAULT_TTL_S, CacheSplit, PromptCache, write_price
from mala_tui.loopback.clearing import ClearToolUses, clear_tool_results, first_changed_block
from mala_tui.loopback.compaction import (
    Compacted,
    ServerCompaction,
    apply_compaction,
    compacted,
    summarised_body,
)
from mala_tui.loopback.faults import (
    BROKEN_STREAM_TEXT,
    HTTP_ERROR_STATUS,
    FaultBook,
    FaultSpec,
)
from mala_tui.loopback.request_log import RequestRecord, write_jsonl
from mala_tui.loopback.request_view import (
    RequestView,
    parse_request,
    session_id_of,
    subagent_named,
)
from mala_tui.loopback.scenario import Scenario
from mala_tui.loopback.tokens import (
    check_token_ratio,
    output_tokens,
    prompt_blocks,
    text_tokens,
)

DEFAULT_WINDOW = 200_000
# With the ``context-1m-2025-08-07`` beta the API allows a 1M-token prompt.
WINDOW_1M = 1_000_000
CONTEXT_1M_BETA = "context-1m"
# Claude Code's spelling of a model on its 1M window: "claude-sonnet-4-5[1m]".
MODEL_1M_SUFFIX = "[1m]"
MODEL_IDS = ("claude-sonnet-4-5",)
_HTTP_ERROR_BODIES = {
    "overloaded": ("overloaded_error", "Overloaded"),
    "api_error": ("api_error", "Internal server error"),
    "unauthorized": ("authentication_error", "invalid x-api-key"),
    "bad_request": ("invalid_request_error", "messages: text content blocks must be non-empty"),
}


AGENT_ID_HEADER = "x-claude-code-agent-id"
PARENT_AGENT_ID_HEADER = "x-claude-code-parent-agent-id"


@dataclass
class _Player:
    """One scripted agent answering on a route: the main agent, or one subagent."""

    agent: ScriptedAgent
    subagent: str | None = None
    """The subagent's name; None for the main agent."""
    requests: int = 0
    results_seen: set[tuple[str, str]] = field(default_factory=set)
    rereads_pending: dict[str, str] = field(default_factory=dict)
    """tool_use id -> fact, for re-reads whose result has not come back yet."""


@dataclass
class _Route:
    name: str
    main: _Player
    faults: FaultBook
    response_delay_s: float
    token_ratio: float = 1.0
    workspace: Path | None = None
    """Where the workspace is when a request does not say (the subagents' too)."""
    subagents: dict[str, _Player] = field(default_factory=dict)
    """The subagents started so far, by their agent id."""
    compacted: dict[str, Compacted] = field(default_factory=dict)
    """Each conversation's latest server-side compaction, by the client's session id
    (and the agent id, for a subagent's)."""

    @property
    def agent(self) -> ScriptedAgent:
        return self.main.agent

    @property
    def requests(self) -> int:
        return self.main.requests


@dataclass(frozen=True)
class _CompactionStep:
    """The server-side compaction's summarising step before an answer, as billed."""

    prompt: int
    split: CacheSplit
    produced: int


@dataclass(frozen=True)
class _Exchange:
    """One /v1/messages request being answered, and what the server made of it."""

    request: web.Request
    route: _Route
    player: _Player
    route_request: int
    view: RequestView
    body: Mapping[str, Any]
    prompt: int
    window: int
    model: str
    message_id: str
    cleared_results: int = 0
    reread_tokens: int = 0
    compaction: _CompactionStep | None = None
    agent_id: str | None = None
    parent_agent_id: str | None = None

    @property
    def request_id(self) -> str:
        return f"req_{self.message_id.removeprefix('msg_')}"


@dataclass(frozen=True)
class _Answer:
    """What the scripted agent replies, as billed, and the fault that shapes its delivery."""

    reply: ScriptedReply
    split: CacheSplit | None
    produced: int
    fault: FaultSpec | None


def _routes_from(
    scenarios: Scenario | Sequence[Scenario] | Mapping[str, Scenario],
) -> dict[str, Scenario]:
    if isinstance(scenarios, Scenario):
        return {scenarios.name: scenarios}
    if isinstance(scenarios, Mapping):
        routes = dict(scenarios)
    else:
        routes = {}
        for scenario in scenarios:
            if scenario.name in routes:
                raise ValueError(
                    f"two scenarios are named {scenario.name!r}: pass a mapping of route names"
                )
            routes[scenario.name] = scenario
    if not routes:
        raise ValueError("a loopback server needs at least one scenario")
    for name in routes:
        if not name or not all(ch.isalnum() or ch in "-_" for ch in name):
            raise ValueError(f"route name {name!r} must be letters, digits, '-' or '_'")
    return routes


class LoopbackServer:
    """An Anthropic-compatible model server playing scripted agents.

    ``scenarios``: one Scenario, several (routed by name), or a mapping route -> Scenario
    (two agents playing the same scenario need two routes: each route keeps its own
    request count, faults and record of results seen, which is what "redone" is judged by).
    ``window``: prompt tokens above this get HTTP 400 prompt-too-long (1M with the 1M beta).
    ``response_delay_s``: overrides every scenario's pacing (tests pass 0).
    ``workspace``: where the workspace is when a request does not state its working
    directory (one path for all routes or a mapping per route).
    ``keep_bodies``: keep each request body in its log record (memory-hungry on long runs).
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
        keep_bodies: bool = False,
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
        routes = _routes_from(scenarios)
        if time_scale is None:
            scales = {scenario.time_scale for scenario in routes.values()}
            if len(scales) > 1:
                raise ValueError(
                    "the scenarios scale time differently: pass one time_scale for the server"
                )
            time_scale = scales.pop()
        if not math.isfinite(time_scale) or time_scale <= 0:
            raise ValueError(f"time_scale must be above 0, got {time_scale!r}")
        self.time_scale = time_scale
        self.window = window
        self.clear_tool_uses = clear_tool_uses
        self.server_compaction = server_compaction
        self.host = host
        self._port = port
        self._keep_bodies = keep_bodies
        self._clock = clock
        self._wall_clock = wall_clock
        self._cache = PromptCache(ttl_s=cache_ttl_s)
        self._write_price = write_price(cache_ttl_s)
        self._routes: dict[str, _Route] = {}
        for name, scenario in routes.items():
            fallback = workspace.get(name) if isinstance(workspace, Mapping) else workspace
            delay = scenario.response_delay_s if response_delay_s is None else response_delay_s
            self._routes[name] = _Route(
                name=name,
                main=_Player(ScriptedAgent(scenario, fallback_workspace=fallback)),
                workspace=fallback,
                faults=FaultBook(scenario.faults),
                response_delay_s=delay,
                token_ratio=scenario.token_ratio if token_ratio is None else token_ratio,
            )
        self._records: list[RequestRecord] = []
        self._count_tokens_requests = 0
        self._runner: web.AppRunner | None = None
        self._closing: asyncio.Event | None = None
        self._abandoned: list[int] = []
        # Replaced on every change: waiters hold the old one and wake when it is set.
        self._changed = asyncio.Event()
        self._base_url: str | None = None

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self) -> str:
        """Listen (port 0 picks a free one) and return the base URL."""
        if self._runner is not None:
            raise RuntimeError("the loopback server is already started")
        self._closing = asyncio.Event()
        self._changed = asyncio.Event()
        app = web.Application(client_max_size=256 * 1024 * 1024, middlewares=[_api_errors])
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
        return list(self._records)

    @property
    def count_tokens_requests(self) -> int:
        return self._count_tokens_requests

    def write_log(self, path: Path) -> None:
        """Write the request log as JSONL, one record a line."""
        write_jsonl(self._records, path)

    def add_fault(self, fault: FaultSpec, route: str | None = None) -> None:
        """Arm a fault on a route (the only route when there is one)."""
        self._routes[route or self._only_route()].faults.add(fault)

    @property
    def abandoned_requests(self) -> tuple[int, ...]:
        """Indexes of requests whose client went away before the answer was complete."""
        return tuple(self._abandoned)

    async def wait_for(
        self, predicate: Callable[[list[RequestRecord]], bool]
    ) -> list[RequestRecord]:
        """Wait until ``predicate(request_log)`` holds (checked at every log change,
        including a client going away); return the log then.

        Bound it with ``asyncio.timeout``: it waits as long as it takes.
        """
        while not predicate(self.request_log):
            await self._changed.wait()
        return self.request_log

    def simulated_now(self) -> float:
        """The clock the cache lives by: ``clock`` scaled by ``time_scale``."""
        return self._clock() * self.time_scale

    @property
    def cache_ttl_s(self) -> float:
        """The prompt cache's lifetime, in simulated seconds."""
        return self._cache.ttl_s

    def _notify(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    # -- handlers ------------------------------------------------------------------------

    def _only_route(self) -> str:
        if len(self._routes) != 1:
            raise KeyError(f"several routes ({', '.join(self._routes)}): name one")
        return next(iter(self._routes))

    def _route_of(self, request: web.Request) -> _Route:
        name = request.match_info.get("route")
        if name is None:
            try:
                name = self._only_route()
            except KeyError as exc:
                raise _ApiError(
                    404, "not_found_error", f"{exc.args[0]}; use /agents/<route>"
                ) from exc
        route = self._routes.get(name)
        if route is None:
            raise _ApiError(
                404, "not_found_error", f"no route {name!r}; routes: {', '.join(self._routes)}"
            )
        return route

    async def _health(self, request: web.Request) -> web.Response:
        return web.Response(
            text=f"mala-tui loopback model server; routes: {', '.join(self._routes)}\n"
        )

    async def _not_found(self, request: web.Request) -> web.Response:
        raise _ApiError(
            404, "not_found_error", f"{request.method} {request.path} is not served here"
        )

    async def _models(self, request: web.Request) -> web.Response:
        self._route_of(request)
        data = [
            {
                "type": "model",
                "id": model,
                "display_name": model,
                "created_at": "2025-09-29T00:00:00Z",
            }
            for model in MODEL_IDS
        ]
        return web.json_response(
            {"data": data, "has_more": False, "first_id": data[0]["id"], "last_id": data[-1]["id"]}
        )

    async def _count_tokens(self, request: web.Request) -> web.Response:
        route = self._route_of(request)
        body = await _json_body(request)
        self._count_tokens_requests += 1
        blocks = prompt_blocks(body, route.token_ratio)
        return web.json_response({"input_tokens": sum(b.tokens for b in blocks)})

    def window_for(self, request: web.Request, model: str) -> int:
        """The window a request gets: 1M with the 1M beta or a ``[1m]`` model, as the API."""
        beta = request.headers.get("anthropic-beta", "")
        if CONTEXT_1M_BETA in beta or model.lower().endswith(MODEL_1M_SUFFIX):
            return max(self.window, WINDOW_1M)
        return self.window

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        route = self._route_of(request)
        body = client_body = await _json_body(request)
        agent_id = request.headers.get(AGENT_ID_HEADER) or None
        player = route.main if agent_id is None else _subagent(route, agent_id, body)
        player.requests += 1
        ratio = route.token_ratio
        compaction = ServerCompaction.from_request(body) or self.server_compaction
        conversation = session_id_of(body, request.headers) or ""
        if agent_id is not None:
            # A subagent shares its main agent's session id, not its conversation.
            conversation += f"#{agent_id}"
        earlier = route.compacted.get(conversation) if compaction is not None else None
        if earlier is not None:
            body = apply_compaction(body, earlier) or body
        blocks = prompt_blocks(body, ratio)
        invalid_from: int | None = None
        cleared = 0
        edit = ClearToolUses.from_request(body) or self.clear_tool_uses
        if edit is not None:
            edited = clear_tool_results(
                edit, body, sum(b.tokens for b in blocks), lambda text: text_tokens(text, ratio)
            )
            if edited.cleared_results:
                cleared, body = edited.cleared_results, edited.body
                before, blocks = blocks, prompt_blocks(body, ratio)
                invalid_from = first_changed_block(before, blocks)
        view = parse_request(body, request.headers)
        model = view.model or MODEL_IDS[0]
        exchange = _Exchange(
            request=request,
            route=route,
            player=player,
            route_request=player.requests,
            view=view,
            body=body,
            prompt=sum(block.tokens for block in blocks),
            window=self.window_for(request, model),
            model=model,
            message_id=f"msg_{uuid.uuid4().hex[:24]}",
            cleared_results=cleared,
            reread_tokens=self._price_rereads(player, route.token_ratio, view),
            agent_id=agent_id,
            parent_agent_id=request.headers.get(PARENT_AGENT_ID_HEADER) or None,
        )
        if exchange.prompt > exchange.window:
            message = wire.prompt_too_long_message(exchange.prompt, exchange.window)
            self._record(exchange, None, status=400, error=message)
            raise _ApiError(400, "invalid_request_error", message)
        # What the client sent, seen before a compaction summarises it: the results it
        # carries were seen, whatever the model reads next.
        sent = view
        summarised: Compacted | None = None
        if compaction is not None and exchange.prompt > compaction.trigger_input_tokens:
            # Past the trigger: the conversation is summarised first (billed as a step of
            # its own), and the answer is made on the summary alone.
            summary = player.agent.compaction_summary(view)
            step = _CompactionStep(
                exchange.prompt,
                self._cache.peek(blocks, self.simulated_now()),
                output_tokens(({"type": "text", "text": summary},), ratio),
            )
            summarised = compacted(client_body, summary)
            body = summarised_body(body, summary)
            blocks, invalid_from = prompt_blocks(body, ratio), None
            view = parse_request(body, request.headers)
            exchange = replace(
                exchange,
                view=view,
                body=body,
                prompt=sum(block.tokens for block in blocks),
                compaction=step,
            )

        reply = player.agent.reply(view)
        fault = (
            route.faults.take(player.requests, reply.step.id if reply.step else None)
            if player is route.main
            else None
        )
        if fault is not None and fault.kind in HTTP_ERROR_STATUS:
            status = HTTP_ERROR_STATUS[fault.kind]
            error_type, message = _HTTP_ERROR_BODIES[fault.kind]
            self._record(exchange, _Answer(reply, None, 0, fault), status=status, error=message)
            raise _ApiError(status, error_type, message)
        if summarised is not None:
            route.compacted[conversation] = summarised

        split = self._cache.bill(blocks, self.simulated_now(), invalid_from=invalid_from)
        answer = _Answer(reply, split, output_tokens(reply.content, ratio), fault)
        step_key = reply.step.key if reply.step is not None else None
        # A re-read fetches a fact on purpose, and an operator's step is asked for: neither
        # is redone work.
        redone = (
            reply.kind == "tool_use"
            and reply.reread is None
            and not reply.operator
            and step_key in player.results_seen
        )
        if reply.reread is not None:
            for block in reply.content:
                if block.get("type") == "tool_use":
                    player.rereads_pending[str(block["id"])] = reply.reread
        for call in sent.calls:
            if call.succeeded:
                player.results_seen.add((call.name, sent.primary_argument(call)))
        self._record(exchange, answer, status=200, redone=redone)
        index = len(self._records)
        try:
            if view.stream:
                return await self._stream(exchange, answer)
            return await self._respond_whole(exchange, answer)
        except asyncio.CancelledError:
            # handler_cancellation: the client hung up while we were answering.
            self._abandoned.append(index)
            self._notify()
            raise
        except ConnectionResetError:
            # The client went away mid-stream (an interrupt, a disconnect): nothing to
            # answer any more, and nothing wrong with the server.
            self._abandoned.append(index)
            self._notify()
            return web.Response(status=499)

    @staticmethod
    def _price_rereads(player: _Player, token_ratio: float, view: RequestView) -> int:
        """Tokens of the re-read results this request brings back (each priced once)."""
        tokens = 0
        for call in view.calls:
            if call.id in player.rereads_pending and call.result_text is not None:
                del player.rereads_pending[call.id]
                tokens += text_tokens(call.result_text, token_ratio)
        return tokens

    def _record(
        self,
        exchange: _Exchange,
        answer: _Answer | None,
        *,
        status: int,
        redone: bool = False,
        error: str | None = None,
    ) -> None:
        view = exchange.view
        # An answer refused with an HTTP error plays no step and bills nothing.
        reply = answer.reply if answer is not None and status == 200 else None
        split = answer.split if answer is not None else None
        fault = answer.fault if answer is not None else None
        # A compaction is billed with its answer: refused, neither happened.
        step = exchange.compaction if status == 200 else None
        record = RequestRecord(
            index=len(self._records) + 1,
            route_request=exchange.route_request,
            time=self._wall_clock(),
            route=exchange.route.name,
            scenario=exchange.route.agent.scenario.name,
            session_id=view.session_id,
            stream=view.stream,
            message_count=view.message_count,
            prompt_tokens=exchange.prompt,
            input_tokens=split.input_tokens if split else 0,
            cache_creation_input_tokens=split.cache_creation_input_tokens if split else 0,
            cache_read_input_tokens=split.cache_read_input_tokens if split else 0,
            output_tokens=answer.produced if answer is not None else 0,
            masked_placeholders=view.masked_placeholders,
            step_id=reply.step.id if reply and reply.step else None,
            step_label=(reply.note or reply.step.label) if reply and reply.step else None,
            redone=redone,
            response_kind=reply.kind if reply else "error",
            status=status,
            fault=fault.describe() if fault else None,
            error=error,
            window=exchange.window,
            done_steps=reply.done_count if reply else 0,
            reread=reply.reread if reply else None,
            reread_tokens=exchange.reread_tokens,
            cleared_results=exchange.cleared_results,
            token_ratio=exchange.route.token_ratio,
            body=exchange.body if self._keep_bodies else None,
            model=exchange.model,
            operator_step=reply.operator if reply else False,
            compaction_prompt_tokens=step.prompt if step is not None else 0,
            compaction_cache_read_input_tokens=(
                step.split.cache_read_input_tokens if step is not None else 0
            ),
            compaction_output_tokens=step.produced if step is not None else 0,
            cache_write_price=self._write_price,
            agent_id=exchange.agent_id,
            parent_agent_id=exchange.parent_agent_id,
            subagent=exchange.player.subagent,
        )
        self._records.append(record)
        self._notify()

    # -- responding ----------------------------------------------------------------------

    async def _pause(self, seconds: float | None) -> bool:
        """Wait ``seconds`` (None: until the server stops). True if the server is stopping."""
        assert self._closing is not None
        try:
            await asyncio.wait_for(self._closing.wait(), timeout=seconds)
        except TimeoutError:
            return False
        return True

    async def _stream(self, exchange: _Exchange, answer: _Answer) -> web.StreamResponse:
        request, fault, split = exchange.request, answer.fault, answer.split
        assert split is not None
        kind = fault.kind if fault is not None else None
        if fault is not None and kind == "stall_before_bytes" and await self._pause(fault.seconds):
            return _hang_up(request)
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
                "request-id": exchange.request_id,
            }
        )
        await response.prepare(request)
        if kind == "broken_stream":
            await response.write(_broken_event())
            await response.write_eof()
            return response
        await response.write(
            wire.message_start(exchange.message_id, exchange.model, split).encode()
        )
        await response.write(wire.PING.encode())
        stalled = fault is not None and kind == "stall_after_message_start"
        if stalled and fault is not None and await self._pause(fault.seconds):
            return _hang_up(request)
        delay = exchange.route.response_delay_s
        if delay and await self._pause(delay):
            return _hang_up(request)
        rate = fault.tokens_per_second if fault is not None else None
        for index, block in enumerate(answer.reply.content):
            for event in wire.content_events(index, block):
                await response.write(event.encode())
                if kind == "connection_reset" and event.name == "content_block_delta":
                    return _hang_up(request, reset=True)
                if rate and event.tokens and await self._pause(event.tokens / rate):
                    return _hang_up(request)
        for event in wire.message_end(answer.reply.stop_reason, split, answer.produced):
            await response.write(event.encode())
        await response.write_eof()
        return response

    async def _respond_whole(self, exchange: _Exchange, answer: _Answer) -> web.StreamResponse:
        request, fault, split = exchange.request, answer.fault, answer.split
        assert split is not None
        kind = fault.kind if fault is not None else None
        stalled = kind in {"stall_before_bytes", "stall_after_message_start"}
        if fault is not None and stalled and await self._pause(fault.seconds):
            return _hang_up(request)
        if kind == "connection_reset":
            return _hang_up(request, reset=True)
        if kind == "broken_stream":
            return web.Response(body=_broken_event(), content_type="text/event-stream")
        delay = exchange.route.response_delay_s
        if fault is not None and fault.tokens_per_second:
            delay += answer.produced / fault.tokens_per_second
        if delay and await self._pause(delay):
            return _hang_up(request)
        reply = answer.reply
        body = wire.message_body(
            exchange.message_id,
            exchange.model,
            reply.content,
            stop_reason=reply.stop_reason,
            split=split,
            output_tokens=answer.produced,
        )
        return web.json_response(body, headers={"request-id": exchange.request_id})


def _subagent(route: _Route, agent_id: str, body: Mapping[str, Any]) -> _Player:
    """The player answering a subagent's request: the one already playing this agent id,
    or, on its first request, a new one for the subagent its first user message names."""
    player = route.subagents.get(agent_id)
    if player is not None:
        return player
    first = parse_request(body).first_user_text
    name = subagent_named(first)
    scenario = route.agent.scenario.subagent(name) if name is not None else None
    if name is None or scenario is None:
        known = ", ".join(route.agent.scenario.subagent_names) or "none"
        said = f"names subagent {name!r}" if name is not None else "names no [subagent NAME]"
        raise _ApiError(
            400,
            "invalid_request_error",
            f"agent {agent_id}: its first message {said}; this scenario's subagents: {known}",
        )
    player = _Player(ScriptedAgent(scenario, fallback_workspace=route.workspace), subagent=name)
    route.subagents[agent_id] = player
    return player


class _ApiError(Exception):
    """Raised by handlers; answered with the API's JSON error body by ``_api_errors``."""

    def __init__(self, status: int, error_type: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.message = message


@web.middleware
async def _api_errors(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    try:
        return await handler(request)
    except _ApiError as error:
        return web.json_response(
            wire.error_body(error.error_type, error.message),
            status=error.status,
            headers={"request-id": f"req_{uuid.uuid4().hex[:24]}"},
        )


async def _json_body(request: web.Request) -> Mapping[str, Any]:
    try:
        body = json.loads(await request.read())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise _ApiError(400, "invalid_request_error", f"request body is not JSON: {exc}") from exc
    if not isinstance(body, Mapping):
        raise _ApiError(400, "invalid_request_error", "request body must be a JSON object")
    return body


def _broken_event() -> bytes:
    """A message_start whose data is not JSON, escapes and a key inside (broken_stream)."""
    return f"event: message_start\ndata: {{broken {BROKEN_STREAM_TEXT}\n\n".encode()


def _hang_up(request: web.Request, *, reset: bool = False) -> web.StreamResponse:
    """Drop the connection; with ``reset`` the client sees a TCP RST, not a clean close."""
    transport = request.transport
    if transport is not None:
        sock = transport.get_extra_info("socket")
        if reset and isinstance(sock, socket.socket):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()
    return web.Response(status=499)
