"""How a run with no console attached tells someone it needs them: `ui.notify_command`
and `ui.notify_url`.

A detached run's questions wait for a console (runtime.consoles.run_host). So that they do not wait
unseen, the run's host tells someone when an event needs a person (a restart waiting for
approval, a tool waiting for permission, a waiting question about to let its session's
prompt cache go cold, a session that failed) and no console is attached, in either way or
both:

`ui.notify_command`, a command of the person's own, such as `notify-send "$MALA_NOTICE"` or
a push service's client. It is run by `/bin/sh -c`, so it may use the shell, but what it
is told comes only in its environment, never spliced into the command line, so a
session's name cannot run anything:

    MALA_NOTICE   the line a console would show: "fix-tests asks to use Bash · run 2025..."
    MALA_RUN      the run's id
    MALA_SESSION  the session's name
    MALA_WAITS    what waits: "restart approval", "permission for Bash", "failure", ...
    MALA_ATTACH   the command that attaches a console to the run
    MALA_URL      the question's page on the `mala-tui serve` of the data folder (the
                  run's page for a failure); empty while none runs (serve_record)

(Not MALA_TUI_...: that prefix is mala-tui's settings', and a command that runs mala-tui
would read them as such.) Each runs at most `NOTIFY_SECONDS`, with stdin from /dev/null
and its output in the host's log; one that fails or takes too long is journaled as a
warning, and the run goes on. It runs in a process group of its own, and one that takes
too long is killed with the whole group: what its shell started (a `curl`, a `sleep`)
goes with it, rather than living on after the shell.

`ui.notify_url`, a URL each notice is POSTed to: to an ntfy server in ntfy's own form
(the notice as the plain-text body, its `Title`, `Priority` and `Click` headers, the
click link the question's page), to any other as JSON (`ui.notify_format`). Each try is
bounded by `POST_SECONDS`, a refused or failed one is tried again (`POST_TRIES` in all),
and one never delivered is journaled as a warning naming the server's host only (an ntfy
topic in the URL's path is its password). No access token is ever in what is sent: the
page's address holds none.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from collections.abc import Callable
from email.header import Header
from enum import StrEnum
from typing import Final, Protocol
from urllib.parse import urlsplit

import aiohttp

from mala_tui.core import events as ev
from mala_tui.core.notices import APP, Notice, event_notice
from mala_tui.runtime.private.redaction import redact

NOTIFY_SECONDS: Final = 30.0
"""How long a notification command may take before it is killed."""
POST_SECONDS: Final = 10.0
"""How long one POST to `ui.notify_url` may take."""
POST_TRIES: Final = 3
"""POSTs of one notice before it is given up (and journaled as a warning)."""
POST_PAUSE: Final = 2.0
"""Seconds before the second try; each further one waits twice as long as the last."""
NTFY_HOSTS: Final = ("ntfy.sh",)
"""Hosts `ui.notify_format = "auto"` POSTs to in ntfy's form (a self-hosted ntfy: "ntfy")."""

Address = Callable[[str], str]
"""The page a notice links to, given its question's id ("" for none): "" while no
`mala-tui serve` runs for the data folder (serve_record.notice_address)."""


def _no_address(question: str) -> str:
    return ""


class Sender(Protocol):
    """One way of telling a notice: `send` says what went wrong in a few words ("" when it
    went well); `what` is the setting it comes from, as a warning names it."""

    what: str

    async def send(self, notice: Notice, url: str) -> str: ...


