"""Permission requests through the supervisor, with scripted agents that ask and wait.

The scripted client waits on the permission gate at an `AskPermission` point, as the
CLI holds a tool outside its allowed set until `can_use_tool` answers.
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any

import pytest

from mala_tui.config import AgentSettings, ContextSettings, IdleSettings, Settings
from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.observations import Command, SessionIdentified, UsageObserved
from mala_tui.core.operator_actions import AnswerPermission, SessionCommand
from mala_tui.core.permissions import AnsweredBy, PermissionAnswer
from mala_tui.core.questions import PermissionQuestion, Question
from mala_tui.core.usage import CallUsage
from mala_tui.runtime.backends.base import PermissionVerdict
from mala_tui.runtime.backends.scripted import (
    HANG,
    ScriptedBackend,
    ScriptedClient,
    finished,
)
from mala_tui.runtime.journal.writer import read_events
from mala_tui.runtime.run.supervisor import Supervisor
from mala_tui.ui.attention import BEL, Attention, Desktop
from mala_tui.ui.headless import run_headless
from tests.support.backends import bash
from tests.support.supervisors import build_supervisor, journaled

IDLE = 0.2


def supervisor(
    tmp_path: Path,
    client: ScriptedClient,
    *,
    idle: float = 60.0,
    later: list[ScriptedClient] | None = None,
    **agent: Any,
) -> Supervisor:
    """One session, "a"; `later`: the clients of its restarts (a 100,000-token window)."""
    settings = Settings(
        agent=AgentSettings(**agent),
        idle=IdleSettings(idle_timeout_seconds=idle),
        context=ContextSettings(context_limit=100_000),
    )
    backend = ScriptedBackend([client, *(later or [])])
    return build_supervisor(backend, ["a"], cwd=tmp_path, journal=tmp_path, settings=settings)


def requests_reach(sup: Supervisor, count: int) -> asyncio.Event:
    """Set once `count` requests wait for the operator."""
    reached = asyncio.Event()

    def seen(pending: list[Question]) -> None:
        if len(pending) >= count:
            reached.set()

    sup.listeners.questions.append(seen)
    return reached


async def test_allow_for_the_session_answers_the_next_request_without_asking(
    tmp_path: Path,
) -> None:
    client = ScriptedClient(
        [[SessionIdentified(0, "s"), *bash("make", "t1"), *bash("make test", "t2"), finished()]]
    )
    sup = supervisor(tmp_path, client)
    waiting = requests_reach(sup, 1)
    run = asyncio.create_task(sup.run())
    await asyncio.wait_for(waiting.wait(), 10)
    (request,) = sup.state.questions()
    assert isinstance(request, PermissionQuestion)
    assert (request.session, request.tool, request.summary) == ("a", "Bash", "make")
    assert sup.snapshots()["a"].pending_permissions == 1
    sup.act(
        AnswerPermission(
            session="a", request_id=request.request_id, answer=PermissionAnswer.ALLOW_SESSION
        )
    )
    result = await asyncio.wait_for(run, 10)
    assert result.statuses == {"a": EndStatus.DONE}
    assert client.verdicts == [PermissionVerdict(True), PermissionVerdict(True)]
    assert [
        (d.request_id, d.answer, d.decided_by) for d in journaled(sup, ev.PermissionDecided)
    ] == [
        ("1", PermissionAnswer.ALLOW_SESSION, AnsweredBy.OPERATOR),
        ("2", PermissionAnswer.ALLOW_ONCE, AnsweredBy.SESSION_RULE),
    ]
    assert sup.snapshots()["a"].pending_permissions == 0


async def test_a_deny_carries_the_operators_reason_to_the_agent(tmp_path: Path) -> None:
    client = ScriptedClient([[SessionIdentified(0, "s"), *bash("rm -rf /", "t1"), finished()]])
    sup = supervisor(tmp_path, client)
    waiting = requests_reach(sup, 1)
    run = asyncio.create_task(sup.run())
    await asyncio.wait_for(waiting.wait(), 10)
    sup.act(
        AnswerPermission(
            session="a",
            request_id="1",
            answer=PermissionAnswer.DENY,
            reason="never delete the root",
        )
    )
    await asyncio.wait_for(run, 10)
    (verdict,) = client.verdicts
    assert not verdict.allow
    assert verdict.message == (
        "Permission to use this tool was denied by the operator: never delete the root"
    )
    assert journaled(sup, ev.PermissionDecided)[0].reason == "never delete the root"


async def test_a_waiting_request_is_not_a_stall_and_times_out_to_the_default_answer(
    tmp_path: Path,
) -> None:
    # The idle timeout is a fifth of the permission timeout: had it run while the
    # request waited, the session would have been recovered as hung four times over.
    client = ScriptedClient([[SessionIdentified(0, "s"), *bash("make", "t1"), finished()]])
    sup = supervisor(tmp_path, client, idle=IDLE, permission_timeout=5 * IDLE)
    result = await asyncio.wait_for(sup.run(), 10)
    assert result.statuses == {"a": EndStatus.DONE}
    assert sup.state.sessions["a"].idle_retries == 0
    (answer,) = journaled(sup, ev.PermissionDecided)
    assert (answer.answer, answer.decided_by) == (PermissionAnswer.DENY, AnsweredBy.TIMEOUT)
    assert answer.reason == "no answer within 1 s: denied (agent.permission_timeout_answer)"
    assert client.verdicts[0].message.startswith("Permission to use this tool was denied by")


async def test_the_idle_timeout_still_fires_once_the_request_is_answered(tmp_path: Path) -> None:
    hanging = ScriptedClient([[SessionIdentified(0, "s"), *bash("make", "t1"), HANG]])
    sup = supervisor(tmp_path, hanging, idle=IDLE, permission_timeout_answer="allow")
    sup.permissions.operator_present = False  # answered at once
    run = asyncio.create_task(sup.run())
    stalled = asyncio.Event()
    sup.listeners.events.append(
        lambda e: stalled.set() if isinstance(e, ev.IdleTimeoutSeen) else None
    )
    await asyncio.wait_for(stalled.wait(), 10)
    sup.stop_all()
    await asyncio.wait_for(run, 10)
    assert hanging.verdicts == [PermissionVerdict(True)]


async def test_stopping_the_session_denies_what_waits_with_the_reason(tmp_path: Path) -> None:
    client = ScriptedClient([[SessionIdentified(0, "s"), *bash("make", "t1"), finished()]])
    sup = supervisor(tmp_path, client)
    waiting = requests_reach(sup, 1)
    run = asyncio.create_task(sup.run())
    await asyncio.wait_for(waiting.wait(), 10)
    sup.act(SessionCommand(session="a", command=Command.STOP))
    result = await asyncio.wait_for(run, 10)
    assert result.statuses == {"a": EndStatus.STOPPED}
    (answer,) = journaled(sup, ev.PermissionDecided)
    assert (answer.answer, answer.decided_by) == (PermissionAnswer.DENY, AnsweredBy.POLICY)
    assert answer.reason == "the session ended (stopped)"
    assert sup.state.questions() == []


@pytest.mark.parametrize(
    ("policy", "allowed", "by"),
    [("allow", True, AnsweredBy.POLICY), ("deny", False, AnsweredBy.POLICY)],
)
async def test_allow_and_deny_policies_answer_without_asking(
    tmp_path: Path, policy: str, allowed: bool, by: AnsweredBy
) -> None:
    client = ScriptedClient([[SessionIdentified(0, "s"), *bash("make", "t1"), finished()]])
    sup = supervisor(tmp_path, client, permissions=policy)
    asked: list[list[Question]] = []
    sup.listeners.questions.append(asked.append)
    await asyncio.wait_for(sup.run(), 10)
    assert asked == []
    assert client.verdicts[0].allow is allowed
    assert journaled(sup, ev.PermissionDecided)[0].decided_by is by


async def test_without_anyone_to_ask_the_timeout_answer_is_given_at_once(tmp_path: Path) -> None:
    client = ScriptedClient([[SessionIdentified(0, "s"), *bash("make", "t1"), finished()]])
    sup = supervisor(tmp_path, client)
    sup.permissions.operator_present = False
    await asyncio.wait_for(sup.run(), 10)
    (answer,) = journaled(sup, ev.PermissionDecided)
    assert (answer.answer, answer.decided_by) == (PermissionAnswer.DENY, AnsweredBy.TIMEOUT)
    assert "headless run without a terminal" in answer.reason


async def test_answers_to_nothing_waiting_or_not_an_answer_are_refused(tmp_path: Path) -> None:
    client = ScriptedClient([[SessionIdentified(0, "s"), *bash("make", "t1"), finished()]])
    sup = supervisor(tmp_path, client)
    waiting = requests_reach(sup, 1)
    run = asyncio.create_task(sup.run())
    await asyncio.wait_for(waiting.wait(), 10)
    with pytest.raises(KeyError, match="no permission request '9' is waiting in 'a'"):
        sup.act(AnswerPermission(session="a", request_id="9", answer=PermissionAnswer.ALLOW_ONCE))
    with pytest.raises(KeyError, match="no permission request is waiting in 'nobody'"):
        sup.act(
            AnswerPermission(session="nobody", request_id="1", answer=PermissionAnswer.ALLOW_ONCE)
        )
    assert len(sup.state.questions()) == 1
    sup.act(AnswerPermission(session="a", request_id="1", answer=PermissionAnswer.ALLOW_ONCE))
    await asyncio.wait_for(run, 10)


async def test_headless_asks_on_the_terminal_and_a_deny_takes_its_reason_inline(
    tmp_path: Path,
) -> None:
    client = ScriptedClient(
        [[SessionIdentified(0, "s"), *bash("make \x1b[2J", "t1"), *bash("ls", "t2"), finished()]]
    )
    sup = supervisor(tmp_path, client)
    answers = iter(["maybe\n", "d not on this machine\n", "o\n"])

    async def read_line() -> str:
        await asyncio.sleep(0)
        return next(answers)

    out = io.StringIO()
    result = await asyncio.wait_for(run_headless(sup, out, read_line=read_line), 10)
    assert result.statuses == {"a": EndStatus.DONE}
    text = out.getvalue()
    assert "--- a asks to use Bash (request #1) ---\n{\n" in text
    assert '"command": "make \\u001b[2J"' in text  # the JSON keeps the escape as text
    assert "not an answer: 'maybe'" in text
    assert [v.allow for v in client.verdicts] == [False, True]
    assert client.verdicts[0].message.endswith("by the operator: not on this machine")


async def test_headless_a_deny_alone_asks_for_the_reason_on_the_next_line(
    tmp_path: Path,
) -> None:
    client = ScriptedClient([[SessionIdentified(0, "s"), *bash("make", "t1"), finished()]])
    sup = supervisor(tmp_path, client)
    answers = iter(["d\n", "use the Makefile target instead\n"])

    async def read_line() -> str:
        await asyncio.sleep(0)
        return next(answers)

    out = io.StringIO()
    await asyncio.wait_for(run_headless(sup, out, read_line=read_line), 10)
    assert "reason for the agent (Enter for none): " in out.getvalue()
    assert journaled(sup, ev.PermissionDecided)[0].reason == "use the Makefile target instead"


async def test_headless_without_a_terminal_answers_at_once_and_says_why(tmp_path: Path) -> None:
    client = ScriptedClient([[SessionIdentified(0, "s"), *bash("make", "t1"), finished()]])
    sup = supervisor(tmp_path, client)
    out = io.StringIO()
    await asyncio.wait_for(run_headless(sup, out), 10)
    (line,) = [line for line in out.getvalue().splitlines() if "permission_decided" in line]
    assert "#1 Bash: deny by timeout: no one to ask: a headless run without a terminal" in line


async def test_only_a_request_that_waits_calls_for_the_operators_attention(
    tmp_path: Path,
) -> None:
    client = ScriptedClient(
        [[SessionIdentified(0, "s"), *bash("make", "t1"), *bash("ls", "t2"), finished()]]
    )
    sup = supervisor(tmp_path, client)
    rung: list[str] = []
    sup.listeners.events.append(Attention(rung.append, bell=True, desktop=Desktop.OFF))
    waiting = requests_reach(sup, 1)
    run = asyncio.create_task(sup.run())
    await asyncio.wait_for(waiting.wait(), 10)
    assert rung == [BEL]
    # Allowed for the session: the second request is answered by that rule, nobody called.
    sup.act(AnswerPermission(session="a", request_id="1", answer=PermissionAnswer.ALLOW_SESSION))
    await asyncio.wait_for(run, 10)
    assert rung == [BEL]
    assert sup.journal is not None
    requested = [
        e
        for e in read_events(sup.journal.events_path).events
        if isinstance(e, ev.PermissionRequested)
    ]
    assert [r.waiting for r in requested] == [True, False]


async def test_allow_for_the_session_holds_across_the_sessions_restart(tmp_path: Path) -> None:
    checkpoint = "<checkpoint>\n## Goal\nG\n## Completed Work\n- ran make\n</checkpoint>"
    hard = UsageObserved(0, CallUsage(cache_read_input_tokens=85_000))
    first = ScriptedClient(
        [
            [SessionIdentified(0, "s1"), *bash("make", "t1"), hard, HANG],
            [finished("saved", "s1")],
            [finished(checkpoint, "s1")],
        ]
    )
    fresh = ScriptedClient(
        [[SessionIdentified(0, "s2"), *bash("make test", "t2"), finished("ok", "s2")]]
    )
    sup = supervisor(tmp_path, first, later=[fresh])
    waiting = requests_reach(sup, 1)
    run = asyncio.create_task(sup.run())
    await asyncio.wait_for(waiting.wait(), 10)
    sup.act(AnswerPermission(session="a", request_id="1", answer=PermissionAnswer.ALLOW_SESSION))
    result = await asyncio.wait_for(run, 10)
    assert result.statuses == {"a": EndStatus.DONE}
    assert sup.state.sessions["a"].restarts, "the session should have restarted"
    assert fresh.verdicts == [PermissionVerdict(True)]
    assert [(d.request_id, d.decided_by) for d in journaled(sup, ev.PermissionDecided)] == [
        ("1", AnsweredBy.OPERATOR),
        ("2", AnsweredBy.SESSION_RULE),
    ]
