"""Headless output: one line per notable event, for terminals without the app and for logs.

Each line is the event's type and the same summary the app's event log shows
(`core.describe`). Text from agents is printed with control characters made
visible (`core.text.clean`), so a task or an error message cannot move the
cursor or clear the screen, and redacted as the journal is, so a key in a task is
not printed either.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final, TextIO

from mala_tui.core import events as ev
from mala_tui.core.describe import summary
from mala_tui.core.observations import Decision
from mala_tui.core.text import clean, shorten
from mala_tui.runtime.redaction import redact

if TYPE_CHECKING:
    from mala_tui.runtime.supervisor import Supervisor

LineReader = Callable[[], Awaitable[str]]

QUIET: Final = (ev.UsageRecorded, ev.MessageRecorded)
"""Events too frequent for a line each; the journal has them all."""
LINE_CHARS: Final = 240
TYPE_WIDTH: Final = 20


def one_line(text: str, limit: int = 160) -> str:
    """Agent text as one safe line (control characters made visible), cut at `limit`."""
    return shorten(clean(text, one_line=True), limit)


def describe(event: ev.Event) -> str | None:
    """The line for a notable event (its type, then the one describer's summary); None for
    the frequent ones."""
    if isinstance(event, QUIET):
        return None
    return one_line(f"{event.type:<{TYPE_WIDTH}} {summary(event)}", LINE_CHARS)


def printer(
    out: TextIO, clock: Callable[[float], time.struct_time] = time.localtime
) -> Callable[[ev.Event], None]:
    """An event listener that prints notable events, one line each, flushed."""

    def listen(event: ev.Event) -> None:
        line = describe(event)
        if line is None:
            return
        stamp = time.strftime("%H:%M:%S", clock(event.at))
        who = one_line(event.session, 24) if event.session else "-"
        out.write(redact(f"{stamp} {who:<24} {line}") + "\n")  # as the journal is
        out.flush()

    return listen


async def answer_from_terminal(supervisor: Supervisor, out: TextIO, read_line: LineReader) -> None:
    """Ask on the terminal for each pending approval, one at a time, until cancelled.

    The checkpoint is printed literally (control characters made visible); the
    answer is approve or deny. Editing needs the app.
    """
    changed = asyncio.Event()
    supervisor.listeners.approvals.append(lambda _pending: changed.set())
    while True:
        if not supervisor.approvals:
            changed.clear()
            await changed.wait()
            continue
        request = supervisor.approvals[0]
        out.write(
            f"\n--- checkpoint {request.checkpoint_number} of {one_line(request.session, 60)} "
            f"({one_line(request.reason)}) ---\n"
        )
        for line in request.checkpoint_text.splitlines():
            out.write(redact(shorten(clean(line), 400)) + "\n")
        out.write("--- restart from this checkpoint? [a]pprove / [d]eny: ")
        out.flush()
        answer = (await read_line()).strip().lower()
        if request not in supervisor.approvals:
            continue  # answered meanwhile (a timeout, say)
        if answer in ("a", "approve", "y", "yes"):
            supervisor.decide(request.session, Decision.APPROVE, by="operator")
        elif answer in ("d", "deny", "n", "no"):
            supervisor.decide(request.session, Decision.DENY, by="operator")
        else:
            out.write(f"not an answer: {one_line(answer, 40)!r}\n")
        await asyncio.sleep(0)
