"""A fold applied to the CLI's stored transcript (core.fold decides what folds).

The CLI's JSONL keeps the conversation as a chain of entries, each naming its parent
(`parentUuid`); a session resumed by id follows that chain back from its newest entry.
An assistant message is stored one content block per entry, a tool's result as a
`user` entry with a `tool_result` block (and the structured `toolUseResult`).

Folding removes the folded steps' `tool_use` and `tool_result` blocks (an entry left
with no block goes, and so does an earlier mask's resume note), re-links every entry
whose parent went to that parent's nearest kept ancestor, and puts the digest in the
task's entry as a text block after the task. What the CLI attached to folded steps
goes with them, and of the reminders it repeats after many steps (the tokens left, a
hook's stop at each mask) only the newest stays: each is sent again with every request,
and the newer says all the older did. Every other entry stays as it was: the agent's
text, the other attachments, the CLI's bookkeeping lines. The CLI's copies of past
requests (`api-request-blob` lines) are left alone: a resumed session builds its
request from the chain, not from them (tests/integration/test_fold_cli.py).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from mala_tui.core.fold import FoldPlan, FoldReport, digest_lines, is_digest, plan_fold
from mala_tui.core.transcript import Block, Message, Role, TextBlock, ToolCall, ToolResult
from mala_tui.core.usage import estimate_tokens
from mala_tui.runtime.backends.base import MaskError
from mala_tui.runtime.backends.claude_history import flatten_content
from mala_tui.runtime.backends.transcript_originals import keep_originals

_PARENT_KEYS = ("parentUuid", "logicalParentUuid")
#: Attachments the CLI adds again and again, each superseding the one before.
STALE_REMINDERS: Final = frozenset(
    {"total_tokens_reminder", "task_reminder", "hook_stopped_continuation"}
)


@dataclass
class _Line:
    raw: str
    entry: Any = None
    message_index: int | None = None


def fold_transcript(
    path: Path, notes: Iterable[str] = (), backup_dir: Path | None = None
) -> FoldReport | None:
    """Fold the masked steps of the transcript at `path`; atomic. None when nothing folds.

    `notes` are the texts of the resume notes sent after earlier masks. The lines the
    fold drops or changes are kept as they were in `backup_dir` first.
    """
    try:
        original = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise MaskError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    lines = [_parse(raw) for raw in original.splitlines(keepends=True)]
    messages: list[Message] = []
    for line in lines:
        message = _message(line.entry)
        if message is not None:
            line.message_index = len(messages)
            messages.append(message)
    first_prompt = next((i for i, m in enumerate(messages) if m.is_prompt and m.text.strip()), None)
    task = next((line for line in lines if line.message_index == first_prompt), None)
    if task is None:
        return None
    digest = next((text for text in _texts(task.entry) if is_digest(text)), "")
    plan = plan_fold(messages, digest=digest, notes=frozenset(text.strip() for text in notes))
    if not plan:
        return None
    before = _conversation_tokens(lines)
    raws = [line.raw for line in lines]
    kept = _apply(lines, plan, task)
    if backup_dir is not None:
        staying = {id(line) for line in kept}
        changed = [
            raw
            for line, raw in zip(lines, raws, strict=True)
            if id(line) not in staying or (line.raw != raw and _parse(raw).entry != line.entry)
        ]
        keep_originals(backup_dir, path, changed)
    replace_file(path, "".join(line.raw for line in kept))
    return FoldReport(
        steps=len(plan.folded),
        notes=len(plan.notes),
        digest_lines=len(digest_lines(plan.digest)),
        tokens_before=before,
        tokens_after=_conversation_tokens(kept),
        digest_tokens=estimate_tokens(len(plan.digest)),
    )


def _conversation_tokens(lines: Iterable[_Line]) -> int:
    """The chars/4 estimate of the conversation's content as sent (its JSON: a call's id
    and a result's wrapper count, as they do in a request), the CLI's attachments with it."""
    total = 0
    for line in lines:
        if line.message_index is not None:
            total += len(json.dumps(line.entry["message"].get("content"), ensure_ascii=False))
        elif _attachment_kind(line.entry) is not None and line.entry.get("rendered"):
            total += len(json.dumps(line.entry["rendered"], ensure_ascii=False))
    return estimate_tokens(total)


def _parse(raw: str) -> _Line:
    try:
        return _Line(raw, json.loads(raw))
    except (json.JSONDecodeError, RecursionError):
        return _Line(raw)


def _apply(lines: list[_Line], plan: FoldPlan, task: _Line) -> list[_Line]:
    """The lines after the fold, the dropped entries' children re-linked."""
    folded = set(plan.folded)
    notes = set(plan.notes)
    parent_of_dropped: dict[str, Any] = {}
    newest = _newest_reminders(lines)
    kept: list[_Line] = []
    for line in lines:
        entry = line.entry
        if _folded_attachment(entry, folded, newest):
            parent_of_dropped[str(entry.get("uuid"))] = entry.get("parentUuid")
            continue
        if line.message_index is None or not isinstance(entry, dict):
            kept.append(line)
            continue
        if line.message_index in notes or not _strip_blocks(entry, folded):
            parent_of_dropped[str(entry.get("uuid"))] = entry.get("parentUuid")
            continue
        if line is task:
            _put_digest(entry, plan.digest)
        line.raw = _dump(entry, line.raw)
        kept.append(line)
    for line in kept:
        if isinstance(line.entry, dict) and _relink(line.entry, parent_of_dropped):
            line.raw = _dump(line.entry, line.raw)
    return kept