class Notifier:
    """An event listener of the run's host: when a person is needed and no console is there
    to see it, tells it through its sender, each notice in a task of its own, and journals
    a warning when that fails."""

    def __init__(
        self,
        sender: Sender,
        *,
        run_id: str,
        consoles: Callable[[], int],
        record: Callable[[ev.Event], object],
        address: Address = _no_address,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.sender = sender
        self.run_id = run_id
        self._consoles = consoles
        self._record = record
        self._address = address
        self._clock = clock
        self._running: set[asyncio.Task[None]] = set()
        self.sent: list[str] = []
        """Every notice told, in order."""

    def __call__(self, event: ev.Event) -> None:
        if isinstance(event, ev.WarningRecorded) and event.where is ev.Where.NOTIFY:
            return
        notice = event_notice(event, self.run_id)
        if notice is None or self._consoles() > 0:
            return
        self.sent.append(redact(notice.text))
        task = asyncio.get_running_loop().create_task(
            self._tell(notice, self._address(notice.question))
        )
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _tell(self, notice: Notice, url: str) -> None:
        problem = await self.sender.send(notice, url)
        if problem:
            self._record(
                ev.WarningRecorded(
                    at=self._clock(),
                    session=notice.session,
                    where=ev.Where.NOTIFY,
                    message=f"{self.sender.what} {problem}",
                )
            )

    async def close(self) -> None:
        """Wait for the notices still being told (each is bounded by its timeouts)."""
        if self._running:
            await asyncio.wait(set(self._running))


class NotifyCommand:
    """`ui.notify_command`: run when a person is needed and no console is attached."""

    what = "ui.notify_command"

    def __init__(
        self, command: str, *, run_id: str, attach: str, timeout: float = NOTIFY_SECONDS
    ) -> None:
        self.command = command
        self.run_id = run_id
        self.timeout = timeout
        self._attach = attach

    async def send(self, notice: Notice, url: str) -> str:
        env = dict(
            os.environ,
            MALA_NOTICE=redact(notice.text),
            MALA_RUN=self.run_id,
            MALA_SESSION=redact(notice.session),
            MALA_WAITS=redact(notice.waits),
            MALA_ATTACH=self._attach,
            MALA_URL=url,
        )
        try:
            process = await asyncio.create_subprocess_exec(
                "/bin/sh",
                "-c",
                self.command,
                stdin=asyncio.subprocess.DEVNULL,
                env=env,
                start_new_session=True,  # its own group: killed whole when it overruns
            )
        except OSError as exc:
            return f"could not be started: {exc.strerror or exc}"
        try:
            status = await asyncio.wait_for(process.wait(), self.timeout)
        except TimeoutError:
            # The group, not only the shell: a child of the shell would live on.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
            return f"took longer than {self.timeout:g} s and was stopped"
        return f"ended with status {status}" if status != 0 else ""


class NotifyFormat(StrEnum):
    """What `ui.notify_url` is sent (`ui.notify_format`)."""

    AUTO = "auto"
    """ntfy's form to ntfy.sh, JSON to any other host."""
    NTFY = "ntfy"
    """ntfy's form: the notice as plain text, with Title, Priority and Click headers."""
    JSON = "json"
    """One JSON object (`post_body`)."""


def post_format(url: str, setting: NotifyFormat) -> NotifyFormat:
    """The form a POST to `url` takes: the setting, or for AUTO, guessed from the host."""
    if setting is not NotifyFormat.AUTO:
        return setting
    host = (urlsplit(url).hostname or "").lower()
    ntfy = host in NTFY_HOSTS or host.endswith(tuple(f".{name}" for name in NTFY_HOSTS))
    return NotifyFormat.NTFY if ntfy else NotifyFormat.JSON


def priority(notice: Notice) -> str:
    """ntfy's priority: high for what blocks a session (a question, a failure), default for
    a reminder that a cache goes cold."""
    return "high" if notice.question or notice.waits == "failure" else "default"


def post_body(
    notice: Notice, url: str, run_id: str, form: NotifyFormat
) -> tuple[bytes, dict[str, str]]:
    """The body and headers of the POST that tells `notice`, in `form` (NTFY or JSON)."""
    text, title = redact(notice.text), f"{APP}: {redact(notice.waits)}"
    if form is NotifyFormat.NTFY:
        headers = {
            "Content-Type": "text/plain; charset=utf-8",
            "Title": _header(title),
            "Priority": priority(notice),
            "Tags": "bell",
        }
        if url:
            headers["Click"] = url
        return text.encode("utf-8"), headers
    data = {
        "title": title,
        "message": text,
        "run": run_id,
        "session": redact(notice.session),
        "waits": redact(notice.waits),
        "question": notice.question,
        "priority": priority(notice),
        "url": url,
    }
    return json.dumps(data).encode("utf-8"), {"Content-Type": "application/json"}


def _header(text: str) -> str:
    """A header's value: ASCII as it is, anything else as an RFC 2047 word (ntfy reads it)."""
    one_line = " ".join(text.split())
    if one_line.isascii():
        return one_line
    return Header(one_line, "utf-8").encode(maxlinelen=10_000)


class NotifyPost:
    """`ui.notify_url`: each notice POSTed while no console is attached (ntfy, or JSON)."""

    what = "ui.notify_url"

    def __init__(
        self,
        url: str,
        *,
        run_id: str,
        form: NotifyFormat = NotifyFormat.AUTO,
        timeout: float = POST_SECONDS,
        tries: int = POST_TRIES,
        pause: float = POST_PAUSE,
    ) -> None:
        self.run_id = run_id
        self.url = url
        self.form = post_format(url, form)
        self.timeout = timeout
        self.tries = max(1, tries)
        self.pause = pause
        # Named by its host only: the path of an ntfy URL is its topic, as good as a password.
        self._where = urlsplit(url).hostname or "its server"

    async def send(self, notice: Notice, url: str) -> str:
        body, headers = post_body(notice, url, self.run_id, self.form)
        problem, pause = "", self.pause
        timeout = aiohttp.ClientTimeout(total=self.timeout)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            for attempt in range(self.tries):
                if attempt:
                    await asyncio.sleep(pause)
                    pause *= 2
                try:
                    async with session.post(self.url, data=body, headers=headers) as response:
                        if response.status < 300:
                            return ""
                        problem = f"HTTP {response.status}"
                        if 400 <= response.status < 500 and response.status not in (408, 429):
                            break  # refused as it is: trying again would be refused again
                except TimeoutError:
                    problem = f"no answer within {self.timeout:g} s"
                except aiohttp.ClientError as exc:
                    problem = _client_problem(exc)
        tries = f"{attempt + 1} tr{'y' if attempt == 0 else 'ies'}"
        return f"to {self._where} failed after {tries}: {problem}"


def _client_problem(exc: aiohttp.ClientError) -> str:
    """What went wrong, without the URL (its path may be an ntfy topic, secret as a password)."""
    if isinstance(exc, aiohttp.ClientConnectorError):
        return f"cannot connect ({exc.os_error.strerror or exc.os_error})"
    return type(exc).__name__
