"""Sessions on hosts placed elsewhere (runtime.cluster.driver_runner, runtime.cluster.session_host).

The hosts here run in this process (tests/runtime/host_engine.py), on the scripted
backend: everything between the driver and the host is the real code (batches, the
questions relayed to the driver's desk, commands, a host lost and the restart that
follows). The Ray engine runs the same code on a real cluster in tests/cluster.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mala_tui.config import ContextSettings, IdleSettings, Settings
from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.observations import (
    Command,
    Decision,
    MessageObserved,
    SessionIdentified,
    UsageObserved,
)
from mala_tui.core.operator_actions import (
    AnswerApproval,
    AnswerPermission,
    SayToAgent,
    SessionCommand,
    action_json,
)
from mala_tui.core.permissions import PermissionAnswer
from mala_tui.core.phases import Cause, Phase
from mala_tui.core.questions import ApprovalQuestion, PermissionQuestion
from mala_tui.core.transcript import Message, Role, TextBlock, ToolCall, ToolResult
from mala_tui.core.usage import CallUsage
from mala_tui.prompt_files import load_prompts
from mala_tui.runtime.backends.base import PermissionAsk, SessionSpec
from mala_tui.runtime.backends.scripted import (
    HANG,
    AskPermission,
    ScriptedBackend,
    ScriptedClient,
    finished,
)
from mala_tui.runtime.journal.writer import RunJournal, read_events
from mala_tui.runtime.questions.approvals import ApprovalMode
from mala_tui.runtime.run.runners import HostPlan
from mala_tui.runtime.run.supervisor import Supervisor
from tests.runtime.host_engine import InProcessEngine
from tests.support.backends import NoLocalBackend, PerSession
from tests.support.supervisors import build_supervisor

CHECKPOINT = "<checkpoint>\n## Goal\nG\n## Completed Work\n- Read /ws/a.py\n</checkpoint>"
OPEN: list[RunJournal] = []


@pytest.fixture(autouse=True)
def close_journals() -> Iterator[None]:
    yield
    while OPEN:
        OPEN.pop().close()


def read(tool_id: str, path: str) -> list[MessageObserved]:
    call = MessageObserved(
        0,
        Message(
            Role.ASSISTANT,
            (TextBlock(f"Reading {path}."), ToolCall(tool_id, "Read", {"file_path": path})),
        ),
    )
    return [call, MessageObserved(0, Message(Role.USER, (ToolResult(tool_id, "x = 1\n"),)))]


def usage(tokens: int) -> UsageObserved:
    return UsageObserved(0, CallUsage(input_tokens=3, cache_read_input_tokens=tokens))


def supervisor(
    tmp_path: Path,
    backend: PerSession,
    names: list[str],
    engine: InProcessEngine,
    **context: Any,
) -> Supervisor:
    """Sessions on hosts of the in-process engine, each host's backend `backend`; the
    driver itself has no backend (None: nothing runs in its process)."""
    approval = context.pop("approval_mode", ApprovalMode.AUTO)
    settings = Settings(
        context=ContextSettings(context_limit=100_000, **context),
        idle=IdleSettings(idle_timeout_seconds=30),
    )
    return build_supervisor(
        NoLocalBackend(),
        names,
        cwd=tmp_path,
        journal=tmp_path,
        settings=settings,
        approval_mode=approval,
        engine=engine,
        host_backend=lambda folder: backend,
    )


def journaled(sup: Supervisor) -> list[ev.Event]:
    assert sup.journal is not None
    return read_events(sup.journal.events_path).events


def of(events: list[ev.Event], kind: type, session: str | None = None) -> list[Any]:
    return [e for e in events if isinstance(e, kind) and (session is None or e.session == session)]


async def until(sup: Supervisor, test: Callable[[ev.Event], bool]) -> None:
    """Wait (bounded) until `test(event)` holds for an event recorded from now on."""
    reached = asyncio.Event()
    sup.listeners.events.append(lambda event: reached.set() if test(event) else None)
    await asyncio.wait_for(reached.wait(), 10)


async def test_sessions_on_hosts_are_journaled_by_the_driver_as_local_ones_are(
    tmp_path: Path,
) -> None:
    backend = PerSession(
        {
            name: [
                ScriptedClient(
                    [
                        [
                            SessionIdentified(0, f"s-{name}"),
                            usage(9_000),
                            *read("t1", "/ws/a.py"),
                            finished("Done.", f"s-{name}"),
                        ]
                    ]
                )
            ]
            for name in ("a", "b")
        }
    )
    engine = InProcessEngine()
    sup = supervisor(tmp_path, backend, ["a", "b"], engine)
    result = await asyncio.wait_for(sup.run(), 20)
    assert result.statuses == {"a": EndStatus.DONE, "b": EndStatus.DONE}
    events = journaled(sup)
    for name in ("a", "b"):
        kinds = [type(e).__name__ for e in events if e.session == name]
        assert kinds[0] == "HostPlaced" and kinds[1] == "SessionStarted"
        assert kinds.count("SessionEnded") == 1
        assert "UsageRecorded" in kinds and kinds.count("MessageRecorded") >= 3
    assert all(link.released for link in engine.links), "each host let go once journaled"
    # Everything a host sent reached the journal, once, in order: positions 1..n.
    for link in engine.links:
        assert (
            link.host.sent_up_to == len([e for e in events if e.session == link.host.spec.name]) - 1
        )
    assert sup.state.sessions["a"].host == "127.0.0.1"


async def test_commands_messages_and_approvals_go_to_the_host_and_back(tmp_path: Path) -> None:
    hard = usage(85_000)
    old = ScriptedClient(
        [
            [SessionIdentified(0, "sa"), *read("t1", "/ws/a.py"), hard, HANG],
            [finished("saved", "sa")],
            [finished(CHECKPOINT, "sa")],
        ]
    )
    new = ScriptedClient([[SessionIdentified(0, "sa-2"), finished("done", "sa-2")]])
    engine = InProcessEngine()
    sup = supervisor(
        tmp_path, PerSession({"a": [old, new]}), ["a"], engine, approval_mode=ApprovalMode.ASK
    )
    run = asyncio.create_task(sup.run())
    await until(sup, lambda e: isinstance(e, ev.ApprovalRequested))
    await asyncio.sleep(0.3)  # the question reaches the driver's desk with its batch
    (question,) = sup.state.questions()
    assert question.session == "a"
    sup.act(AnswerApproval(session="a", decision=Decision.APPROVE))
    with pytest.raises(KeyError, match="answered already: approved by the operator"):
        sup.act(AnswerApproval(session="a", decision=Decision.DENY))
    result = await asyncio.wait_for(run, 20)
    assert result.statuses == {"a": EndStatus.DONE}
    events = journaled(sup)
    (decided,) = of(events, ev.ApprovalDecided)
    assert decided.decided_by == "operator"
    assert [r.trigger for r in of(events, ev.Restarted)] == ["hard_threshold"]


async def test_a_permission_request_is_answered_at_the_drivers_desk(tmp_path: Path) -> None:
    ask = AskPermission(PermissionAsk("t9", "Bash", {"command": "make deploy"}))
    call = MessageObserved(
        0, Message(Role.ASSISTANT, (ToolCall("t9", "Bash", {"command": "make deploy"}),))
    )
    result_item = MessageObserved(0, Message(Role.USER, (ToolResult("t9", "deployed"),)))
    client = ScriptedClient(
        [[SessionIdentified(0, "sa"), call, ask, result_item, finished("ok", "sa")]]
    )
    engine = InProcessEngine()
    sup = supervisor(tmp_path, PerSession({"a": [client]}), ["a"], engine)
    run = asyncio.create_task(sup.run())
    await until(sup, lambda e: isinstance(e, ev.PermissionRequested))
    (question,) = sup.state.questions()
    assert isinstance(question, PermissionQuestion)
    sup.act(
        AnswerPermission(
            session="a",
            request_id=question.request_id,
            answer=PermissionAnswer.DENY,
            reason="not today",
        )
    )
    result = await asyncio.wait_for(run, 20)
    assert result.statuses == {"a": EndStatus.DONE}
    assert [v.allow for v in client.verdicts] == [False]
    assert client.verdicts[0].message.endswith("denied by the operator: not today")


async def test_a_stop_from_the_operator_reaches_a_busy_host(tmp_path: Path) -> None:
    client = ScriptedClient([[SessionIdentified(0, "sa"), usage(9_000), HANG]])
    engine = InProcessEngine()
    sup = supervisor(tmp_path, PerSession({"a": [client]}), ["a"], engine)
    run = asyncio.create_task(sup.run())
    await until(sup, lambda e: isinstance(e, ev.UsageRecorded))
    sup.act(SayToAgent(session="a", text="look at b.py too"))
    sup.act(SessionCommand(session="a", command=Command.STOP))
    result = await asyncio.wait_for(run, 20)
    assert result.statuses == {"a": EndStatus.STOPPED}
    assert of(journaled(sup), ev.MessageQueued)[0].text == "look at b.py too"


def working_then_hang(session_id: str) -> ScriptedClient:
    return ScriptedClient(
        [
            [
                SessionIdentified(0, session_id),
                usage(9_000),
                *read("t1", "/ws/a.py"),
                *read("t2", "/ws/b.py"),
                HANG,
            ]
        ]
    )


async def test_a_lost_host_restarts_elsewhere_from_a_checkpoint_built_from_what_was_received(
    tmp_path: Path,
) -> None:
    again = ScriptedClient([[SessionIdentified(0, "sa-2"), finished("done", "sa-2")]])
    engine = InProcessEngine()
    sup = supervisor(tmp_path, PerSession({"a": [working_then_hang("sa"), again]}), ["a"], engine)
    run = asyncio.create_task(sup.run())
    await until(sup, lambda e: isinstance(e, ev.MessageRecorded) and "b.py" in e.excerpt)
    await asyncio.sleep(0.3)  # the transcript delta of that step reaches the driver
    first = engine.links[0]
    await first.lose()
    result = await asyncio.wait_for(run, 20)
    assert result.statuses == {"a": EndStatus.DONE}
    events = journaled(sup)
    (lost,) = of(events, ev.HostLost)
    assert lost.restart and lost.reason == "its node died" and lost.node == "node-1"
    (saved,) = of(events, ev.CheckpointSaved)
    assert saved.origin == "harness" and saved.number == 1
    assert "Read /ws/a.py" in saved.text and "Read /ws/b.py" in saved.text
    (restart,) = of(events, ev.Restarted)
    assert restart.trigger == Cause.NODE_LOST.value == "node_lost"
    assert restart.checkpoint_number == 1 and restart.continuation == 1
    assert [p.attempt for p in of(events, ev.HostPlaced)] == [1, 2]
    # Never twice at once: the first host was gone before the second was placed.
    assert events.index(lost) < events.index(of(events, ev.HostPlaced)[1])
    assert first.host.end is not None and engine.links[1].host.end is not None
    # The events received before the loss stay; the second host's follow them.
    kinds = [type(e).__name__ for e in events]
    assert kinds.count("SessionStarted") == 2 and kinds.count("SessionEnded") == 1
    assert "Read /ws/b.py" in again.queries[0], "the fresh session starts from that checkpoint"
    card = sup.state.sessions["a"].snapshot()
    assert card.hosts_lost == 1 and card.host_lost == "its node died"


async def test_a_lost_host_asks_for_approval_first_when_approval_is_on(tmp_path: Path) -> None:
    again = ScriptedClient([[SessionIdentified(0, "sa-2"), finished("done", "sa-2")]])
    engine = InProcessEngine()
    sup = supervisor(
        tmp_path,
        PerSession({"a": [working_then_hang("sa"), again]}),
        ["a"],
        engine,
        approval_mode=ApprovalMode.ASK,
    )
    run = asyncio.create_task(sup.run())
    await until(sup, lambda e: isinstance(e, ev.MessageRecorded) and "b.py" in e.excerpt)
    await engine.links[0].lose()
    await until(sup, lambda e: isinstance(e, ev.ApprovalRequested))
    await asyncio.sleep(0.3)
    (question,) = sup.state.questions()
    assert isinstance(question, ApprovalQuestion)
    assert "was lost" in question.reason
    assert sup.state.sessions["a"].phase is Phase.AWAITING_APPROVAL
    sup.act(AnswerApproval(session="a", decision=Decision.APPROVE))
    result = await asyncio.wait_for(run, 20)
    assert result.statuses == {"a": EndStatus.DONE}
    (restart,) = of(journaled(sup), ev.Restarted)
    assert restart.trigger == "node_lost" and restart.approved_by == "operator"


async def test_the_latest_checkpoint_is_used_when_nothing_was_done_since(tmp_path: Path) -> None:
    # A checkpoint written, its restart waiting for a person, when the host goes.
    old = ScriptedClient(
        [
            [SessionIdentified(0, "sa"), *read("t1", "/ws/a.py"), usage(85_000), HANG],
            [finished("saved", "sa")],
            [finished(CHECKPOINT, "sa")],
        ]
    )
    again = ScriptedClient([[SessionIdentified(0, "sa-2"), finished("done", "sa-2")]])
    engine = InProcessEngine()
    sup = supervisor(
        tmp_path, PerSession({"a": [old, again]}), ["a"], engine, approval_mode=ApprovalMode.ASK
    )
    run = asyncio.create_task(sup.run())
    await until(sup, lambda e: isinstance(e, ev.ApprovalRequested))
    await asyncio.sleep(0.3)
    await engine.links[0].lose()
    await until(sup, lambda e: isinstance(e, ev.ApprovalRequested) and "was lost" in e.reason)
    await asyncio.sleep(0.3)
    (question,) = sup.state.questions()
    assert isinstance(question, ApprovalQuestion)
    sup.act(
        AnswerApproval(
            session="a", decision=Decision.APPROVE, checkpoint_number=question.checkpoint_number
        )
    )
    result = await asyncio.wait_for(run, 20)
    assert result.statuses == {"a": EndStatus.DONE}
    events = journaled(sup)
    assert [c.origin for c in of(events, ev.CheckpointSaved)] == ["tagged"]
    (restart,) = of(events, ev.Restarted)
    assert restart.checkpoint_number == 1 and restart.trigger == "node_lost"


async def test_past_max_restarts_a_lost_host_ends_the_session_failed(tmp_path: Path) -> None:
    engine = InProcessEngine()
    sup = supervisor(
        tmp_path, PerSession({"a": [working_then_hang("sa")]}), ["a"], engine, max_restarts=0
    )
    run = asyncio.create_task(sup.run())
    await until(sup, lambda e: isinstance(e, ev.UsageRecorded))
    await engine.links[0].lose()
    result = await asyncio.wait_for(run, 20)
    assert result.statuses == {"a": EndStatus.FAILED}
    assert "was lost" in result.reasons["a"] and "max restarts (0) reached" in result.reasons["a"]
    (lost,) = of(journaled(sup), ev.HostLost)
    assert not lost.restart
    assert len(engine.links) == 1


async def test_a_new_driver_takes_a_live_host_up_again_missing_nothing_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mala_tui.runtime.cluster import driver_runner as remote_runner

    monkeypatch.setattr(remote_runner, "STOP_WAIT_SECONDS", 0.2)
    client = ScriptedClient(
        [
            [
                SessionIdentified(0, "sa"),
                usage(9_000),
                *read("t1", "/ws/a.py"),
                *read("t2", "/ws/b.py"),
                HANG,
            ]
        ]
    )
    engine = InProcessEngine()
    first = supervisor(tmp_path, PerSession({"a": [client]}), ["a"], engine)
    running = asyncio.create_task(first.run())
    await until(first, lambda e: isinstance(e, ev.MessageRecorded) and "b.py" in e.excerpt)
    # The driver is killed: it reads no more, says nothing, journals nothing more.
    (link,) = engine.links
    link.frozen = True
    assert first.journal is not None
    first.journal.close()
    host = link.host
    # The host goes on meanwhile.
    host.apply(action_json(SayToAgent(session="a", text="said while no driver was there")))
    before = read_events(first.journal.events_path).events
    # A new driver on the same journal (what `mala-tui resume` does for a Ray run).
    journal = RunJournal.reopen(first.journal.directory)
    OPEN.append(journal)
    # As `resume` gives it: the session's history, then the run picked up again.
    back = ev.RunResumed(
        at=time.time(), run_id="run-1", gap_seconds=0.5, resumed={"a": "task"}, pid=1
    )
    second = Supervisor(
        settings=Settings(context=ContextSettings(context_limit=100_000)),
        backend=NoLocalBackend(),
        prompts=load_prompts(),
        journal=journal,
        approval_mode=ApprovalMode.AUTO,
        engine=engine,
        host_backend=lambda folder: NoLocalBackend(),
        hosts=HostPlan(
            history={"a": [*(e for e in before if e.session == "a"), back]},
            reattach=frozenset({"a"}),
        ),
    )
    runner = second.add_session(SessionSpec(name="a", task="task a", cwd=tmp_path))
    assert isinstance(runner, remote_runner.RemoteRunner)
    resumed = asyncio.create_task(second.run())
    await until(second, lambda e: isinstance(e, ev.MessageQueued))
    second.act(SessionCommand(session="a", command=Command.STOP))
    result = await asyncio.wait_for(resumed, 20)
    assert result.statuses == {"a": EndStatus.STOPPED}
    events = read_events(journal.events_path).events
    mine = [e for e in events if e.session == "a"]
    placed = [e for e in mine if isinstance(e, ev.HostPlaced)]
    assert [(p.attempt, p.reattached) for p in placed] == [(1, False), (1, True)]
    assert len(engine.of("a")) == 1, "never a second host"
    host_made = [e for e in mine if not isinstance(e, ev.HostPlaced)]
    assert len(host_made) == host.sent_up_to, "every event the host made, once"
    # (Each line has the run's own number: compared without it.)
    assert len({ev.event_json(e.model_copy(update={"seq": 0})) for e in host_made}) == len(
        host_made
    )
    assert [e.seq for e in events] == list(range(1, len(events) + 1)), "one numbering: the run's"
    (queued,) = [e for e in mine if isinstance(e, ev.MessageQueued)]
    assert queued.text == "said while no driver was there"
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running


async def test_a_session_wound_down_while_no_driver_was_there_goes_on_when_one_is_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mala_tui.config import ClusterSettings
    from mala_tui.runtime.cluster import driver_runner as remote_runner

    monkeypatch.setattr(remote_runner, "STOP_WAIT_SECONDS", 0.2)
    old = ScriptedClient(
        [
            [SessionIdentified(0, "sa"), usage(9_000), *read("t1", "/ws/a.py"), HANG],
            [finished("wrapped up", "sa")],
            [finished(CHECKPOINT, "sa")],
        ]
    )
    again = ScriptedClient([[SessionIdentified(0, "sa-2"), finished("done", "sa-2")]])
    backend = PerSession({"a": [old, again]})
    engine = InProcessEngine()
    settings = Settings(
        context=ContextSettings(context_limit=100_000),
        cluster=ClusterSettings(orphan_minutes=0.005),  # 0.3 s
    )
    journal = RunJournal.create(tmp_path, "run-1", {"mode": "test"})
    OPEN.append(journal)
    first = Supervisor(
        settings=settings,
        backend=NoLocalBackend(),
        prompts=load_prompts(),
        journal=journal,
        approval_mode=ApprovalMode.AUTO,
        engine=engine,
        host_backend=lambda folder: backend,
    )
    first.add_session(SessionSpec(name="a", task="task a", cwd=tmp_path))
    running = asyncio.create_task(first.run())
    await until(first, lambda e: isinstance(e, ev.MessageRecorded) and e.kind == "tool_result")
    (link,) = engine.links
    link.frozen = True  # the driver is gone
    journal.close()
    host = link.host
    for _ in range(100):
        if host.end is not None:
            break
        await asyncio.sleep(0.1)
    assert host.end is not None and host.end.reason.startswith("its driver has been gone")
    before = read_events(journal.events_path).events
    again_journal = RunJournal.reopen(journal.directory)
    OPEN.append(again_journal)
    second = Supervisor(
        settings=settings,
        backend=NoLocalBackend(),
        prompts=load_prompts(),
        journal=again_journal,
        approval_mode=ApprovalMode.AUTO,
        engine=engine,
        host_backend=lambda folder: backend,
        hosts=HostPlan(
            history={"a": [e for e in before if e.session == "a"]}, reattach=frozenset({"a"})
        ),
    )
    runner = second.add_session(SessionSpec(name="a", task="task a", cwd=tmp_path))
    assert isinstance(runner, remote_runner.RemoteRunner)
    result = await asyncio.wait_for(second.run(), 20)
    assert result.statuses == {"a": EndStatus.DONE}
    events = [e for e in read_events(again_journal.events_path).events if e.session == "a"]
    placed = [(e.attempt, e.reattached) for e in events if isinstance(e, ev.HostPlaced)]
    assert placed == [(1, False), (1, True), (2, False)]
    (saved,) = [e for e in events if isinstance(e, ev.CheckpointSaved)]
    assert "Read /ws/a.py" in saved.text
    (restart,) = [e for e in events if isinstance(e, ev.Restarted)]
    assert restart.checkpoint_number == saved.number
    assert "Read /ws/a.py" in again.queries[0]
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running


async def test_a_host_works_in_its_own_mirror_and_its_successor_restores_the_pushed_snapshot(
    tmp_path: Path,
) -> None:
    """The driver makes no worktree; each host makes its own from a mirror in its own data
    folder, pushes each turn's snapshot to the repository, and the branch at the end; after
    the host and its disk are gone the next host starts from the snapshot, and the driver's
    worktree, made when the session ends, holds the agent's commit and its edits."""
    from mala_tui.core.observations import TurnEnded
    from mala_tui.runtime.cluster.driver_runner import RemoteRunner
    from mala_tui.runtime.cluster.mirror import materialize, mirror_path, plan, workspace
    from mala_tui.runtime.cluster.session_host import data_folder, host_folder
    from mala_tui.runtime.git.wip import wip_ref
    from mala_tui.runtime.git.worktree_journal import WorktreeTracker
    from tests.runtime.test_worktree import git, make_repo

    repo = tmp_path / "repo"
    base = make_repo(repo)
    worktree = plan(repo / "src", "run-1", "a", tmp_path / "driver" / "worktrees")
    assert not worktree.path.exists(), "nothing made on the driver yet"
    api_error = TurnEnded(
        0,
        subtype="error_during_execution",
        is_error=True,
        terminal_reason="api_error",
        result_text="",
        summed_usage=None,
        context_window=None,
        session_id="sa",
        api_error_status=500,
    )
    # Turn one ends (an API error, retried at once: a new process), the retry works on when
    # the host goes; the host after it finishes.
    first = ScriptedClient(
        [[SessionIdentified(0, "sa"), usage(9_000), *read("t1", "/ws/a.py"), api_error]]
    )
    retried = ScriptedClient([[SessionIdentified(0, "sa"), HANG]])
    again = ScriptedClient([[SessionIdentified(0, "sa-2"), finished("done", "sa-2")]])
    shared = ScriptedBackend([first, retried, again])
    folders: list[Path] = []
    found: list[str] = []

    class Agent:
        """The scripted backend, and what its agent does to the files where it is started."""

        def __getattr__(self, name: str) -> Any:
            return getattr(shared, name)

        def create(
            self, spec: SessionSpec, *, resume: str | None, clock: Callable[[], float]
        ) -> ScriptedClient:
            folders.append(spec.cwd)
            notes = spec.cwd / "notes.txt"
            found.append(notes.read_text() if notes.exists() else "")
            if len(folders) == 1:  # the first agent commits once, and leaves an edit
                (spec.cwd / "feature.py").write_text("FEATURE = True\n")
                git(spec.cwd, "add", "feature.py")
                git(spec.cwd, "commit", "-q", "-m", "feature")
                notes.write_text("draft 1\n")
            return shared.create(spec, resume=resume, clock=clock)

    engine = InProcessEngine()
    journal = RunJournal.create(tmp_path / "data", "run-1", {"mode": "test"})
    OPEN.append(journal)
    sup = Supervisor(
        settings=Settings(context=ContextSettings(context_limit=100_000)),
        backend=NoLocalBackend(),
        prompts=load_prompts(),
        journal=journal,
        approval_mode=ApprovalMode.AUTO,
        engine=engine,
        host_backend=lambda folder: Agent(),
        hosts=HostPlan(workspace_for=lambda name: workspace(worktree, "run-1")),
    )
    runner = sup.add_session(SessionSpec(name="a", task="task a", cwd=worktree.cwd))
    assert isinstance(runner, RemoteRunner)
    sup.listeners.events.append(
        WorktreeTracker(
            {"a": worktree},
            sup.record,
            prepare=lambda w: materialize(w, wip_ref("run-1", w.session)),
        )
    )
    run = asyncio.create_task(sup.run())
    await until(sup, lambda e: isinstance(e, ev.WorktreeSnapshot))
    host_tree = host_folder("run-1") / "worktrees" / "a"
    assert folders[0] == host_tree / "src", "the agent works in the host's own worktree"
    mirror = mirror_path(data_folder(), str(worktree.repository))
    assert (mirror / "HEAD").is_file()
    kept = git(repo, "rev-parse", "refs/mala/wip/run-1/a").strip()
    assert git(repo, "show", f"{kept}:src/notes.txt") == "draft 1\n", "pushed to the source"
    agent_commit = git(repo, "rev-parse", f"{kept}^").strip()
    assert git(repo, "log", "-1", "--format=%s", agent_commit).strip() == "feature"
    assert git(repo, "rev-parse", f"{agent_commit}^").strip() == base
    missing = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", worktree.branch], cwd=repo, check=False
    )
    assert missing.returncode != 0, "the branch goes to the source when the session ends"
    # The host goes, and its disk with it: its worktree and its mirror.
    await engine.links[0].lose()
    shutil.rmtree(host_tree)
    shutil.rmtree(mirror)
    result = await asyncio.wait_for(run, 20)
    assert result.statuses == {"a": EndStatus.DONE}
    assert found[-1] == "draft 1\n", "the next host started from the pushed snapshot"
    events = read_events(journal.events_path).events
    snapshots = [e for e in events if isinstance(e, ev.WorktreeSnapshot)]
    assert [s.restored for s in snapshots][:2] == [False, True]
    assert snapshots[1].commit == kept
    ended = [i for i, e in enumerate(events) if isinstance(e, ev.SessionEnded)]
    assert max(i for i, e in enumerate(events) if isinstance(e, ev.WorktreeSnapshot)) < ended[0]
    # Landing works on the driver as in a local run: the branch and the edits are there.
    assert git(repo, "rev-parse", worktree.branch).strip() == agent_commit
    assert (worktree.cwd / "notes.txt").read_text() == "draft 1\n"
    assert git(worktree.path, "rev-parse", "HEAD").strip() == agent_commit
    assert "?? src/notes.txt" in git(worktree.path, "status", "--porcelain"), "an edit again"
    started = [e for e in events if isinstance(e, ev.SessionStarted)]
    assert {e.cwd for e in started} == {str(worktree.cwd)}, "the driver's folder, for resume"
    (changed,) = [e for e in events if isinstance(e, ev.WorktreeChanged)]
    assert changed.error == ""
    assert {f.path for f in changed.files} == {"src/feature.py", "src/notes.txt"}
    assert changed.commits_ahead == 1


