"""The fault suite's stop trials, small: Ctrl-C then resume, SIGTERM during start-up then
resume, each with real CLI sessions; every session finished after the resume, nothing lost,
nothing leaked."""

from __future__ import annotations

from pathlib import Path

import pytest

from mala_tui.bench.fault_harness import Expect
from mala_tui.bench.own_faults.headless_cli import PLANTED_KEY, exposure
from mala_tui.bench.own_faults.stops import ctrl_c_then_resume_trial, sigterm_during_start_up_trial

pytestmark = pytest.mark.alone


@pytest.mark.integration
@pytest.mark.parametrize("presses", [1, 2])
async def test_ctrl_c_then_resume_finishes_every_session(presses: int, tmp_path: Path) -> None:
    row = await ctrl_c_then_resume_trial(tmp_path, 2, presses=presses)
    assert Expect(2, 0).misses(row) == []


@pytest.mark.integration
async def test_sigterm_during_start_up_then_resume_finishes_every_session(
    tmp_path: Path,
) -> None:
    row = await sigterm_during_start_up_trial(tmp_path, 3)
    assert Expect(3, 0).misses(row) == []
    assert "worktrees made" in row.fault


def test_exposure_finds_escapes_on_the_terminal_and_keys_in_files(tmp_path: Path) -> None:
    (tmp_path / "runs" / "r").mkdir(parents=True)
    (tmp_path / "runs" / "r" / "events.jsonl").write_text(f'{{"task": "{PLANTED_KEY}"}}\n')
    (tmp_path / "runs" / "r" / "clean.txt").write_text("nothing to see\n")
    found = exposure(b"ok \x1b]52;c;cHdu\x07 \x1b[2J", tmp_path)
    assert found == ["2 raw escape bytes on the terminal", "a key in runs/r/events.jsonl"]
    assert exposure(b"ok\n", tmp_path / "runs" / "r" / "none") == []
