"""`mala-tui serve` refuses every request without its access token, and starts no app for one.

Each test starts the real command on 127.0.0.1 and talks real HTTP to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from mala_tui.runtime.consoles.sockets import HostRecord, bind_socket, write_host_file
from mala_tui.web.access import new_token
from tests.integration.harness import alive
from tests.support.polling import wait_until
from tests.web.journals import RUN, lines, permission, run_events, write_finished
from tests.web.serving import serve

WRONG = new_token()


async def refused(session: aiohttp.ClientSession, url: str, **kwargs: Any) -> int:
    async with session.get(url, allow_redirects=False, **kwargs) as response:
        text = await response.text()
        assert "access token" in text or response.status != 403
        return response.status


def test_a_request_without_the_token_is_refused_and_starts_no_app(tmp_path: Path) -> None:
    write_finished(tmp_path)
    with serve(tmp_path) as served:

        async def knock() -> None:
            async with aiohttp.ClientSession() as session:
                for path in (
                    "/",
                    f"/?run={RUN}",
                    "/static/js/textual.js",
                    f"/title/{RUN}",
                    "/download/x",
                    "/nowhere",
                ):
                    assert await refused(session, served.base + path) == 403, path
                    assert (
                        await refused(session, served.base + path, headers={"Cookie": "other=1"})
                        == 403
                    )
                # A wrong token, in the query or in the cookie, is no token.
                assert await refused(session, f"{served.base}/?token={WRONG}") == 403
                async with session.get(served.base) as response:
                    assert response.headers["X-Frame-Options"] == "DENY"
                    assert response.headers["Referrer-Policy"] == "no-referrer"
                assert await refused(session, f"{served.base}/?token=") == 403
                assert (
                    await refused(
                        session, served.base, headers={"Cookie": f"{served.cookie}={WRONG}"}
                    )
                    == 403
                )
                assert (
                    await refused(
                        session,
                        served.base,
                        headers={"Cookie": f"{served.cookie}={served.token[:-1]}"},
                    )
                    == 403
                )
                # The WebSocket that would start an app: refused before any app starts.
                for headers in ({}, {"Cookie": f"{served.cookie}={WRONG}"}):
                    with pytest.raises(aiohttp.WSServerHandshakeError) as refusal:
                        await session.ws_connect(f"{served.base}/ws/{RUN}", headers=headers)
                    assert refusal.value.status == 403
                with pytest.raises(aiohttp.WSServerHandshakeError) as refusal:
                    await session.ws_connect(f"{served.base}/ws/{RUN}?token={WRONG}")
                assert refusal.value.status == 403

        asyncio.run(knock())
        time.sleep(1)  # an app, had one been started, would be a child by now
        assert served.children() == []
    assert served.process.returncode == 0


def test_the_printed_token_becomes_an_httponly_cookie_and_leaves_the_address(
    tmp_path: Path,
) -> None:
    write_finished(tmp_path)
    with serve(tmp_path) as served:
        assert len(served.token) >= 43  # 32 random bytes, URL-safe
        assert served.url.startswith("http://127.0.0.1:")  # this machine only, by default

        async def visit() -> None:
            jar = aiohttp.CookieJar(unsafe=True)  # keeps cookies of an IP address host
            async with aiohttp.ClientSession(cookie_jar=jar) as session:
                async with session.get(
                    f"{served.base}/?run={RUN}&token={served.token}", allow_redirects=False
                ) as response:
                    assert response.status == 302
                    assert response.headers["Location"] == f"/?run={RUN}"
                    cookie = response.cookies[served.cookie]
                    assert cookie.value == served.token
                    assert cookie["httponly"] and cookie["samesite"] == "Strict"
                    assert cookie["path"] == "/"
                async with session.get(f"{served.base}/") as response:  # the cookie alone
                    assert response.status == 200
                    # No other site may frame it, nor learn its address from a Referer.
                    assert response.headers["X-Frame-Options"] == "DENY"
                    assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
                    assert response.headers["Referrer-Policy"] == "no-referrer"
                    page = await response.text()
                assert f'href="/?run={RUN}"' in page and "Finished runs" in page
                async with session.get(f"{served.base}/static/js/textual.js") as response:
                    assert response.status == 200
                async with session.get(f"{served.base}/title/{RUN}") as response:
                    assert (await response.json())["title"] == f"mala-tui \u2014 run {RUN} (ended)"
                async with session.get(f"{served.base}/?run=nosuchrun") as response:
                    assert response.status == 404
                    assert "no run 'nosuchrun'" in await response.text()

        asyncio.run(visit())
        assert served.children() == []  # pages and scripts start no app; a tab's socket does


def test_a_tab_with_the_token_runs_one_app_that_ends_with_the_tab(tmp_path: Path) -> None:
    write_finished(tmp_path)
    with serve(tmp_path) as served:

        async def open_tab() -> None:
            async with (
                aiohttp.ClientSession(headers=served.cookie_header) as session,
                session.ws_connect(f"{served.base}/ws/{RUN}?width=100&height=30") as websocket,
            ):
                message = await websocket.receive(timeout=60)
                # The app draws: its output comes as binary frames.
                assert message.type is aiohttp.WSMsgType.BINARY, message
                assert len(served.children()) == 1
                # Malformed messages are dropped, the app goes on.
                await websocket.send_str("not json")
                await websocket.send_str('["stdin"]')
                await websocket.send_str('["resize", {"width": "x", "height": 10}]')
                await websocket.send_json(["ping", "p1"])
                while True:
                    message = await websocket.receive(timeout=30)
                    if message.type is aiohttp.WSMsgType.TEXT:
                        assert message.json() == ["pong", "p1"]
                        break

        asyncio.run(open_tab())
        wait_until(
            lambda: served.children() == [], timeout=30, what="the tab's app to end with its socket"
        )


def test_a_websocket_from_another_site_is_refused(tmp_path: Path) -> None:
    write_finished(tmp_path)
    with serve(tmp_path) as served:

        async def hijack() -> None:
            async with aiohttp.ClientSession(headers=served.cookie_header) as session:
                with pytest.raises(aiohttp.WSServerHandshakeError) as refusal:
                    await session.ws_connect(
                        f"{served.base}/ws/{RUN}", headers={"Origin": "http://evil.example"}
                    )
                assert refusal.value.status == 403

        asyncio.run(hijack())
        time.sleep(1)
        assert served.children() == []


def test_the_page_connects_back_where_the_browser_reached_it(tmp_path: Path) -> None:
    """Through `ssh -L 9000:localhost:8000` the browser asks for localhost:9000."""
    write_finished(tmp_path)
    with serve(tmp_path) as served:

        async def through_a_tunnel() -> str:
            async with (
                aiohttp.ClientSession(headers=served.cookie_header) as session,
                session.get(
                    f"{served.base}/?run={RUN}", headers={"Host": "localhost:9000"}
                ) as page,
            ):
                return await page.text()

        page = asyncio.run(through_a_tunnel())
    assert f'data-session-websocket-url="ws://localhost:9000/ws/{RUN}"' in page
    assert f"<title>mala-tui \u2014 run {RUN} (ended)</title>" in page


def test_every_interface_needs_the_token_too_and_is_warned_about(tmp_path: Path) -> None:
    # 0.0.0.0 only inside a network namespace of its own: nothing outside this test sees it.
    if not shutil.which("unshare"):
        pytest.fail("unshare (util-linux) is needed for this test")
    namespace = ("unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh")
    write_finished(tmp_path)
    with serve(tmp_path, "--host", "0.0.0.0", prefix=namespace) as served:
        assert len(served.token) >= 43
        probe = (
            "import sys, urllib.request, urllib.error\n"
            "try:\n"
            f"    urllib.request.urlopen('http://127.0.0.1:{served.port}/')\n"
            "except urllib.error.HTTPError as e:\n"
            "    print(e.code)\n"
        )
        inside = subprocess.run(
            ["nsenter", "-t", str(served.process.pid), "-n", sys.executable, "-c", probe],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert inside.stdout.strip() == "403", inside.stderr
        warned = served.stderr()
    assert "warning: listening on 0.0.0.0" in warned
    assert "anyone who has the URL below can approve tools on this machine" in warned


def test_a_port_in_use_is_one_line_and_status_2(tmp_path: Path) -> None:
    with contextlib.closing(socket.socket()) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "mala_tui", "serve", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 2
    assert done.stderr.startswith(f"mala-tui serve: cannot listen on 127.0.0.1:{port}: ")
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr


def test_tokens_are_long_and_new_each_time() -> None:
    tokens = {new_token() for _ in range(100)}
    assert len(tokens) == 100 and min(len(token) for token in tokens) >= 43


def test_serve_refuses_a_bad_port_in_one_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mala_tui", "serve", "--port", "70000"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and "a port is 0 to 65535" in done.stderr


def test_ctrl_c_closes_every_tab_before_the_server_exits(tmp_path: Path) -> None:
    write_finished(tmp_path)
    with serve(tmp_path) as served:

        async def two_tabs_then_ctrl_c() -> list[int]:
            async with aiohttp.ClientSession(headers=served.cookie_header) as session:
                sockets = [await session.ws_connect(f"{served.base}/ws/{RUN}") for _ in range(2)]
                for websocket in sockets:
                    assert (await websocket.receive(timeout=60)).type is aiohttp.WSMsgType.BINARY
                apps = served.children()
                assert len(apps) == 2
                served.process.send_signal(signal.SIGINT)
                for websocket in sockets:  # the server closes them
                    while not websocket.closed:
                        await websocket.receive(timeout=60)
                return apps

        apps = asyncio.run(two_tabs_then_ctrl_c())
        assert served.process.wait(timeout=60) == 0
    assert [pid for pid in apps if alive(pid)] == []


def test_a_server_killed_outright_takes_its_tabs_apps_with_it(tmp_path: Path) -> None:
    write_finished(tmp_path)
    with serve(tmp_path) as served:

        async def tab_then_kill() -> list[int]:
            async with (
                aiohttp.ClientSession(headers=served.cookie_header) as session,
                session.ws_connect(f"{served.base}/ws/{RUN}") as websocket,
            ):
                assert (await websocket.receive(timeout=60)).type is aiohttp.WSMsgType.BINARY
                apps = served.children()
                served.process.kill()
                served.process.wait(timeout=30)
                return apps

        apps = asyncio.run(tab_then_kill())
    assert len(apps) == 1
    wait_until(lambda: not alive(apps[0]), timeout=30, what="the tab's app to end with its server")


def test_several_live_runs_are_picked_from_and_one_is_opened_at_once(tmp_path: Path) -> None:
    """A run is live while its host answers on the socket its folder names (a listening
    socket of this test's stands in for the host here; the browser test has a real one)."""
    older, newer = "20261101-120000-aaaa", "20261102-120000-bbbb"
    write_finished(tmp_path, "20261030-120000-done")
    hosts = []
    for run_id in (older, newer):
        folder = tmp_path / "runs" / run_id
        folder.mkdir(parents=True)
        asked = [*run_events(run_id, ("fix-tests",)), permission("fix-tests", "1", "Bash", 2.0)]
        (folder / "events.jsonl").write_bytes(lines(asked))
        hosts.append(bind_socket(tmp_path / f"{run_id[-4:]}.sock"))
        write_host_file(folder, HostRecord(tmp_path / f"{run_id[-4:]}.sock", os.getpid(), run_id))
    try:
        with serve(tmp_path) as served:

            async def look() -> tuple[str, str]:
                async with aiohttp.ClientSession(headers=served.cookie_header) as session:
                    async with session.get(served.base, allow_redirects=False) as picker:
                        page = await picker.text()
                    hosts[1].close()  # the newer run's host is gone: one live run is left
                    async with session.get(served.base, allow_redirects=False) as at_once:
                        return page, at_once.headers["Location"]

            page, location = asyncio.run(look())
    finally:
        for host in hosts:
            host.close()
    live, finished = page.split("Finished runs")
    assert live.index(newer) < live.index(older)  # newest first
    assert live.count("fix-tests asks to use Bash") == 2
    assert "20261030-120000-done" in finished and older not in finished
    assert location == f"/?run={older}"
