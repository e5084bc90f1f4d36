"""The CLI's stored transcripts: where they are, and replacing tool results in them.

The CLI keeps each session as JSONL under its config dir, at
`projects/<project>/<session id>.jsonl`: tool calls are `assistant` entries
with `tool_use` blocks, results are `user` entries with `tool_result` blocks
plus a structured `toolUseResult`. A session resumed by id reads this file, so
rewriting old results here is how they are masked.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mala_tui.runtime.backends.base import MaskError
from mala_tui.runtime.backends.claude_fold import replace_file
from mala_tui.runtime.backends.transcript_originals import keep_originals


def find_transcript(root: Path, session_id: str) -> Path:
    """`<config dir>/projects/<project>/<session id>.jsonl`, whatever the project's name."""
    matches = sorted((root / "projects").glob(f"*/{session_id}.jsonl"))
    if not matches:
        raise MaskError(f"no transcript for session {session_id} under {root / 'projects'}")
    return max(matches, key=lambda p: p.stat().st_mtime)


def project_folder(root: Path, cwd: Path) -> Path:
    """Where the CLI keeps the sessions of work done in `cwd`: `<config dir>/projects/`
    and the folder's absolute path with every character but a letter or digit as '-'."""
    return root / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(cwd))


def copy_for_fork(root: Path, session_id: str, cwd: Path) -> Path | None:
    """The transcript of `session_id`, copied into the project folder of `cwd` unless it is
    there already, so that a CLI working in `cwd` finds it to resume (and fork). Returns
    where it now is; None when there is no such transcript (the CLI then says so itself).
    """
    target = project_folder(root, cwd) / f"{session_id}.jsonl"
    if target.is_file():
        return target
    try:
        source = find_transcript(root, session_id)
    except MaskError:
        return None
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    shutil.copyfile(source, target)
    return target


def rewrite_transcript(path: Path, placeholders: Mapping[str, str], backup_dir: Path | None) -> int:
    """Replace the results with these ids wherever the transcript holds them; atomic.

    The CLI stores a result in the `user` entry (its `tool_result` block and the
    tool's structured `toolUseResult`) and again in request blobs; every copy is
    rewritten, so a resumed session sees only the placeholder. Lines that are not
    JSON are kept as they are. The lines changed are kept as they were in `backup_dir`
    first (no copy kept, no rewrite). Returns how many distinct results were replaced.
    """
    try:
        original = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise MaskError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    replaced: set[str] = set()
    lines = []
    changed: list[str] = []
    for line in original.splitlines(keepends=True):
        if "tool_result" not in line:
            lines.append(line)  # no result in it: most of a long session's lines
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            lines.append(line)
            continue
        found = _mask_entry(entry, placeholders)
        if found:
            replaced |= found
            if entry != json.loads(line):  # a result masked before is not kept again
                changed.append(line)
            ending = "\n" if line.endswith("\n") else ""
            lines.append(json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + ending)
        else:
            lines.append(line)
    if replaced:
        if backup_dir is not None:
            keep_originals(backup_dir, path, changed)
        replace_file(path, "".join(lines))
    return len(replaced)


def _mask_entry(entry: Any, placeholders: Mapping[str, str]) -> set[str]:
    """Rewrite tool_result blocks (anywhere in the entry) and their toolUseResult."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "tool_result" and node.get("tool_use_id") in placeholders:
                tool_id = node["tool_use_id"]
                node["content"] = placeholders[tool_id]
                found.add(tool_id)
                return
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(entry)
    if found and isinstance(entry, dict) and "toolUseResult" in entry:
        text = next(iter(placeholders[tool_id] for tool_id in found))
        entry["toolUseResult"] = _shrink(entry["toolUseResult"], text)
    return found


def _shrink(value: Any, text: str) -> Any:
    """Keep the structured result's shape (the CLI renders it) but not its bulk."""
    if isinstance(value, str):
        return text if len(value) > len(text) else value
    if isinstance(value, dict):
        return {key: _shrink(item, text) for key, item in value.items()}
    if isinstance(value, list):
        return [_shrink(item, text) for item in value[:5]]
    return value
