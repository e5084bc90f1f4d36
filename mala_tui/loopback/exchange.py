"""One request being answered: who plays it, what the server made of it, how it is logged.

A route is one scenario's main agent and the subagents it started; each is a ``Player``
(a scripted agent and what it has seen). An ``Exchange`` is a request as the server
understood it (its prompt after the API's edits, its window, the re-reads it brings
back), an ``Answer`` what the scripted agent replied and how it was billed, and
``request_record`` the line both make in the request log.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from mala_tui.loopback.agent import ScriptedAgent, ScriptedReply
from mala_tui.loopback.api_errors import ApiError
from mala_tui.loopback.cache import CacheSplit
from mala_tui.loopback.compaction import Compacted
from mala_tui.loopback.faults import FaultBook, FaultSpec
from mala_tui.loopback.request_log import RequestRecord
from mala_tui.loopback.request_view import RequestView, parse_request, subagent_named
from mala_tui.loopback.scenario import Scenario
from mala_tui.loopback.tokens import PromptBlock, text_tokens

# With the ``context-1m-2025-08-07`` beta the API allows a 1M-token prompt.
WINDOW_1M = 1_000_000
CONTEXT_1M_BETA = "context-1m"
# Claude Code's spelling of a model on its 1M window: "claude-sonnet-4-5[1m]".
MODEL_1M_SUFFIX = "[1m]"


@dataclass
class Player:
    """One scripted agent answering on a route: the main agent, or one subagent."""

    agent: ScriptedAgent
    subagent: str | None = None
    """The subagent's name; None for the main agent."""
    requests: int = 0
    results_seen: set[tuple[str, str]] = field(default_factory=set)
    rereads_pending: dict[str, str] = field(default_factory=dict)
    """tool_use id -> fact, for re-reads whose result has not come back yet."""


@dataclass
class Route:
    name: str
    main: Player
    faults: FaultBook
    response_delay_s: float
    token_ratio: float = 1.0
    workspace: Path | None = None
    """Where the workspace is when a request does not say (the subagents' too)."""
    subagents: dict[str, Player] = field(default_factory=dict)
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
class CompactionStep:
    """The server-side compaction's summarising step before an answer, as billed."""

    prompt: int
    split: CacheSplit
    produced: int


@dataclass(frozen=True)
class Exchange:
    """One /v1/messages request being answered, and what the server made of it."""

    request: web.Request
    route: Route
    player: Player
    route_request: int
    view: RequestView
    body: Mapping[str, Any]
    prompt: int
    window: int
    model: str
    message_id: str
    cleared_results: int = 0
    reread_tokens: int = 0
    compaction: CompactionStep | None = None
    agent_id: str | None = None
    parent_agent_id: str | None = None
    head: int = 0
    """Tokens of the tools and the system prompt, before the first message."""

    @property
    def request_id(self) -> str:
        return f"req_{self.message_id.removeprefix('msg_')}"


@dataclass(frozen=True)
class Answer:
    """What the scripted agent replies, as billed, and the fault that shapes its delivery."""

    reply: ScriptedReply
    split: CacheSplit | None
    produced: int
    fault: FaultSpec | None


