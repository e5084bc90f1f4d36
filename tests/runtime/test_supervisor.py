"""The supervisor: many sessions, the approval gate, published snapshots, the journal, stopping."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Literal

import pytest

from mala_tui.config import AgentSettings, ContextSettings, IdleSettings, Settings
from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.observations import Command, Decision, SessionIdentified, UsageObserved
from mala_tui.core.operator_actions import (
    AnswerApproval,
    ForkSession,
    RequireApproval,
    SayToAgent,
    SessionCommand,
)
from mala_tui.core.operator_messages import MessageError
from mala_tui.core.permissions import AnsweredBy
from mala_tui.core.questions import ApprovalQuestion
from mala_tui.core.session_records import SessionSnapshot
from mala_tui.core.usage import CallUsage, UsageSource
from mala_tui.runtime.backends.base import Backend, SessionSpec
from mala_tui.runtime.backends.scripted import HANG, ScriptedClient, finished
from mala_tui.runtime.journal.writer import read_events
from mala_tui.runtime.questions.approvals import ApprovalMode
from mala_tui.runtime.questions.desk import QuestionClosed
from mala_tui.runtime.run.supervisor import Supervisor
from mala_tui.runtime.session.runner import SessionRunner
from mala_tui.ui.headless import describe
from tests.support.backends import PerSession
from tests.support.supervisors import build_supervisor, journal_events, journaled

CHECKPOINT = "<checkpoint>\n## Goal\nG\n## Completed Work\n- Read /ws/a.py\n</checkpoint>"


def settings(
    approval_timeout_seconds: float | None = None,
    approval_timeout_decision: Literal[Decision.APPROVE, Decision.DENY] = Decision.DENY,
) -> Settings:
    return Settings(
        context=ContextSettings(
            context_limit=100_000,
            approval_timeout_seconds=approval_timeout_seconds,
            approval_timeout_decision=approval_timeout_decision,
        ),
        idle=IdleSettings(idle_timeout_seconds=5),
    )


def hard_session(session_id: str) -> list[ScriptedClient]:
    """A session that hits the hard zone, winds down, writes a checkpoint, and on restart finishes."""
    hard = UsageObserved(0, CallUsage(cache_read_input_tokens=85_000))
    old = ScriptedClient(
        [
            [SessionIdentified(0, session_id), hard, HANG],
            [finished("saved", session_id)],
            [finished(CHECKPOINT, session_id)],
        ]
    )
    new = ScriptedClient(
        [[SessionIdentified(0, f"{session_id}-2"), finished("done", f"{session_id}-2")]]
    )
    return [old, new]


def supervisor(tmp_path: Path, backend: Backend, names: list[str], **options: Any) -> Supervisor:
    """This module's runs: journaled, on a 100,000-token window with a 5 s idle timeout."""
    options.setdefault("settings", settings())
    return build_supervisor(backend, names, cwd=tmp_path, journal=tmp_path, **options)


def approvals_reach(sup: Supervisor, count: int) -> asyncio.Event:
    """Set once `count` approvals are pending: the supervisor tells its listeners of each."""
    reached = asyncio.Event()
    sup.listeners.questions.append(lambda pending: reached.set() if len(pending) >= count else None)
    return reached


def every_agent_started(sup: Supervisor) -> asyncio.Event:
    """Set once each session's agent process has started (the runner records it)."""
    started: set[str] = set()
    reached = asyncio.Event()

    def seen(event: ev.Event) -> None:
        if isinstance(event, ev.ProcessStarted):
            started.add(event.session)
            if started >= set(sup.runners):
                reached.set()

    sup.listeners.events.append(seen)
    return reached


