"""The growth benchmark's gate: mala-tui's cost per step grows no more than the best
summarising peer's, from the shortest length run to the longest.

Growth is the cost per step at the longest length over the cost per step at the shortest.
The peers are the CLI's compaction and server-side compaction; the best is the one that
grows less. A peer that did not finish at both lengths sets no bar: its cost is divided
by the steps planned, not those done, so its growth would read lower than it is. The gate
is judged only when mala-tui and at least one peer have both lengths and the lengths
differ; otherwise it says why not and does not fail the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from mala_tui.bench.arms import SUMMARISING
from mala_tui.bench.economy_targets import PEER_NAMES

MANAGED = "managed"


class GrowthPoint(Protocol):
    """What the gate needs of one arm at one length (growth.Point)."""

    @property
    def arm(self) -> str: ...
    @property
    def length(self) -> int: ...
    @property
    def finished(self) -> bool: ...
    @property
    def cost_per_step(self) -> float: ...


@dataclass(frozen=True)
class Growth:
    """One arm's cost per step at the shortest and the longest length."""

    first: float
    last: float
    finished: bool

    @property
    def ratio(self) -> float:
        return self.last / self.first if self.first > 0 else float("inf")


@dataclass(frozen=True)
class GrowthGate:
    shortest: int
    longest: int
    judged: bool
    met: bool
    detail: str
    """Why it was not judged, or what made it miss; empty when met."""
    managed: float | None = None
    peers: dict[str, float] = field(default_factory=dict)
    """Each summarising peer that finished both lengths, by arm: its growth."""
    best: str | None = None

    @property
    def failed(self) -> bool:
        return self.judged and not self.met

    def line(self) -> str:
        """One line for the report: the figures and the verdict."""
        span = f"{self.shortest}x to {self.longest}x"
        if not self.judged:
            return f"Gate (cost per step growth, {span}): not judged: {self.detail}."
        peers = ", ".join(f"{PEER_NAMES[arm]} {ratio:.2f}x" for arm, ratio in self.peers.items())
        verdict = "met" if self.met else f"MISSED ({self.detail})"
        return (
            f"Gate (cost per step growth, {span}): mala-tui {self.managed:.2f}x against "
            f"{peers}; best {self.peers[self.best or '']:.2f}x: {verdict}."
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": "mala-tui's cost per step growth <= the best summarising peer's",
            "shortest": self.shortest,
            "longest": self.longest,
            "judged": self.judged,
            "met": self.met,
            "detail": self.detail,
            "managed_growth": None if self.managed is None else round(self.managed, 3),
            "peer_growth": {arm: round(ratio, 3) for arm, ratio in self.peers.items()},
            "best_peer": self.best,
        }


def growth_of(points: Sequence[GrowthPoint], arm: str, first: int, last: int) -> Growth | None:
    """`arm`'s growth from length `first` to `last`, or None when either point is missing."""
    mine = {p.length: p for p in points if p.arm == arm}
    if first not in mine or last not in mine:
        return None
    return Growth(
        mine[first].cost_per_step,
        mine[last].cost_per_step,
        mine[first].finished and mine[last].finished,
    )


def judge(points: Sequence[GrowthPoint], lengths: Sequence[int]) -> GrowthGate:
    """The gate on `points`, run at `lengths`."""
    shortest, longest = min(lengths), max(lengths)

    def unjudged(why: str) -> GrowthGate:
        return GrowthGate(shortest, longest, judged=False, met=False, detail=why)

    if shortest == longest:
        return unjudged("one length only")
    managed = growth_of(points, MANAGED, shortest, longest)
    if managed is None:
        return unjudged("mala-tui was not run at both lengths")
    runs = {arm: growth_of(points, arm, shortest, longest) for arm in SUMMARISING}
    if all(run is None for run in runs.values()):
        return unjudged("no summarising peer was run at both lengths")
    peers = {arm: run.ratio for arm, run in runs.items() if run is not None and run.finished}
    if not peers:
        return unjudged("no summarising peer finished at both lengths")
    best = min(peers, key=lambda arm: peers[arm])
    met = managed.finished and managed.ratio <= peers[best]
    if met:
        detail = ""
    elif not managed.finished:
        detail = "mala-tui did not finish at both lengths"
    else:
        detail = f"grows more than {PEER_NAMES[best]}"
    return GrowthGate(
        shortest, longest, True, met, detail, managed=managed.ratio, peers=peers, best=best
    )
