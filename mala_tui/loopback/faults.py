"""Faults on cue: what can go wrong with a response, when, and how many times.

A fault is tied to a scenario step (fires when the scripted agent is about to play that
step) or to a request number on its route (1-based, counting ``/v1/messages`` calls), or to
neither (fires on the next requests). Each fires ``times`` times; a retried request that
plays the same step meets the fault again until its count is used up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

FaultKind = Literal[
    # Accept the request, then send nothing at all (no status line, no headers).
    "stall_before_bytes",
    # Send message_start (usage included), then nothing more.
    "stall_after_message_start",
    # HTTP 529 with the API's overloaded_error body.
    "overloaded",
    # HTTP 500 with the API's api_error body.
    "api_error",
    # HTTP 401 with the API's authentication_error body: a wrong or revoked key.
    "unauthorized",
    # HTTP 400 with the API's invalid_request_error body.
    "bad_request",
    # Stream message_start and part of the first block, then reset the TCP connection.
    "connection_reset",
    # Stream the reply at ``tokens_per_second``.
    "slow_stream",
    # Answer 200 with an event stream that is not JSON and holds terminal escapes and a
    # key (``BROKEN_STREAM_TEXT``), as a hostile or broken gateway might.
    "broken_stream",
]

BROKEN_STREAM_KEY = "sk-ant-api03-" + "LeakedByAGateway0123456789abcdefXYZ"
"""The key a broken stream carries: it must never reach a terminal or a file."""
BROKEN_STREAM_TEXT = (
    "\x1b]52;c;UFdORUQ=\x07"  # OSC 52: write "PWNED" to the clipboard
    "\x1b]0;PWNED\x07"  # OSC 0: retitle the window
    "\x1b[2J"  # clear the screen
    f" upstream said: x-api-key: {BROKEN_STREAM_KEY} ghp_{'Gateway' * 4}"
)
"""What a broken stream carries where its first event's JSON should be."""

STALL_KINDS: frozenset[str] = frozenset({"stall_before_bytes", "stall_after_message_start"})
HTTP_ERROR_STATUS: dict[str, int] = {
    "overloaded": 529,
    "api_error": 500,
    "unauthorized": 401,
    "bad_request": 400,
}


class FaultSpec(BaseModel):
    """One fault as written in a scenario file (``[[faults]]``) or injected by a test."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: FaultKind
    at_step: str | None = None
    """Step id: fire when the agent is about to play this step."""
    at_request: int | None = Field(default=None, ge=1)
    """Request number on the route (1-based): fire on that request and, while ``times``
    lasts, on the ones after it."""
    times: int = Field(default=1, ge=1)
    """How many requests the fault hits before it is used up."""
    seconds: float | None = Field(default=None, gt=0)
    """Stalls only: how long to stay silent; unset means until the client goes away."""
    tokens_per_second: float | None = Field(default=None, gt=0)
    """slow_stream only: the streaming rate."""

    @model_validator(mode="after")
    def _check_fields_fit_kind(self) -> Self:
        if self.at_step is not None and self.at_request is not None:
            raise ValueError("give at_step or at_request, not both")
        if self.seconds is not None and self.kind not in STALL_KINDS:
            raise ValueError(f"seconds applies to stalls only, not to {self.kind}")
        if self.kind == "slow_stream" and self.tokens_per_second is None:
            raise ValueError("slow_stream needs tokens_per_second")
        if self.kind != "slow_stream" and self.tokens_per_second is not None:
            raise ValueError(f"tokens_per_second applies to slow_stream only, not to {self.kind}")
        return self

    def describe(self) -> str:
        """A short label for logs, e.g. ``overloaded`` or ``stall_after_message_start(30s)``."""
        if self.kind in STALL_KINDS:
            return f"{self.kind}({self.seconds:g}s)" if self.seconds else f"{self.kind}(until gone)"
        if self.kind == "slow_stream":
            return f"slow_stream({self.tokens_per_second:g} tok/s)"
        return self.kind


@dataclass
class _Armed:
    spec: FaultSpec
    remaining: int


class FaultBook:
    """The faults of one route with what is left of each; ``take`` fires at most one."""

    def __init__(self, specs: tuple[FaultSpec, ...] | list[FaultSpec] = ()) -> None:
        self._armed = [_Armed(spec, spec.times) for spec in specs]

    def add(self, spec: FaultSpec) -> None:
        """Arm one more fault (tests inject faults into a running server this way)."""
        self._armed.append(_Armed(spec, spec.times))

    def take(self, request_number: int, step_id: str | None) -> FaultSpec | None:
        """The first armed fault matching this request, its count reduced by one."""
        for armed in self._armed:
            if armed.remaining <= 0 or not _matches(armed.spec, request_number, step_id):
                continue
            armed.remaining -= 1
            return armed.spec
        return None

    def remaining(self) -> list[tuple[FaultSpec, int]]:
        """Each fault with how many more times it will fire."""
        return [(armed.spec, armed.remaining) for armed in self._armed]


def _matches(spec: FaultSpec, request_number: int, step_id: str | None) -> bool:
    if spec.at_step is not None:
        return spec.at_step == step_id
    if spec.at_request is not None:
        return request_number >= spec.at_request
    return True
