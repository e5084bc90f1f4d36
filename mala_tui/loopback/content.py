"""Deterministic file content of an exact size, for scenario workspaces and Write steps.

The same path, size and kind always give the same bytes, so two runs of a scenario see the
same tool outputs and the same token counts. Lines stay short (under 100 characters) so the
CLI's Read shows them whole, and each carries its line number so outputs are distinguishable.
"""

from __future__ import annotations

from typing import Literal

ContentKind = Literal["python", "text", "log"]

_WORDS = (
    "context", "window", "cache", "prefix", "token", "request", "session", "agent",
    "checkpoint", "restart", "mask", "result", "workspace", "module", "handler", "stream",
    "budget", "buffer", "parser", "record", "summary",
)  # fmt: skip


def _python_lines(path: str) -> list[str]:
    return [f'"""{path}: generated workspace module."""', "", "VERSION = 1", ""]


def _python_chunk(number: int) -> list[str]:
    return [
        "",
        f"def step_{number:05d}(value: int) -> int:",
        f'    """Return value shifted by {number % 97}."""',
        f"    return value + {number % 97}",
    ]


def _text_line(path: str, number: int) -> str:
    words = " ".join(_WORDS[(number * 7 + offset) % len(_WORDS)] for offset in range(9))
    return f"{path} line {number:05d}: {words}"


def _log_line(number: int) -> str:
    level = ("INFO", "INFO", "DEBUG", "WARN", "INFO", "ERROR")[number % 6]
    minutes, seconds = divmod(number, 60)
    return (
        f"2025-01-01T{minutes // 60 % 24:02d}:{minutes % 60:02d}:{seconds:02d}Z {level:5} "
        f"worker-{number % 8} request {number:06d} handled in {(number * 37) % 900 + 3} ms"
    )


def generate_content(path: str, size: int, kind: ContentKind = "text") -> str:
    """Exactly ``size`` bytes (ASCII) of deterministic content ending in a newline."""
    if size <= 0:
        return ""
    lines: list[str] = _python_lines(path) if kind == "python" else []
    length = sum(len(line) + 1 for line in lines)
    number = 0
    while length < size:
        number += 1
        if kind == "python":
            chunk = _python_chunk(number)
        elif kind == "log":
            chunk = [_log_line(number)]
        else:
            chunk = [_text_line(path, number)]
        lines.extend(chunk)
        length += sum(len(line) + 1 for line in chunk)
    text = "\n".join(lines) + "\n"
    return text[: size - 1] + "\n"
