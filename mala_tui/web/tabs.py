"""One browser tab's app process, and what the tab's page sends it.

A tab's app runs without a shell and in a session of its own (a Ctrl-C on the server's
terminal reaches the server, which closes each tab in turn, not every tab's app at once),
gets SIGTERM if the server dies outright, and is killed if it has not quit within a grace
once its tab closes. The page's messages (keys, sizes, focus) reach it checked: malformed
ones are dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import sys
from asyncio.subprocess import PIPE, Process
from collections.abc import Sequence
from typing import Any, Protocol

from aiohttp import WSMsgType, web
from textual_serve.app_service import AppService

from mala_tui.web.runs import RunChoice

STOP_GRACE_SECONDS = 10.0
"""How long a tab's app has to quit when its tab closes before it is killed."""


class TabCommand(Protocol):
    """The command line a tab's app process runs for the run it opens, at `question`'s
    dialog when one is named (a question of the run that waits)."""

    def __call__(self, choice: RunChoice, question: str | None = None, /) -> Sequence[str]: ...


class Tab(AppService):
    """One browser tab's app process."""

    def __init__(self, argv: Sequence[str], **kwargs: Any) -> None:
        super().__init__(" ".join(argv), **kwargs)  # the command as textual-serve logs it
        self.argv = list(argv)
        self.process: Process | None = None

    async def _open_app_process(self, width: int = 80, height: int = 24) -> Process:
        environment = self._build_environment(width=width, height=height)
        self.process = self._process = process = await asyncio.create_subprocess_exec(
            *_ending_with_this_process(self.argv),
            stdin=PIPE,
            stdout=PIPE,
            stderr=PIPE,
            env=environment,
            start_new_session=True,
        )
        assert process.stdin is not None
        self._stdin = process.stdin
        return process

    async def close(self) -> None:
        """Ask the app to quit (as closing the tab does); kill it if it has not within the grace."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stop(), STOP_GRACE_SECONDS)
        process = self.process
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()


def _ending_with_this_process(argv: Sequence[str]) -> list[str]:
    """`argv`, made to get SIGTERM when the server's process dies, where Linux can say so.

    A Textual app under the web driver does not end when its input closes: a server
    killed outright (kill -9) would leave every tab's app running for nobody. util-linux's
    `setpriv --pdeathsig` asks the kernel to signal it then (PR_SET_PDEATHSIG); a
    console closed that way leaves its run alone, as any console's end does.
    """
    setpriv = shutil.which("setpriv") if sys.platform == "linux" else None
    if setpriv is None:
        return list(argv)
    return [setpriv, "--pdeathsig", "TERM", "--", *argv]


async def pump(websocket: web.WebSocketResponse, tab: Tab) -> None:
    """What the page sends, to the app: keys, sizes, focus; malformed messages are dropped."""
    async for message in websocket:
        if message.type != WSMsgType.TEXT:
            continue
        try:
            envelope = json.loads(message.data)
        except ValueError:
            continue
        if not isinstance(envelope, list) or len(envelope) != 2:
            continue
        kind, data = envelope
        if kind == "stdin" and isinstance(data, str):
            await tab.send_bytes(data.encode("utf-8"))
        elif kind == "resize" and isinstance(data, dict):
            width = clamped_int(data.get("width"), 80, 10, 1000)
            height = clamped_int(data.get("height"), 24, 5, 1000)
            await tab.set_terminal_size(width, height)
        elif kind == "ping":
            await websocket.send_json(["pong", data])
        elif kind == "blur":
            await tab.blur()
        elif kind == "focus":
            await tab.focus()


def clamped_int(value: object, default: int, low: int, high: int) -> int:
    """`value` as a whole number within [low, high]; `default` when it is not one."""
    try:
        number = int(str(value))
    except ValueError:
        return default
    return min(max(number, low), high)
