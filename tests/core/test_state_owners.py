"""Every field of the manager's state has one owner.

A field of `ManagerState` is written by one of the manager's parts, or by a named
transition on the state itself (core.manager_state, or the part of the state it
belongs to: core.state_parts, core.background). A field two parts both write is a
field whose every change cannot be found in one place. The writes are read off the
core's source (tests/core/state_writers.py).
"""

from __future__ import annotations

import inspect

from mala_tui.core.manager import ContextManager
from tests.core.state_writers import LEAVES, own_modules, writers, writes_in


def test_each_field_is_written_by_one_part_at_most() -> None:
    shared = {
        ".".join(leaf): sorted(set(modules) - own_modules(leaf))
        for leaf, modules in writers().items()
        if len(set(modules) - own_modules(leaf)) > 1
    }
    assert shared == {}, "written by more than one part: give each field one owner"


def test_the_reading_sees_writes_through_aliases_and_parts() -> None:
    """The reading follows every way the core writes a field, so a second writer shows."""
    source = """
class Flow:
    def step(self, state: ManagerState) -> None:
        self._state.turn.stopping = None
        work = self._state.background
        work.tasks, work.reports = (), 0
        state.counters.refetched += 1
        self._state.needed.add(key)
        self._state.turn.seen_results[key] = 1
        self._state.pending = Pending()
        self._state.transcript.append(message)  # the transcript's own method: not a write
"""
    found = {".".join(leaf) for leaf, _ in writes_in(source)}
    pending = {".".join(leaf) for leaf in LEAVES if leaf[0] == "pending"}
    assert found == {
        "turn.stopping",
        "background.tasks",
        "background.reports",
        "counters.refetched",
        "needed",
        "turn.seen_results",
        *pending,
    }


def test_the_core_is_read_as_written() -> None:
    """The parts' writes are found where they are (a reading that finds nothing passes
    the ownership test for nothing)."""
    table = writers()
    assert set(table[("counters", "compactions")]) == {"turn_flow"}
    assert set(table[("turn", "stopping")]) == {"manager_state", "state_parts"}
    assert set(table[("budget_stop",)]) == {"operator_flow"}


def test_the_manager_has_no_setters() -> None:
    """What the manager shows is read only: its state changes through observations."""
    settable = [
        name
        for name, member in inspect.getmembers(ContextManager)
        if isinstance(member, property) and member.fset is not None
    ]
    assert settable == []
