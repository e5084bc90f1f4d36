"""An endpoint that answers a broken stream full of escapes and a key: nothing of it reaches
the terminal raw, no key reaches a file, and what Claude Code said is kept, cleaned."""

from __future__ import annotations

from pathlib import Path

import pytest

from mala_tui.loopback import FaultSpec, read_jsonl
from mala_tui.loopback.faults import BROKEN_STREAM_KEY
from mala_tui.runtime.journal.writer import list_runs
from tests.integration.test_run_command import run_scenario_headless

pytestmark = pytest.mark.integration

LEAKS = (BROKEN_STREAM_KEY, "ghp_Gateway", "sk-ant-api03")


def files_holding(root: Path, needles: tuple[str, ...]) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            found += [f"{path}: {n}" for n in needles if n.encode() in data]
    return found


async def test_a_broken_stream_reaches_neither_the_terminal_raw_nor_a_file(tmp_path: Path) -> None:
    requests = tmp_path / "requests.jsonl"
    code, out, err, _ = await run_scenario_headless(
        tmp_path, "quickstart", log=requests, faults=[FaultSpec(kind="broken_stream", at_request=2)]
    )
    assert any(r.fault == "broken_stream" for r in read_jsonl(requests))
    assert code == 0, out + err
    terminal = out + err
    assert "\x1b" not in terminal and "\x07" not in terminal, repr(terminal[-2000:])
    assert [leak for leak in LEAKS if leak in terminal] == []
    # Said in short, cleaned and redacted, where the run's output is.
    assert "Could not parse message into JSON" in out
    (run,) = list_runs(tmp_path / "data")
    kept = (run.directory / "stderr" / "task-1.log").read_text(encoding="utf-8")
    assert "\u241b]52;c;UFdORUQ=\u2407\u241b]0;PWNED\u2407\u241b[2J" in kept
    assert "\x1b" not in kept
    assert files_holding(run.directory, LEAKS) == []
