"""`mala-tui serve` under abuse: silent connections, a huge journal line, a name too long.

The first test starts the real command, with few file descriptors, on 127.0.0.1; the
others run the server's application in this process with aiohttp's test client.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from mala_tui.core import events as ev
from mala_tui.web import runs
from mala_tui.web.access import cookie_name, new_token
from mala_tui.web.runs import RunWatch
from mala_tui.web.server import ConsoleServer
from tests.web.journals import RUN, lines, run_events, write_finished
from tests.web.serving import serve

FILES = 64
"""The server's file descriptor limit in the first test: far fewer than the connections."""
SILENT = 100
"""Connections opened and left silent (some halfway through a request's headers)."""
BIG_LINE = 20 * 1024 * 1024

Client = TestClient[web.Request, web.Application]


def test_silent_connections_are_closed_and_the_token_holder_gets_in(tmp_path: Path) -> None:
    write_finished(tmp_path)
    # A shell sets the limit, then becomes the server (`exec`).
    limited = ("/bin/sh", "-c", f'ulimit -n {FILES} && exec "$@"', "sh")
    with serve(tmp_path, "--idle-timeout", "1", prefix=limited) as served:
        silent = []
        try:
            for number in range(SILENT):
                connection = socket.create_connection(("127.0.0.1", served.port), timeout=60)
                if number % 4 == 0:  # a request begun and never finished
                    connection.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
                silent.append(connection)

            async def visit() -> int:
                timeout = aiohttp.ClientTimeout(total=60)
                async with (
                    aiohttp.ClientSession(headers=served.cookie_header, timeout=timeout) as session,
                    session.get(f"{served.base}/title/{RUN}") as response,
                ):
                    return response.status

            # More connections than the server has descriptors: it got in all the same.
            assert asyncio.run(visit()) == 200
            # Every silent connection was closed by the server: reading one gives its end.
            for connection in silent:
                assert connection.recv(1024) == b""
        finally:
            for connection in silent:
                connection.close()
        assert "Traceback" not in served.stderr(), served.stderr()[-3000:]


def test_idle_timeout_is_checked_in_one_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mala_tui", "serve", "--idle-timeout", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "--idle-timeout: '0': more than 0 and at most 3600 seconds" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    token = new_token()
    console = ConsoleServer(
        data_dir=tmp_path, tab_command=lambda choice, question=None: ["true"], token=token
    )
    async with TestClient(
        TestServer(await console._make_app()), cookies={cookie_name(8000): token}
    ) as test_client:
        yield test_client


async def test_a_run_name_too_long_for_a_file_name_is_no_run(
    tmp_path: Path, client: Client
) -> None:
    write_finished(tmp_path)
    name = "a" * 300
    for path in (f"/title/{name}", f"/?run={name}", f"/ws/{name}"):
        response = await client.get(path)
        assert response.status == 404, path
        assert "no run 'aaaa" in await response.text()


async def test_the_favicon_is_served(client: Client) -> None:
    for path in ("/favicon.ico", "/favicon.svg"):
        response = await client.get(path)
        assert response.status == 200
        assert response.content_type == "image/svg+xml"
        assert (await response.text()).startswith("<svg")


async def test_a_huge_journal_line_is_read_off_the_event_loop(
    tmp_path: Path,
    client: Client,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder = tmp_path / "runs" / RUN
    folder.mkdir(parents=True)
    ended = ev.RunEnded(at=1_790_000_009.0, run_id=RUN, ok=True)
    journal = lines(run_events(RUN, ("a",))) + b"x" * BIG_LINE + b"\n" + lines([ended])
    (folder / "events.jsonl").write_bytes(journal)

    reading, served = threading.Event(), threading.Event()
    answered: list[bool] = []
    parse = runs._parse

    def held_parse(line: bytes) -> ev.Event | None:
        if len(line) == BIG_LINE:  # the big line, whole: held until another request is served
            reading.set()
            answered.append(served.wait(timeout=10))
        return parse(line)

    monkeypatch.setattr(runs, "_parse", held_parse)
    title = asyncio.create_task(client.get(f"/title/{RUN}"))
    await asyncio.to_thread(reading.wait, 30)
    small = await client.get("/favicon.ico")  # while the big line is being read
    assert small.status == 200
    served.set()
    response = await title
    assert response.status == 200
    assert (await response.json())["title"] == f"mala-tui \u2014 run {RUN} (ended)"
    assert answered == [True]  # the loop answered meanwhile


def test_a_long_line_in_many_pieces_is_joined_once_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runs, "READ_CHUNK", 4096)
    folder = tmp_path / "runs" / RUN
    folder.mkdir(parents=True)
    warning = ev.WarningRecorded(
        at=1_790_000_002.0, session="a", where=ev.Where.RUNTIME, message="w" * 1_000_000
    )
    ended = ev.RunEnded(at=1_790_000_009.0, run_id=RUN, ok=True)
    (folder / "events.jsonl").write_bytes(
        lines([*run_events(RUN, ("a",)), warning]) + b"y" * 100_000 + b"\n" + lines([ended])
    )
    seen: list[int] = []
    parse = runs._parse

    def counting(line: bytes) -> ev.Event | None:
        seen.append(len(line))
        return parse(line)

    monkeypatch.setattr(runs, "_parse", counting)
    watch = RunWatch(folder)
    watch.update()
    # Each long line whole, once, though it came in hundreds of pieces.
    assert seen.count(len(lines([warning])) - 1) == 1 and seen.count(100_000) == 1
    assert watch.state.ended_at == 1_790_000_009.0
