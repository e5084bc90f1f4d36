"""Questions asked on a terminal: approvals and permission requests, answered by typing.

A headless run with a terminal (`ui.headless.run_headless`) and a headless console
(`mala-tui attach --headless`) ask here for each question waiting for a person, one at a
time. What a person is asked to approve is shown whole and literally first (control
characters made visible, secrets redacted as the journal is), wrapped and a screenful
at a time; a question answered elsewhere meanwhile (another console, its timeout) is
withdrawn, saying who answered it and how.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import Awaitable, Callable
from typing import Final, Protocol, TextIO

from mala_tui.core import events as ev
from mala_tui.core.observations import Decision
from mala_tui.core.operator_actions import AnswerApproval, AnswerPermission, OperatorAction
from mala_tui.core.permissions import CUT_INPUT_NOTE, PermissionAnswer
from mala_tui.core.questions import ApprovalQuestion, PermissionQuestion, Question, permission_id
from mala_tui.core.run_view import RunState
from mala_tui.core.text import clean, safe_line
from mala_tui.runtime.private.redaction import redact
from mala_tui.runtime.questions.desk import QuestionClosed, Reply
from mala_tui.runtime.run.recorder import Listeners

LineReader = Callable[[], Awaitable[str]]
"""Reads one line typed at the terminal; raises EOFError once its input has ended."""


class Answerable(Protocol):
    """A run whose questions can be answered from a terminal: its supervisor, or a
    console's view of it (runtime.consoles.live_run.RemoteRun)."""

    @property
    def state(self) -> RunState: ...

    @property
    def listeners(self) -> Listeners: ...

    def act(self, action: OperatorAction) -> None: ...


WRAP_MARK: Final = "\u21aa "
"""Starts a piece of a line the terminal's width broke ("↪ "), not a line of the text."""
DENY_WORDS: Final = frozenset({"d", "deny", "n", "no"})


def terminal_lines(text: str, width: int) -> list[str]:
    """Agent text as terminal lines, every character of it: each line made safe (control
    characters visible, secrets redacted, before it is broken so no key is split), then
    broken at `width`, the pieces after the first marked with WRAP_MARK."""
    width = max(20, width)
    room = width - len(WRAP_MARK)
    lines = []
    for line in text.splitlines() or [""]:
        safe = redact(clean(line))
        lines.append(safe[:width])
        lines += [WRAP_MARK + safe[at : at + room] for at in range(width, len(safe), room)]
    return lines


async def show_all(text: str, out: TextIO, read_line: LineReader) -> str | None:
    """Write the whole of `text` (`terminal_lines`), a screenful at a time: a person must
    see everything before being asked to approve it. Between screens Enter shows the
    next; a deny typed there ends it early and is returned. None once all was shown."""
    width, height = shutil.get_terminal_size()
    lines = terminal_lines(text, width)
    page = max(5, height - 3)  # room for the header and the question
    for start in range(0, len(lines), page):
        while start:
            out.write(f"--- shown {start} of {len(lines)} lines: Enter for more, or [d]eny: ")
            out.flush()
            typed = (await read_line()).strip()
            if not typed:
                break
            if typed.split()[0].lower() in DENY_WORDS:
                return typed
            out.write(f"not an answer: {safe_line(typed, 40)!r}\n")
        out.write("".join(line + "\n" for line in lines[start : start + page]))
    return None


async def answer_from_terminal(supervisor: Answerable, out: TextIO, read_line: LineReader) -> None:
    """Ask on the terminal for each question waiting for a person (the run's one list,
    `RunState.questions`), one at a time, until cancelled (approvals first: a session
    waiting for one holds nothing else up).

    The checkpoint and the tool's input are printed whole and literally (control
    characters made visible), wrapped and paged (`show_all`). A checkpoint is approved
    or denied (editing needs the app); a tool use is allowed once, allowed for the
    session, or denied with a reason.
    """
    read_line = _until_input_ends(read_line, out)
    changed = asyncio.Event()
    supervisor.listeners.questions.append(lambda _waiting: changed.set())
    closings = _Closings()
    supervisor.listeners.events.append(closings)
    try:
        await _ask_each(supervisor, out, read_line, changed, closings)
    except (EOFError, OSError):
        # The terminal is gone (closed, hung up): the questions wait for a console that
        # attaches (`mala-tui attach`), or for their timeouts.
        return


