"""`q` twice in the app: the second hurries the stop (the agents killed at once) instead of
waiting out their disconnects, and the app still exits once the run has ended."""

from __future__ import annotations

from pathlib import Path

from mala_tui.config import ContextSettings, Settings
from mala_tui.core.observations import SessionIdentified
from mala_tui.prompt_files import load_prompts
from mala_tui.runtime.backends.base import SessionSpec
from mala_tui.runtime.backends.scripted import HANG, ScriptedBackend, ScriptedClient
from mala_tui.runtime.run.supervisor import Supervisor
from tests.support.polling import eventually
from tests.ui.test_live import app_on, usage_at


class Counting(Supervisor):
    hurried = 0

    def hurry(self) -> None:
        self.hurried += 1
        super().hurry()


async def test_a_second_quit_hurries_the_stop() -> None:
    # An agent slow to go: the first quit waits for its disconnect.
    client = ScriptedClient([[SessionIdentified(0, "sess-1"), usage_at(30_000), HANG]])
    client.disconnect_delay = 3.0
    supervisor = Counting(
        settings=Settings(context=ContextSettings(require_approval=False)),
        backend=ScriptedBackend([client]),
        prompts=load_prompts(),
        journal=None,
    )
    supervisor.add_session(SessionSpec(name="s1", task="Fix issue 42.", cwd=Path("/ws")))
    app = app_on(supervisor)
    async with app.run_test() as pilot:
        await eventually(lambda: client.queries)
        await pilot.press("q")
        assert app.is_running and not client.disconnected
        await pilot.press("q")
        await eventually(lambda: not app.is_running)
    assert supervisor.hurried == 1
    assert supervisor.state.ended_at is not None  # the run's end recorded all the same
