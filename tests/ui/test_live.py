"""The app on a real Supervisor with scripted agents: live updates, approval end to end, quitting."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import TextArea

from mala_tui.config import ContextSettings, Settings, UiSettings
from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.observations import MessageObserved, SessionIdentified, UsageObserved
from mala_tui.core.phases import Phase
from mala_tui.core.resume_plan import ResumeFrom, plan_resume
from mala_tui.core.transcript import Message, Role, TextBlock, ToolCall, ToolResult
from mala_tui.core.usage import CallUsage
from mala_tui.prompt_files import load_prompts
from mala_tui.runtime.backends.base import SessionSpec
from mala_tui.runtime.backends.scripted import HANG, ScriptedBackend, ScriptedClient, finished
from mala_tui.runtime.run.run_types import RunResult
from mala_tui.runtime.run.supervisor import Supervisor
from mala_tui.ui.app import MalaApp
from mala_tui.ui.run_in_app import QUIT_CAUSE
from mala_tui.ui.screens.approval import ApprovalScreen
from mala_tui.ui.screens.dashboard import DashboardScreen
from mala_tui.ui.widgets.approval_badge import ApprovalBadge
from tests.support.polling import eventually
from tests.support.supervisors import build_supervisor

AWAITING = Phase.AWAITING_APPROVAL
CHECKPOINT = (
    "<checkpoint>\n## Goal\nFix issue 42.\n## Completed Work\n- Read /ws/f0.py\n</checkpoint>"
)


def usage_at(tokens: int) -> UsageObserved:
    # Final (message_delta) usage: the call is over, so an interrupt need not wait for it.
    return UsageObserved(0, CallUsage(input_tokens=3, cache_read_input_tokens=tokens - 3))


def read(index: int) -> list[MessageObserved]:
    tool_id = f"r{index}"
    call = ToolCall(tool_id, "Read", {"file_path": f"/ws/f{index}.py"})
    return [
        MessageObserved(0, Message(Role.ASSISTANT, (TextBlock("reading"), call))),
        MessageObserved(0, Message(Role.USER, (ToolResult(tool_id, "x" * 400),))),
    ]


def supervisor_with(*clients: ScriptedClient, approval: bool) -> Supervisor:
    settings = Settings(context=ContextSettings(context_limit=100_000, require_approval=approval))
    session = SessionSpec(name="s1", task="Fix issue 42.", cwd=Path("/ws"))
    return build_supervisor(ScriptedBackend(list(clients)), [session], settings=settings)


def app_on(supervisor: Supervisor) -> MalaApp:
    return MalaApp(supervisor, settings=Settings(ui=UiSettings()), clock=lambda: 0.0)


async def test_an_edited_checkpoint_is_what_the_restarted_agent_gets() -> None:
    old = ScriptedClient(
        [
            [SessionIdentified(0, "sess-1"), *read(0), *read(1), usage_at(92_000), HANG],
            [finished("Notes saved.")],
            [finished(CHECKPOINT)],
        ]
    )
    new = ScriptedClient(
        [[SessionIdentified(0, "sess-2"), usage_at(5_000), finished(session_id="sess-2")]]
    )
    supervisor = supervisor_with(old, new, approval=True)
    app = app_on(supervisor)
    async with app.run_test(size=(140, 44)) as pilot:
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        await eventually(app.controller.pending)
        await eventually(lambda: screen.query_one(ApprovalBadge).count == 1)
        await eventually(lambda: screen.card("s1") is not None)
        card = screen.card("s1")
        assert card is not None
        await eventually(lambda: card.snapshot is not None and card.snapshot.phase is AWAITING)
        await pilot.press("a", "e")
        assert isinstance(app.screen, ApprovalScreen)
        editor = app.screen.query_one(TextArea)
        editor.text = "## Goal\nFix issue 42, edited by hand.\n"
        await pilot.press("ctrl+s")
        await eventually(lambda: supervisor.runners["s1"].status is not None)
        assert new.queries and "Fix issue 42, edited by hand." in new.queries[0]
        await eventually(lambda: card.snapshot is not None and card.snapshot.status is not None)
        assert card.snapshot is not None
        assert card.snapshot.status is EndStatus.DONE
        assert card.snapshot.restarts == 1


async def test_quitting_stops_every_session_and_waits_for_the_run() -> None:
    client = ScriptedClient([[SessionIdentified(0, "sess-1"), usage_at(30_000), HANG]])
    supervisor = supervisor_with(client, approval=False)
    recorded: list[ev.Event] = []
    supervisor.listeners.events.append(recorded.append)
    app = app_on(supervisor)
    async with app.run_test() as pilot:
        await eventually(lambda: "s1" in app.controller.state.sessions and client.queries)
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        await eventually(lambda: screen.card("s1") is not None)
        card = screen.card("s1")
        assert card is not None
        await eventually(lambda: card.snapshot is not None and card.snapshot.tokens == 30_000)
        await pilot.press("q")
        await eventually(lambda: not app.is_running)
    assert client.disconnected
    assert supervisor.runners["s1"].status is not None
    assert supervisor.state.ended_at is not None  # the run recorded its end
    # A quit stops the run, not each session by itself: `mala-tui resume` carries it on.
    assert supervisor.runners["s1"].end_reason == QUIT_CAUSE
    (s1,) = plan_resume(recorded, (), lambda _name, _id: True).sessions
    assert s1.how is ResumeFrom.SESSION_ID and s1.session_id == "sess-1"


class _BrokenSupervisor(Supervisor):
    async def run(self) -> RunResult:
        raise RuntimeError("journal disk full")


async def test_a_supervisor_that_fails_is_reported_and_the_app_runs_on() -> None:
    settings = Settings(context=ContextSettings(context_limit=100_000))
    supervisor = _BrokenSupervisor(
        settings=settings, backend=ScriptedBackend([]), prompts=load_prompts(), journal=None
    )
    app = app_on(supervisor)
    async with app.run_test(notifications=True) as pilot:
        await eventually(lambda: any("journal disk full" in n.message for n in app._notifications))
        assert app.is_running
        await pilot.press("q")
        await eventually(lambda: not app.is_running)
