"""The cache breakpoint mala-tui keeps in the CLI's stored transcript after a mask.

The CLI marks two blocks of each request for the prompt cache: the system prompt's last
block and the request's last block. A mask changes the prompt at the oldest result it
masks, and the API looks for a cached prefix only at a marked block or within the 20
blocks before one, so without a mark of its own the request after a mask finds nothing
past the system prompt and tools. A `cache_control` marker written into a `tool_result`
block of the transcript is loaded with the session on resume and sent on that block in
every later request (tests/integration/test_cache_marker.py).

So after each mask the marker goes on the result just before the newest one: the next
mask starts changing the prompt at that newest result, after the marker, and everything
before it is read from the cache. When no result comes before the newest (a fold took
them out) it goes on the fold's digest, the task entry's last text block, which the CLI
sends as it does a result's marker. The previous mask's marker stays, since the request
right after this mask reads up to it; older ones come off. Two markers of mala-tui's and
the CLI's two make the API's limit of four.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from mala_tui.core.fold import DIGEST_HEADER, is_digest
from mala_tui.runtime.backends.base import MaskError
from mala_tui.runtime.backends.claude_fold import replace_file

MARKER: Final = {"type": "ephemeral"}
#: Markers of mala-tui's kept at once: the new one and the one the next request reads to.
KEPT: Final = 2
#: How the digest is named among the marked blocks (results are named by tool-use id).
DIGEST: Final = "digest"


def keep_breakpoint(path: Path) -> str | None:
    """Mark the result before the newest in the transcript at `path` (or the digest),
    keep the previous mark, take older ones off; atomic. Returns the marked result's
    tool-use id (`DIGEST` for the digest), None when there is neither (nothing is marked
    then)."""
    try:
        original = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise MaskError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    entries: list[Any] = []
    for raw in original.splitlines():
        # Most lines of a long session are the CLI's bookkeeping (copies of requests'
        # settings, costs): only one holding a result or the digest can be marked.
        if "tool_result" not in raw and DIGEST_HEADER not in raw:
            entries.append(None)
            continue
        try:
            entries.append(json.loads(raw))
        except (json.JSONDecodeError, RecursionError):
            entries.append(None)
    results = _main_results(entries)
    has_digest = any(_name(block) == DIGEST for entry in entries for block in _blocks(entry))
    # The digest sits in the task's entry, before every result.
    order = [DIGEST, *results] if has_digest else results
    if len(order) < 2:
        return None
    target = order[-2]
    marked_ids = {
        _name(block) for entry in entries for block in _blocks(entry) if "cache_control" in block
    }
    marked = [tool_id for tool_id in order if tool_id in marked_ids]
    keep = {*[tool_id for tool_id in marked if tool_id != target][-(KEPT - 1) :], target}
    lines = original.splitlines(keepends=True)
    changed = False
    for index, entry in enumerate(entries):
        if entry is not None and _set_marks(entry, keep):
            ending = "\n" if lines[index].endswith("\n") else ""
            lines[index] = json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + ending
            changed = True
    if changed:
        replace_file(path, "".join(lines))
    return target


def _main_results(entries: list[Any]) -> list[str]:
    """The main thread's tool results, oldest first, by tool-use id."""
    found: list[str] = []
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("type") != "user" or entry.get("isSidechain"):
            continue
        content = (entry.get("message") or {}).get("content")
        if isinstance(content, list):
            found.extend(
                part["tool_use_id"]
                for part in content
                if isinstance(part, dict)
                and part.get("type") == "tool_result"
                and isinstance(part.get("tool_use_id"), str)
            )
    return found


def _blocks(node: Any) -> Iterator[dict[str, Any]]:
    """Every block that may carry mala-tui's marker, anywhere in an entry (its message and
    request blobs): a `tool_result`, or a text block holding the digest."""
    if isinstance(node, dict):
        if _name(node) is not None:
            yield node
            return
        for value in node.values():
            yield from _blocks(value)
    elif isinstance(node, list):
        for value in node:
            yield from _blocks(value)


def _name(block: dict[str, Any]) -> str | None:
    """A result's tool-use id, `DIGEST` for the digest's text block, None for others."""
    if block.get("type") == "tool_result":
        tool_id = block.get("tool_use_id")
        return tool_id if isinstance(tool_id, str) else None
    text = block.get("text")
    if block.get("type") == "text" and isinstance(text, str) and is_digest(text):
        return DIGEST
    return None


def _set_marks(entry: Any, keep: set[str]) -> bool:
    """Marker on the kept results, off the others; whether the entry changed."""
    changed = False
    for block in _blocks(entry):
        wanted = _name(block) in keep
        if wanted and block.get("cache_control") != MARKER:
            block["cache_control"] = dict(MARKER)
            changed = True
        elif not wanted and "cache_control" in block:
            del block["cache_control"]
            changed = True
    return changed
