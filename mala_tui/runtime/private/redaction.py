"""Secrets kept out of everything mala-tui writes or prints.

Anything shaped like an Anthropic, OpenAI project or AWS access key, a GitHub token,
or the value of an auth header or of a key-named setting is replaced by "[redacted]":
in journal lines, transcript copies, headless output, what the CLI prints on stderr
and error logs alike. Header and setting values are caught however they are quoted
(`x-api-key: v`, `"x-api-key": "v"`, `ANTHROPIC_API_KEY='v'`), and in parsed JSON a
value is redacted by its key's name (`{"Authorization": "Bearer v"}`).
"""

from __future__ import annotations

import json
import re
from typing import Any

_NAMED = (
    r"(?:x-api-key|(?:proxy-)?authorization"
    r"|[a-z0-9_]*(?:api[_-]?key|auth[_-]?token|secret[_-]?access[_-]?key))"
)
"""Names whose value is a secret: auth headers, and settings or variables named for keys."""
_SECRET_FIELD = re.compile(rf"(?i){_NAMED}")

_SECRET_PATTERNS = (
    re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"\bsk-proj-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    re.compile(r"\bghp_[A-Za-z0-9]{20,}"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"),
    # The name, its closing quote (JSON-escaped or not), the separator, an opening quote,
    # "Bearer " if any: kept. The value, up to a space, a comma, a quote or an escaped
    # quote (so JSON text stays JSON): not.
    re.compile(
        rf"(?i)(\b{_NAMED}\\?[\"']?\s*[:=]\s*\\?[\"']?)(bearer\s+)?"
        r"(?:[^\s\"'\\,]|\\(?![\"']))+"
    ),
)


def redact(text: str) -> str:
    """Replace anything shaped like a key, a token or an auth header value."""
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.lastindex else "") + "[redacted]", text)
    return text


def redact_jsonl(text: str) -> str:
    """JSONL text with every line redacted as `redact_json_line` does; blank lines kept."""
    return "\n".join(redact_json_line(line) if line.strip() else line for line in text.split("\n"))


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
        return {
            redact(key): "[redacted]"
            if isinstance(item, str) and item and _SECRET_FIELD.fullmatch(key)
            else _redact_strings(item)
            for key, item in value.items()
        }
    return value
