"""Raising (or setting) a session's budget, and the run's, while it runs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from mala_tui.core.budget import BudgetLimits

FIELDS = (
    ("max_cost_usd", "cost, US dollars (estimate)", float),
    ("max_turns", "model turns", int),
    ("max_minutes", "minutes", float),
)


@dataclass(frozen=True)
class BudgetChange:
    """What the operator asked for: new limits for the session and for the run."""

    session: BudgetLimits
    run: BudgetLimits


class BudgetLimitError(ValueError):
    """A limit the operator typed that is not one; the message names the field."""


def parse_limits(values: dict[str, str], near_fraction: float) -> BudgetLimits:
    """Limits from the dialog's fields: blank means no limit.

    Raises:
        BudgetLimitError: a field that is not a number above 0 (whole, for turns).
    """
    parsed: dict[str, int | float | None] = {}
    for name, label, kind in FIELDS:
        text = values.get(name, "").strip()
        if not text:
            parsed[name] = None
            continue
        try:
            value = kind(text)
        except ValueError:
            noun = "a whole number" if kind is int else "a number"
            raise BudgetLimitError(f"{label}: {text!r} is not {noun}") from None
        if not value > 0:
            raise BudgetLimitError(f"{label}: {text!r} must be above 0 (blank: no limit)")
        parsed[name] = value
    return BudgetLimits(
        max_cost_usd=parsed["max_cost_usd"],
        max_turns=None if parsed["max_turns"] is None else int(parsed["max_turns"]),
        max_minutes=parsed["max_minutes"],
        near_fraction=near_fraction,
    )


def _shown(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


class BudgetScreen(ModalScreen[BudgetChange | None]):
    """The session's and the run's limits, editable; enter saves, escape cancels."""

    CSS_PATH = str(Path(__file__).with_name("budget.tcss"))
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, session: str, current: BudgetLimits, run: BudgetLimits) -> None:
        super().__init__()
        self.session_name = session
        self._current = current
        self._run = run

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(f"Budget of {self.session_name} and of the run"), id="title")
            with Grid(id="fields"):
                yield Static("")
                yield Static("this session", classes="heading")
                yield Static("whole run", classes="heading")
                for name, label, _ in FIELDS:
                    yield Static(label)
                    yield Input(_shown(getattr(self._current, name)), id=f"session-{name}")
                    yield Input(_shown(getattr(self._run, name)), id=f"run-{name}")
            yield Static("", id="error")
            yield Static(
                "blank: no limit \u00b7 near a limit the session winds down and checkpoints"
                " \u00b7 enter saves \u00b7 escape cancels",
                id="hint",
            )

    def on_input_submitted(self, event: Input.Submitted) -> None:
        def values(prefix: str) -> dict[str, str]:
            return {name: self.query_one(f"#{prefix}-{name}", Input).value for name, _, _ in FIELDS}

        try:
            change = BudgetChange(
                parse_limits(values("session"), self._current.near_fraction),
                parse_limits(values("run"), self._run.near_fraction),
            )
        except BudgetLimitError as exc:
            self.query_one("#error", Static).update(Text(str(exc)))
            return
        self.dismiss(change)

    def action_cancel(self) -> None:
        self.dismiss(None)
