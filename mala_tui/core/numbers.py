"""Numbers read from files and the command line, bounded where they are parsed.

Python reads an integer of any size, but refuses to turn one of more than 4,300
digits into text (or text into one), and a float too large for its range becomes
infinity. A journal line, a tasks file, a config file or `--set` holding such a
number would otherwise get through parsing and fail later, far from where it came
from: a `runs` that ends with an internal error, a traceback from `--set`. So every
number is checked as it is read, against a bound no real count, size, time or id
comes near, and a number past it is a `NumberOutOfRange` naming it (in short).
"""

from __future__ import annotations

import json
import math
import tomllib
from typing import Any, Final

MAX_INT: Final = 2**63 - 1
"""The largest integer accepted (a signed 64-bit one): far beyond any token count or time."""
_MAX_DIGITS: Final = len(str(MAX_INT))
_SHOWN: Final = 24


class NumberOutOfRange(ValueError):
    """A number too large (or not finite) to be a real value of anything mala-tui reads."""


def _short(text: str) -> str:
    return text if len(text) <= _SHOWN else f"{text[:12]}…({len(text):,} characters)"


def bounded_int(text: str) -> int:
    """An integer from its text, refused past MAX_INT before any conversion is tried.

    Raises:
        NumberOutOfRange: more digits than MAX_INT has, or larger than it.
    """
    digits = text.lstrip("+-").lstrip("0") or "0"
    if len(digits) <= _MAX_DIGITS:
        value = int(text)
        if abs(value) <= MAX_INT:
            return value
    raise NumberOutOfRange(f"number too large: {_short(text)} (at most {MAX_INT})")


def bounded_float(text: str) -> float:
    """A float from its text; one that overflows to infinity is refused.

    Raises:
        NumberOutOfRange: the number is outside a float's range.
    """
    value = float(text)
    if not math.isfinite(value):
        raise NumberOutOfRange(f"number out of range: {_short(text)}")
    return value


def _no_constant(name: str) -> Any:
    raise NumberOutOfRange(f"{name} is not a number accepted here")


def loads_json(text: str | bytes) -> Any:
    """json.loads with every number bounded (NaN and Infinity, which JSON lacks, refused).

    Raises:
        json.JSONDecodeError: not JSON.
        NumberOutOfRange: a number past the bounds (both are ValueErrors).
    """
    return json.loads(
        text, parse_int=bounded_int, parse_float=bounded_float, parse_constant=_no_constant
    )


def loads_toml(text: str) -> dict[str, Any]:
    """tomllib.loads with every integer bounded.

    TOML has no hook for integers: the parsed document is checked instead, and an
    integer too long for Python to read at all (which tomllib lets out as a bare
    ValueError) is refused the same way.

    Raises:
        tomllib.TOMLDecodeError: not TOML.
        NumberOutOfRange: an integer past the bounds.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        raise
    except ValueError:
        raise NumberOutOfRange(
            f"number too large: an integer of over 4,300 digits (at most {MAX_INT})"
        ) from None
    _check_ints(data)
    return data


def _check_ints(value: Any) -> None:
    """Raise NumberOutOfRange for an integer past MAX_INT anywhere in a parsed document."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, bool):
            continue
        if isinstance(item, int):
            if abs(item) > MAX_INT:
                # tomllib reads no more digits than str() writes back: this cannot fail.
                digits = len(str(abs(item)))
                raise NumberOutOfRange(
                    f"number too large: an integer of {digits:,} digits (at most {MAX_INT})"
                )
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
