"""The economy benchmark's targets for mala-tui, and each scenario's own point.

Each target is judged only when the arms it needs were run, so a subset of arms
(``--arms clearing,managed``) is gated on what it can decide. The summarising peers (the
CLI's compaction and server-side compaction) are judged at their best: the cheapest run
that finishes.
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


def check_targets(arms: dict[str, ArmResult], settings: Settings) -> list[TargetCheck]:
    """Issue 11's targets for the mala-tui arm, and the scenario's own point, each judged
    only when the arms it needs were run."""
    targets: list[TargetCheck] = []
    raw, unmanaged, managed = arms.get("raw"), arms.get("unmanaged"), arms.get("managed")
    summarising = {name: arms[name] for name in SUMMARISING if name in arms}
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


def _setting_label(arm: ArmResult) -> str:
    if arm.compact_window is not None:
        return f"window {arm.compact_window:,}"
    return f"trigger {arm.compact_trigger:,}"
