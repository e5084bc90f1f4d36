"""A session's subagents on its card (a small gauge per live one, the others counted) and
in its detail view (every one with its figures)."""

from __future__ import annotations

from textual.widgets import DataTable, TabbedContent

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.events.subagents import SubagentEnd
from mala_tui.core.run_view import RunState
from mala_tui.dev.fake_source import FakeLiveSource
from mala_tui.dev.sample_run import sample_events
from mala_tui.dev.sample_session import T0
from mala_tui.ui.app import MalaApp
from mala_tui.ui.screens.dashboard import DashboardScreen, _state_changed
from mala_tui.ui.screens.detail import DetailScreen
from mala_tui.ui.subagents import card_summary, row
from mala_tui.ui.widgets.session_card import SessionCard
from tests.support.polling import eventually

from .helpers import make_app, open_session, published

HOSTILE = "[b]x[/b]\x1b[2J"
"""A label with markup and an escape in it: shown literally, never interpreted."""


def started(
    agent_id: str,
    at: float,
    description: str,
    *,
    depth: int = 1,
    parent: str = "",
    background: bool = True,
    nested: bool = False,
) -> ev.SubagentStarted:
    return ev.SubagentStarted(
        at=T0 + at,
        session="parser-fix",
        agent_id=agent_id,
        agent_type="general-purpose",
        description=description,
        model="claude-sonnet-4-5",
        depth=depth,
        parent=parent,
        background=background,
        nested=nested,
    )


def call(agent_id: str, at: float, window: int, tool_uses: int = 1) -> ev.SubagentCall:
    return ev.SubagentCall(
        at=T0 + at,
        session="parser-fix",
        agent_id=agent_id,
        input_tokens=3,
        cache_creation_input_tokens=window - 3 - 500,
        output_tokens=500,
        model="claude-sonnet-4-5",
        tool_uses=tool_uses,
    )


def ended(agent_id: str, at: float, how: SubagentEnd, reason: str = "") -> ev.SubagentEnded:
    return ev.SubagentEnded(
        at=T0 + at, session="parser-fix", agent_id=agent_id, how=how, reason=reason
    )


def many_subagents() -> list[ev.Event]:
    """parser-fix with five subagents at work (one with a hostile label) and two finished."""
    events: list[ev.Event] = []
    for index in range(5):
        label = HOSTILE if index == 0 else f"worker {index}"
        events += [started(f"live{index}", 700 + index, label), call(f"live{index}", 710, 20_000)]
    events += [
        started("done", 720, "finished fine"),
        call("done", 721, 30_000),
        ended("done", 722, SubagentEnd.COMPLETED),
        started("bad", 723, "went wrong"),
        ended("bad", 724, SubagentEnd.FAILED, "API error"),
    ]
    return events


def card_lines(card: SessionCard) -> list[str]:
    """The card's content lines as the screen shows them (its size is inside its border)."""
    return [card.render_line(y).text.rstrip() for y in range(card.size.height)]


def dashboard_card(app: MalaApp, name: str) -> SessionCard:
    screen = app.screen
    assert isinstance(screen, DashboardScreen)
    card = screen.card(name)
    assert card is not None
    return card


async def test_a_card_draws_a_gauge_per_live_subagent_and_counts_the_finished() -> None:
    app = make_app(FakeLiveSource())
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.pause()
        card = dashboard_card(app, "api-docs")
        lines = card_lines(card)
        # Six lines, and under the main gauge's figures its two live subagents and a count.
        assert card.size.height == 6 + 3
        assert lines[3].startswith("46%")
        orders, users, summary = lines[4:7]
        # Its label cut to half the card, a bar, its tokens on the right.
        assert orders.startswith("Document the order\u2026 ") and orders.endswith("   62k")
        assert users.startswith("Document the users\u2026 ") and users.endswith("   88k")
        assert summary == "1 subagent finished"
        assert lines[7].startswith("masked 9")
        # The bar is its window against the session's, with the soft and hard marks where
        # the session's gauge has them: 62k of 200k fills under a third, before the first.
        bar = orders[20:-6]
        assert len(bar) == card.size.width - 26
        marks = [x for x, cell in enumerate(bar) if cell == "\u2503"]
        assert marks == [int(0.4 * len(bar)), int(0.8 * len(bar))]
        # A session with none keeps its six lines.
        parser = dashboard_card(app, "parser-fix")
        assert parser.size.height == 6
        assert card_lines(parser)[4].startswith("masked 0")


async def test_a_card_shows_three_gauges_then_counts_the_rest_and_labels_literally() -> None:
    source = FakeLiveSource()
    app = make_app(source)
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.pause()
        card = dashboard_card(app, "parser-fix")
        for event in many_subagents():
            source.record(event)
        await published(app, lambda: card.size.height == 6 + 4, "the card to grow")
        lines = card_lines(card)
        # The label is the agent's text: its markup and escape shown as they are.
        assert lines[4].startswith("[b]x[/b]\u241b[2J ")
        assert lines[5].startswith("worker 1") and lines[6].startswith("worker 2")
        assert lines[7] == "+2 more running \u00b7 2 finished (1 failed)"
        # Its session ends: nothing of it runs any more, every subagent counts as finished.
        source.record(
            ev.SessionEnded(at=T0 + 800, session="parser-fix", status=EndStatus.DONE, reason="")
        )
        await published(app, lambda: card.size.height == 6 + 1, "the card to shrink")
        assert card_lines(card)[4] == "7 subagents finished (1 failed)"