async def test_approvals_queue_and_each_answer_reaches_its_session(tmp_path: Path) -> None:
    backend = PerSession(
        {"a": hard_session("sa"), "b": hard_session("sb"), "c": hard_session("sc")}
    )
    sup = supervisor(tmp_path, backend, ["a", "b", "c"], approval_mode=ApprovalMode.ASK)
    seen: list[list[str]] = []
    sup.listeners.questions.append(lambda pending: seen.append([p.session for p in pending]))
    three = approvals_reach(sup, 3)
    run = asyncio.create_task(sup.run())
    await asyncio.wait_for(three.wait(), 10)
    assert {p.session for p in sup.state.questions()} == {"a", "b", "c"}
    assert all(
        isinstance(p, ApprovalQuestion) and p.checkpoint_text.startswith("## Goal\nG")
        for p in sup.state.questions()
    )
    sup.act(AnswerApproval(session="a", decision=Decision.APPROVE))
    sup.act(AnswerApproval(session="b", decision=Decision.DENY))
    sup.act(
        AnswerApproval(
            session="c", decision=Decision.EDIT, edited_text="## Goal\nOnly the edited plan."
        )
    )
    result = await asyncio.wait_for(run, 10)
    assert result.statuses == {"a": EndStatus.DONE, "b": EndStatus.DENIED, "c": EndStatus.DONE}
    assert sup.state.questions() == []
    assert seen[-1] == []
    continuation_c = backend.clients["c"].queries[0]  # its restart's client
    assert "## Goal\nOnly the edited plan." in continuation_c
    decided = journaled(sup, ev.ApprovalDecided)
    assert sorted(d.decision for d in decided) == [Decision.APPROVE, Decision.DENY, Decision.EDIT]
    with pytest.raises(KeyError, match="no approval is pending"):
        sup.act(AnswerApproval(session="a", decision=Decision.APPROVE))


async def test_deny_policy_answers_without_a_person(tmp_path: Path) -> None:
    sup = supervisor(
        tmp_path, PerSession({"a": hard_session("sa")}), ["a"], approval_mode=ApprovalMode.DENY
    )
    result = await asyncio.wait_for(sup.run(), 10)
    assert result.statuses == {"a": EndStatus.DENIED}
    decided = [e for e in sup.state.sessions["a"].log if isinstance(e, ev.ApprovalDecided)]
    assert [(d.decision, d.decided_by) for d in decided] == [(Decision.DENY, "policy")]
    assert sup.state.sessions["a"].checkpoints, "the checkpoint is kept"


async def test_an_approval_timeout_takes_the_configured_answer(tmp_path: Path) -> None:
    sup = supervisor(
        tmp_path,
        PerSession({"a": hard_session("sa")}),
        ["a"],
        approval_mode=ApprovalMode.ASK,
        settings=settings(approval_timeout_seconds=0.1, approval_timeout_decision=Decision.APPROVE),
    )
    result = await asyncio.wait_for(sup.run(), 10)
    assert result.statuses == {"a": EndStatus.DONE}
    decided = [e for e in sup.state.sessions["a"].log if isinstance(e, ev.ApprovalDecided)]
    assert [(d.decision, d.decided_by) for d in decided] == [(Decision.APPROVE, "timeout")]


async def test_an_answer_after_the_timeout_answered_is_refused_saying_so(tmp_path: Path) -> None:
    sup = supervisor(
        tmp_path,
        PerSession({"a": hard_session("sa")}),
        ["a"],
        approval_mode=ApprovalMode.ASK,
        settings=settings(approval_timeout_seconds=0.1, approval_timeout_decision=Decision.APPROVE),
    )
    await asyncio.wait_for(sup.run(), 10)
    with pytest.raises(QuestionClosed) as refused:
        sup.act(AnswerApproval(session="a", decision=Decision.DENY, checkpoint_number=1))
    assert str(refused.value) == (
        "no approval is pending for 'a': checkpoint #1 of a was answered already: "
        "approved by its timeout (no answer within 0.1 s)"
    )
    decided = [e for e in sup.state.sessions["a"].log if isinstance(e, ev.ApprovalDecided)]
    assert len(decided) == 1  # the refused answer changed nothing


