"""Headless output: one line per notable event, for terminals without the app and for logs.

Each line is the event's type and the same summary the app's event log shows
(`core.describe`). Text from agents is printed with control characters made
visible (`core.text.clean`), so a task or an error message cannot move the
cursor or clear the screen, and redacted as the journal is, so a key in a task is
not printed either.

`run_headless` runs a whole run so; with a terminal, the questions waiting for a
person are asked on it (`ui.terminal_questions`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, TextIO

from mala_tui.core import events as ev
from mala_tui.core.describe import summary
from mala_tui.core.notices import event_notice
from mala_tui.core.text import safe_line
from mala_tui.runtime.consoles.serve_record import notice_address
from mala_tui.runtime.private.redaction import redact
from mala_tui.runtime.questions.approvals import ApprovalMode
from mala_tui.runtime.run.launch import run_status
from mala_tui.ui.attention import Attention, Desktop, desktop_protocol
from mala_tui.ui.terminal_questions import LineReader, answer_from_terminal

if TYPE_CHECKING:
    from mala_tui.runtime.run.run_types import RunResult
    from mala_tui.runtime.run.supervisor import Supervisor

QUIET: Final = (ev.UsageRecorded, ev.MessageRecorded, ev.SubagentCall)
"""Events too frequent for a line each; the journal has them all."""
LINE_CHARS: Final = 240
TYPE_WIDTH: Final = 20


def describe(event: ev.Event) -> str | None:
    """The line for a notable event (its type, then the one describer's summary); None for
    the frequent ones."""
    if isinstance(event, QUIET):
        return None
    return safe_line(f"{event.type:<{TYPE_WIDTH}} {summary(event)}", LINE_CHARS)


def printer(
    out: TextIO,
    clock: Callable[[float], time.struct_time] = time.localtime,
    *,
    address: Callable[[str], str] | None = None,
) -> Callable[[ev.Event], None]:
    """An event listener that prints notable events, one line each, flushed.

    `address`: where a notice links to, given its question's id (the question's page on
    the data folder's `mala-tui serve`, "" while none runs): the line of an event that
    needs a person ends with it.
    """

    def listen(event: ev.Event) -> None:
        line = describe(event)
        if line is None:
            return
        stamp = time.strftime("%H:%M:%S", clock(event.at))
        who = safe_line(event.session, 24) if event.session else "-"
        notice = event_notice(event, "") if address is not None else None
        url = address(notice.question) if address is not None and notice is not None else ""
        link = f" \u00b7 {url}" if url else ""
        out.write(redact(f"{stamp} {who:<24} {line}") + link + "\n")  # as the journal is
        out.flush()

    return listen


# -- a whole run, headless ----------------------------------------------------------------------


async def run_headless(
    supervisor: Supervisor, out: TextIO, *, read_line: LineReader | None = None
) -> RunResult:
    """Run to the end printing one line per notable event; Ctrl-C stops every session first.

    With `read_line` (a terminal), pending approvals and permission requests are asked
    for there; without one, a permission request under `ask` gets the timeout's answer
    at once (an approval under `ask` was refused before the run: `check_approval_mode`).
    """
    data_dir, run_id = supervisor.settings.resolved_data_dir(), supervisor.state.run_id
    supervisor.listeners.events.append(
        printer(out, address=lambda question: notice_address(data_dir, run_id, question))
    )
    ui = supervisor.settings.ui
    if ui.notify_headless:

        def write(text: str) -> None:
            out.write(text)
            out.flush()

        supervisor.listeners.events.append(
            Attention(
                write,
                bell=ui.bell,
                desktop=desktop_protocol(Desktop(ui.desktop_notifications), os.environ),
                in_tmux=bool(os.environ.get("TMUX")),
                run_id=supervisor.state.run_id,
            )
        )
    asker = None
    if read_line is None:
        supervisor.permissions.operator_present = False
    elif supervisor.approval_mode is ApprovalMode.ASK or supervisor.permissions.policy == "ask":
        asker = asyncio.create_task(answer_from_terminal(supervisor, out, read_line))
    try:
        return await supervisor.run()
    finally:
        if asker is not None:
            asker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asker


async def read_stdin_line() -> str:
    """One line from the terminal, read when it is ready so the event loop runs on meanwhile.

    A reader callback rather than a thread: a thread blocked in readline would keep
    the process from exiting until Enter was pressed.

    Raises:
        EOFError: the input has ended, or the terminal is gone (closed, hung up):
            nothing more can be read.
    """
    loop = asyncio.get_running_loop()
    line: asyncio.Future[str] = loop.create_future()

    def ready() -> None:
        loop.remove_reader(sys.stdin)
        if line.done():
            return
        try:
            text = sys.stdin.readline()
        except OSError as exc:  # EIO from a terminal that hung up
            line.set_exception(EOFError(str(exc)))
            return
        if text:
            line.set_result(text)
        else:  # the end of input (Ctrl-D, a closed pipe): no answer will ever come
            line.set_exception(EOFError("the terminal's input ended"))

    loop.add_reader(sys.stdin, ready)
    try:
        return await line
    finally:
        loop.remove_reader(sys.stdin)


def exit_status(result: RunResult, out: TextIO) -> int:
    """One line per session (names and reasons shown literally, redacted as every headless
    line is), and the run's exit status."""
    for name, status in result.statuses.items():
        reason = safe_line(result.reasons.get(name, ""), 400)
        line = f"{safe_line(name, 80)}: {status.value}{' - ' + reason if reason else ''}"
        out.write(redact(line) + "\n")
    return run_status(result)
