"""Delivering an answer: streamed as server-sent events or whole, shaped by its fault.

A fault may stall the answer before any byte or after ``message_start``, cut it with a
TCP reset, send a broken event, or slow it to a rate; ``pause`` waits on the server's
clock and says whether the server is stopping (then the connection is dropped).
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Awaitable, Callable, Sequence

from aiohttp import web

from mala_tui.loopback import wire
from mala_tui.loopback.exchange import Answer, Exchange
from mala_tui.loopback.faults import BROKEN_STREAM_TEXT
from mala_tui.loopback.request_book import RequestBook

#: Waits the given seconds (None: until the server stops); True when the server is stopping.
Pause = Callable[[float | None], Awaitable[bool]]


async def deliver(
    exchange: Exchange, answer: Answer, pause: Pause, book: RequestBook
) -> web.StreamResponse:
    """Send the answer, streamed or whole; a client that goes away meanwhile is noted in
    the book as an abandoned request."""
    index = len(book)
    try:
        if exchange.view.stream:
            return await stream(exchange, answer, pause)
        return await respond_whole(exchange, answer, pause)
    except asyncio.CancelledError:
        # handler_cancellation: the client hung up while we were answering.
        book.abandon(index)
        raise
    except ConnectionResetError:
        # The client went away mid-stream (an interrupt, a disconnect): nothing to
        # answer any more, and nothing wrong with the server.
        book.abandon(index)
        return web.Response(status=499)


async def stream(exchange: Exchange, answer: Answer, pause: Pause) -> web.StreamResponse:
    request, fault, split = exchange.request, answer.fault, answer.split
    assert split is not None
    kind = fault.kind if fault is not None else None
    if fault is not None and kind == "stall_before_bytes" and await pause(fault.seconds):
        return hang_up(request)
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream; charset=utf-8",
            "Cache-Control": "no-cache",
            "request-id": exchange.request_id,
        }
    )
    await response.prepare(request)
    if kind == "broken_stream":
        await response.write(broken_event())
        await response.write_eof()
        return response
    await response.write(wire.message_start(exchange.message_id, exchange.model, split).encode())
    await response.write(wire.PING.encode())
    stalled = fault is not None and kind == "stall_after_message_start"
    if stalled and fault is not None and await pause(fault.seconds):
        return hang_up(request)
    delay = exchange.route.response_delay_s
    if delay and await pause(delay):
        return hang_up(request)
    rate = fault.tokens_per_second if fault is not None else None
    for index, block in enumerate(answer.reply.content):
        for event in wire.content_events(index, block):
            await response.write(event.encode())
            if kind == "connection_reset" and event.name == "content_block_delta":
                return hang_up(request, reset=True)
            if rate and event.tokens and await pause(event.tokens / rate):
                return hang_up(request)
    for event in wire.message_end(answer.reply.stop_reason, split, answer.produced):
        await response.write(event.encode())
    await response.write_eof()
    return response


async def respond_whole(exchange: Exchange, answer: Answer, pause: Pause) -> web.StreamResponse:
    request, fault, split = exchange.request, answer.fault, answer.split
    assert split is not None
    kind = fault.kind if fault is not None else None
    stalled = kind in {"stall_before_bytes", "stall_after_message_start"}
    if fault is not None and stalled and await pause(fault.seconds):
        return hang_up(request)
    if kind == "connection_reset":
        return hang_up(request, reset=True)
    if kind == "broken_stream":
        return web.Response(body=broken_event(), content_type="text/event-stream")
    delay = exchange.route.response_delay_s
    if fault is not None and fault.tokens_per_second:
        delay += answer.produced / fault.tokens_per_second
    if delay and await pause(delay):
        return hang_up(request)
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


def broken_event() -> bytes:
    """A message_start whose data is not JSON, escapes and a key inside (broken_stream)."""
    return f"event: message_start\ndata: {{broken {BROKEN_STREAM_TEXT}\n\n".encode()


def hang_up(request: web.Request, *, reset: bool = False) -> web.StreamResponse:
    """Drop the connection; with ``reset`` the client sees a TCP RST, not a clean close."""
    transport = request.transport
    if transport is not None:
        sock = transport.get_extra_info("socket")
        if reset and isinstance(sock, socket.socket):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()
    return web.Response(status=499)


def models_response(model_ids: Sequence[str]) -> web.Response:
    """``GET /v1/models``: the models served, as the API lists them."""
    data = [
        {
            "type": "model",
            "id": model,
            "display_name": model,
            "created_at": "2025-09-29T00:00:00Z",
        }
        for model in model_ids
    ]
    return web.json_response(
        {"data": data, "has_more": False, "first_id": data[0]["id"], "last_id": data[-1]["id"]}
    )
