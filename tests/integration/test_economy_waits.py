"""The operator's waits with the real CLI: the cache goes cold, and mala-tui masks free."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mala_tui.bench.arms import run_cli_arm, run_managed_arm
from mala_tui.config import Settings
from mala_tui.core import events as ev
from mala_tui.core.events import parse_event
from mala_tui.loopback import Scenario, read_jsonl

pytestmark = [pytest.mark.integration]

# Six 88 KB reads (~22,000 tokens each): past the soft threshold (60,000) at the third,
# with a mask waiting until halfway to hard. A permission request answered after 6
# minutes comes after the third read; a 6-minute pause as the sixth is asked for (the
# interrupt refuses it: it is read again after the pause), with two reads unmasked. The
# benchmark's operator moves the simulated clock on by each wait.
WAITING = Scenario.model_validate(
    {
        "name": "waiting",
        "task": "Read the six modules, count their lines with the shell, then write NOTES.md.",
        "final_answer": "NOTES.md is written.",
        "workspace": {
            "files": [{"path": "src/m{i}.py", "count": 6, "size": 88_000, "kind": "python"}]
        },
        "steps": [
            {"tool": "Read", "path": "src/m{i}.py", "count": 3},
            {"tool": "Bash", "command": "sh -c 'cat src/m*.py | wc -l'", "id": "count"},
            {"tool": "Read", "path": "src/m{i}.py", "count": 3, "start": 4},
            {"tool": "Write", "path": "NOTES.md", "content": "Counted.\n"},
        ],
        "waits": [
            {"kind": "permission", "step": "count", "minutes": 6},
            {"kind": "pause", "step": "s007", "minutes": 6},
        ],
    }
)


def events_of(folder: Path) -> list[ev.Event]:
    (journal,) = folder.glob("data/runs/*/events.jsonl")
    return [parse_event(json.loads(line)) for line in journal.read_text().splitlines()]


async def test_mala_tui_masks_free_after_each_wait_and_says_so(tmp_path: Path) -> None:
    # Two results kept, the older one rewritten by a mask: from 30% of the window the
    # mask waits until it pays, and is still waiting at each wait.
    late = {"soft_threshold": 0.3, "keep_recent_observations": 2}
    result = await run_managed_arm(WAITING, tmp_path, Settings.model_validate({"context": late}))
    assert result.finished, result.ending
    assert result.waited_s == 720.0
    events = events_of(tmp_path)
    free = [e for e in events if isinstance(e, ev.MaskApplied) and e.free]
    # Once after the permission request; as the pause ends, once more when the read the
    # pause cuts short had not come back before it. When it had (a race between the
    # operator and the agent), the mask before it left nothing old enough to mask then;
    # core/test_cache_cold.py checks the mask after a pause on its own.
    triggers = [e.trigger for e in free]
    assert triggers in (["projection"], ["projection", "soft_threshold"]), triggers
    assert all(e.idle_seconds is not None and e.idle_seconds >= 360 for e in free)
    assert result.free_masks == len(free)
    started = next(e for e in events if isinstance(e, ev.SessionStarted))
    assert started.cache_ttl_seconds == 300.0
    paused = [e for e in events if isinstance(e, ev.PhaseChanged) and e.trigger == "resume"]
    assert len(paused) == 1
    records = read_jsonl(tmp_path / "loopback-requests.jsonl")
    # The request after each wait found the cache cold: nothing was read from it.
    cold = [r for r in records if r.status == 200 and r.cache_read_input_tokens == 0]
    assert len(cold) >= 3  # the first request, and one after each wait


async def test_the_cli_alone_waits_as_long_and_pays_the_cold_cache(tmp_path: Path) -> None:
    result = await run_cli_arm("raw", WAITING, tmp_path)
    assert result.finished, result.ending
    assert result.waited_s == 720.0
    records = [r for r in read_jsonl(tmp_path / "loopback-requests.jsonl") if r.status == 200]
    cold = [r for r in records if r.cache_read_input_tokens == 0]
    assert len(cold) >= 3
    # After a cold wait the whole prompt is written again.
    assert max(r.cache_creation_input_tokens for r in cold[1:]) > 60_000
