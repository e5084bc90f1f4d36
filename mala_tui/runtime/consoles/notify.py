"""`ui.notify_command`: how a run with no console attached tells someone it needs them.

A detached run's questions wait for a console (runtime.consoles.run_host). So that they do not wait
unseen, the run's host runs `ui.notify_command` when an event needs a person (a restart
waiting for approval, a tool waiting for permission, a waiting question about to let its
session's prompt cache go cold, a session that failed) and no console is attached: a
command of the person's own, such as `notify-send "$MALA_NOTICE"` or a push service's
client. It is run by `/bin/sh -c`, so it may use the shell, but what it is told comes only
in its environment, never spliced into the command line, so a session's name cannot run
anything:

    MALA_NOTICE   the line a console would show: "fix-tests asks to use Bash · run 2025..."
    MALA_RUN      the run's id
    MALA_SESSION  the session's name
    MALA_WAITS    what waits: "restart approval", "permission for Bash", "failure", ...
    MALA_ATTACH   the command that attaches a console to the run

(Not MALA_TUI_...: that prefix is mala-tui's settings', and a command that runs mala-tui
would read them as such.) Each runs at most `NOTIFY_SECONDS`, with stdin from /dev/null
and its output in the host's log; one that fails or takes too long is journaled as a
warning, and the run goes on. It runs in a process group of its own, and one that takes
too long is killed with the whole group: what its shell started (a `curl`, a `sleep`)
goes with it, rather than living on after the shell.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable
from typing import Final

from mala_tui.core import events as ev
from mala_tui.core.notices import event_notice
from mala_tui.runtime.private.redaction import redact

NOTIFY_SECONDS: Final = 30.0
"""How long a notification command may take before it is killed."""
WHERE: Final = "notify"
"""Where the warning that journals a failed notification command comes from."""


class NotifyCommand:
    """An event listener of the run's host: runs the command when a person is needed and
    no console is there to see it."""

    def __init__(
        self,
        command: str,
        *,
        run_id: str,
        consoles: Callable[[], int],
        record: Callable[[ev.Event], object],
        attach: str,
        clock: Callable[[], float] = time.time,
        timeout: float = NOTIFY_SECONDS,
    ) -> None:
        self.command = command
        self.timeout = timeout
        self.run_id = run_id
        self._consoles = consoles
        self._record = record
        self._attach = attach
        self._clock = clock
        self._running: set[asyncio.Task[None]] = set()
        self.sent: list[str] = []
        """Every notice the command was run for, in order."""

    def __call__(self, event: ev.Event) -> None:
        if isinstance(event, ev.WarningRecorded) and event.where == WHERE:
            return
        notice = event_notice(event, self.run_id)
        if notice is None or self._consoles() > 0:
            return
        text = redact(notice.text)
        self.sent.append(text)
        env = dict(
            os.environ,
            MALA_NOTICE=text,
            MALA_RUN=self.run_id,
            MALA_SESSION=redact(notice.session),
            MALA_WAITS=redact(notice.waits),
            MALA_ATTACH=self._attach,
        )
        task = asyncio.get_running_loop().create_task(self._run(env, notice.session))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _run(self, env: dict[str, str], session: str) -> None:
        problem = ""
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
            problem = f"could not be started: {exc.strerror or exc}"
        else:
            try:
                status = await asyncio.wait_for(process.wait(), self.timeout)
            except TimeoutError:
                # The group, not only the shell: a child of the shell would live on.
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                await process.wait()
                problem = f"took longer than {self.timeout:g} s and was stopped"
            else:
                if status != 0:
                    problem = f"ended with status {status}"
        if problem:
            self._record(
                ev.WarningRecorded(
                    at=self._clock(),
                    session=session,
                    where=WHERE,
                    message=f"ui.notify_command {problem}",
                )
            )

    async def close(self) -> None:
        """Wait for the commands still running (each is bounded by its timeout)."""
        if self._running:
            await asyncio.wait(set(self._running))
