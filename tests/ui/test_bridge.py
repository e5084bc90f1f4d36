"""Supervisor callbacks become at most one publication per frame, with the newest of everything."""

from __future__ import annotations

from dataclasses import replace

import pytest
from textual.app import App

from mala_tui.core import events as ev
from mala_tui.core.observations import Decision
from mala_tui.core.operator_actions import AnswerApproval
from mala_tui.core.questions import ApprovalQuestion
from mala_tui.core.session_records import SessionSnapshot
from mala_tui.dev.fake_source import FakeLiveSource
from mala_tui.dev.sample_session import T0
from mala_tui.ui.bridge import UpdateBridge
from mala_tui.ui.controller import Controller
from tests.support.polling import eventually


async def test_updates_within_a_frame_are_published_once() -> None:
    supervisor = FakeLiveSource()
    app: App[None] = App()
    async with app.run_test():
        bridge = UpdateBridge(app, frame=0.05)
        bridge.attach(supervisor)
        seen: dict[str, list[object]] = {"snapshots": [], "events": [], "questions": []}
        bridge.snapshots.subscribe(app, seen["snapshots"].append, immediate=True)
        bridge.events.subscribe(app, seen["events"].append, immediate=True)
        bridge.questions.subscribe(app, seen["questions"].append, immediate=True)

        base = supervisor.snapshots()["parser-fix"]
        listener = supervisor.listeners.snapshots[0]
        for tokens in (1_000, 2_000, 3_000):
            listener({"parser-fix": replace(base, tokens=tokens)})
        listener({"api-docs": supervisor.snapshots()["api-docs"]})
        first = ev.ErrorRecorded(at=T0, session="parser-fix", where=ev.Where.RUNTIME, message="one")
        second = ev.ErrorRecorded(at=T0, session="api-docs", where=ev.Where.RUNTIME, message="two")
        supervisor.listeners.events[0](first)
        supervisor.listeners.events[0](second)
        supervisor.listeners.questions[0](supervisor.state.questions())
        assert seen == {"snapshots": [], "events": [], "questions": []}  # nothing before the frame

        await eventually(lambda: seen["snapshots"], what="the frame's publication")
        (published,) = seen["snapshots"]
        assert isinstance(published, dict)
        assert set(published) == {"parser-fix", "api-docs"}
        newest = published["parser-fix"]
        assert isinstance(newest, SessionSnapshot) and newest.tokens == 3_000
        assert seen["events"] == [[first, second]]
        (questions,) = seen["questions"]
        assert isinstance(questions, list)
        assert [a.session for a in questions] == ["settings-form"]

        bridge.detach()
        assert supervisor.listeners.snapshots == []
        assert supervisor.listeners.events == []
        supervisor.record(
            ev.ErrorRecorded(at=T0, session="api-docs", where=ev.Where.RUNTIME, message="3")
        )
        bridge.flush()  # a detached bridge gathered nothing to publish
        assert len(seen["snapshots"]) == len(seen["events"]) == 1


async def test_an_answered_approval_leaves_the_queue_and_is_not_answered_twice() -> None:
    supervisor = FakeLiveSource()
    controller = Controller(supervisor)
    (request,) = controller.pending()
    assert isinstance(request, ApprovalQuestion)
    controller.act(
        AnswerApproval(
            session=request.session,
            decision=Decision.APPROVE,
            checkpoint_number=request.checkpoint_number,
        )
    )
    assert controller.pending() == []  # the decision is recorded, the question closed
    with pytest.raises(KeyError, match="no approval is pending for 'settings-form'"):
        controller.act(
            AnswerApproval(
                session=request.session,
                decision=Decision.DENY,
                checkpoint_number=request.checkpoint_number,
            )
        )
    supervisor.record(  # asked again (a new request with the same number)
        ev.ApprovalRequested(
            at=T0 + 700, session="settings-form", checkpoint_number=2, reason="hard threshold"
        )
    )
    assert [(q.id, q.checkpoint_number) for q in controller.pending()] == [(request.id, 2)]
