"""Leaving an attached console: the commands it names work pasted, data dir and all."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from mala_tui.config import Settings, StorageSettings
from mala_tui.dev.fake_source import FakeLiveSource
from mala_tui.ui.app import MalaApp
from mala_tui.ui.screens.leave import LeaveScreen


async def test_q_in_an_attached_console_names_the_data_dir_to_attach_and_resume(
    tmp_path: Path,
) -> None:
    data = tmp_path / "my runs"
    app = MalaApp(
        FakeLiveSource(),
        settings=Settings(storage=StorageSettings(data_dir=data)),
        clock=lambda: 0.0,
        attached=True,
    )
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.press("q")
        await pilot.pause()
        leave = app.screen
        assert isinstance(leave, LeaveScreen)
        body = str(leave.query_one("#body", Static).render())
        run_id = app.controller.state.run_id
        assert f"(mala-tui attach {run_id} --data-dir '{data}' opens it again)" in body
        assert f"(mala-tui resume {run_id} --data-dir '{data}' carries it on)" in body
