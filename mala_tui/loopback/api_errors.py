"""The Messages API's errors as the loopback answers them: a JSON error body and a status."""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web

from mala_tui.loopback import wire

HTTP_ERROR_BODIES = {
    "overloaded": ("overloaded_error", "Overloaded"),
    "api_error": ("api_error", "Internal server error"),
    "unauthorized": ("authentication_error", "invalid x-api-key"),
    "bad_request": ("invalid_request_error", "messages: text content blocks must be non-empty"),
}


class ApiError(Exception):
    """Raised by handlers; answered with the API's JSON error body by ``api_errors``."""

    def __init__(self, status: int, error_type: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.message = message


@web.middleware
async def api_errors(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    try:
        return await handler(request)
    except ApiError as error:
        return web.json_response(
            wire.error_body(error.error_type, error.message),
            status=error.status,
            headers={"request-id": f"req_{uuid.uuid4().hex[:24]}"},
        )


async def json_body(request: web.Request) -> Mapping[str, Any]:
    try:
        body = json.loads(await request.read())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ApiError(400, "invalid_request_error", f"request body is not JSON: {exc}") from exc
    if not isinstance(body, Mapping):
        raise ApiError(400, "invalid_request_error", "request body must be a JSON object")
    return body


#: The API takes at most this many ``cache_control`` breakpoints in one request.
MAX_BREAKPOINTS = 4


def breakpoints_in(body: Mapping[str, Any]) -> int:
    """The ``cache_control`` markers of a request: on tools, system blocks and message blocks."""
    blocks: list[Any] = list(body.get("tools") or [])
    system = body.get("system")
    if isinstance(system, list):
        blocks += system
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, list):
            blocks += content
    return sum(1 for block in blocks if isinstance(block, Mapping) and "cache_control" in block)


def check_breakpoints(body: Mapping[str, Any]) -> None:
    """Refuse a request with more breakpoints than the API takes, as the API does (400)."""
    found = breakpoints_in(body)
    if found > MAX_BREAKPOINTS:
        raise ApiError(
            400,
            "invalid_request_error",
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {found}.",
        )
