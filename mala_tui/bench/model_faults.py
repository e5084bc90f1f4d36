"""What the suite's loopback model does wrong on cue: stalls, error storms, resets, a full window.

Each function plans the sessions of one trial, every session with the faults it meets.
"""

from __future__ import annotations

from mala_tui.bench.fault_harness import Planned
from mala_tui.loopback import FaultSpec, Scenario, load_scenario
from mala_tui.loopback.faults import FaultKind

STALLS: tuple[FaultKind, ...] = ("stall_after_message_start", "stall_before_bytes")


def stall_sessions(sessions: int, over_limit: int) -> list[Planned]:
    """Two stalls each (within max_idle_retries), and `over_limit` sessions with three."""
    base = load_scenario("quickstart")
    planned = []
    for index in range(sessions + over_limit):
        steps = ("s002", "s004", "s006") if index >= sessions else ("s002", "s005")
        faults = tuple(
            FaultSpec(kind=STALLS[(index + n) % 2], at_step=step) for n, step in enumerate(steps)
        )
        planned.append(Planned(f"stall-{index:02d}", base, faults))
    return planned


def error_sessions(kind: FaultKind, sessions: int, storm: int, cli_retries: int) -> list[Planned]:
    """`storm` errors in a row at one step: more than the CLI's own retries, so mala-tui's
    retry policy has to carry the session over the rest of the storm."""
    base = load_scenario("quickstart")
    return [
        Planned(
            f"{kind}-{index:02d}",
            base,
            (FaultSpec(kind=kind, at_step=f"s00{2 + index % 5}", times=storm),),
            {"CLAUDE_CODE_MAX_RETRIES": str(cli_retries)},
        )
        for index in range(sessions)
    ]


def reset_sessions(sessions: int) -> list[Planned]:
    base = load_scenario("quickstart")
    return [
        Planned(
            f"reset-{index:02d}",
            base,
            (FaultSpec(kind="connection_reset", at_step=f"s00{2 + index % 5}", times=2),),
        )
        for index in range(sessions)
    ]


#: Six 1,000-token notes and a digest: past a 19,000-token window partway through.
TIGHT = Scenario.model_validate(
    {
        "name": "tight",
        "task": "Read the six notes and write a digest to DIGEST.md.",
        "goal": "Read notes/n_1..6.txt, write DIGEST.md.",
        "final_answer": "DIGEST.md written.",
        "workspace": {
            "files": [{"path": "notes/n_{i}.txt", "count": 6, "size": 4000, "kind": "text"}]
        },
        "steps": [
            {"tool": "Read", "path": "notes/n_{i}.txt", "count": 6},
            {"tool": "Write", "path": "DIGEST.md", "content": "digest\n"},
        ],
    }
)
TIGHT_WINDOW = 19_000


def too_long_sessions(sessions: int) -> list[Planned]:
    return [Planned(f"tight-{index:02d}", TIGHT) for index in range(sessions)]
