"""The economy benchmark's targets for mala-tui, and each scenario's own point.

Each target is judged only when the arms it needs were run, so a subset of arms
(``--arms clearing,managed``) is gated on what it can decide. The summarising peers (the
CLI's compaction and server-side compaction) are judged at their best: the cheapest run
that finishes.

At 1x mala-tui's cost is held to 0.8x of each summarising peer and below every peer that
finishes. Above 1x a result that arrives in a compacting request is summarised before it
is ever cached, which puts server-side compaction near the floor (every result written
once, the head read on each request, the output: floor.py), where 0.8x of it is below
what any manager can pay. So there mala-tui is held to 0.8x of the CLI's compaction and
to at most half of server-side compaction's overhead above the floor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mala_tui.bench.arms import SUMMARISING, WINDOW, ArmResult
from mala_tui.config import Settings

#: The summarising peers as the targets name them.
PEER_NAMES = {"compaction": "the CLI's compaction", "server-compaction": "server-side compaction"}


@dataclass(frozen=True)
class TargetCheck:
    name: str
    met: bool
    detail: str


def best_compaction(runs: Sequence[ArmResult]) -> ArmResult:
    """A compaction at its best: the cheapest run that finishes (else the cheapest)."""
    finished = [run for run in runs if run.finished]
    return min(finished or runs, key=lambda run: run.cost_units)


def check_targets(
    arms: dict[str, ArmResult],
    settings: Settings,
    *,
    token_ratio: float = 1.0,
    floor_cost: float | None = None,
) -> list[TargetCheck]:
    """The targets for the mala-tui arm at this density, and the scenario's own point, each
    judged only when the arms (and, above 1x, the floor) it needs are there."""
    raw, unmanaged, managed = arms.get("raw"), arms.get("unmanaged"), arms.get("managed")
    summarising = {name: arms[name] for name in SUMMARISING if name in arms}
    targets = _scenario_points(raw, unmanaged)
    if managed is None:
        return targets
    hard = int(settings.context.hard_threshold * WINDOW)
    targets += [
        TargetCheck("finishes", managed.finished, managed.ending),
        TargetCheck(
            "peak under the hard threshold",
            managed.peak_prompt_tokens < hard,
            f"peak {managed.peak_prompt_tokens:,} of {hard:,}",
        ),
    ]
    if summarising:
        fewest = min(summarising, key=lambda name: summarising[name].rereads)
        targets.append(
            TargetCheck(
                "re-reads no more than the best summarising peer's",
                managed.rereads <= summarising[fewest].rereads,
                f"{managed.rereads} against {summarising[fewest].rereads} ({PEER_NAMES[fewest]})",
            )
        )
    if raw is not None:
        ratio = managed.prompt_tokens / raw.prompt_tokens
        targets.append(
            TargetCheck("total prompt tokens <= 0.5x raw", ratio <= 0.5, f"{ratio:.2f}x")
        )
    if token_ratio > 1.0:
        return targets + _denser_costs(managed, summarising, floor_cost)
    peers = {
        name: arm
        for name, arm in arms.items()
        if name != "managed" and (arm.finished or arm.computed)
    }
    if peers:
        cheapest = min(arm.cost_units for arm in peers.values())
        detail = ", ".join(
            f"{managed.cost_units / arm.cost_units:.2f}x {name}" for name, arm in peers.items()
        )
        targets.append(
            TargetCheck(
                "cache-adjusted cost below every peer's that finishes",
                managed.cost_units < cheapest,
                detail,
            )
        )
    for name, peer in summarising.items():
        ratio = managed.cost_units / peer.cost_units
        setting = f" ({_setting_label(peer)})" if peer.setting is not None else ""
        targets.append(
            TargetCheck(
                f"cache-adjusted cost <= 0.8x {PEER_NAMES[name]} at its best",
                ratio <= 0.8,
                f"{ratio:.2f}x{setting}",
            )
        )
    return targets


def _scenario_points(raw: ArmResult | None, unmanaged: ArmResult | None) -> list[TargetCheck]:
    """The scenario makes its point: raw finishes, an unmanaged 200K window does not."""
    targets: list[TargetCheck] = []
    if raw is not None:
        targets.append(
            TargetCheck(
                "scenario: raw (1M) finishes, or is computed past its window",
                raw.finished or raw.computed,
                raw.ending,
            )
        )
    if unmanaged is not None:
        targets.append(
            TargetCheck(
                "scenario: an unmanaged 200K window does not finish",
                not unmanaged.finished,
                f"{unmanaged.ending}; peak {unmanaged.peak_prompt_tokens:,}",
            )
        )
    return targets


def _denser_costs(
    managed: ArmResult, summarising: dict[str, ArmResult], floor_cost: float | None
) -> list[TargetCheck]:
    """Above 1x: 0.8x of the CLI's compaction, and at most half of server-side compaction's
    cost above the floor."""
    targets: list[TargetCheck] = []
    cli = summarising.get("compaction")
    if cli is not None:
        ratio = managed.cost_units / cli.cost_units
        setting = f" ({_setting_label(cli)})" if cli.setting is not None else ""
        targets.append(
            TargetCheck(
                f"cache-adjusted cost <= 0.8x {PEER_NAMES['compaction']} at its best",
                ratio <= 0.8,
                f"{ratio:.2f}x{setting}",
            )
        )
    server = summarising.get("server-compaction")
    if server is not None and floor_cost is not None:
        ours, theirs = managed.cost_units - floor_cost, server.cost_units - floor_cost
        met = theirs > 0 and ours <= 0.5 * theirs
        shown = f"{ours / theirs:.2f}x" if theirs > 0 else "theirs is at the floor"
        targets.append(
            TargetCheck(
                "cost above the floor <= 0.5x server-side compaction's at its best",
                met,
                f"{shown} ({ours:,.0f} against {theirs:,.0f}; floor {floor_cost:,.0f})",
            )
        )
    return targets


def _setting_label(arm: ArmResult) -> str:
    if arm.compact_window is not None:
        return f"window {arm.compact_window:,}"
    return f"trigger {arm.compact_trigger:,}"