async def test_switching_approval_is_recorded_at_once_busy_or_queued(tmp_path: Path) -> None:
    clients = {name: [ScriptedClient([[SessionIdentified(0, f"s{name}"), HANG]])] for name in "ab"}
    sup = supervisor(
        tmp_path,
        PerSession(clients),
        ["a", "b"],
        approval_mode=ApprovalMode.AUTO,
        settings=Settings(
            agent=AgentSettings(max_concurrent=1), idle=IdleSettings(idle_timeout_seconds=30)
        ),
    )
    started, b_started = asyncio.Event(), asyncio.Event()
    sup.listeners.events.append(
        lambda e: started.set() if isinstance(e, ev.ProcessStarted) else None
    )
    sup.listeners.events.append(
        lambda e: b_started.set() if isinstance(e, ev.SessionStarted) and e.session == "b" else None
    )
    run = asyncio.create_task(sup.run())
    await asyncio.wait_for(started.wait(), 10)
    assert sup.queued == ["b"]
    # "a" is mid-turn, "b" waits for a slot: neither reads its inbox now, and yet.
    sup.act(RequireApproval(session=None, required=True))
    assert all(snap.require_approval for snap in sup.snapshots().values())
    sup.act(SessionCommand(session="a", command=Command.STOP))
    await asyncio.wait_for(b_started.wait(), 10)
    (started_b,) = [e for e in sup.state.sessions["b"].log if isinstance(e, ev.SessionStarted)]
    assert started_b.require_approval
    sup.stop_all()
    await asyncio.wait_for(run, 10)
    assert sup.state.sessions["b"].snapshot().require_approval


async def test_each_change_is_published_as_it_happens_and_checkpoints_saved_as_markdown(
    tmp_path: Path,
) -> None:
    sup = supervisor(
        tmp_path, PerSession({"a": hard_session("sa")}), ["a"], approval_mode=ApprovalMode.AUTO
    )
    published: list[dict[str, SessionSnapshot]] = []
    sup.listeners.snapshots.append(published.append)
    await asyncio.wait_for(sup.run(), 10)
    events = journal_events(sup)
    mine = [e for e in events if e.session == "a"]
    # Nothing held back: one snapshot per event, the session as that event left it
    # (the app's bridge is what coalesces them per frame).
    assert [list(changed) for changed in published] == [["a"]] * len(mine)
    phases = [
        changed["a"].phase
        for changed, event in zip(published, mine, strict=True)
        if isinstance(event, ev.PhaseChanged)
    ]
    assert phases == [e.after for e in mine if isinstance(e, ev.PhaseChanged)]
    assert published[-1]["a"] == sup.snapshots()["a"]
    final = sup.snapshots()["a"]
    assert final.status is EndStatus.DONE and final.restarts == 1
    saved = [e for e in events if isinstance(e, ev.CheckpointSaved)]
    assert saved[0].path.endswith("checkpoints/a-1.md")
    assert Path(saved[0].path).read_text().startswith("## Goal\nG")


async def test_stop_all_ends_every_session_and_disconnects(tmp_path: Path) -> None:
    clients = {name: [ScriptedClient([[SessionIdentified(0, f"s{name}"), HANG]])] for name in "ab"}
    sup = supervisor(
        tmp_path,
        PerSession(clients),
        ["a", "b"],
        settings=Settings(idle=IdleSettings(idle_timeout_seconds=30)),
    )
    started = every_agent_started(sup)
    run = asyncio.create_task(sup.run())
    await asyncio.wait_for(started.wait(), 10)
    sup.stop_all()
    result = await asyncio.wait_for(run, 10)
    assert result.statuses == {"a": EndStatus.STOPPED, "b": EndStatus.STOPPED}
    assert all(c.disconnected for found in clients.values() for c in found)
    ended = journal_events(sup)
    assert isinstance(ended[-1], ev.RunEnded) and not ended[-1].ok
    # A message to a session that has ended is refused, not lost on the way.
    with pytest.raises(MessageError, match="has ended"):
        sup.act(SayToAgent(session="a", text="Are you there?"))