async def test_a_question_waiting_on_a_live_host_is_answered_from_the_new_driver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mala_tui.runtime.cluster import driver_runner as remote_runner

    monkeypatch.setattr(remote_runner, "STOP_WAIT_SECONDS", 0.2)
    old = ScriptedClient(
        [
            [SessionIdentified(0, "sa"), *read("t1", "/ws/a.py"), usage(85_000), HANG],
            [finished("saved", "sa")],
            [finished(CHECKPOINT, "sa")],
        ]
    )
    new = ScriptedClient([[SessionIdentified(0, "sa-2"), finished("done", "sa-2")]])
    engine = InProcessEngine()
    first = supervisor(
        tmp_path, PerSession({"a": [old, new]}), ["a"], engine, approval_mode=ApprovalMode.ASK
    )
    running = asyncio.create_task(first.run())
    await until(first, lambda e: isinstance(e, ev.ApprovalRequested))
    await asyncio.sleep(0.3)
    engine.links[0].frozen = True  # the driver is killed while the restart waits for a person
    assert first.journal is not None
    first.journal.close()
    before = read_events(first.journal.events_path).events
    journal = RunJournal.reopen(first.journal.directory)
    OPEN.append(journal)
    back = ev.RunResumed(at=time.time(), run_id="run-1", gap_seconds=1.0, resumed={})
    second = Supervisor(
        settings=Settings(context=ContextSettings(context_limit=100_000)),
        backend=NoLocalBackend(),
        prompts=load_prompts(),
        journal=journal,
        approval_mode=ApprovalMode.ASK,
        engine=engine,
        host_backend=lambda folder: NoLocalBackend(),
        # As `resume` gives it; the session is not reset.
        hosts=HostPlan(
            history={"a": [*(e for e in before if e.session == "a"), back]},
            reattach=frozenset({"a"}),
        ),
        resumed=back,
        past=before,
    )
    runner = second.add_session(SessionSpec(name="a", task="task a", cwd=tmp_path))
    assert isinstance(runner, remote_runner.RemoteRunner)
    resumed = asyncio.create_task(second.run())
    (question,) = second.state.questions()
    assert question.session == "a" and second.state.sessions["a"].phase is Phase.AWAITING_APPROVAL
    for _ in range(50):  # the host asks again, on the new connection
        try:
            second.act(AnswerApproval(session="a", decision=Decision.APPROVE, checkpoint_number=1))
            break
        except KeyError:
            await asyncio.sleep(0.1)
    result = await asyncio.wait_for(resumed, 20)
    assert result.statuses == {"a": EndStatus.DONE}
    (decided,) = [
        e for e in read_events(journal.events_path).events if isinstance(e, ev.ApprovalDecided)
    ]
    assert decided.decided_by == "operator"
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
