"""`python -m mala_tui.bench subagents`: its table on a real run, and how it judges one."""

from __future__ import annotations

from dataclasses import replace

import pytest

from mala_tui.bench import subagents_bench
from mala_tui.bench.__main__ import main as bench_main
from mala_tui.bench.subagents_bench import ScenarioResult, SubagentRow


@pytest.mark.integration
def test_a_foreground_delegation_is_measured_exactly_with_the_real_cli(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = bench_main(["subagents", "--scenarios", "delegation-foreground"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith("delegation-foreground: done; subagents started 1, finished 1 (of 1)")
    # C read two logs and reported: three calls, each journaled as the model answered it.
    assert "| C | Check logs 1-2 | 1 | 3 / 3 | 0 | " in out
    assert "| completed |" in out
    costs = next(line for line in out.splitlines() if line.startswith("| $"))
    assert costs.count("(0.00%)") == 2, costs
    assert out.rstrip().endswith("targets: all met")


ROW = SubagentRow(
    name="A",
    description="Triage logs 1-4",
    depth=1,
    journaled=(12_000, 13_000),
    billed=(12_000, 13_000),
    compactions=0,
    compaction_calls=0,
    ended="completed",
)
MET = ScenarioResult(
    scenario="delegation",
    expected=1,
    status="done",
    started=1,
    finished=1,
    subagents=(ROW,),
    cost=0.2,
    model_cost=0.2,
    cli_cost=0.2,
    main_peak=18_000,
    model_main_peak=18_000,
)


def test_every_target_met_is_no_failure() -> None:
    assert MET.failures() == []
    assert MET.table().endswith("targets: all met")


@pytest.mark.parametrize(
    ("change", "missed"),
    [
        ({"subagents": (replace(ROW, journaled=(12_000, 13_005)),)}, "off by up to 5"),
        ({"subagents": (replace(ROW, journaled=(12_000,)),)}, "1 calls journaled, 2 answered"),
        ({"cost": 0.2 * 1.02}, "not within 1% of the model's usage's figure"),
        ({"cli_cost": None}, "not within 1% of Claude Code's figure"),
        ({"finished": 0}, "1 subagents started and 0 finished of 1"),
        ({"status": "failed"}, "the session ended failed, not done"),
        ({"main_peak": 17_000}, "main peak 17,000 against the model's 18,000"),
    ],
)
def test_a_missed_target_is_named_in_the_table(change: dict[str, object], missed: str) -> None:
    result = replace(MET, **change)  # type: ignore[arg-type]
    assert any(missed in line for line in result.failures()), result.failures()
    assert missed in result.table().splitlines()[-1]


def test_within_one_percent_is_met_and_a_missing_figure_is_not() -> None:
    assert subagents_bench.relative(1.009, 1.0) == pytest.approx(0.009)
    assert replace(MET, cost=0.2 * 1.009, cli_cost=0.2 * 1.004).failures() == []
    assert subagents_bench.relative(None, 1.0) is None
    assert subagents_bench.relative(1.0, 0.0) is None


def test_a_scenario_without_subagents_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        subagents_bench.main(["--scenarios", "quickstart"])
    assert exited.value.code == 2
    assert (
        capsys.readouterr()
        .err.splitlines()[-1]
        .endswith("error: quickstart: the scenario starts no subagent")
    )
