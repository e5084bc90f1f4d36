"""A person sees everything they are asked to approve on a headless terminal: the whole
tool input and the whole checkpoint, wrapped at the terminal's width and paged."""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from mala_tui.config import ContextSettings, IdleSettings, Settings
from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.observations import SessionIdentified, UsageObserved
from mala_tui.core.operator_actions import AnswerPermission
from mala_tui.core.permissions import PermissionAnswer
from mala_tui.core.questions import PermissionQuestion
from mala_tui.core.usage import CallUsage
from mala_tui.runtime.backends.scripted import HANG, ScriptedBackend, ScriptedClient, finished
from mala_tui.runtime.questions.approvals import ApprovalMode
from mala_tui.ui.headless import printer, run_headless
from mala_tui.ui.terminal_questions import WRAP_MARK, terminal_lines
from tests.support.backends import PerSession, bash
from tests.support.polling import eventually
from tests.support.supervisors import build_supervisor, journaled

LONG = "echo " + "x" * 600 + " && echo HIDDEN-TAIL"
ALLOW_PROMPT = "--- [o] allow once / [s] allow for this session / [d] deny, then a reason: "


@pytest.fixture(autouse=True)
def terminal(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("LINES", "24")
    yield


def one_window(idle: float = 60) -> Settings:
    """A 100,000-token window, and an idle timeout no test here reaches."""
    return Settings(
        context=ContextSettings(context_limit=100_000), idle=IdleSettings(idle_timeout_seconds=idle)
    )


def answering(*lines: str) -> Callable[[], Awaitable[str]]:
    answers = iter(lines)

    async def read_line() -> str:
        await asyncio.sleep(0)
        return next(answers)

    return read_line


def test_lines_are_broken_at_the_width_and_keep_every_character() -> None:
    text = 'command: "' + "a" * 150 + ' && echo HIDDEN-TAIL"\nnext line'
    lines = terminal_lines(text, 80)
    assert all(len(line) <= 80 for line in lines)
    assert [line.startswith(WRAP_MARK) for line in lines] == [False, True, True, False]
    joined = lines[0] + "".join(line.removeprefix(WRAP_MARK) for line in lines[1:3])
    assert joined == text.splitlines()[0]
    # Redacted before it is broken: a key is never split into pieces that escape redaction.
    key = "z" * 75 + " sk-ant-api03-abcdefghijklmnopqrstuvwxyz"
    assert "abcdefgh" not in "".join(terminal_lines(key, 80))


async def test_the_whole_command_is_shown_before_allow_is_offered(tmp_path: Path) -> None:
    client = ScriptedClient([[SessionIdentified(0, "s"), *bash(LONG, "t1"), finished()]])
    sup = build_supervisor(
        ScriptedBackend([client]), ["a"], cwd=tmp_path, journal=tmp_path, settings=one_window()
    )
    out = io.StringIO()
    result = await asyncio.wait_for(run_headless(sup, out, read_line=answering("o\n")), 10)
    assert result.statuses == {"a": EndStatus.DONE}
    text = out.getvalue()
    shown = text[text.index("asks to use Bash") : text.index(ALLOW_PROMPT)]
    assert "HIDDEN-TAIL" in shown
    pieces = [line.removeprefix(WRAP_MARK) for line in shown.splitlines()[1:]]
    assert f'  "command": "{LONG}"' in "".join(pieces)
    assert max(len(line) for line in shown.splitlines()) <= 80


async def test_a_long_input_is_paged_and_allow_comes_after_its_last_line(tmp_path: Path) -> None:
    command = "\n".join(f"step {n}" for n in range(400)) + "\necho HIDDEN-TAIL"
    client = ScriptedClient([[SessionIdentified(0, "s"), *bash(command, "t1"), finished()]])
    sup = build_supervisor(
        ScriptedBackend([client]), ["a"], cwd=tmp_path, journal=tmp_path, settings=one_window()
    )
    out = io.StringIO()
    await asyncio.wait_for(run_headless(sup, out, read_line=answering("\n", "\n", "o\n")), 10)
    text = out.getvalue()
    # One JSON line here (the command's newlines are escaped in it), wrapped to many.
    assert "--- shown 21 of " in text
    assert text.index("HIDDEN-TAIL") < text.index(ALLOW_PROMPT)
    assert journaled(sup, ev.PermissionDecided)[0].answer == "allow_once"


async def test_a_deny_while_paging_ends_it_with_its_reason(tmp_path: Path) -> None:
    command = "x" * 3000 + " && echo HIDDEN-TAIL"
    client = ScriptedClient([[SessionIdentified(0, "s"), *bash(command, "t1"), finished()]])
    sup = build_supervisor(
        ScriptedBackend([client]), ["a"], cwd=tmp_path, journal=tmp_path, settings=one_window()
    )
    out = io.StringIO()
    await asyncio.wait_for(run_headless(sup, out, read_line=answering("d too long\n")), 10)
    assert ALLOW_PROMPT not in out.getvalue()
    (decision,) = journaled(sup, ev.PermissionDecided)
    assert (decision.answer, decision.reason) == ("deny", "too long")


async def test_a_checkpoint_is_shown_whole_before_approve_is_offered(tmp_path: Path) -> None:
    body = "## Goal\n" + "y" * 500 + " HIDDEN-TAIL\n## Completed Work\n- Read /ws/a.py"
    hard = UsageObserved(0, CallUsage(cache_read_input_tokens=85_000))
    old = ScriptedClient(
        [
            [SessionIdentified(0, "sa"), hard, HANG],
            [finished("saved", "sa")],
            [finished(f"<checkpoint>\n{body}\n</checkpoint>", "sa")],
        ]
    )
    new = ScriptedClient([[SessionIdentified(0, "sb"), finished("done", "sb")]])
    sup = build_supervisor(
        PerSession({"a": [old, new]}),
        ["a"],
        cwd=tmp_path,
        journal=tmp_path,
        settings=one_window(idle=5),
        approval_mode=ApprovalMode.ASK,
    )
    out = io.StringIO()
    result = await asyncio.wait_for(run_headless(sup, out, read_line=answering("a\n")), 10)
    assert result.statuses == {"a": EndStatus.DONE}
    text = out.getvalue()
    assert "HIDDEN-TAIL" in text[: text.index("--- restart from this checkpoint?")]


async def test_an_input_too_long_to_show_whole_is_never_offered_for_allow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mala_tui.core import permissions

    monkeypatch.setattr(permissions, "INPUT_CHARS", 2_000)  # past it, the input is cut
    command = "echo " + "x" * 3_000 + " && echo HIDDEN-TAIL"
    client = ScriptedClient([[SessionIdentified(0, "s"), *bash(command, "t1"), finished()]])
    sup = build_supervisor(
        ScriptedBackend([client]), ["a"], cwd=tmp_path, journal=tmp_path, settings=one_window()
    )
    out = io.StringIO()
    pages = ["\n"] * 5
    answers = answering(*pages, "o\n", "s\n", "d cannot see all of it\n")
    await asyncio.wait_for(run_headless(sup, out, read_line=answers), 10)
    text = out.getvalue()
    assert ALLOW_PROMPT not in text
    assert "allow is not offered" in text
    assert "not an answer: 'o'" in text and "not an answer: 's'" in text
    (decision,) = journaled(sup, ev.PermissionDecided)
    assert (decision.answer, decision.reason) == ("deny", "cannot see all of it")


def ended_input(calls: list[int]) -> Callable[[], Awaitable[str]]:
    """A terminal whose input has ended: every read says so (as `read_stdin_line` does)."""

    async def read_line() -> str:
        calls.append(1)
        await asyncio.sleep(0)
        raise EOFError

    return read_line


async def test_the_end_of_input_denies_once_and_clearly_instead_of_asking_forever(
    tmp_path: Path,
) -> None:
    client = ScriptedClient(
        [[SessionIdentified(0, "s"), *bash("make", "t1"), *bash("make test", "t2"), finished()]]
    )
    sup = build_supervisor(
        ScriptedBackend([client]), ["a"], cwd=tmp_path, journal=tmp_path, settings=one_window()
    )
    out = io.StringIO()
    calls: list[int] = []
    result = await asyncio.wait_for(run_headless(sup, out, read_line=ended_input(calls)), 10)
    assert result.statuses == {"a": EndStatus.DONE}
    assert len(calls) == 1  # read once: the end of input is not asked again
    text = out.getvalue()
    assert text.count("mala-tui: the terminal's input ended") == 1
    assert [(d.answer, d.reason) for d in journaled(sup, ev.PermissionDecided)] == [
        ("deny", "nobody is left to answer: the terminal's input ended"),
    ] * 2


def test_the_terminals_end_of_input_is_an_eof_error_not_an_empty_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import os

    from mala_tui.ui.headless import read_stdin_line

    read_end, write_end = os.pipe()
    os.close(write_end)
    with os.fdopen(read_end) as ended:
        monkeypatch.setattr("sys.stdin", ended)
        with pytest.raises(EOFError):
            asyncio.run(asyncio.wait_for(read_stdin_line(), 5))


async def test_a_question_answered_elsewhere_is_withdrawn_and_the_next_line_is_the_next(
    tmp_path: Path,
) -> None:
    client = ScriptedClient(
        [[SessionIdentified(0, "s"), *bash("make one", "t1"), *bash("make two", "t2"), finished()]]
    )
    sup = build_supervisor(
        ScriptedBackend([client]), ["a"], cwd=tmp_path, journal=tmp_path, settings=one_window()
    )
    out = io.StringIO()
    typed: asyncio.Queue[str] = asyncio.Queue()
    run = asyncio.create_task(run_headless(sup, out, read_line=typed.get))
    await eventually(lambda: out.getvalue().count(ALLOW_PROMPT) == 1, what="the first question")
    (first,) = sup.state.questions()
    assert isinstance(first, PermissionQuestion)
    # Another console answers it while this terminal waits for a line.
    sup.act(
        AnswerPermission(
            session="a",
            request_id=first.request_id,
            answer=PermissionAnswer.ALLOW_ONCE,
            console="console 2",
        )
    )
    await eventually(lambda: out.getvalue().count(ALLOW_PROMPT) == 2, what="the second question")
    assert (
        f"--- request #{first.request_id} of a (Bash) was answered elsewhere: allowed once "
        "by the operator; no answer is needed here\n"
    ) in out.getvalue()
    typed.put_nowait("d not now\n")  # goes to the question on the screen, the second
    result = await asyncio.wait_for(run, 10)
    assert result.statuses == {"a": EndStatus.DONE}
    decided = journaled(sup, ev.PermissionDecided)
    assert [(d.answer, d.reason) for d in decided] == [("allow_once", ""), ("deny", "not now")]


def test_a_headless_line_links_to_its_question_while_serve_runs(tmp_path: Path) -> None:
    out = io.StringIO()
    served = {"on": False}

    def address(question: str) -> str:
        return f"http://127.0.0.1:8000/?q={question}" if served["on"] else ""

    listen = printer(out, clock=time.gmtime, address=address)
    asked = ev.PermissionRequested(
        at=0.0, session="a", request_id="1", tool="Bash", summary="ls", input_text="ls"
    )
    listen(asked)  # no serve: the line as it always was
    served["on"] = True
    listen(asked)
    listen(ev.SessionEnded(at=1.0, session="a", status=EndStatus.DONE, reason=""))
    first, second, ended = out.getvalue().splitlines()
    assert second == first + " \u00b7 http://127.0.0.1:8000/?q=a/permission/1"
    assert "http" not in ended  # needs nobody: no link
