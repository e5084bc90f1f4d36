"""Supervisor callbacks become at most one publication per frame, with the newest of everything."""

from __future__ import annotations

from dataclasses import replace

from textual.app import App

from mala_tui.core import events as ev
from mala_tui.core.observations import Decision
from mala_tui.core.view import SessionSnapshot
from mala_tui.runtime.run_types import ApprovalRequest
from mala_tui.ui.bridge import UpdateBridge
from mala_tui.ui.controller import Controller
from mala_tui.ui.fake_source import T0, FakeLiveSource


async def test_updates_within_a_frame_are_published_once() -> None:
    supervisor = FakeLiveSource()
    app: App[None] = App()
    async with app.run_test() as pilot:
        bridge = UpdateBridge(app, Controller(supervisor), frame=0.05)
        bridge.attach(supervisor)
        seen: dict[str, list[object]] = {"snapshots": [], "events": [], "approvals": []}
        bridge.snapshots.subscribe(app, seen["snapshots"].append, immediate=True)
        bridge.events.subscribe(app, seen["events"].append, immediate=True)
        bridge.approvals.subscribe(app, seen["approvals"].append, immediate=True)

        base = supervisor.snapshots()["parser-fix"]
        listener = supervisor.listeners.snapshots[0]
        for tokens in (1_000, 2_000, 3_000):
            listener({"parser-fix": replace(base, tokens=tokens)})
        listener({"api-docs": supervisor.snapshots()["api-docs"]})
        first = ev.ErrorRecorded(at=T0, session="parser-fix", where="x", message="one")
        second = ev.ErrorRecorded(at=T0, session="api-docs", where="x", message="two")
        supervisor.listeners.events[0](first)
        supervisor.listeners.events[0](second)
        supervisor.listeners.approvals[0]([])
        assert seen == {"snapshots": [], "events": [], "approvals": []}  # nothing before the frame

        await pilot.pause(0.15)
        (published,) = seen["snapshots"]
        assert isinstance(published, dict)
        assert set(published) == {"parser-fix", "api-docs"}
        newest = published["parser-fix"]
        assert isinstance(newest, SessionSnapshot) and newest.tokens == 3_000
        assert seen["events"] == [[first, second]]
        (approvals,) = seen["approvals"]
        assert [a.session for a in approvals] == ["settings-form"]  # type: ignore[attr-defined]

        bridge.detach()
        assert supervisor.listeners.snapshots == supervisor.listeners.events == []
        supervisor.record(ev.ErrorRecorded(at=T0, session="api-docs", where="x", message="3"))
        await pilot.pause(0.15)
        assert len(seen["snapshots"]) == len(seen["events"]) == 1


async def test_an_answered_approval_leaves_the_queue_before_the_supervisor_drops_it() -> None:
    supervisor = FakeLiveSource()
    controller = Controller(supervisor)
    (request,) = controller.pending()
    assert isinstance(request, ApprovalRequest)
    controller.decide(request, Decision.APPROVE)
    assert controller.pending() == []
    assert supervisor.approvals == [request]  # the runner has not acted yet
    supervisor.approvals = []
    controller.forget_answered()
    supervisor.approvals = [request]  # asked again (a new request with the same number)
    assert controller.pending() == [request]