def routes_from(
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


def make_routes(
    scenarios: Scenario | Sequence[Scenario] | Mapping[str, Scenario],
    *,
    workspace: Path | Mapping[str, Path] | None,
    response_delay_s: float | None,
    token_ratio: float | None,
) -> dict[str, Route]:
    """A route for each scenario, its main agent ready to play, by route name."""
    routes: dict[str, Route] = {}
    for name, scenario in routes_from(scenarios).items():
        fallback = workspace.get(name) if isinstance(workspace, Mapping) else workspace
        delay = scenario.response_delay_s if response_delay_s is None else response_delay_s
        routes[name] = Route(
            name=name,
            main=Player(ScriptedAgent(scenario, fallback_workspace=fallback)),
            workspace=fallback,
            faults=FaultBook(scenario.faults),
            response_delay_s=delay,
            token_ratio=scenario.token_ratio if token_ratio is None else token_ratio,
        )
    return routes


def shared_time_scale(routes: Mapping[str, Route], time_scale: float | None) -> float:
    """The server's time scale: the one given, else the scenarios' own, which must agree."""
    if time_scale is None:
        scales = {route.agent.scenario.time_scale for route in routes.values()}
        if len(scales) > 1:
            raise ValueError(
                "the scenarios scale time differently: pass one time_scale for the server"
            )
        time_scale = scales.pop()
    if not math.isfinite(time_scale) or time_scale <= 0:
        raise ValueError(f"time_scale must be above 0, got {time_scale!r}")
    return time_scale


def window_for(headers: Mapping[str, str], body: Mapping[str, Any], window: int) -> int:
    """The window a request gets: the server's, or 1M with the 1M beta or a ``[1m]``
    model, as the API."""
    model = str(body.get("model") or "")
    beta = headers.get("anthropic-beta", "")
    if CONTEXT_1M_BETA in beta or model.lower().endswith(MODEL_1M_SUFFIX):
        return max(window, WINDOW_1M)
    return window


def only_route(routes: Mapping[str, Route]) -> str:
    """The name of the only route; KeyError when there are several."""
    if len(routes) != 1:
        raise KeyError(f"several routes ({', '.join(routes)}): name one")
    return next(iter(routes))


def route_of(routes: Mapping[str, Route], name: str | None) -> Route:
    """The route a request's path names (``/agents/<route>``), or the only one; 404
    otherwise, as the API answers a path it does not serve."""
    if name is None:
        try:
            name = only_route(routes)
        except KeyError as exc:
            raise ApiError(404, "not_found_error", f"{exc.args[0]}; use /agents/<route>") from exc
    route = routes.get(name)
    if route is None:
        raise ApiError(404, "not_found_error", f"no route {name!r}; routes: {', '.join(routes)}")
    return route


def subagent_player(route: Route, agent_id: str, body: Mapping[str, Any]) -> Player:
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
        raise ApiError(
            400,
            "invalid_request_error",
            f"agent {agent_id}: its first message {said}; this scenario's subagents: {known}",
        )
    player = Player(ScriptedAgent(scenario, fallback_workspace=route.workspace), subagent=name)
    route.subagents[agent_id] = player
    return player


def new_exchange(
    request: web.Request,
    player: Player,
    body: Mapping[str, Any],
    blocks: Sequence[PromptBlock],
    *,
    route: Route,
    window: int,
    cleared: int,
    default_model: str,
    agent_id: str | None,
    parent_agent_id: str | None,
) -> Exchange:
    """A request as the server understood it (after the API's edits, before any
    summarising step); the re-reads it brings back are priced here, once."""
    view = parse_request(body, request.headers)
    return Exchange(
        request=request,
        route=route,
        player=player,
        route_request=player.requests,
        view=view,
        body=body,
        prompt=sum(block.tokens for block in blocks),
        head=sum(block.tokens for block in blocks if block.section != "messages"),
        window=window,
        model=view.model or default_model,
        message_id=f"msg_{uuid.uuid4().hex[:24]}",
        cleared_results=cleared,
        reread_tokens=price_rereads(player, route.token_ratio, view),
        agent_id=agent_id,
        parent_agent_id=parent_agent_id,
    )


def price_rereads(player: Player, token_ratio: float, view: RequestView) -> int:
    """Tokens of the re-read results this request brings back (each priced once)."""
    tokens = 0
    for call in view.calls:
        if call.id in player.rereads_pending and call.result_text is not None:
            del player.rereads_pending[call.id]
            tokens += text_tokens(call.result_text, token_ratio)
    return tokens


def request_record(
    exchange: Exchange,
    answer: Answer | None,
    *,
    index: int,
    time: float,
    status: int,
    redone: bool,
    error: str | None,
    keep_body: bool,
    write_price: float,
) -> RequestRecord:
    """The request log's line for an exchange, answered or refused."""
    view = exchange.view
    # An answer refused with an HTTP error plays no step and bills nothing.
    reply = answer.reply if answer is not None and status == 200 else None
    split = answer.split if answer is not None else None
    fault = answer.fault if answer is not None else None
    # A compaction is billed with its answer: refused, neither happened.
    step = exchange.compaction if status == 200 else None
    return RequestRecord(
        index=index,
        route_request=exchange.route_request,
        time=time,
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
        body=exchange.body if keep_body else None,
        model=exchange.model,
        operator_step=reply.operator if reply else False,
        compaction_prompt_tokens=step.prompt if step is not None else 0,
        compaction_cache_read_input_tokens=(
            step.split.cache_read_input_tokens if step is not None else 0
        ),
        compaction_output_tokens=step.produced if step is not None else 0,
        cache_write_price=write_price,
        agent_id=exchange.agent_id,
        parent_agent_id=exchange.parent_agent_id,
        subagent=exchange.player.subagent,
        head_tokens=exchange.head,
    )


def note_played(player: Player, sent: RequestView, reply: ScriptedReply) -> bool:
    """Keep what a player has seen and fetched again; True when its reply redoes a step
    whose result it has already seen (a re-read fetches a fact on purpose, and an
    operator's step is asked for: neither is redone work)."""
    step_key = reply.step.key if reply.step is not None else None
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
    return redone