class _Closings:
    """An event listener: what closed each question (its decision, its session's end), so
    a question answered elsewhere can be withdrawn saying who answered it and how."""

    def __init__(self) -> None:
        self._said: dict[str, str] = {}

    def __call__(self, event: ev.Event) -> None:
        match event:
            case ev.PermissionDecided():
                key = permission_id(event.session, event.request_id)
                self._said[key] = Reply.of(event).describe()
            case ev.ApprovalDecided():
                # The decision names no checkpoint: a session waits on one at a time.
                self._said[f"{event.session}/approval"] = Reply.of(event).describe()
            case ev.SessionEnded():
                self._said[f"{event.session}/ended"] = f"the session ended ({event.status})"

    def how(self, question: Question) -> str:
        """E.g. "allowed once by the operator", "denied by its timeout (...)"."""
        mine = (
            f"{question.session}/approval"
            if isinstance(question, ApprovalQuestion)
            else question.id
        )
        for key in (mine, f"{question.session}/ended"):
            if key in self._said:
                return self._said[key]
        return "it no longer waits"


def _label(question: Question) -> str:
    """The question as the desk names it ("request #2 of a (Bash)", "checkpoint #1 of a")."""
    session = safe_line(question.session, 60)
    if isinstance(question, ApprovalQuestion):
        return f"checkpoint #{question.checkpoint_number} of {session}"
    return f"request #{question.request_id} of {session} ({safe_line(question.tool, 60)})"


async def _ask_while_open(
    supervisor: Answerable,
    question: Question,
    asking: Awaitable[bool],
    out: TextIO,
    *,
    changed: asyncio.Event,
    closings: _Closings,
) -> bool:
    """Ask, until answered here or closed elsewhere (another console, a timeout, the
    session's end): then the question is withdrawn from this terminal, saying who
    answered it and how, and what is typed next goes to the next question."""
    task = asyncio.ensure_future(asking)
    try:
        while not task.done():
            if not _still_listed(supervisor, question):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                out.write(
                    f"\n--- {_label(question)} was answered elsewhere: "
                    f"{safe_line(closings.how(question), 200)}; no answer is needed here\n"
                )
                out.flush()
                return True
            changed.clear()
            woken = asyncio.ensure_future(changed.wait())
            await asyncio.wait({task, woken}, return_when=asyncio.FIRST_COMPLETED)
            woken.cancel()
        return task.result()
    finally:
        task.cancel()


async def _ask_each(
    supervisor: Answerable,
    out: TextIO,
    read_line: LineReader,
    changed: asyncio.Event,
    closings: _Closings,
) -> None:
    while True:
        waiting = supervisor.state.questions()
        approvals = [q for q in waiting if isinstance(q, ApprovalQuestion)]
        permissions = [q for q in waiting if isinstance(q, PermissionQuestion)]
        question: Question
        if approvals:
            question = approvals[0]
            asking = _ask_approval(supervisor, question, out, read_line)
            settled = await _ask_while_open(
                supervisor, question, asking, out, changed=changed, closings=closings
            )
        elif permissions:
            question = permissions[0]
            asking = ask_permission(supervisor, question, out, read_line)
            settled = await _ask_while_open(
                supervisor, question, asking, out, changed=changed, closings=closings
            )
        else:
            changed.clear()
            await changed.wait()
            continue
        # Answered (or found answered), it leaves the list once its decision is recorded
        # (and, in a console, has reached it): not before is the next question asked, so
        # this one is not asked twice.
        while settled and _still_listed(supervisor, question):
            changed.clear()
            await changed.wait()
        await asyncio.sleep(0)


NOBODY: Final = "d nobody is left to answer: the terminal's input ended\n"
"""The answer to every question once the terminal's input has ended: a deny, with why."""


def _until_input_ends(read_line: LineReader, out: TextIO) -> LineReader:
    """`read_line`, until the input ends (Ctrl-D, a closed pipe): that is said once, and
    from then on every question is denied, since no answer can come any more (asking
    again would read the end again, and ask for ever)."""
    ended = False

    async def read() -> str:
        nonlocal ended
        if not ended:
            try:
                return await read_line()
            except EOFError:
                ended = True
                out.write(
                    "\nmala-tui: the terminal's input ended: nobody is left to answer, so this "
                    "question and every later one is denied\n"
                )
                out.flush()
        return NOBODY

    return read