def _attachment_kind(entry: Any) -> str | None:
    """The type of an attachment entry (None for any other entry)."""
    if not isinstance(entry, dict) or entry.get("type") != "attachment":
        return None
    attachment = entry.get("attachment")
    return str(attachment.get("type")) if isinstance(attachment, dict) else None


def _newest_reminders(lines: Iterable[_Line]) -> set[str]:
    """The newest attachment of each reminder kind: the one that stays."""
    newest: dict[str, str] = {}
    for line in lines:
        kind = _attachment_kind(line.entry)
        if kind in STALE_REMINDERS:
            newest[kind] = str(line.entry.get("uuid"))
    return set(newest.values())


def _folded_attachment(entry: Any, folded: set[str], newest: set[str]) -> bool:
    """What the CLI attached that the fold takes out: a note naming a folded step's call,
    and every reminder of a kind that repeats but the newest (the count of tokens left,
    the nudge towards its task tools, a hook's stop: each mask's stop says mala-tui is
    managing the window). Other attachments (what the CLI knows of files) stay."""
    kind = _attachment_kind(entry)
    if kind is None:
        return False
    if entry["attachment"].get("toolUseID") in folded:
        return True
    return kind in STALE_REMINDERS and str(entry.get("uuid")) not in newest


def _strip_blocks(entry: dict[str, Any], folded: set[str]) -> bool:
    """Drop the folded calls and results from the entry; False when none of it is left."""
    content = entry["message"].get("content")
    if not isinstance(content, list):
        return True
    left = [part for part in content if not _is_folded(part, folded)]
    if len(left) == len(content):
        return True
    entry["message"]["content"] = left
    return bool(left)


def _is_folded(part: Any, folded: set[str]) -> bool:
    if not isinstance(part, dict):
        return False
    if part.get("type") == "tool_use":
        return part.get("id") in folded
    if part.get("type") == "tool_result":
        return part.get("tool_use_id") in folded
    return False


def _put_digest(entry: dict[str, Any], digest: str) -> None:
    """The digest as the task entry's last text block, in place of an earlier one."""
    content = entry["message"].get("content")
    parts = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
    parts = [part for part in parts if not _is_digest_part(part)]
    parts.append({"type": "text", "text": digest})
    entry["message"]["content"] = parts


def _is_digest_part(part: Any) -> bool:
    text = part.get("text") if isinstance(part, dict) else None
    return isinstance(text, str) and part.get("type") == "text" and is_digest(text)


def _relink(entry: dict[str, Any], dropped: dict[str, Any]) -> bool:
    """Point the entry's parent links (and a `last-prompt` leaf) past dropped entries."""
    changed = False
    for key in (*_PARENT_KEYS, "leafUuid"):
        value = entry.get(key)
        if not isinstance(value, str) or value not in dropped:
            continue
        while isinstance(value, str) and value in dropped:
            value = dropped[value]
        entry[key] = value
        changed = True
    return changed


def _dump(entry: Any, raw: str) -> str:
    ending = "\n" if raw.endswith("\n") else ""
    return json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + ending


def _texts(entry: Any) -> list[str]:
    content = entry["message"].get("content")
    if isinstance(content, str):
        return [content]
    return [
        part["text"]
        for part in content
        if isinstance(part, dict) and isinstance(part.get("text"), str)
    ]


def _message(entry: Any) -> Message | None:
    """An entry of the main thread as a message (one entry, one message), else None."""
    if not isinstance(entry, dict) or entry.get("isSidechain") or entry.get("isMeta"):
        return None
    kind, body = entry.get("type"), entry.get("message")
    if kind not in ("user", "assistant") or not isinstance(body, dict):
        return None
    content = body.get("content")
    role = Role.USER if kind == "user" else Role.ASSISTANT
    if isinstance(content, str):
        return Message(role, (TextBlock(content),), from_harness=role is Role.USER)
    if not isinstance(content, list):
        return None
    blocks = [block for part in content if (block := _block(part)) is not None]
    return Message(role, tuple(blocks)) if blocks else None


def _block(part: Any) -> Block | None:
    if not isinstance(part, dict):
        return None
    kind = part.get("type")
    if kind == "text" and isinstance(part.get("text"), str):
        return TextBlock(part["text"])
    if kind == "tool_use" and isinstance(part.get("id"), str):
        tool_input = part.get("input")
        arguments = dict(tool_input) if isinstance(tool_input, dict) else {}
        return ToolCall(part["id"], str(part.get("name", "")), arguments)
    if kind == "tool_result" and isinstance(part.get("tool_use_id"), str):
        content = part.get("content")
        items = [c for c in content if isinstance(c, dict)] if isinstance(content, list) else None
        text = content if isinstance(content, str) else flatten_content(items)
        return ToolResult(part["tool_use_id"], text, bool(part.get("is_error")))
    return None


def replace_file(path: Path, text: str) -> None:
    """Write `text` over `path` atomically, keeping its mode."""
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        Path(temp).chmod(path.stat().st_mode & 0o777)
        Path(temp).replace(path)
    except OSError as exc:
        Path(temp).unlink(missing_ok=True)
        raise MaskError(f"{path}: cannot be rewritten: {exc.strerror or exc}") from None
