"""The growth benchmark's parts: a longer reader, raw's cost from its prompts, the chart."""

from __future__ import annotations

import pytest

from mala_tui.bench import growth
from mala_tui.bench.chart import growth_chart
from mala_tui.bench.raw_projection import Increments, step_increments
from mala_tui.loopback import load_scenario
from tests.support.factories import request_record


def test_a_longer_reader_repeats_each_block_in_place_with_unique_names() -> None:
    base = load_scenario("economy-long")
    longer = growth.lengthened(base, 4)
    plan = longer.plan()
    assert len(plan) == 4 * (len(base.plan()) - 1) + 1
    labels = [step.label for step in plan]
    # The blocks keep their order: 192 Reads, 48 log dumps, 192 Reads, 48 dumps, the Write.
    assert labels[0] == "read src/pkg_001.py" and labels[191] == "read src/pkg_192.py"
    assert labels[192] == "run cat data/batch_01.log" and labels[239] == "run cat data/batch_48.log"
    assert labels[240] == "read src/pkg_193.py" and labels[-1] == "write AUDIT.md"
    files = dict(longer.workspace_files())
    assert len(files) == 4 * len(base.workspace_files())
    assert files["src/pkg_384.py"] and files["data/batch_96.log"]
    assert growth.lengthened(base, 1) is base


def test_raws_cost_is_computed_from_what_each_step_adds_and_grows_with_the_square() -> None:
    records = [
        request_record(1, 20_000, "read a"),
        request_record(2, 26_000, "run b"),
        request_record(3, 31_000, "read c"),
        request_record(4, 37_000, None),
    ]
    increments = step_increments(records)
    assert increments == Increments(20_000, {"read": 6_000, "run": 5_000}, 40)
    base = load_scenario("economy-long")
    one = growth.raw_cost(base, increments)
    four = growth.raw_cost(growth.lengthened(base, 4), increments)
    assert one.computed and one.ending == "computed"
    # Every step reads the whole prompt before it: the cost per step grows with the length.
    assert four.cost_per_step / one.cost_per_step == pytest.approx(3.5, abs=0.5)
    assert four.peak > 1_000_000 and not four.finished


def test_the_table_and_the_chart_show_every_arm_at_every_length() -> None:
    points = [
        growth.Point("raw", 1, 121, 6_000_000, 800_000, True, "completed"),
        growth.Point("raw", 4, 481, 90_000_000, 3_200_000, False, "computed", computed=True),
        growth.Point("managed", 1, 121, 1_600_000, 76_000, True, "done"),
        growth.Point("managed", 4, 481, 6_800_000, 80_000, True, "done"),
    ]
    text = growth.table(points, [1, 4], ["raw", "managed"])
    assert "| raw (1M window) | 49,587 | 187,110 (computed) | 3.77x |" in text
    assert "| mala-tui (200K) | 13,223 | 14,137 | 1.07x |" in text
    svg = growth_chart(
        {"raw": [(1, 49_587.0), (4, 187_110.0)], "mala-tui": [(1, 13_223.0), (4, 14_137.0)]},
        {"raw": "#888888", "mala-tui": "#2ca02c"},
        title="Cost per step",
    )
    assert svg.startswith("<svg") and svg.count("<polyline") == 2 and ">4x</text>" in svg


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--lengths", "1,x"], "--lengths wants whole numbers"),
        (["--lengths", "0"], "--lengths: each from 1 to 64"),
        (["--arms", "unmanaged"], "--arms: one or more of"),
        (["--token-ratio", "-1"], "--token-ratio:"),
    ],
)
def test_bad_options_are_usage_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as ended:
        growth.main(argv)
    assert ended.value.code == 2
    assert message in capsys.readouterr().err
