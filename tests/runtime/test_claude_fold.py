"""A fold applied to a CLI transcript: entries out, parents re-linked, the digest extended."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mala_tui.core.fold import DIGEST_HEADER, digest_lines
from mala_tui.runtime.backends.claude_fold import fold_transcript
from mala_tui.runtime.backends.claude_transcripts import rewrite_transcript

TASK = "Audit the logs."
NOTE = "Older output was masked. Continue."


class Chain:
    """Entries as the CLI writes them: one content block per entry, each naming its parent."""

    def __init__(self, entries: list[dict[str, Any]] | None = None) -> None:
        self.entries: list[dict[str, Any]] = [e for e in entries or [] if "uuid" in e]
        self._last: str | None = self.entries[-1]["uuid"] if self.entries else None
        self._made = 100 * len(self.entries)  # new ids never repeat an old one

    def add(self, kind: str, content: Any, **extra: Any) -> str:
        self._made += 1
        uuid = f"u{self._made:04d}"
        entry = {"type": kind, "uuid": uuid, "parentUuid": self._last, **extra}
        if kind in ("user", "assistant"):
            entry["message"] = {"role": kind, "content": content}
        else:
            entry["attachment"] = content
        self.entries.append(entry)
        self._last = uuid
        return uuid

    def step(self, tool_id: str, command: str, output: str) -> None:
        self.add("assistant", [{"type": "text", "text": f"Next: {command}."}])
        call = {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}
        self.add("assistant", [call])
        result = {"type": "tool_result", "tool_use_id": tool_id, "content": output}
        self.add("user", [result], toolUseResult={"stdout": output})
        self.add("attachment", {"type": "total_tokens_reminder", "text": "<total_tokens>"})

    def write(self, path: Path) -> Path:
        lines = [json.dumps(entry) for entry in self.entries]
        # The CLI's own bookkeeping lines, and one that is not JSON: kept as they are.
        lines.insert(1, json.dumps({"type": "api-request-blob", "message": {"content": []}}))
        lines.append("not json")
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path


def read(path: Path) -> list[dict[str, Any]]:
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            found.append(json.loads(line))
        except json.JSONDecodeError:
            found.append({"raw": line})
    return found


def chain_from_leaf(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a resume follows: from the newest entry back through its parents."""
    by_uuid = {e["uuid"]: e for e in entries if "uuid" in e}
    leaf = [e for e in entries if "uuid" in e][-1]
    chain = [leaf]
    while chain[-1].get("parentUuid") is not None:
        assert len(chain) <= len(by_uuid), "the parent links loop"
        chain.append(by_uuid[chain[-1]["parentUuid"]])
    return chain[::-1]


def tool_ids(entries: list[dict[str, Any]]) -> list[str]:
    return [
        part.get("id") or part.get("tool_use_id")
        for e in entries
        if isinstance(e.get("message", {}).get("content"), list)
        for part in e["message"]["content"]
        if part.get("type") in ("tool_use", "tool_result")
    ]


def test_two_folds_relink_the_chain_and_extend_the_digest(tmp_path: Path) -> None:
    chain = Chain()
    chain.add("user", TASK)
    for n in range(3):
        chain.step(f"t{n}", f"cat log{n}", "L" * 3000)
    path = chain.write(tmp_path / "s.jsonl")
    assert rewrite_transcript(
        path, {"t0": "[Bash result masked -- `cat log0`, exit 0, 2.9 KB]"}, None
    )

    first = fold_transcript(path)
    assert first is not None and (first.steps, first.digest_lines) == (1, 1)
    assert first.tokens_after < first.tokens_before
    entries = read(path)
    assert tool_ids(entries) == ["t1", "t1", "t2", "t2"]
    assert entries[1]["type"] == "api-request-blob" and entries[-1] == {"raw": "not json"}
    resumed = chain_from_leaf(entries)
    assert resumed[0]["message"]["content"][0] == {"type": "text", "text": TASK}
    assert [e["uuid"] for e in resumed] == [e["uuid"] for e in entries if "uuid" in e]
    # The step's words stay; its call and result went, and of the tokens-left notes only
    # the newest stayed.
    words = [e for e in resumed if e["type"] == "assistant"]
    assert words[0]["message"]["content"] == [{"type": "text", "text": "Next: cat log0."}]
    reminders = [e["uuid"] for e in resumed if e["type"] == "attachment"]
    assert reminders == [chain.entries[-1]["uuid"]]

    # A later mask and its fold: the earlier resume note goes too, the digest grows.
    chain = Chain(entries)
    chain.add("user", NOTE)
    chain.step("t3", "cat log3", "L" * 3000)
    path = chain.write(path)
    rewrite_transcript(path, {"t1": "[Bash result masked -- `cat log1`, exit 0, 2.9 KB]"}, None)
    second = fold_transcript(path, [NOTE])
    assert second is not None and (second.steps, second.notes, second.digest_lines) == (1, 1, 2)
    entries = read(path)
    resumed = chain_from_leaf(entries)
    assert [e["uuid"] for e in resumed] == [e["uuid"] for e in entries if "uuid" in e]
    assert all(e["message"]["content"] != NOTE for e in resumed if e["type"] == "user")
    digest = resumed[0]["message"]["content"][-1]["text"]
    assert digest.startswith(DIGEST_HEADER)
    assert digest_lines(digest) == (
        "- Bash `cat log0`, exit 0, 2.9 KB, masked",
        "- Bash `cat log1`, exit 0, 2.9 KB, masked",
    )
    assert len(resumed[0]["message"]["content"]) == 2  # the task and one digest


def test_nothing_masked_nothing_folded_and_the_file_is_untouched(tmp_path: Path) -> None:
    chain = Chain()
    chain.add("user", TASK)
    chain.step("t0", "ls", "a\nb")
    chain.step("t1", "ls -a", "a\nb\n.c")
    path = chain.write(tmp_path / "s.jsonl")
    before = path.read_bytes()
    assert fold_transcript(path) is None
    assert path.read_bytes() == before
