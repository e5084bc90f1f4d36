"""The control channel on a real Unix socket: consoles follow a run event by event, answer
its questions once, and a console dropped mid-run comes back missing nothing."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import stat
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from mala_tui.core import events as ev
from mala_tui.core.observations import Command, Decision, SessionIdentified
from mala_tui.core.operator_actions import (
    AddSession,
    AnswerApproval,
    AnswerPermission,
    ForkSession,
    RequireApproval,
    SayToAgent,
    SessionCommand,
    SetBudget,
    SetManageMode,
)
from mala_tui.core.permissions import PermissionAnswer, PermissionPolicy
from mala_tui.core.questions import ApprovalQuestion, PermissionQuestion
from mala_tui.runtime.backends.base import Backend, PermissionAsk
from mala_tui.runtime.backends.scripted import (
    HANG,
    AskPermission,
    ScriptedBackend,
    ScriptedClient,
)
from mala_tui.runtime.backends.scripted import finished as turn_done
from mala_tui.runtime.consoles.channel import ControlChannel
from mala_tui.runtime.consoles.live_run import RemoteRun
from mala_tui.runtime.consoles.sockets import (
    HOST_FILE,
    ChannelError,
    bind_socket,
    live_host,
    read_host_file,
    socket_folder,
)
from mala_tui.runtime.journal.writer import read_events
from mala_tui.runtime.questions.approvals import ApprovalMode
from mala_tui.runtime.questions.desk import QuestionClosed
from mala_tui.runtime.run.new_sessions import Joining
from mala_tui.runtime.run.supervisor import Supervisor
from tests.runtime.test_supervisor import hard_session, settings
from tests.support.backends import PerSession
from tests.support.polling import eventually
from tests.support.supervisors import build_supervisor


def hosted(tmp_path: Path, backend: Backend, names: list[str], **options: Any) -> Supervisor:
    # A run id of its own: sockets live in one per-user folder, shared with other tests.
    options.setdefault("settings", settings())
    return build_supervisor(
        backend,
        names,
        cwd=tmp_path,
        journal=tmp_path,
        run_id=f"test-{secrets.token_hex(4)}",
        **options,
    )


def lines_of(path: Path) -> list[ev.Event]:
    return read_events(path).events


async def test_a_console_follows_every_event_once_and_answers_at_the_host(tmp_path: Path) -> None:
    sup = hosted(
        tmp_path, PerSession({"a": hard_session("sa")}), ["a"], approval_mode=ApprovalMode.ASK
    )
    assert sup.journal is not None
    channel = ControlChannel(sup, sup.journal.directory)
    path = await channel.start()
    try:
        # The socket and its folder are the user's alone; the run's folder says where it is.
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(os.lstat(path.parent).st_mode) == 0o700
        record = read_host_file(sup.journal.directory)
        assert record is not None and record.socket == path and record.pid == os.getpid()
        run = asyncio.create_task(sup.run())
        await eventually(sup.state.questions)
        # Attached once the run is under way: what it missed comes from the journal.
        remote = RemoteRun.attach(sup.journal.directory)
        following = asyncio.create_task(remote.run())
        await eventually(remote.state.questions)
        (question,) = remote.state.questions()
        assert isinstance(question, ApprovalQuestion)
        await asyncio.to_thread(
            remote.act,
            AnswerApproval(
                session="a",
                decision=Decision.APPROVE,
                checkpoint_number=question.checkpoint_number,
            ),
        )
        await asyncio.wait_for(run, 10)
        ended = await asyncio.wait_for(following, 10)
    finally:
        await channel.close()
    assert isinstance(ended, ev.RunEnded) and ended.ok
    journal = lines_of(sup.journal.events_path)
    assert [e.seq for e in journal] == list(range(1, len(journal) + 1))
    assert remote.last_seq == journal[-1].seq
    # The console's view is the host's, event for event.
    assert remote.state.sessions["a"].snapshot() == sup.state.sessions["a"].snapshot()
    assert remote.state.spend == sup.state.spend
    # The channel is gone with the run: nothing answers, and the folder says nothing.
    assert not path.exists() and not (sup.journal.directory / HOST_FILE).exists()
    assert live_host(sup.journal.directory) is None


async def test_two_consoles_one_answer_the_second_is_told_who_answered(tmp_path: Path) -> None:
    ask = PermissionAsk("tu-1", "Bash", {"command": "make deploy"})
    backend = ScriptedBackend(
        [ScriptedClient([[SessionIdentified(0, "s1"), AskPermission(ask), turn_done("ok", "s1")]])]
    )
    sup = hosted(tmp_path, backend, ["a"])
    sup.permissions.policy = PermissionPolicy.ASK
    assert sup.journal is not None
    channel = ControlChannel(sup, sup.journal.directory)
    await channel.start()
    try:
        run = asyncio.create_task(sup.run())
        first = RemoteRun.attach(sup.journal.directory, name="console one")
        second = RemoteRun.attach(sup.journal.directory, name="console two")
        following = [asyncio.create_task(c.run()) for c in (first, second)]
        await eventually(lambda: first.state.questions() and second.state.questions())
        await eventually(lambda: channel.consoles == 2)
        (question,) = second.state.questions()
        assert isinstance(question, PermissionQuestion)
        await asyncio.to_thread(
            first.act,
            AnswerPermission(
                session="a", request_id=question.request_id, answer=PermissionAnswer.ALLOW_ONCE
            ),
        )
        with pytest.raises(QuestionClosed) as refused:
            await asyncio.to_thread(
                second.act,
                AnswerPermission(
                    session="a", request_id=question.request_id, answer=PermissionAnswer.DENY
                ),
            )
        await asyncio.wait_for(run, 10)
        await asyncio.wait_for(asyncio.gather(*following), 10)
    finally:
        await channel.close()
    assert str(refused.value) == (
        f"no permission request {question.request_id!r} is waiting in 'a': request "
        f"#{question.request_id} of a (Bash) was answered already: allowed once by the "
        "operator at console one"
    )
    assert backend.clients[0].verdicts[0].allow  # the one answer reached the agent
    # Both consoles saw it leave the list, and the one answer in the events.
    journal = lines_of(sup.journal.events_path)
    (decided,) = [e for e in journal if isinstance(e, ev.PermissionDecided)]
    assert decided.answer is PermissionAnswer.ALLOW_ONCE
    for console in (first, second):
        assert console.state.questions() == []
        assert console.last_seq == journal[-1].seq


async def test_a_console_let_go_for_falling_behind_comes_back_missing_nothing(
    tmp_path: Path,
) -> None:
    sup = hosted(
        tmp_path, PerSession({"a": hard_session("sa")}), ["a"], approval_mode=ApprovalMode.ASK
    )
    assert sup.journal is not None
    channel = ControlChannel(sup, sup.journal.directory, console_behind=5, backlog=1000)
    await channel.start()
    try:
        run = asyncio.create_task(sup.run())
        await eventually(sup.state.questions)
        remote = RemoteRun.attach(sup.journal.directory)
        got: list[int] = []
        remote.listeners.events.append(lambda event: got.append(event.seq))
        following = asyncio.create_task(remote.run())
        await eventually(lambda: channel.consoles == 1)
        # A burst the console cannot take before it falls behind: let go, it attaches
        # again from its last line and the rest comes from the host's memory.
        for number in range(40):
            sup.record(
                ev.WarningRecorded(at=0.0, session="a", where=ev.Where.RUNTIME, message=str(number))
            )
        await eventually(lambda: remote.reconnects >= 1)
        (question,) = sup.state.questions()
        assert isinstance(question, ApprovalQuestion)
        sup.act(
            AnswerApproval(
                session="a",
                decision=Decision.APPROVE,
                checkpoint_number=question.checkpoint_number,
            )
        )
        await asyncio.wait_for(run, 10)
        await asyncio.wait_for(following, 10)
    finally:
        await channel.close()
    journal = lines_of(sup.journal.events_path)
    start = journal.index(next(e for e in journal if e.seq == got[0]))
    assert got == [e.seq for e in journal[start:]]  # every event after attaching, once each


async def test_a_console_reconnecting_past_memory_is_caught_up_from_the_journal(
    tmp_path: Path,
) -> None:
    sup = hosted(
        tmp_path, PerSession({"a": hard_session("sa")}), ["a"], approval_mode=ApprovalMode.ASK
    )
    assert sup.journal is not None
    channel = ControlChannel(sup, sup.journal.directory, console_behind=5, backlog=3)
    await channel.start()
    try:
        run = asyncio.create_task(sup.run())
        await eventually(sup.state.questions)
        remote = RemoteRun.attach(sup.journal.directory)
        got: list[int] = []
        remote.listeners.events.append(lambda event: got.append(event.seq))
        following = asyncio.create_task(remote.run())
        await eventually(lambda: channel.consoles == 1)
        for number in range(40):
            sup.record(
                ev.WarningRecorded(at=0.0, session="a", where=ev.Where.RUNTIME, message=str(number))
            )
        await eventually(lambda: remote.reconnects >= 1)
        (question,) = sup.state.questions()
        assert isinstance(question, ApprovalQuestion)
        sup.act(
            AnswerApproval(
                session="a",
                decision=Decision.APPROVE,
                checkpoint_number=question.checkpoint_number,
            )
        )
        await asyncio.wait_for(run, 10)
        await asyncio.wait_for(following, 10)
    finally:
        await channel.close()
    journal = lines_of(sup.journal.events_path)
    start = journal.index(next(e for e in journal if e.seq == got[0]))
    assert got == [e.seq for e in journal[start:]]


async def test_a_stale_socket_is_replaced_and_a_live_one_refused(tmp_path: Path) -> None:
    sup = hosted(tmp_path, PerSession({"a": hard_session("sa")}), ["a"])
    assert sup.journal is not None
    path = socket_folder() / f"{sup.journal.directory.name}.sock"
    # What a crashed host leaves: a socket file nothing listens on.
    crashed = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    crashed.bind(str(path))
    crashed.close()
    assert path.exists()
    channel = ControlChannel(sup, sup.journal.directory)
    await channel.start()
    try:
        assert live_host(sup.journal.directory) is not None
        with pytest.raises(ChannelError, match="another process serves this run"):
            bind_socket(path)
    finally:
        await channel.close()


def test_the_socket_folder_is_private_and_a_planted_link_is_refused(tmp_path: Path) -> None:
    runtime = tmp_path / "xdg"
    runtime.mkdir(mode=0o700)
    assert socket_folder({"XDG_RUNTIME_DIR": str(runtime)}) == runtime / "mala-tui"
    assert stat.S_IMODE(os.lstat(runtime / "mala-tui").st_mode) == 0o700
    # A link where the folder goes is never followed; the fallback is used instead.
    other = tmp_path / "xdg2"
    other.mkdir(mode=0o700)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o777)
    (other / "mala-tui").symlink_to(elsewhere)
    assert socket_folder({"XDG_RUNTIME_DIR": str(other)}) == Path(f"/tmp/mala-tui-{os.getuid()}")
    # An XDG folder open to others is not used either.
    opened = tmp_path / "open"
    opened.mkdir()
    opened.chmod(0o777)
    assert socket_folder({"XDG_RUNTIME_DIR": str(opened)}) == Path(f"/tmp/mala-tui-{os.getuid()}")


async def test_a_console_forks_a_session_at_the_host(tmp_path: Path) -> None:
    from mala_tui.core.actions import EndStatus

    backend = PerSession(
        {
            "a": [ScriptedClient([[SessionIdentified(0, "sa"), HANG]])],
            "a-fork1": [ScriptedClient([[SessionIdentified(0, "sf"), turn_done("done", "sf")]])],
        }
    )
    sup = hosted(tmp_path, backend, ["a"])
    assert sup.journal is not None
    channel = ControlChannel(sup, sup.journal.directory)
    await channel.start()
    try:
        run = asyncio.create_task(sup.run())
        await eventually(lambda: sup.runners["a"].manager.session_id == "sa")
        remote = RemoteRun.attach(sup.journal.directory)
        following = asyncio.create_task(remote.run())
        with pytest.raises(ValueError, match="a session is already named 'a'"):
            await asyncio.to_thread(
                remote.act, ForkSession(parent="a", name="a", instruction="Another way.")
            )
        await asyncio.to_thread(
            remote.act, ForkSession(parent="a", name="a-fork1", instruction="Another way.")
        )
        await eventually(lambda: sup.runners["a-fork1"].status is EndStatus.DONE)
        await eventually(lambda: "a-fork1" in remote.state.sessions)
        assert remote.state.sessions["a-fork1"].forked_from == "a"
        sup.stop_all()
        await asyncio.wait_for(run, 10)
        await asyncio.wait_for(following, 10)
    finally:
        await channel.close()
    assert backend.by_name["a-fork1"].created == [("a-fork1", "sa")]


async def test_every_operator_action_works_from_a_console(tmp_path: Path) -> None:
    """What the app's keys send, sent through the channel: each reaches the supervisor
    (its event comes back on the stream), and each refusal comes back as the supervisor's
    own exception."""
    from mala_tui.core.budget import BudgetLimits
    from mala_tui.core.observations import Command, MessageObserved, UsageObserved
    from mala_tui.core.operator_messages import MessageError
    from mala_tui.core.phases import ManageMode, Phase
    from mala_tui.core.transcript import Message, Role, TextBlock
    from mala_tui.core.usage import CallUsage
    from mala_tui.runtime.backends.base import SessionSpec
    from mala_tui.runtime.backends.scripted import HANG
    from mala_tui.runtime.run.launch import like

    said = Message(Role.ASSISTANT, (TextBlock("Reading the modules."),))
    backend = PerSession(
        lambda name: ScriptedClient(
            [
                [
                    SessionIdentified(0, f"id-{name}"),
                    UsageObserved(0, CallUsage(input_tokens=3, cache_read_input_tokens=9_000)),
                    MessageObserved(0, said),
                    HANG,
                ]
            ]
        )
    )
    joining = Joining(like(SessionSpec(name="a", task="task a", cwd=tmp_path)))
    sup = hosted(tmp_path, backend, ["a"], joining=joining)
    assert sup.journal is not None
    channel = ControlChannel(sup, sup.journal.directory)
    await channel.start()
    try:
        run = asyncio.create_task(sup.run())
        await eventually(
            lambda: "a" in sup.state.sessions and sup.state.sessions["a"].tokens > 0,
            what="a's first call",
        )
        remote = RemoteRun.attach(sup.journal.directory)
        following = asyncio.create_task(remote.run())

        async def act(call: Any, *args: Any) -> Any:
            return await asyncio.to_thread(call, *args)

        events_path = sup.journal.events_path

        def seen(kind: type) -> list[Any]:
            return [e for e in lines_of(events_path) if isinstance(e, kind)]

        await act(remote.act, SessionCommand(session="a", command=Command.PAUSE))
        await eventually(lambda: remote.state.sessions["a"].phase is Phase.PAUSED, what="paused")
        await act(remote.act, SessionCommand(session="a", command=Command.RESUME))
        await eventually(lambda: remote.state.sessions["a"].phase is Phase.RUNNING, what="resumed")
        await act(remote.act, SayToAgent(session="a", text="skip the last step"))
        await eventually(lambda: seen(ev.MessageQueued), what="the message queued")
        with pytest.raises(MessageError):
            await act(remote.act, SayToAgent(session="a", text="   "))
        with pytest.raises(KeyError):
            await act(remote.act, SessionCommand(session="nobody", command=Command.STOP))
        await act(remote.act, RequireApproval(session=None, required=True))
        await eventually(lambda: remote.state.sessions["a"].require_approval, what="approval on")
        await act(remote.act, SetManageMode(session="a", mode=ManageMode.MASK))
        await eventually(
            lambda: remote.state.sessions["a"].manage is ManageMode.MASK, what="mask only"
        )
        await act(remote.act, SetBudget(session="a", limits=BudgetLimits(max_turns=50)))
        mine, whole_run = await act(remote.budget_limits, "a")
        assert (mine.max_turns, whole_run.max_turns) == (50, None)
        assert remote.budget_check("a").readings[0].allowed == 50
        contents = await act(remote.window_contents, "a")
        hosts = sup.window_contents("a")
        assert contents is not None and hosts is not None and said in contents.transcript.messages
        assert contents.transcript.messages == hosts.transcript.messages
        assert (contents.density, contents.root) == (hosts.density, hosts.root)
        assert await act(remote.transcript_path, "a") is None  # scripted: no transcript file
        with pytest.raises(ValueError, match="printable"):
            await act(remote.act, AddSession(name="bad\nname", task="task", cwd=tmp_path))
        await act(remote.act, AddSession(name="b", task="task b", cwd=tmp_path))
        await eventually(lambda: "b" in remote.state.sessions, what="b added")
        await act(remote.act, SessionCommand(session="b", command=Command.STOP))
        await eventually(lambda: remote.state.sessions["b"].status is not None, what="b stopped")
        await act(remote.stop_for, "stopped from a console")
        await asyncio.wait_for(run, 20)
        ended = await asyncio.wait_for(following, 10)
    finally:
        await channel.close()
    assert ended is not None and ended.reason == "stopped from a console"
    assert remote.state.sessions["a"].end_reason == "stopped from a console"
    assert remote.last_seq == lines_of(sup.journal.events_path)[-1].seq


async def test_a_console_lands_at_the_host_while_the_run_lives_and_itself_once_it_is_over(
    tmp_path: Path,
) -> None:
    import subprocess

    from mala_tui.runtime.git.landing import LandingError
    from mala_tui.runtime.git.worktree import create
    from mala_tui.runtime.run.profiles import Profile

    def git(cwd: Path, *args: str) -> str:
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
            cwd=cwd,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "app.py").write_text("VERSION = 1\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    trees = {name: create(repo, "run1", name, tmp_path / "trees") for name in "ab"}
    (trees["a"].path / "app.py").write_text("VERSION = 2\n")
    (trees["b"].path / "NOTES.md").write_text("b's\n")
    backend = PerSession(
        {name: [ScriptedClient([[SessionIdentified(0, f"s{name}"), HANG]])] for name in "ab"}
    )
    joining = Joining(profiles={"review": Profile("review", {"model": "m"})})
    sup = hosted(tmp_path, backend, ["a", "b"], joining=joining)
    assert sup.journal is not None
    channel = ControlChannel(sup, sup.journal.directory)
    await channel.start()
    try:
        run = asyncio.create_task(sup.run())
        await eventually(lambda: all(sup.runners[n].manager.session_id for n in "ab"))
        for name, tree in trees.items():
            sup.record(
                ev.WorktreeCreated(
                    at=1.0,
                    session=name,
                    path=str(tree.path),
                    branch=tree.branch,
                    base_commit=tree.base_commit,
                    repository=str(repo),
                    base_branch="main",
                )
            )
        remote = RemoteRun.attach(sup.journal.directory)
        following = asyncio.create_task(remote.run())
        await eventually(lambda: all(remote.state.sessions[n].worktree for n in "ab"))
        assert await asyncio.to_thread(remote.profile_names) == ["review"]
        with pytest.raises(LandingError, match="a is still running"):
            await remote.landings.land("a", "Bump")
        sup.act(SessionCommand(session="a", command=Command.STOP))
        await eventually(lambda: remote.state.sessions["a"].status is not None)
        assert remote.landings.draft("a").startswith("task a\n")  # drafted here
        landed = await remote.landings.land("a", "Bump the version\n")  # b still runs
        assert landed.into == "main" and landed.committed
        await eventually(lambda: remote.state.sessions["a"].snapshot().worktree_status)
        merged = remote.state.sessions["a"].snapshot().worktree_status
        assert merged is not None and merged.merged
        sup.stop_all()
        await asyncio.wait_for(run, 10)
        await asyncio.wait_for(following, 10)
    finally:
        await channel.close()
    # The run is over and its host gone (its journal let go as the host exits): the
    # console discards b itself, and journals it.
    assert remote.ended is not None
    sup.journal.close()
    discarded = await remote.landings.discard("b", force=True)
    assert discarded.uncommitted and not trees["b"].path.exists()
    assert git(repo, "log", "-1", "--format=%s", "main") == "Bump the version"
    journaled = lines_of(sup.journal.events_path)
    assert [
        type(e) for e in journaled if isinstance(e, ev.WorktreeLanded | ev.WorktreeDiscarded)
    ] == [
        ev.WorktreeLanded,
        ev.WorktreeDiscarded,
    ]
    snapshot = remote.state.sessions["b"].snapshot().worktree_status
    assert snapshot is not None and snapshot.discarded


async def test_json_nested_too_deeply_is_refused_in_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sup = hosted(tmp_path, PerSession({"a": hard_session("sa")}), ["a"])
    assert sup.journal is not None
    channel = ControlChannel(sup, sup.journal.directory)
    path = await channel.start()
    nested = '{"session": ' + "[" * 10_000 + "]" * 10_000 + "}"
    try:
        async with (
            aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=str(path))) as session,
            session.post("http://host/act", data=nested) as response,
        ):
            assert response.status == 400
            assert (await response.json())["error"] == "the request's JSON is nested too deeply"
    finally:
        await channel.close()
    # Nothing went to the host's log as an error with a traceback.
    assert not [record for record in caplog.records if record.exc_info]


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({"kind": "approval", "session": "a", "decision": "maybe"},
         "decision: 'maybe' is not one of approve, deny, edit"),
        ({"kind": "permission", "session": "a", "request_id": "1", "answer": "sometimes"},
         "answer: 'sometimes' is not one of allow_once, allow_session, deny"),
        ({"kind": "manage_mode", "session": "a", "mode": "loud"}, "mode: 'loud' is not one of "),
        ({"kind": "command", "session": "a", "command": "dance"},
         "command: 'dance' is not one of "),
        ({"session": "a", "command": "stop"}, "kind: an action needs one (one of command, "),
        ({"kind": "dance", "session": "a"}, "kind: 'dance' is not one of command, "),
        ({"kind": "say", "session": "a", "text": "hi", "loud": True}, "loud: "),
        ({"kind": "say", "session": "a"}, "text: "),
    ],
)  # fmt: skip
async def test_an_action_that_is_not_one_is_refused_in_one_line_naming_what_is_wrong(
    tmp_path: Path, body: dict[str, object], error: str
) -> None:
    sup = hosted(tmp_path, PerSession({"a": hard_session("sa")}), ["a"])
    assert sup.journal is not None
    channel = ControlChannel(sup, sup.journal.directory)
    path = await channel.start()
    try:
        async with (
            aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=str(path))) as session,
            session.post("http://host/act", json=body) as response,
        ):
            assert response.status == 400
            refused = await response.json()
    finally:
        await channel.close()
    assert refused["kind"] == "value" and refused["error"].startswith(error)
    assert "\n" not in refused["error"]


@pytest.mark.parametrize("written", [1, None])
async def test_a_console_refuses_a_host_of_another_protocol_in_one_line(
    tmp_path: Path, written: int | None
) -> None:
    """A run started by an older mala-tui (its host.json says protocol 1, or nothing) is
    not spoken to in requests it does not know: attaching says so and what to do."""
    sup = hosted(tmp_path, PerSession({"a": [ScriptedClient([[HANG]])]}), ["a"])
    assert sup.journal is not None
    channel = ControlChannel(sup, sup.journal.directory)
    await channel.start()
    try:
        host_file = sup.journal.directory / "host.json"
        data = json.loads(host_file.read_text())
        if written is None:
            del data["protocol"]
        else:
            data["protocol"] = written
        host_file.write_text(json.dumps(data))
        with pytest.raises(ChannelError) as refused:
            RemoteRun.attach(sup.journal.directory)
        message = str(refused.value)
        assert "speaks the console protocol 1, this mala-tui 2" in message
        assert "\n" not in message
    finally:
        await channel.close()