async def test_cancelling_the_run_stops_every_session(tmp_path: Path) -> None:
    clients = {name: [ScriptedClient([[SessionIdentified(0, f"s{name}"), HANG]])] for name in "ab"}
    sup = supervisor(
        tmp_path,
        PerSession(clients),
        ["a", "b"],
        settings=Settings(idle=IdleSettings(idle_timeout_seconds=30)),
    )
    started = every_agent_started(sup)
    run = asyncio.create_task(sup.run())
    await asyncio.wait_for(started.wait(), 10)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert all(c.disconnected for found in clients.values() for c in found)
    assert isinstance(journal_events(sup)[-1], ev.RunEnded)


def test_two_sessions_cannot_share_a_name(tmp_path: Path) -> None:
    sup = supervisor(tmp_path, PerSession({}), ["a"])
    with pytest.raises(ValueError, match="two sessions are named 'a'"):
        sup.add_session(SessionSpec(name="a", task="t", cwd=tmp_path))


async def test_headless_runs_ask_on_the_terminal_and_print_the_checkpoint_literally(
    tmp_path: Path,
) -> None:
    import io

    from mala_tui.ui.headless import run_headless

    backend = PerSession({"a": hard_session("sa")})
    sup = supervisor(tmp_path, backend, ["a"], approval_mode=ApprovalMode.ASK)
    answers = iter(["maybe\n", "a\n"])

    async def read_line() -> str:
        await asyncio.sleep(0)
        return next(answers)

    out = io.StringIO()
    result = await asyncio.wait_for(run_headless(sup, out, read_line=read_line), 10)
    assert result.statuses == {"a": EndStatus.DONE}
    text = out.getvalue()
    assert (
        "--- checkpoint 1 of a (hard threshold: 85000 of 100000 tokens (85%)) ---\n## Goal\nG"
        in text
    )
    assert "not an answer: 'maybe'" in text
    decided_line = describe(decided_by_operator())
    assert decided_line is not None and decided_line in text


def test_a_headless_ask_without_a_terminal_is_refused_up_front(tmp_path: Path) -> None:
    from mala_tui.runtime.run.launch import HeadlessApprovalError, check_headless_approvals

    sup = supervisor(tmp_path, PerSession({}), ["a"], approval_mode=ApprovalMode.ASK)
    with pytest.raises(HeadlessApprovalError, match="no terminal to ask on: use --approve auto"):
        check_headless_approvals(sup, interactive=False)
    check_headless_approvals(sup, interactive=True)
    timed = supervisor(
        tmp_path / "t",
        PerSession({}),
        ["a"],
        approval_mode=ApprovalMode.ASK,
        settings=settings(approval_timeout_seconds=60),
    )
    check_headless_approvals(timed, interactive=False)


def decided_by_operator() -> ev.ApprovalDecided:
    return ev.ApprovalDecided(
        at=0, session="a", decision=Decision.APPROVE, decided_by=AnsweredBy.OPERATOR
    )


def test_headless_lines_use_the_one_describer_and_make_agent_text_visible() -> None:
    assert describe(decided_by_operator()) == f"{'approval_decided':<20} approve by operator"
    ended = ev.SessionEnded(
        at=0, session="a", status=EndStatus.FAILED, reason="ok\x1b[2J\x07 [b]x[/]\r\nnext"
    )
    assert describe(ended) == f"{'session_ended':<20} failed: ok\u241b[2J\u2407 [b]x[/] \u23ce next"
    usage = ev.UsageRecorded(at=0, session="a", tokens=1, window=10, source=UsageSource.PER_CALL)
    assert describe(usage) is None, "usage comes too often for a line each"


