"""Masking on a disk that cannot take the transcript's copy: refused, the transcript as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mala_tui.bench.own_faults.disk_full import fill, small_disk
from mala_tui.runtime.backends.base import MaskError
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
