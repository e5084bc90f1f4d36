"""The growth benchmark's gate: mala-tui's cost per step grows no more than the best
summarising peer's, judged only when the arms it needs were run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mala_tui.bench import growth
from mala_tui.bench.arms import ArmResult
from mala_tui.bench.growth import Point
from mala_tui.bench.growth_gate import judge
from mala_tui.loopback import Scenario


def point(arm: str, length: int, per_step: float, *, finished: bool = True) -> Point:
    steps = 100 * length
    ending = "completed" if finished else "blocking_limit: Prompt is too long"
    return Point(arm, length, steps, per_step * steps, 80_000, finished, ending)


def run(managed: float, compaction: float | None, server: float | None) -> list[Point]:
    """Every arm at 1x and 16x, each at 10,000 a step at 1x and `growth` times that at 16x."""
    points = [point("raw", 1, 50_000), point("raw", 16, 600_000)]
    for arm, ratio in (
        ("managed", managed),
        ("compaction", compaction),
        ("server-compaction", server),
    ):
        if ratio is not None:
            points += [point(arm, 1, 10_000), point(arm, 16, 10_000 * ratio)]
    return points


def test_met_when_mala_tui_grows_no_more_than_the_best_peer() -> None:
    gate = judge(run(1.5, 1.51, 1.6), [1, 4, 16])
    assert gate.judged and gate.met and not gate.failed
    assert gate.best == "compaction"
    assert gate.managed == pytest.approx(1.5)
    assert gate.peers == pytest.approx({"compaction": 1.51, "server-compaction": 1.6})
    assert gate.line() == (
        "Gate (cost per step growth, 1x to 16x): mala-tui 1.50x against the CLI's "
        "compaction 1.51x, server-side compaction 1.60x; best 1.51x: met."
    )
    # Equal growth is no more than the peer's.
    assert judge(run(1.6, 1.7, 1.6), [1, 16]).met


def test_missed_when_mala_tui_grows_more_than_the_best_even_if_less_than_the_other() -> None:
    # The figures of 2026-11-27: 2.40x against 1.51x and 1.60x.
    gate = judge(run(2.4, 1.51, 1.6), [1, 4, 16])
    assert gate.judged and not gate.met and gate.failed
    assert "mala-tui 2.40x" in gate.line()
    assert gate.line().endswith("best 1.51x: MISSED (grows more than the CLI's compaction).")
    # Below server-side compaction's growth is not enough: the best peer sets the bar.
    assert judge(run(1.55, 1.51, 1.6), [1, 16]).failed


def test_one_peer_is_enough_to_judge() -> None:
    gate = judge(run(1.4, None, 1.3), [1, 16])
    assert gate.failed and gate.peers == pytest.approx({"server-compaction": 1.3})
    assert "server-side compaction 1.30x; best 1.30x" in gate.line()


@pytest.mark.parametrize(
    ("points", "lengths", "why"),
    [
        (run(1.2, None, None), [1, 16], "no summarising peer was run at both lengths"),
        (run(9.0, None, None)[:2] + run(1.0, 1.0, 1.0)[4:], [1, 16], "mala-tui was not run"),
        (run(9.0, 1.0, 1.0), [4], "one length only"),
        (run(9.0, 1.0, 1.0)[:3], [1, 16], "mala-tui was not run at both lengths"),
    ],
)
def test_not_judged_without_the_arms_or_lengths_it_needs(
    points: list[Point], lengths: list[int], why: str
) -> None:
    gate = judge(points, lengths)
    assert not gate.judged and not gate.failed
    assert why in gate.detail
    assert "not judged" in gate.line()
    assert gate.to_json()["judged"] is False


def test_a_peer_that_did_not_finish_sets_no_bar() -> None:
    # Its cost is over the steps planned, not those done: its growth would read too low.
    stopped = [point("compaction", 1, 10_000), point("compaction", 16, 1_000, finished=False)]
    points = [*run(1.5, None, 1.6), *stopped]
    gate = judge(points, [1, 16])
    assert gate.met and gate.peers == pytest.approx({"server-compaction": 1.6})
    alone = [*run(1.5, None, None), *stopped]
    assert not judge(alone, [1, 16]).judged


def test_mala_tui_not_finishing_misses_whatever_its_growth() -> None:
    points = run(1.0, 1.5, 1.6)
    points[3] = point("managed", 16, 1_000, finished=False)
    gate = judge(points, [1, 16])
    assert gate.failed and gate.detail == "mala-tui did not finish at both lengths"


def fake_result(arm: str, cost: float) -> ArmResult:
    return ArmResult(
        arm=arm,
        finished=True,
        ending="completed",
        redone_steps=0,
        rereads=0,
        reread_tokens=0,
        peak_prompt_tokens=80_000,
        window=200_000,
        requests=40,
        prompt_tokens=1_000_000,
        cost_units=cost,
        masks=0,
        masked_results=0,
        free_masks=0,
        restarts=0,
        compactions=0,
        cleared_results=0,
        wall_s=1.0,
    )


@pytest.mark.parametrize(
    ("arms", "managed_growth", "status"),
    [
        ("compaction,managed", 1.2, 0),
        ("compaction,managed", 2.0, 1),
        ("compaction", 2.0, 0),
    ],
)
def test_the_command_exits_1_when_the_gate_is_missed_and_records_it(
    arms: str,
    managed_growth: float,
    status: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The compaction's cost per step grows 1.5x from 1x to 4x; mala-tui's `managed_growth`.
    async def arm_run(
        arm: str, scenario: Scenario, folder: Path, ratio: float | None, args: Any
    ) -> ArmResult:
        factor = 4 if scenario.name.endswith("-x4") else 1
        grown = {"compaction": 1.5, "managed": managed_growth}[arm] if factor > 1 else 1.0
        return fake_result(arm, 1_000.0 * len(scenario.plan()) * grown)

    monkeypatch.setattr(growth, "run_arm", arm_run)
    out = tmp_path / "out"
    assert growth.main(["--lengths", "1,4", "--arms", arms, "--out", str(out)]) == status
    recorded = json.loads((out / "results.json").read_text(encoding="utf-8"))["gate"]
    judged = "managed" in arms
    assert recorded["judged"] is judged
    assert recorded["met"] is (judged and status == 0)
    if judged:
        assert recorded["managed_growth"] == pytest.approx(managed_growth)
        assert recorded["peer_growth"] == {"compaction": 1.5}
    else:
        assert recorded["detail"] == "mala-tui was not run at both lengths"


def test_the_command_prints_the_gates_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def arm_run(
        arm: str, scenario: Scenario, folder: Path, ratio: float | None, args: Any
    ) -> ArmResult:
        return fake_result(arm, 1_000.0 * len(scenario.plan()))

    monkeypatch.setattr(growth, "run_arm", arm_run)
    argv = ["--lengths", "1,4", "--arms", "server-compaction,managed", "--out", str(tmp_path)]
    assert growth.main(argv) == 0
    assert (
        "Gate (cost per step growth, 1x to 4x): mala-tui 1.00x against server-side "
        "compaction 1.00x; best 1.00x: met." in capsys.readouterr().out
    )


def test_the_peers_can_be_taken_from_an_earlier_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[str] = []

    async def arm_run(
        arm: str, scenario: Scenario, folder: Path, ratio: float | None, args: Any
    ) -> ArmResult:
        ran.append(arm)
        grown = 1.5 if scenario.name.endswith("-x4") and arm == "compaction" else 1.0
        return fake_result(arm, 1_000.0 * len(scenario.plan()) * grown)

    monkeypatch.setattr(growth, "run_arm", arm_run)
    peers = tmp_path / "peers"
    assert growth.main(["--lengths", "1,4", "--arms", "compaction", "--out", str(peers)]) == 0
    ran.clear()
    # Kept inside --out, which is emptied: it is read first.
    saved = tmp_path / "out" / "peers.json"
    saved.parent.mkdir()
    saved.write_text((peers / "results.json").read_text(encoding="utf-8"), encoding="utf-8")
    argv = ["--lengths", "1,4", "--arms", "managed", "--out", str(tmp_path / "out")]
    assert growth.main([*argv, "--peers-from", str(saved)]) == 0
    assert ran == ["managed", "managed"]  # the compaction was not run again
    recorded = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert recorded["gate"]["peer_growth"] == {"compaction": 1.5}
    assert recorded["gate"]["met"] is True


def test_peers_from_a_run_without_the_lengths_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "peers.json"
    saved.write_text(json.dumps({"points": [point("compaction", 1, 10.0).to_json()]}))
    argv = ["--lengths", "1,4", "--arms", "managed", "--out", str(tmp_path / "out")]
    with pytest.raises(SystemExit) as ended:
        growth.main([*argv, "--peers-from", str(saved)])
    assert ended.value.code == 2
    assert "compaction was not run at [4]x there" in capsys.readouterr().err
