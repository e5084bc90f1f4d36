"""A stop asked for twice: the agent process is killed at once instead of waited for, and its
end is journaled all the same (a real process, slow to go, stands in for the CLI)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

from mala_tui.core import events as ev
from mala_tui.runtime.backends.base import SessionSpec
from mala_tui.runtime.backends.scripted import ScriptedBackend, ScriptedClient
from mala_tui.runtime.session.agent_process import AgentProcess
from mala_tui.runtime.session.inbox import Inbox
from mala_tui.runtime.session.processes import pid_alive

FOREVER = 3600.0
"""A disconnect bound never reached: only the hurry can end the close in time."""


@dataclass
class SlowToGo(ScriptedClient):
    """A client whose process runs until killed, and whose disconnect waits for it, as the
    SDK's does for a CLI that takes its time."""

    process: asyncio.subprocess.Process | None = field(default=None)

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    async def connect(self) -> None:
        self.process = await asyncio.create_subprocess_exec("sleep", "600")
        self.connected = True

    async def disconnect(self) -> None:
        assert self.process is not None
        await self.process.wait()
        self.disconnected = True


async def test_a_hurried_close_kills_the_process_and_journals_its_end(tmp_path: Path) -> None:
    client = SlowToGo(turns=[])
    recorded: list[ev.Event] = []
    inbox: Inbox = asyncio.Queue()

    def record(event: ev.Event) -> ev.Event:
        recorded.append(event)
        return event

    process = AgentProcess(
        spec=SessionSpec(name="a", task="t", cwd=tmp_path),
        backend=ScriptedBackend([client]),
        inbox=inbox,
        sink=record,
        clock=lambda: 0.0,
    )
    await process.query("go", resume=None)
    pid = client.pid
    assert pid is not None and pid_alive(pid)
    closing = asyncio.create_task(process.close(FOREVER))
    await asyncio.sleep(0.1)
    assert not closing.done()  # waiting for a process that does not go
    process.kill_now()  # the stop asked for again
    await asyncio.wait_for(closing, 60)
    assert not pid_alive(pid) and client.disconnected
    (ended,) = [e for e in recorded if isinstance(e, ev.ProcessEnded)]
    assert ended.pid == pid and ended.how == "killed: the stop was asked for again"
