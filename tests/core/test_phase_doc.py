"""docs/ARCHITECTURE.md's phase table is the code's: a change to one without the other fails."""

from __future__ import annotations

import re
from pathlib import Path

from mala_tui.core.phases import TRANSITIONS, Phase, Trigger

DOC = Path(__file__).resolve().parents[2] / "docs" / "ARCHITECTURE.md"
MOVE = re.compile(r"`(\w+)` → `(\w+)`")


def documented() -> dict[Phase, dict[Trigger, Phase]]:
    text = DOC.read_text(encoding="utf-8")
    table = text.split("<!-- phase-table -->")[1].split("<!-- /phase-table -->")[0]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    found: dict[Phase, dict[Trigger, Phase]] = {}
    for row in rows:
        phase, moves = (cell.strip() for cell in row.strip("|").split("|"))
        found[Phase(phase.strip("`"))] = {
            Trigger(trigger): Phase(after) for trigger, after in MOVE.findall(moves)
        }
    return found


def test_the_documented_phase_table_is_the_code_table() -> None:
    assert documented() == {phase: dict(moves) for phase, moves in TRANSITIONS.items()}
