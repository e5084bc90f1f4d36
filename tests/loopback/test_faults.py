"""Fault specs and how often they fire."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from mala_tui.loopback.faults import FaultBook, FaultSpec


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"kind": "melt"}, "Input should be"),
        ({"kind": "overloaded", "at_step": "s1", "at_request": 2}, "not both"),
        ({"kind": "overloaded", "seconds": 3}, "stalls only"),
        ({"kind": "slow_stream"}, "needs tokens_per_second"),
        ({"kind": "api_error", "tokens_per_second": 5}, "slow_stream only"),
        ({"kind": "overloaded", "times": 0}, "greater than or equal to 1"),
        ({"kind": "overloaded", "at_request": 0}, "greater than or equal to 1"),
    ],
)
def test_invalid_faults_are_refused(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        FaultSpec.model_validate(fields)


def test_describe_names_kind_and_parameters() -> None:
    assert FaultSpec(kind="overloaded").describe() == "overloaded"
    assert (
        FaultSpec(kind="stall_before_bytes", seconds=2.5).describe() == "stall_before_bytes(2.5s)"
    )
    assert FaultSpec(kind="stall_after_message_start").describe() == (
        "stall_after_message_start(until gone)"
    )
    assert FaultSpec(kind="slow_stream", tokens_per_second=40).describe() == "slow_stream(40 tok/s)"


def test_a_step_fault_fires_on_that_step_only_as_many_times_as_asked() -> None:
    book = FaultBook([FaultSpec(kind="overloaded", at_step="s003", times=2)])
    assert book.take(1, "s001") is None
    assert book.take(2, "s003") is not None
    assert book.take(3, "s003") is not None  # the retry meets it again
    assert book.take(4, "s003") is None
    assert book.remaining()[0][1] == 0


def test_a_request_fault_fires_from_that_request_on() -> None:
    book = FaultBook([FaultSpec(kind="api_error", at_request=3, times=2)])
    assert [book.take(n, None) is not None for n in range(1, 7)] == [
        False,
        False,
        True,
        True,
        False,
        False,
    ]


def test_an_untargeted_fault_fires_on_the_next_requests_and_the_first_match_wins() -> None:
    book = FaultBook([FaultSpec(kind="slow_stream", tokens_per_second=10)])
    book.add(FaultSpec(kind="overloaded"))
    first, second, third = (book.take(n, "s001") for n in (1, 2, 3))
    assert first is not None and first.kind == "slow_stream"
    assert second is not None and second.kind == "overloaded"
    assert third is None
