"""The cache breakpoint kept in a CLI transcript after a mask: where it goes, what stays."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mala_tui.runtime.backends.base import MaskError
from mala_tui.runtime.backends.claude_markers import MARKER, keep_breakpoint
from tests.runtime.test_claude_fold import TASK, Chain, read


def transcript(tmp_path: Path, steps: int, *, blob_of: str | None = None) -> Path:
    chain = Chain()
    chain.add("user", TASK)
    for n in range(steps):
        chain.step(f"t{n}", f"cat log{n}", f"output {n}")
    path = chain.write(tmp_path / "session.jsonl")
    if blob_of is not None:
        # A copy of a past request, as the CLI keeps them: the result in it too.
        result = {"type": "tool_result", "tool_use_id": blob_of, "content": "output"}
        blob = {"type": "api-request-blob", "body": {"messages": [{"content": [result]}]}}
        with path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(blob) + "\n")
    return path


def marked(path: Path) -> list[str]:
    """The tool-use ids of every marked result block, in file order (copies included)."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "tool_result" and "cache_control" in node:
                assert node["cache_control"] == MARKER
                found.append(node["tool_use_id"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for entry in read(path):
        walk(entry)
    return found


def test_the_result_before_the_newest_is_marked_in_every_copy(tmp_path: Path) -> None:
    path = transcript(tmp_path, 4, blob_of="t2")
    assert keep_breakpoint(path) == "t2"
    assert marked(path) == ["t2", "t2"]  # its entry and the request blob


def test_the_previous_mark_stays_and_older_ones_come_off(tmp_path: Path) -> None:
    path = transcript(tmp_path, 3)
    assert keep_breakpoint(path) == "t1"
    chain = Chain(read(path))
    chain.step("t3", "cat log3", "output 3")
    chain.step("t4", "cat log4", "output 4")
    chain.write(path)
    assert keep_breakpoint(path) == "t3"
    assert marked(path) == ["t1", "t3"]  # the request after this mask reads up to t1
    chain = Chain(read(path))
    chain.step("t5", "cat log5", "output 5")
    chain.step("t6", "cat log6", "output 6")
    chain.write(path)
    assert keep_breakpoint(path) == "t5"
    assert marked(path) == ["t3", "t5"]  # two of mala-tui's and the CLI's two: four


def test_marking_again_changes_nothing(tmp_path: Path) -> None:
    path = transcript(tmp_path, 3)
    keep_breakpoint(path)
    before = path.read_text(encoding="utf-8")
    assert keep_breakpoint(path) == "t1"
    assert path.read_text(encoding="utf-8") == before


def test_a_single_result_is_not_marked(tmp_path: Path) -> None:
    path = transcript(tmp_path, 1)
    before = path.read_text(encoding="utf-8")
    assert keep_breakpoint(path) is None
    assert path.read_text(encoding="utf-8") == before


def test_a_subagents_results_are_not_the_main_threads(tmp_path: Path) -> None:
    chain = Chain()
    chain.add("user", TASK)
    chain.step("t0", "cat a", "a")
    chain.step("t1", "cat b", "b")
    side = {"type": "tool_result", "tool_use_id": "s0", "content": "side"}
    chain.add("user", [side], isSidechain=True)
    path = chain.write(tmp_path / "session.jsonl")
    assert keep_breakpoint(path) == "t0"


def test_a_transcript_that_cannot_be_read_says_so(tmp_path: Path) -> None:
    with pytest.raises(MaskError, match="cannot be read"):
        keep_breakpoint(tmp_path / "missing.jsonl")
