"""ui.notify_command: run for what needs a person while no console is attached, told what in
its environment only, and journaled as a warning when it fails."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
import socket
import stat
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

from aiohttp import web

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.usage import UsageSource
from mala_tui.runtime.consoles.notify import Notifier, NotifyCommand, NotifyPost
from mala_tui.runtime.consoles.serve_record import (
    SERVE_FILE,
    forget_serve,
    notice_address,
    record_serve,
    served_at,
)
from tests.integration.harness import alive
from tests.support.polling import eventually

RUN = "20250101-000000-abcd"
ASKED = ev.PermissionRequested(
    at=1.0, session="fix; rm -rf /", request_id="1", tool="Bash", summary="ls", input_text="ls"
)


def notifier(command: str, consoles: list[int], recorded: list[ev.Event]) -> Notifier:
    return Notifier(
        NotifyCommand(command, run_id=RUN, attach=f"mala-tui attach {RUN}"),
        run_id=RUN,
        consoles=lambda: consoles[0],
        record=recorded.append,
    )


async def test_run_only_while_no_console_is_attached_and_told_in_its_environment(
    tmp_path: Path,
) -> None:
    told = tmp_path / "told"
    command = (
        'printf "%s|%s|%s|%s|%s\\n" "$MALA_NOTICE" "$MALA_RUN" "$MALA_SESSION" '
        f'"$MALA_WAITS" "$MALA_ATTACH" >> {shlex.quote(str(told))}'
    )
    consoles = [1]
    recorded: list[ev.Event] = []
    notify = notifier(command, consoles, recorded)
    notify(ASKED)  # a console is attached: it sees the question itself
    consoles[0] = 0
    notify(ev.UsageRecorded(at=2.0, session="a", tokens=1, window=10, source=UsageSource.PER_CALL))
    notify(ASKED)
    notify(ev.SessionEnded(at=3.0, session="b", status=EndStatus.FAILED, reason="crashed"))
    await notify.close()
    lines = told.read_text().splitlines()
    assert sorted(lines) == sorted(
        [
            "fix; rm -rf / asks to use Bash \u00b7 run 20250101-000000-abcd|20250101-000000-abcd|"
            "fix; rm -rf /|permission for Bash|mala-tui attach 20250101-000000-abcd",
            "b failed: crashed \u00b7 run 20250101-000000-abcd|20250101-000000-abcd|b|failure|"
            "mala-tui attach 20250101-000000-abcd",
        ]
    )
    assert recorded == []  # both ran, and succeeded


async def test_a_failing_command_is_journaled_as_a_warning_and_the_run_goes_on() -> None:
    recorded: list[ev.Event] = []
    notify = notifier("exit 3", [0], recorded)
    notify(ASKED)
    await notify.close()
    (warning,) = recorded
    assert isinstance(warning, ev.WarningRecorded)
    assert (warning.where, warning.session) == (ev.Where.NOTIFY, "fix; rm -rf /")
    assert warning.message == "ui.notify_command ended with status 3"
    notify(warning)  # its own warning never sets it off again
    await asyncio.sleep(0)
    assert len(recorded) == 1


async def test_a_command_that_overruns_is_killed_with_what_its_shell_started(
    tmp_path: Path,
) -> None:
    spawned = tmp_path / "spawned"
    # The shell starts a child and waits for it: killing the shell alone would leave it.
    command = f"sleep 300 & echo $! > {shlex.quote(str(spawned))}; wait"
    recorded: list[ev.Event] = []
    notify = Notifier(
        NotifyCommand(command, run_id=RUN, attach=f"mala-tui attach {RUN}", timeout=0.5),
        run_id=RUN,
        consoles=lambda: 0,
        record=recorded.append,
    )
    notify(ASKED)
    await eventually(lambda: spawned.is_file() and spawned.read_text().strip(), what="the child")
    child = int(spawned.read_text())
    await notify.close()
    (warning,) = recorded
    assert isinstance(warning, ev.WarningRecorded)
    assert warning.message == "ui.notify_command took longer than 0.5 s and was stopped"
    await eventually(lambda: not alive(child), what="the shell's child to be killed too")


async def test_mala_url_links_to_the_question_while_a_serve_of_the_data_folder_runs(
    tmp_path: Path,
) -> None:
    told = tmp_path / "told"
    command = f'printf "%s\\n" "$MALA_URL" >> {shlex.quote(str(told))}'
    data = tmp_path / "data"

    def address(question: str) -> str:
        return notice_address(data, "20250101-000000-abcd", question)

    notify = Notifier(
        NotifyCommand(command, run_id=RUN, attach=f"mala-tui attach {RUN}"),
        run_id=RUN,
        consoles=lambda: 0,
        record=lambda event: None,
        address=address,
    )
    notify(ASKED)  # no serve yet: empty
    await notify.close()
    record_serve(data, "http://127.0.0.1:8000")  # this process stands in for the server
    assert stat.S_IMODE((data / SERVE_FILE).stat().st_mode) == 0o600
    notify(ASKED)
    await notify.close()
    forget_serve(data)
    assert not (data / SERVE_FILE).exists()
    assert told.read_text().splitlines() == [
        "",
        "http://127.0.0.1:8000/?run=20250101-000000-abcd&question=fix%3B+rm+-rf+%2F%2F"
        "permission%2F1",
    ]


def test_a_record_left_by_a_killed_server_links_nowhere(tmp_path: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    record_serve(tmp_path, "http://127.0.0.1:8000", pid=gone.pid)
    assert served_at(tmp_path) == ""
    record_serve(tmp_path, "http://127.0.0.1:8000")
    assert served_at(tmp_path) == "http://127.0.0.1:8000"
    (tmp_path / SERVE_FILE).write_text("{not json")
    assert served_at(tmp_path) == ""


class Flaky:
    """A receiver on 127.0.0.1 that answers with the statuses it is given, then 200."""

    def __init__(self, *statuses: int) -> None:
        self.statuses = list(statuses)
        self.bodies: list[bytes] = []

    async def take(self, request: web.Request) -> web.Response:
        self.bodies.append(await request.read())
        status = self.statuses.pop(0) if self.statuses else 200
        return web.Response(status=status)

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[str]:
        app = web.Application()
        app.router.add_post("/{topic}", self.take)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        try:
            yield f"http://127.0.0.1:{runner.addresses[0][1]}/secret-topic"
        finally:
            await runner.cleanup()


def poster(url: str, recorded: list[ev.Event]) -> Notifier:
    return Notifier(
        NotifyPost(url, run_id=RUN, pause=0.01),
        run_id=RUN,
        consoles=lambda: 0,
        record=recorded.append,
    )


async def test_a_refused_post_is_tried_again_and_one_never_taken_is_a_warning() -> None:
    recorded: list[ev.Event] = []
    flaky = Flaky(503, 502)
    async with flaky.serving() as url:
        notify = poster(url, recorded)
        notify(ASKED)
        await notify.close()
        assert len(flaky.bodies) == 3 and recorded == []  # taken at the third try
        # JSON to a host that is not ntfy's (ui.notify_format = "auto").
        assert json.loads(flaky.bodies[-1])["message"] == notify.sent[0]
        down = Flaky(500, 500, 500, 500)
        async with down.serving() as failing:
            notify = poster(failing, recorded)
            notify(ASKED)
            await notify.close()
    assert len(down.bodies) == 3
    (warning,) = recorded
    assert isinstance(warning, ev.WarningRecorded) and warning.where is ev.Where.NOTIFY
    # The host only: the path of an ntfy URL is its topic, as secret as a password.
    assert warning.message == "ui.notify_url to 127.0.0.1 failed after 3 tries: HTTP 500"


async def test_a_post_nobody_answers_is_a_warning_in_one_line() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]  # closed again: nothing listens there
    recorded: list[ev.Event] = []
    notify = poster(f"http://127.0.0.1:{port}/secret-topic", recorded)
    notify(ASKED)
    await notify.close()
    (warning,) = recorded
    assert isinstance(warning, ev.WarningRecorded)
    assert warning.message.startswith(
        "ui.notify_url to 127.0.0.1 failed after 3 tries: cannot connect ("
    )
    assert "secret-topic" not in warning.message and "\n" not in warning.message
