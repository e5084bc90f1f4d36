"""Resuming a run on disk: the journal reopened, live runs refused, the supervisor built."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mala_tui.config import Settings
from mala_tui.config_loading import LoadedSettings
from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.checkpoint import CheckpointOrigin
from mala_tui.core.manager import ContextManager
from mala_tui.core.observations import Decision, SessionIdentified
from mala_tui.core.operator_actions import AnswerApproval
from mala_tui.core.permissions import AnsweredBy, PermissionAnswer
from mala_tui.core.questions import ApprovalQuestion
from mala_tui.core.resume_plan import ResumeFrom, TaskRecord, plan_resume
from mala_tui.core.transcript import Role, ToolCall, ToolResult
from mala_tui.prompt_files import load_prompts
from mala_tui.runtime.backends.claude import ClaudeBackend
from mala_tui.runtime.backends.claude_history import read_conversation
from mala_tui.runtime.backends.scripted import ScriptedBackend, ScriptedClient, finished
from mala_tui.runtime.git.worktree_journal import WorktreeTracker
from mala_tui.runtime.journal.writer import JournalInUse, RunJournal, list_runs, read_events
from mala_tui.runtime.questions.approvals import ApprovalMode
from mala_tui.runtime.run.profiles import Profile
from mala_tui.runtime.run.resume import ResumeError, prepare, read_source, still_live
from tests.support.factories import default_limits
from tests.support.supervisors import build_supervisor


def loaded(data: Path) -> LoadedSettings:
    settings = Settings().model_copy(
        update={"storage": Settings().storage.model_copy(update={"data_dir": data})}
    )
    return LoadedSettings(settings, {}, data / "none.toml", False)


def make_run(
    data: Path, events: list[ev.Event], *, pid: int | None = None, mode: str = "run"
) -> RunJournal:
    """A run as mala-tui leaves it: run.json with its tasks, and these events journaled."""
    tasks = []
    for event in events:
        if isinstance(event, ev.RunStarted):
            for name in event.sessions:
                folder = data.parent / "work" / name
                folder.mkdir(parents=True, exist_ok=True)
                tasks.append({"name": name, "task": f"task {name}", "cwd": str(folder)})
    meta = {"mode": mode, "pid": pid, "tasks": tasks}
    journal = RunJournal.create(data, "20260101-000000-abcd", meta)
    for event in events:
        journal.write(event)
    journal.close()
    return journal


def run_started(*names: str) -> ev.RunStarted:
    return ev.RunStarted(
        at=1000, run_id="20260101-000000-abcd", sessions=names, mode=ev.RunMode.RUN
    )


def test_a_journal_torn_by_a_kill_goes_on_after_the_torn_line(tmp_path: Path) -> None:
    journal = make_run(tmp_path, [run_started("a")])
    with journal.events_path.open("ab") as torn:
        torn.write(b'{"type": "usage", "at": 10')  # kill -9 mid-write
    reopened = RunJournal.reopen(journal.directory)
    reopened.write(ev.RunResumed(at=2000, run_id="r", gap_seconds=5, resumed={"a": "task"}))
    reopened.close()
    contents = read_events(journal.events_path)
    assert [type(e) for e in contents.events] == [ev.RunStarted, ev.RunResumed]
    (skipped,) = contents.skipped
    assert skipped.line == 2 and "not JSON" in skipped.reason


def test_a_checkpoint_file_never_overwrites_an_earlier_one(tmp_path: Path) -> None:
    journal = make_run(tmp_path, [run_started("a")])
    first = journal.save_checkpoint("a", 1, "first")
    again = RunJournal.reopen(journal.directory)
    second = again.save_checkpoint("a", 1, "second")
    again.close()
    assert first != second
    assert first.read_text() == "first\n" and second.read_text() == "second\n"


def test_a_missing_folder_and_a_journal_without_a_start_are_refused_by_name(
    tmp_path: Path,
) -> None:
    with pytest.raises(ResumeError, match="no such run folder"):
        read_source(tmp_path / "nothing")
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "events.jsonl").write_bytes(b"garbage\n")
    with pytest.raises(ResumeError, match=r"no run_started event.*line 1: not JSON"):
        read_source(folder)
    (folder / "events.jsonl").unlink()
    with pytest.raises(ResumeError, match="cannot be read"):
        read_source(folder)


def test_a_run_another_live_mala_tui_writes_is_refused(tmp_path: Path) -> None:
    writer = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()", "mala-tui-run"],
        stdin=subprocess.PIPE,
    )
    stranger = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        journal = make_run(tmp_path, [run_started("a")], pid=writer.pid)
        source = read_source(journal.directory)
        assert still_live(source) == writer.pid
        with pytest.raises(ResumeError, match=f"still running: process {writer.pid}"):
            prepare(source, loaded(tmp_path), ClaudeBackend(), ApprovalMode.AUTO)
        # A pid reused by some other program does not hold the run.
        meta = json.loads((journal.directory / "run.json").read_text())
        (journal.directory / "run.json").write_text(json.dumps(meta | {"pid": stranger.pid}))
        assert still_live(read_source(journal.directory)) is None
    finally:
        for child in (writer, stranger):
            assert child.stdin is not None
            child.stdin.close()
            child.wait(10)
    assert still_live(read_source(journal.directory)) is None


def test_nothing_to_resume_and_demo_runs_are_refused_saying_why(tmp_path: Path) -> None:
    done: list[ev.Event] = [
        run_started("a"),
        ev.SessionEnded(at=1001, session="a", status=EndStatus.DONE, reason="finished"),
        ev.RunEnded(at=1002, run_id="r", ok=True),
    ]
    journal = make_run(tmp_path / "one", done, pid=os.getpid())
    with pytest.raises(ResumeError, match=r"nothing to resume \(a: ended done: finished\)"):
        prepare(
            read_source(journal.directory), loaded(tmp_path), ClaudeBackend(), ApprovalMode.AUTO
        )
    demo = make_run(tmp_path / "two", [run_started("a")], mode="demo")
    with pytest.raises(ResumeError, match="a demo run cannot be resumed"):
        prepare(read_source(demo.directory), loaded(tmp_path), ClaudeBackend(), ApprovalMode.AUTO)


def test_the_supervisor_carries_on_only_the_unfinished_sessions_with_the_history(
    tmp_path: Path,
) -> None:
    events: list[ev.Event] = [
        run_started("a", "b"),
        ev.AgentSessionNamed(at=1001, session="a", session_id="gone-id"),
        ev.SessionEnded(at=1002, session="b", status=EndStatus.FAILED, reason="broke"),
    ]
    journal = make_run(tmp_path, events)
    resumed = prepare(
        read_source(journal.directory), loaded(tmp_path), ClaudeBackend(), ApprovalMode.AUTO
    )
    try:
        supervisor = resumed.supervisor
        assert list(supervisor.runners) == ["a"]
        (a,) = resumed.plan.resuming
        assert a.how is ResumeFrom.TASK  # the agent's transcript is not on this machine
        assert supervisor.resumed is not None
        assert supervisor.resumed.resumed == {"a": "task"}
        assert supervisor.resumed.pid == os.getpid() and supervisor.resumed.gap_seconds > 0
        # The live view starts from the journal: b's failure is still there to see.
        assert supervisor.state.sessions["b"].status is EndStatus.FAILED
        assert resumed.journal.directory == journal.directory
    finally:
        resumed.journal.close()


def transcript_lines() -> list[object]:
    def entry(kind: str, content: object, **extra: object) -> dict[str, object]:
        return {"type": kind, "message": {"role": kind, "content": content}, **extra}

    return [
        {"type": "queue-operation"},
        entry("user", "Fix the bug."),
        {"type": "api-request-blob", "message": {"role": "user", "content": "not a message"}},
        entry(
            "assistant", [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "ok"}]
        ),
        entry("assistant", [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"p": 1}}]),
        entry("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "x" * 900}]),
        entry("assistant", [{"type": "tool_use", "id": "sub", "name": "Read"}], isSidechain=True),
        entry("user", "<system-reminder>", isMeta=True),
        entry("assistant", [{"type": "tool_use", "id": "t2", "name": "Bash", "input": {}}]),
        entry(
            "user",
            [
                {
                    "type": "tool_result",
                    "tool_use_id": "t2",
                    "is_error": True,
                    "content": [{"type": "text", "text": "boom"}, {"type": "image"}],
                }
            ],
        ),
        # Claude Code's own error, written in the agent's place.
        entry(
            "assistant", [{"type": "text", "text": "Prompt is too long"}], isApiErrorMessage=True
        ),
        entry("assistant", [{"type": "tool_use", "id": "t3", "name": "Bash", "input": {}}]),
    ]


def test_an_agent_transcript_reads_back_as_the_conversation_the_manager_saw(
    tmp_path: Path,
) -> None:
    path = tmp_path / "abc.jsonl"
    lines = [json.dumps(line) for line in transcript_lines()]
    path.write_text("\n".join([*lines[:3], "{torn", *lines[3:]]) + "\n")
    messages = read_conversation(path)
    assert [(m.role, m.from_harness) for m in messages] == [
        (Role.USER, True),
        (Role.ASSISTANT, False),
        (Role.ASSISTANT, False),
        (Role.USER, False),
        (Role.ASSISTANT, False),
        (Role.USER, False),
        (Role.ASSISTANT, True),
    ]
    assert messages[0].text == "Fix the bug." and messages[1].text == "ok"
    assert messages[2].blocks == (ToolCall("t1", "Read", {"p": 1}),)
    assert messages[3].blocks == (ToolResult("t1", "x" * 900),)
    assert messages[5].blocks == (ToolResult("t2", "boom\n[image]", is_error=True),)
    # t3 never got its result (killed mid-tool): left out, so nothing waits on it.
    assert all(b != ToolCall("t3", "Bash", {}) for m in messages for b in m.blocks)
    assert read_conversation(tmp_path / "missing.jsonl") == []


def test_a_session_resumed_by_id_knows_its_results_and_can_mask_them(tmp_path: Path) -> None:
    path = tmp_path / "abc.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in transcript_lines()) + "\n")
    plan = plan_resume(
        [run_started("a"), ev.AgentSessionNamed(at=1001, session="a", session_id="abc")],
        [TaskRecord("a", "task a", str(tmp_path))],
        lambda _name, _id: True,
    )
    manager = ContextManager(
        name="a", task="task a", limits=default_limits(), prompts=load_prompts()
    )
    manager.resume_from(plan.sessions[0], 60, read_conversation(path))
    manager.start(2000)
    assert manager.transcript.has_result("t1") and manager.transcript.has_result("t2")
    assert not manager.transcript.open_calls
    assert manager.transcript.messages[-1].text.startswith("You were interrupted")


def test_runs_lists_a_resumed_run_as_going_on_until_it_ends_again(tmp_path: Path) -> None:
    journal = make_run(
        tmp_path,
        [
            run_started("a"),
            ev.RunEnded(at=1001, run_id="r", ok=False, reason="SIGTERM"),
            ev.RunResumed(at=1500, run_id="r", gap_seconds=499, resumed={"a": "task"}),
        ],
    )
    (listed,) = list_runs(tmp_path)
    assert (listed.ended, listed.ok) == (False, None)
    again = RunJournal.reopen(journal.directory)
    again.write(ev.RunEnded(at=1600, run_id="r", ok=True))
    again.close()
    (listed,) = list_runs(tmp_path)
    assert (listed.ended, listed.ok) == (True, True)


def test_a_session_in_its_own_worktree_has_its_changes_measured_again(tmp_path: Path) -> None:
    folder = tmp_path / "work" / "a"
    folder.mkdir(parents=True)
    events: list[ev.Event] = [
        run_started("a"),
        ev.WorktreeCreated(
            at=1001,
            session="a",
            path=str(folder),
            branch="mala/r/a",
            base_commit="0" * 40,
            repository=str(tmp_path / "repo"),
        ),
    ]
    journal = make_run(tmp_path / "data", events)
    resumed = prepare(
        read_source(journal.directory),
        loaded(tmp_path / "data"),
        ClaudeBackend(),
        ApprovalMode.AUTO,
    )
    resumed.journal.close()
    (tracker,) = [t for t in resumed.supervisor.listeners.events if isinstance(t, WorktreeTracker)]
    worktree = tracker.worktrees["a"]
    assert (worktree.branch, worktree.path, worktree.cwd) == ("mala/r/a", folder, folder)


def test_a_session_resumes_with_the_profile_its_task_had(tmp_path: Path) -> None:
    journal = make_run(tmp_path / "data", [run_started("a", "b")])
    meta = json.loads((journal.directory / "run.json").read_text())
    meta["tasks"][0]["profile"] = Profile(
        name="review",
        settings={"model": "claude-opus-4-1", "permission_mode": "plan", "soft_threshold": 0.5},
        disallowed_tools=("Bash",),
        env={"MODE": "review"},
    ).to_json()
    (journal.directory / "run.json").write_text(json.dumps(meta))
    resumed = prepare(
        read_source(journal.directory),
        loaded(tmp_path / "data"),
        ClaudeBackend(),
        ApprovalMode.AUTO,
    )
    resumed.journal.close()
    a, b = (resumed.supervisor.runners[name] for name in "ab")
    assert (a.spec.model, a.spec.permission_mode, a.spec.disallowed_tools) == (
        "claude-opus-4-1",
        "plan",
        ("Bash",),
    )
    assert dict(a.spec.env) == {"MODE": "review"}
    assert (a.manager.limits.soft_threshold, b.manager.limits.soft_threshold) == (0.5, 0.15)
    assert b.spec.permission_mode == "acceptEdits"
    template = resumed.template  # what a session added to the resumed run is made like
    assert (template.model, template.permission_mode, template.disallowed_tools) == (
        None,
        "acceptEdits",
        (),
    )


def test_a_profile_the_current_settings_refuse_is_named(tmp_path: Path) -> None:
    journal = make_run(tmp_path / "data", [run_started("a")])
    meta = json.loads((journal.directory / "run.json").read_text())
    meta["tasks"][0]["profile"] = {"soft_threshold": 0.5, "hard_threshold": 0.6}
    (journal.directory / "run.json").write_text(json.dumps(meta))
    settings = loaded(tmp_path / "data").settings
    strict = settings.model_copy(
        update={"context": settings.context.model_copy(update={"mask_target_threshold": 0.55})}
    )
    with pytest.raises(ResumeError, match="a: its profile does not hold over the current settings"):
        prepare(
            read_source(journal.directory),
            LoadedSettings(strict, {}, tmp_path / "none.toml", False),
            ClaudeBackend(),
            ApprovalMode.AUTO,
        )


async def test_a_restart_waiting_for_approval_at_the_kill_is_asked_again_then_runs() -> None:
    events: list[ev.Event] = [
        run_started("a"),
        ev.AgentSessionNamed(at=1001, session="a", session_id="old"),
        ev.CheckpointSaved(
            at=1002, session="a", number=1, origin=CheckpointOrigin.TAGGED, text="## Goal\nG"
        ),
        ev.ApprovalRequested(at=1003, session="a", checkpoint_number=1, reason="hard threshold"),
    ]
    (session,) = plan_resume(events, [TaskRecord("a", "task a", "/ws")], lambda *_: True).sessions
    fresh = ScriptedClient([[SessionIdentified(0, "new"), finished(session_id="new")]])
    supervisor = build_supervisor(ScriptedBackend([fresh]), ["a"], approval_mode=ApprovalMode.ASK)
    supervisor.state.apply_all(events)
    supervisor.runners["a"].manager.resume_from(session, 30)
    asked = asyncio.Event()
    supervisor.listeners.questions.append(lambda pending: asked.set() if pending else None)
    run = asyncio.create_task(supervisor.run())
    await asyncio.wait_for(asked.wait(), 10)
    (request,) = supervisor.state.questions()
    assert isinstance(request, ApprovalQuestion)
    assert (request.checkpoint_number, request.checkpoint_text) == (1, "## Goal\nG")
    assert fresh.queries == []  # nothing runs before the answer
    supervisor.act(AnswerApproval(session="a", decision=Decision.APPROVE))
    result = await asyncio.wait_for(run, 10)
    assert result.statuses == {"a": EndStatus.DONE}
    (prompt,) = fresh.queries
    assert "CONTINUING FROM A PREVIOUS SESSION (continuation 1)" in prompt and "## Goal" in prompt


def test_a_journal_another_process_holds_is_not_continued(tmp_path: Path) -> None:
    # No pid recorded (a run from before run.json had one): the journal's lock still tells.
    journal = make_run(tmp_path, [run_started("a")])
    holder = RunJournal.reopen(journal.directory)
    try:
        with pytest.raises(JournalInUse, match="being written by another mala-tui process"):
            RunJournal.reopen(journal.directory)
        with pytest.raises(ResumeError, match=r"still running: .*events.jsonl is being written"):
            prepare(
                read_source(journal.directory), loaded(tmp_path), ClaudeBackend(), ApprovalMode.AUTO
            )
    finally:
        holder.close()
    RunJournal.reopen(journal.directory).close()  # let go of, it can be continued


def test_a_resumed_session_keeps_its_tools_allowed_for_the_session_and_its_request_ids(
    tmp_path: Path,
) -> None:
    events: list[ev.Event] = [
        run_started("a"),
        ev.PermissionRequested(at=1001, session="a", request_id="1", tool="Bash", summary="ls"),
        ev.PermissionDecided(
            at=1002,
            session="a",
            request_id="1",
            tool="Bash",
            answer=PermissionAnswer.ALLOW_SESSION,
            decided_by=AnsweredBy.OPERATOR,
        ),
        ev.PermissionRequested(at=1003, session="a", request_id="2", tool="WebFetch", summary="u"),
        ev.PermissionDecided(
            at=1004,
            session="a",
            request_id="2",
            tool="WebFetch",
            answer=PermissionAnswer.ALLOW_ONCE,
            decided_by=AnsweredBy.OPERATOR,
        ),
    ]
    journal = make_run(tmp_path, events)
    resumed = prepare(
        read_source(journal.directory), loaded(tmp_path), ClaudeBackend(), ApprovalMode.AUTO
    )
    try:
        book = resumed.supervisor.permissions.book("a")
        assert book.session_tools == frozenset({"Bash"})
        assert book.open("Write", {"file_path": "x"}, 2000.0).request_id == "3"
    finally:
        resumed.journal.close()
