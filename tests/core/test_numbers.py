"""Numbers are bounded where they are parsed: a number no real value comes near is refused
as it is read, with a short message, never left to fail later."""

from __future__ import annotations

import json
import tomllib

import pytest

from mala_tui.core.numbers import MAX_INT, NumberOutOfRange, loads_json, loads_toml


def test_json_numbers_in_range_read_as_json_reads_them() -> None:
    text = '{"a": 1, "b": -2.5, "c": [9223372036854775807, -9223372036854775807, 0.0001]}'
    assert loads_json(text) == json.loads(text)


@pytest.mark.parametrize(
    "number", ["9" * 5000, "9" * 20, str(MAX_INT + 1), "-" + "9" * 400, "1e999", "-1e400"]
)
def test_json_numbers_out_of_range_are_refused_in_short(number: str) -> None:
    with pytest.raises(NumberOutOfRange) as caught:
        loads_json('{"a": ' + number + "}")
    assert len(str(caught.value)) < 100


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_json_constants_that_are_not_json_are_refused(constant: str) -> None:
    with pytest.raises(NumberOutOfRange, match="not a number accepted here"):
        loads_json('{"a": ' + constant + "}")


def test_toml_integers_are_bounded_anywhere_in_the_document() -> None:
    assert loads_toml("a = 9223372036854775807\n[t]\nb = [1, 2]") == {
        "a": MAX_INT,
        "t": {"b": [1, 2]},
    }
    for text in (
        f"a = {MAX_INT + 1}",
        "[t]\nb = [1, " + "9" * 300 + "]",
        "[[x]]\ny = { z = -" + "9" * 30 + " }",
        "a = " + "9" * 5000,
    ):
        with pytest.raises(NumberOutOfRange, match="number too large: an integer of"):
            loads_toml(text)


def test_toml_syntax_errors_stay_toml_errors() -> None:
    with pytest.raises(tomllib.TOMLDecodeError):
        loads_toml("a = = 1")
