"""Headless output: one line per notable event, for terminals without the app and for logs.

Text from agents is printed with control characters made visible, so a task or
an error message cannot move the cursor or clear the screen.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TextIO

from mala_tui.core import events as ev
from mala_tui.core.observations import Decision

if TYPE_CHECKING:
    from mala_tui.runtime.supervisor import Supervisor

LineReader = Callable[[], Awaitable[str]]

_CONTROL = {code: f"\\x{code:02x}" for code in (*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F)}
_CONTROL.update({0x09: " ", 0x0A: " "})


def literal(text: str, limit: int = 160) -> str:
    """One line, control characters shown as escapes, at most `limit` characters."""
    flat = text.translate(_CONTROL)
    flat = "".join(ch if not 0x80 <= ord(ch) < 0xA0 else f"\\x{ord(ch):02x}" for ch in flat)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _pct(tokens: int, window: int) -> str:
    return f"{tokens:,}/{window:,} ({tokens / window:.0%})" if window else f"{tokens:,}"


def describe(event: ev.Event) -> str | None:
    """The line for a notable event; None for the ones not worth a line (usage, messages)."""
    match event:
        case ev.RunStarted():
            return f"run {event.run_id} started: {len(event.sessions)} sessions ({event.mode})"
        case ev.RunEnded():
            verdict = "ok" if event.ok else literal(event.reason) or "not ok"
            return f"run {event.run_id} ended: {verdict}"
        case ev.SessionStarted():
            return f"started: {literal(event.task, 100)}"
        case ev.PhaseChanged():
            return f"{event.before} -> {event.after} ({event.trigger})"
        case ev.MaskApplied():
            at = (
                f"projected {event.projected_tokens:,}"
                if event.projected_tokens is not None
                else f"{event.tokens_before:,}"
            )
            return (
                f"masked {event.count} results (est. {event.estimated_tokens:,} tokens) "
                f"at {at} tokens ({event.trigger}); {event.total_masked} masked in all"
            )
        case ev.MaskMeasured():
            return (
                f"mask measured: {event.tokens_before:,} -> {event.tokens_after:,} tokens "
                f"({event.reclaimed:,} reclaimed)"
            )
        case ev.MaskSkipped():
            return f"not masking: {literal(event.reason)}"
        case ev.WindDownSent():
            return f"wind-down sent at {_pct(event.tokens, event.window)} ({event.trigger})"
        case ev.CheckpointRequested():
            return "checkpoint requested"
        case ev.CheckpointSaved():
            where = f" -> {event.path}" if event.path else ""
            return f"checkpoint {event.number} ({event.origin}, {len(event.text):,} chars){where}"
        case ev.ApprovalRequested():
            return (
                f"approval needed for checkpoint {event.checkpoint_number}: {literal(event.reason)}"
            )
        case ev.ApprovalPolicySet():
            return f"approval before restarts {'required' if event.required else 'not required'}"
        case ev.ApprovalDecided():
            return f"approval: {event.decision} (by {event.decided_by})"
        case ev.Restarted():
            return (
                f"restart {event.continuation} from checkpoint {event.checkpoint_number} "
                f"at {event.tokens_before:,} tokens ({literal(event.reason)}; {event.approved_by})"
            )
        case ev.IdleTimedOut():
            tail = f", {literal(event.reason)}" if event.reason else ""
            return (
                f"idle {event.idle_seconds:.0f} s: {event.decision} "
                f"(retry {event.retry}, wait {event.delay:g} s){tail}"
            )
        case ev.ApiErrorSeen():
            return (
                f"API error {event.terminal_reason} {event.status or ''}: {event.decision}".rstrip()
            )
        case ev.CompactionSeen():
            return f"CLI compaction {'blocked' if event.blocked else 'happened'} ({event.trigger})"
        case ev.ProcessStarted():
            return f"agent process {event.pid} started{' (resume)' if event.resume else ''}"
        case ev.ProcessEnded():
            return f"agent process {event.pid} ended: {event.how} after {event.seconds:.1f} s"
        case ev.SessionEnded():
            return (
                f"ended {event.status}: {literal(event.reason)} "
                f"({event.restarts} restarts, {event.masked_total} masked)"
            )
        case ev.ErrorRecorded():
            return f"error in {event.where}: {literal(event.message)}"
        case ev.WarningRecorded():
            return f"warning ({event.where}): {literal(event.message)}"
        case ev.ManageModeSet():
            return f"management mode: {event.mode}"
    return None


def printer(
    out: TextIO, clock: Callable[[float], time.struct_time] = time.localtime
) -> Callable[[ev.Event], None]:
    """An event listener that prints notable events, one line each, flushed."""

    def listen(event: ev.Event) -> None:
        line = describe(event)
        if line is None:
            return
        stamp = time.strftime("%H:%M:%S", clock(event.at))
        who = literal(event.session, 24) if event.session else "-"
        out.write(f"{stamp} {who:<24} {line}\n")
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
            f"\n--- checkpoint {request.checkpoint_number} of {literal(request.session, 60)} "
            f"({literal(request.reason)}) ---\n"
        )
        for line in request.checkpoint_text.splitlines():
            out.write(literal(line, 400) + "\n")
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
            out.write(f"not an answer: {literal(answer, 40)!r}\n")
        await asyncio.sleep(0)
