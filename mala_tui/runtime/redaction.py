"""Secrets kept out of everything mala-tui writes or prints.

Anything shaped like an Anthropic API key, a GitHub token or an auth header value
is replaced by "[redacted]": in journal lines, transcript copies, headless output
and error logs alike.
"""

from __future__ import annotations

import json
import re
from typing import Any

_SECRET_PATTERNS = (
    re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"\bghp_[A-Za-z0-9]{20,}"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"(?i)(authorization\s*[:=]\s*)(bearer\s+)?[^\s\"',]+"),
    re.compile(r"(?i)(x-api-key\s*[:=]\s*)[^\s\"',]+"),
    re.compile(r"(?i)(ANTHROPIC_(?:API_KEY|AUTH_TOKEN)\s*[=:]\s*)[^\s\"',]+"),
)


def redact(text: str) -> str:
    """Replace anything shaped like an Anthropic key, a GitHub token or an auth header value."""
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.lastindex else "") + "[redacted]", text)
    return text


def redact_json_line(line: str) -> str:
    """A JSON line with every string in it redacted, still one valid JSON line.

    Redacting the line's text instead could eat the backslash of an escaped quote
    after a header value and leave a line no reader can parse. A line that is not
    JSON is redacted as text.
    """
    try:
        data = json.loads(line)
    except ValueError:
        return redact(line)
    cleaned = _redact_strings(data)
    if cleaned == data:
        return line  # nothing secret: keep the line byte for byte
    return json.dumps(cleaned, ensure_ascii=False, separators=(",", ":"))


def _redact_strings(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_redact_strings(item) for item in value]
    if isinstance(value, dict):
        return {redact(key): _redact_strings(item) for key, item in value.items()}
    return value
