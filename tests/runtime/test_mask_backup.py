"""What masking keeps of a transcript it rewrites: the changed lines, each once; and
nothing rewritten when even that cannot be kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mala_tui.bench.own_faults.disk_full import fill, small_disk
from mala_tui.runtime.backends.base import MaskError
from mala_tui.runtime.backends.claude_fold import fold_transcript
from mala_tui.runtime.backends.claude_transcripts import rewrite_transcript


def transcript(folder: Path) -> Path:
    path = folder / "session.jsonl"
    entry = {
        "type": "user",
        "message": {
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x" * 50_000}]
        },
    }
    path.write_text(json.dumps(entry) + "\n")
    return path


def test_a_backup_folder_that_cannot_be_made_refuses_the_mask(tmp_path: Path) -> None:
    path = transcript(tmp_path)
    before = path.read_text()
    with pytest.raises(MaskError, match="the original cannot be kept"):
        rewrite_transcript(path, {"t1": "[masked]"}, Path("/dev/null/copies"))
    assert path.read_text() == before


def test_a_full_disk_refuses_the_mask_and_leaves_no_partial_copy(tmp_path: Path) -> None:
    path = transcript(tmp_path)
    before = path.read_text()
    with small_disk(tmp_path / "disk", 256 * 1024) as mounted:
        if not mounted:
            pytest.skip("needs a real tmpfs (root) to fill")
        fill(tmp_path / "disk")
        copies = tmp_path / "disk"
        with pytest.raises(MaskError, match="No space left on device"):
            rewrite_transcript(path, {"t1": "[masked]"}, copies)
        assert sorted(p.name for p in copies.iterdir()) == ["filler"]
    assert path.read_text() == before


def test_each_mask_keeps_only_the_lines_it_changed_each_once(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    entries = [{"type": "user", "message": {"content": "the task"}}]
    for n in range(3):
        result = {"type": "tool_result", "tool_use_id": f"t{n}", "content": f"out{n} " * 500}
        entries.append({"type": "user", "message": {"content": [result]}})
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    copies = tmp_path / "copies"

    assert rewrite_transcript(path, {"t0": "[masked 0]"}, copies) == 1
    rewrite_transcript(path, {"t0": "[masked 0]", "t1": "[masked 1]"}, copies)
    (kept,) = copies.iterdir()
    assert kept.name == "session.originals.jsonl"
    originals = [json.loads(line) for line in kept.read_text().splitlines()]
    # The two results as they were, once each: not the task, not the untouched result,
    # not the already masked t0 again.
    assert originals == entries[1:3]
    # What the transcript says now and what was kept hold everything it ever said.
    now = path.read_text()
    assert "out2" in now and "out0" not in now and "out1" not in now


def test_the_fold_keeps_what_it_drops(tmp_path: Path) -> None:
    from tests.runtime.test_claude_fold import TASK, Chain

    chain = Chain()
    chain.add("user", TASK)
    for n in range(2):
        chain.step(f"t{n}", f"cat log{n}", "L" * 3000)
    path = chain.write(tmp_path / "s.jsonl")
    copies = tmp_path / "copies"
    rewrite_transcript(path, {"t0": "[Bash result masked -- `cat log0`]"}, copies)
    assert fold_transcript(path, (), copies) is not None
    kept = [json.loads(line) for line in (copies / "s.originals.jsonl").read_text().splitlines()]
    calls = [
        part["id"]
        for entry in kept
        for part in entry.get("message", {}).get("content", [])
        if isinstance(part, dict) and part.get("type") == "tool_use"
    ]
    assert calls == ["t0"]  # the folded call, gone from the transcript, kept here
    assert "tool_use" not in "".join(
        line for line in path.read_text().splitlines() if '"t0"' in line
    )