def _still_listed(supervisor: Answerable, question: Question) -> bool:
    return any(waiting.id == question.id for waiting in supervisor.state.questions())


async def _ask_approval(
    supervisor: Answerable, request: ApprovalQuestion, out: TextIO, read_line: LineReader
) -> bool:
    """Ask, and send the answer; False when what was typed was no answer (ask again)."""
    out.write(
        f"\n--- checkpoint {request.checkpoint_number} of {safe_line(request.session, 60)} "
        f"({safe_line(request.reason)}) ---\n"
    )
    answer = await show_all(request.checkpoint_text, out, read_line)
    if answer is None:
        out.write("--- restart from this checkpoint? [a]pprove / [d]eny: ")
        out.flush()
        answer = await read_line()
    answer = (answer.strip().lower().split() or [""])[0]
    number = request.checkpoint_number
    if answer in ("a", "approve", "y", "yes"):
        decision = Decision.APPROVE
    elif answer in DENY_WORDS:
        decision = Decision.DENY
    else:
        out.write(f"not an answer: {safe_line(answer, 40)!r}\n")
        return False
    try:
        supervisor.act(
            AnswerApproval(session=request.session, decision=decision, checkpoint_number=number)
        )
    except QuestionClosed as exc:  # answered meanwhile: its timeout, another console
        out.write(f"{exc}\n")
    except KeyError as exc:
        out.write(f"{exc.args[0] if exc.args else exc}\n")
    out.flush()
    return True


PERMISSION_WORDS: Final = {
    "o": PermissionAnswer.ALLOW_ONCE,
    "once": PermissionAnswer.ALLOW_ONCE,
    "s": PermissionAnswer.ALLOW_SESSION,
    "session": PermissionAnswer.ALLOW_SESSION,
    "d": PermissionAnswer.DENY,
    "deny": PermissionAnswer.DENY,
}


async def _deny_only(typed: str | None, out: TextIO, read_line: LineReader) -> str:
    """An input too long to be shown whole: a deny is the only answer asked for."""
    while typed is None or (typed.strip().split() or [""])[0].lower() not in DENY_WORDS:
        if typed is not None:
            out.write(f"not an answer: {safe_line(typed.strip(), 40)!r}\n")
        out.write(f"--- {CUT_INPUT_NOTE}: [d] deny, then a reason: ")
        out.flush()
        typed = await read_line()
    return typed


async def ask_permission(
    supervisor: Answerable, request: PermissionQuestion, out: TextIO, read_line: LineReader
) -> bool:
    """One tool use: its input, then o / s / d (a deny's reason after it, or on the next
    line); False when what was typed was no answer (ask again)."""
    out.write(
        f"\n--- {safe_line(request.session, 60)} asks to use {safe_line(request.tool, 60)} "
        f"(request #{request.request_id}) ---\n"
    )
    typed = await show_all(request.input_text, out, read_line)
    if not request.allow_offered:
        typed = await _deny_only(typed, out, read_line)
    elif typed is None:
        out.write("--- [o] allow once / [s] allow for this session / [d] deny, then a reason: ")
        out.flush()
        typed = await read_line()
    word, _, reason = typed.strip().partition(" ")
    answer = PERMISSION_WORDS.get(word.lower())
    if answer is None:
        out.write(f"not an answer: {safe_line(word, 40)!r}\n")
        return False
    if answer is PermissionAnswer.DENY and not reason.strip():
        out.write("reason for the agent (Enter for none): ")
        out.flush()
        reason = await read_line()
    try:
        supervisor.act(
            AnswerPermission(
                session=request.session,
                request_id=request.request_id,
                answer=answer,
                reason=reason.strip(),
            )
        )
    except QuestionClosed as exc:  # answered meanwhile: its timeout, another console
        out.write(f"{exc}\n")
    except KeyError:
        out.write("answered meanwhile (a timeout, or the session ended)\n")
    out.flush()
    return True
