"""Each waiting question has an address on `mala-tui serve`, and every notification links to it.

The address is the run's page opened at the question's dialog; it never carries the
access token. A browser with the cookie opens it; one without gets the token page, then
the question. `serve` records where it listens (not its token) for the notifiers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlencode, urlsplit

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from yarl import URL

from mala_tui.core import events as ev
from mala_tui.core.permissions import AnsweredBy, PermissionAnswer
from mala_tui.runtime.consoles.notify import Notifier, NotifyFormat, NotifyPost
from mala_tui.runtime.consoles.serve_record import SERVE_FILE, notice_address
from mala_tui.runtime.consoles.sockets import HostRecord, bind_socket, write_host_file
from mala_tui.web.access import cookie_name, new_token
from mala_tui.web.runs import RunChoice
from mala_tui.web.server import ConsoleServer
from tests.web.journals import RUN, lines, permission, run_events
from tests.web.serving import serve

WAITING = "fix-tests/permission/1"
ANSWERED = "fix-tests/permission/2"


def live_run(data: Path) -> Any:
    """A live run (a listening socket of the test's stands in for its host) whose first
    permission request waits and whose second was allowed once by the operator."""
    folder = data / "runs" / RUN
    folder.mkdir(parents=True)
    events = [
        *run_events(RUN, ("fix-tests",)),
        permission("fix-tests", "1", "Bash", 1_790_000_002.0),
        permission("fix-tests", "2", "Read", 1_790_000_003.0),
        ev.PermissionDecided(
            at=1_790_000_004.0,
            session="fix-tests",
            request_id="2",
            tool="Read",
            answer=PermissionAnswer.ALLOW_ONCE,
            decided_by=AnsweredBy.OPERATOR,
        ),
    ]
    (folder / "events.jsonl").write_bytes(lines(events))
    listening = bind_socket(data / "host.sock")
    write_host_file(folder, HostRecord(data / "host.sock", os.getpid(), RUN))
    return listening


def question_path(question: str) -> str:
    return "/?" + urlencode({"run": RUN, "question": question})


class Receiver:
    """An ntfy-like server on 127.0.0.1: keeps every request it is sent."""

    def __init__(self) -> None:
        self.got: list[tuple[str, dict[str, str], bytes]] = []

    async def take(self, request: web.Request) -> web.Response:
        self.got.append((request.path, dict(request.headers), await request.read()))
        return web.json_response({"id": "x"})


async def receiving(receiver: Receiver) -> tuple[web.AppRunner, str]:
    app = web.Application()
    app.router.add_post("/{topic}", receiver.take)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    return runner, f"http://127.0.0.1:{port}/mala-secret-topic"


def test_a_notice_links_to_its_question_which_opens_with_the_cookie_or_the_token(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    listening = live_run(data)
    try:
        with serve(data) as served:
            record = data / SERVE_FILE
            assert stat.S_IMODE(record.stat().st_mode) == 0o600
            assert served.token not in record.read_text()
            link = served.base + question_path(WAITING)

            async def visit() -> None:
                receiver = Receiver()
                runner, url = await receiving(receiver)
                try:
                    notify = Notifier(
                        NotifyPost(url, run_id=RUN, form=NotifyFormat.NTFY),
                        run_id=RUN,
                        consoles=lambda: 0,
                        record=lambda event: None,
                        address=lambda question: notice_address(data, RUN, question),
                    )
                    notify(permission("fix-tests", "1", "Bash", 1_790_000_002.0))
                    await notify.close()
                finally:
                    await runner.cleanup()
                ((path, headers, body),) = receiver.got
                assert path == "/mala-secret-topic"
                assert headers["Click"] == link
                assert headers["Title"] == "mala-tui: permission for Bash"
                assert headers["Priority"] == "high"
                assert body.decode() == f"fix-tests asks to use Bash \u00b7 run {RUN}"
                assert served.token not in repr(headers) + body.decode()

                # With the cookie: the run's page, its app opened at the question.
                async with aiohttp.ClientSession(headers=served.cookie_header) as session:
                    async with session.get(link, allow_redirects=False) as page:
                        assert page.status == 200
                        text = await page.text()
                    wanted = f"/ws/{RUN}/question/{quote(WAITING, safe='')}"
                    host = urlsplit(served.base).netloc
                    assert f'data-session-websocket-url="ws://{host}{wanted}"' in text
                    answered = served.base + question_path(ANSWERED)
                    async with session.get(answered, allow_redirects=False) as page:
                        text = await page.text()
                    assert f"{ANSWERED}: answered already: allowed once by the operator" in text
                    assert f"/ws/{RUN}/question" not in text  # opens on the run, no dialog
                    async with session.get(f"{served.base}/title/{RUN}") as title:
                        said = await title.json()
                    assert said["questions"] == [
                        {
                            "id": WAITING,
                            "notice": "fix-tests asks to use Bash",
                            "url": question_path(WAITING),
                        }
                    ]

                # Without it: the token page, then (the token pasted) the question.
                # (A jar that keeps an IP address's cookies, as a browser's does.)
                jar = aiohttp.CookieJar(unsafe=True)
                async with aiohttp.ClientSession(cookie_jar=jar) as stranger:
                    async with stranger.get(link, allow_redirects=False) as page:
                        assert page.status == 403
                        text = await page.text()
                        assert "needs its access token" in text and "<form" in text
                    async with stranger.post(
                        link, data={"token": new_token()}, allow_redirects=False
                    ) as wrong:
                        assert wrong.status == 403
                        assert "not this server's token" in await wrong.text()
                    assert not stranger.cookie_jar.filter_cookies(URL(served.base))
                    async with stranger.post(
                        link, data={"token": served.url}, allow_redirects=False
                    ) as right:
                        assert right.status == 303
                        onward = urlsplit(right.headers["Location"])
                        assert onward.path == "/"
                        assert parse_qs(onward.query) == {"run": [RUN], "question": [WAITING]}
                    async with stranger.get(link, allow_redirects=False) as page:
                        assert page.status == 200
                        assert wanted in await page.text()

            asyncio.run(visit())
        assert not record.exists()  # serve stopped: nothing links to it any more
    finally:
        listening.close()


@pytest.fixture
async def opened(
    tmp_path: Path,
) -> AsyncIterator[tuple[TestClient[Any, Any], list[Any], ConsoleServer]]:
    token = new_token()
    asked: list[tuple[str, str | None]] = []

    def command(choice: RunChoice, question: str | None = None) -> list[str]:
        asked.append((choice.run_id, question))
        return ["true"]

    console = ConsoleServer(data_dir=tmp_path, tab_command=command, token=token)
    async with TestClient(
        TestServer(await console._make_app()), cookies={cookie_name(8000): token}
    ) as client:
        yield client, asked, console
        # The stand-in app ("true") ends before it ever speaks textual-serve's protocol,
        # which then never finishes its tab: its process is waited for and its reader
        # ended here, or the process's transport is collected later, in another test.
        for tab in list(console.tabs):
            await close_tab(tab)
        console.tabs.clear()


async def close_tab(tab: Any) -> None:
    """A tab whose app ended before it spoke: its process reaped, its pipes closed."""
    process = tab._process
    task = tab._task
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
    if process is not None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        transport = getattr(process, "_transport", None)
        if transport is not None:
            transport.close()


async def test_a_tab_opened_at_a_waiting_question_starts_its_app_at_that_question(
    tmp_path: Path, opened: tuple[TestClient[Any, Any], list[Any], ConsoleServer]
) -> None:
    client, asked, _console = opened
    listening = live_run(tmp_path)
    try:
        for question in (WAITING, ANSWERED, "../../etc"):
            # As textual-serve's page connects: the address it was given, plus its own query.
            path = f"/ws/{RUN}/question/{quote(question, safe='')}?width=80&height=24"
            socket = await client.ws_connect(path)
            await socket.close()
    finally:
        listening.close()
    # Only a question that waits reaches the app's command line; any other opens the run.
    assert asked == [(RUN, WAITING), (RUN, None), (RUN, None)]


def test_the_json_form_and_the_format_guess() -> None:
    from mala_tui.core.notices import event_notice
    from mala_tui.runtime.consoles.notify import post_body, post_format

    assert post_format("https://ntfy.sh/topic", NotifyFormat.AUTO) is NotifyFormat.NTFY
    assert post_format("https://hooks.example.com/x", NotifyFormat.AUTO) is NotifyFormat.JSON
    assert post_format("https://push.example.com/t", NotifyFormat.NTFY) is NotifyFormat.NTFY
    notice = event_notice(permission("fix-tests", "1", "Bash", 1.0), RUN)
    assert notice is not None
    body, headers = post_body(notice, "http://127.0.0.1:8000/?run=r", RUN, NotifyFormat.JSON)
    assert headers == {"Content-Type": "application/json"}
    assert json.loads(body) == {
        "title": "mala-tui: permission for Bash",
        "message": f"fix-tests asks to use Bash \u00b7 run {RUN}",
        "run": RUN,
        "session": "fix-tests",
        "waits": "permission for Bash",
        "question": WAITING,
        "priority": "high",
        "url": "http://127.0.0.1:8000/?run=r",
    }