def test_a_subagent_starting_or_ending_shows_at_once_on_the_dashboard() -> None:
    state = RunState().apply_all(sample_events())
    before = state.sessions["parser-fix"].snapshot()
    state.apply(started("a", 700, "one"))
    after = state.sessions["parser-fix"].snapshot()
    assert _state_changed(before, after)
    state.apply(call("a", 701, 9_000))
    assert not _state_changed(after, state.sessions["parser-fix"].snapshot())


def test_the_summary_names_what_ended_badly() -> None:
    state = RunState().apply_all([*sample_events(), *many_subagents()])
    snapshot = state.sessions["parser-fix"].snapshot()
    assert card_summary(snapshot) == "+2 more running \u00b7 2 finished (1 failed)"
    sample = RunState().apply_all(sample_events())
    assert card_summary(sample.sessions["parser-fix"].snapshot()) == ""


def test_a_row_has_every_figure_of_a_nested_subagent() -> None:
    state = RunState().apply_all(
        [
            *sample_events(),
            started("p", 700, "parent task"),
            started("n", 705, "child task", depth=2, parent="p", background=False, nested=True),
            call("n", 710, 40_000, tool_uses=3),
            call("n", 720, 90_000, tool_uses=2),
            ev.SubagentCompacted(
                at=T0 + 730,
                session="parser-fix",
                agent_id="n",
                pre_tokens=90_000,
                post_tokens=12_000,
            ),
            ended("n", 745, SubagentEnd.KILLED, "stopped by the operator"),
        ]
    )
    gauges = {g.agent_id: g for g in state.sessions["parser-fix"].subagent_gauges()}
    labels = {agent_id: gauge.label for agent_id, gauge in gauges.items()}
    cells = row(gauges["n"], T0 + 900, labels)
    assert cells == (
        "child task",
        "killed: stopped by the operator",
        "12k",
        "90k",
        cells[4],
        "0:40",
        "2",
        "5",
        "1",
        "-",
        "general-purpose",
        "2 in parent task",
        "foreground",
        "yes",
    )
    assert cells[4].startswith("$")  # priced at its model's list price
    # Still running: its time runs to now; once its session is over, it was not seen ending.
    assert row(gauges["p"], T0 + 760, labels)[1:6:4] == ("running", "1:00")
    assert row(gauges["p"], T0 + 760, labels, session_over=True)[1] == "not seen ending"


async def test_the_detail_lists_every_subagent_with_its_figures() -> None:
    app = make_app(FakeLiveSource())
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.pause()
        await open_session(pilot, "api-docs", "u")
        screen = app.screen
        assert isinstance(screen, DetailScreen)
        await eventually(lambda: screen.query_one(TabbedContent).active == "subagents")
        table = screen.query_one("#subagent-table", DataTable)
        rows = [[str(cell) for cell in table.get_row_at(y)] for y in range(table.row_count)]
        assert [r[0] for r in rows] == [
            "Map the routes under api/routes",
            "Document the orders endpoints",
            "Document the users and auth end\u2026",
        ]
        assert [r[1] for r in rows] == ["completed", "running", "running"]
        assert rows[2][2:4] == ["88k", "176k"]  # now, and its peak before Claude Code compacted
        assert rows[2][8] == "1"
        assert rows[0][12] == "foreground" and rows[1][12] == "background"
        assert rows[0][5] == "1:35"
        assert [str(c.label) for c in table.columns.values()][4] == "cost (est.)"


async def test_the_detail_gains_its_list_when_a_first_subagent_starts() -> None:
    source = FakeLiveSource()
    app = make_app(source)
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.pause()
        await open_session(pilot, "parser-fix")
        screen = app.screen
        assert isinstance(screen, DetailScreen)
        await pilot.pause()
        assert not screen.query("#subagent-table")
        assert not screen.check_action("show_tab", ("subagents",))
        source.record(started("s1", 700, HOSTILE))
        source.record(call("s1", 701, 15_000))
        await published(app, lambda: screen.query("#subagent-table"), "the subagents tab")

        table = screen.query_one("#subagent-table", DataTable)
        await eventually(lambda: table.row_count == 1, what="its row")
        assert str(table.get_row_at(0)[0]) == "[b]x[/b]\u241b[2J"
        assert str(table.get_row_at(0)[2]) == "15k"
        assert screen.check_action("show_tab", ("subagents",))


def test_what_mala_tui_did_to_a_subagents_window_is_on_its_gauge_and_in_its_row() -> None:
    from mala_tui.core import events as ev
    from mala_tui.core.run_view import RunState
    from mala_tui.ui.subagents import COLUMNS, managed_text, row

    state = RunState()
    state.apply(ev.SessionAdded(at=1.0, session="s", task="t", cwd="/w"))
    state.apply(ev.SubagentStarted(at=2.0, session="s", agent_id="a", description="logs"))
    (quiet,) = state.sessions["s"].snapshot().subagents
    assert managed_text(quiet) == ""
    for event in (
        ev.SubagentWoundDown(at=3.0, session="s", agent_id="a", tokens=170_000),
        ev.SubagentResultWithheld(at=4.0, session="s", agent_id="a", tokens=190_000, tool="Read"),
        ev.SubagentResultWithheld(at=5.0, session="s", agent_id="a", tokens=191_000, tool="Bash"),
    ):
        state.apply(event)
    (gauge,) = state.sessions["s"].snapshot().subagents
    assert managed_text(gauge) == " \u00b7 wound down \u00b7 2 withheld"
    cells = dict(zip(COLUMNS, row(gauge, 6.0, {}), strict=True))
    assert cells["managed"] == "wound down, 2 withheld"