async def test_a_fork_resumes_its_parents_agent_session_and_is_refused_without_one(
    tmp_path: Path,
) -> None:
    backend = PerSession(
        {
            "a": [ScriptedClient([[SessionIdentified(0, "sa"), finished("done", "sa")]])],
            "a-fork1": [ScriptedClient([[SessionIdentified(0, "sf"), finished("forked", "sf")]])],
        }
    )
    sup = supervisor(tmp_path, backend, ["a"])
    with pytest.raises(ValueError, match=r"^a has no agent session yet: there is nothing to fork$"):
        sup.act(ForkSession(parent="a", name="a-fork1", instruction="Do it another way."))
    with pytest.raises(ValueError, match=r"^no session is named 'nope'$"):
        sup.act(ForkSession(parent="nope", name="a-fork1", instruction="Do it another way."))
    refused: list[str] = []

    def on_end(event: ev.Event) -> None:
        if event.session == "a" and isinstance(event, ev.SessionEnded):
            for name, text in (("a", "x"), ("a-fork1", " ")):
                try:
                    sup.act(ForkSession(parent="a", name=name, instruction=text))
                except ValueError as exc:
                    refused.append(str(exc))
            sup.act(ForkSession(parent="a", name="a-fork1", instruction="Do it another way."))

    sup.listeners.events.append(on_end)
    result = await asyncio.wait_for(sup.run(), 10)
    assert result.statuses == {"a": EndStatus.DONE, "a-fork1": EndStatus.DONE}
    assert refused == ["a session is already named 'a'", "the instruction: the message is empty"]
    # The fork's first process resumed the parent's agent session (the backend forks it).
    assert backend.by_name["a-fork1"].created == [("a-fork1", "sa")]
    assert sup.runners["a-fork1"].spec.fork_of == "sa"
    (query,) = backend.by_name["a-fork1"].clients[0].queries
    assert "Do it another way." in query
    with pytest.raises(ValueError, match="the run is not running"):
        sup.act(ForkSession(parent="a", name="a-fork2", instruction="Again."))


async def test_a_session_taken_over_by_hand_is_handed_back_and_goes_on(tmp_path: Path) -> None:
    import json

    from mala_tui.core.phases import Phase
    from mala_tui.runtime.backends.scripted import ScriptedBackend

    # The scripted agent names its session as the interrupted turn ends: "sess-1".
    transcript = tmp_path / "sess-1.jsonl"
    first = ScriptedClient([[SessionIdentified(0, "sess-1"), HANG]])
    after = ScriptedClient([[finished("carried on")]])
    backend = ScriptedBackend([first, after], transcripts={"sess-1": transcript})
    sup = supervisor(tmp_path, backend, ["a"])
    run = asyncio.create_task(sup.run())
    for _ in range(200):
        if sup.runners["a"].manager.session_id == "sess-1":
            break
        await asyncio.sleep(0.01)
    how = await asyncio.wait_for(sup.take_over("a"), 10)
    # Its process is gone before the person gets it, and nothing is sent meanwhile.
    assert how.session_id == "sess-1" and list(how.argv[1:3]) == ["--resume", "sess-1"]
    runner = sup.runners["a"]
    assert isinstance(runner, SessionRunner) and not runner.process_open
    assert sup.runners["a"].manager.phase is Phase.PAUSED
    assert sup.state.sessions["a"].snapshot().by_hand
    with pytest.raises(ValueError, match="is open by hand already"):
        await sup.take_over("a")
    # What the person did in the interactive CLI, as its transcript holds it.
    person = [
        {"type": "user", "message": {"role": "user", "content": "Also say hello."}},
        {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "Hello."}],
                "usage": {
                    "input_tokens": 3,
                    "cache_creation_input_tokens": 400,
                    "cache_read_input_tokens": 25_000,
                    "output_tokens": 20,
                },
            },
        },
    ]
    transcript.write_text("".join(json.dumps(line) + "\n" for line in person))
    await sup.hand_back("a", go_on=True)
    result = await asyncio.wait_for(run, 10)
    assert result.statuses == {"a": EndStatus.DONE}
    assert backend.created == [("a", None), ("a", "sess-1")]  # resumed by its id once handed back
    events = read_events(sup.journal.events_path).events if sup.journal else []
    (taken,) = [e for e in events if isinstance(e, ev.TakenOver)]
    (back,) = [e for e in events if isinstance(e, ev.HandedBack)]
    assert (back.prompts, back.tokens, back.went_on) == (1, 25_423, True)
    by_hand = [e for e in events if isinstance(e, ev.UsageRecorded) and "by hand" in e.notes]
    assert [e.tokens for e in by_hand] == [25_423]
    assert events.index(taken) < events.index(back)
