"""Picking an interrupted run up again (`mala-tui resume RUN`), in the same folder.

Reads the run's journal and run.json, refuses what cannot be resumed (a run another
mala-tui process is still writing, a journal that never started, nothing left to
do), asks the backend whether each agent session's transcript is still on disk, and
builds a supervisor whose sessions start from the plan (core.resume_plan) and whose
journal goes on in the same events.jsonl, opened by a `run_resumed` event.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mala_tui.config import LoadedSettings
from mala_tui.core import events as ev
from mala_tui.core.resume_plan import (
    ResumeFrom,
    ResumePlan,
    TaskRecord,
    TranscriptCheck,
    permission_history,
    plan_resume,
)
from mala_tui.runtime.approvals import ApprovalMode
from mala_tui.runtime.backends.base import Backend, SessionSpec
from mala_tui.runtime.backends.claude_history import read_conversation
from mala_tui.runtime.journal import (
    EVENTS_FILE,
    RUN_FILE,
    JournalContents,
    JournalError,
    JournalInUse,
    RunJournal,
    read_events,
)
from mala_tui.runtime.launch import TaskPlan, agent_spec, build_supervisor
from mala_tui.runtime.processes import pid_alive
from mala_tui.runtime.supervisor import Supervisor
from mala_tui.runtime.worktree import Worktree, WorktreeTracker

#: run.json's key for the process that writes the journal (a resume journals its own).
PID_KEY = "pid"


class ResumeError(Exception):
    """The run cannot be resumed; the message says why (and what to do, if anything)."""


@dataclass(frozen=True)
class ResumeSource:
    """What a resume starts from: the run's folder, its journal and its start record."""

    folder: Path
    contents: JournalContents
    meta: dict[str, Any]

    @property
    def events(self) -> list[ev.Event]:
        return self.contents.events

    def tasks(self) -> list[TaskRecord]:
        found = []
        for entry in self.meta.get("tasks") or ():
            if isinstance(entry, dict) and all(
                isinstance(entry.get(key), str) for key in ("name", "task", "cwd")
            ):
                found.append(TaskRecord(entry["name"], entry["task"], entry["cwd"]))
        return found


def read_source(folder: Path) -> ResumeSource:
    """The run's journal and run.json, read; a run that cannot be resumed is refused.

    Raises:
        ResumeError: the folder, journal or run.json is missing or unusable.
    """
    if not folder.is_dir():
        raise ResumeError(f"{folder}: no such run folder")
    try:
        contents = read_events(folder / EVENTS_FILE)
    except JournalError as exc:
        raise ResumeError(str(exc)) from None
    if not any(isinstance(e, ev.RunStarted) for e in contents.events):
        detail = f" ({contents.describe_skipped()})" if contents.skipped else ""
        raise ResumeError(
            f"{folder / EVENTS_FILE}: no run_started event: not a journal that can be resumed"
            + detail
        )
    try:
        meta = json.loads((folder / RUN_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        meta = {}  # the journal alone still names each session's task and folder
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResumeError(f"{folder / RUN_FILE}: cannot be read: {exc}") from None
    return ResumeSource(folder, contents, meta if isinstance(meta, dict) else {})


def writer_pid(source: ResumeSource) -> int | None:
    """The mala-tui process that wrote the journal last, if the run recorded it."""
    for event in reversed(source.events):
        if isinstance(event, ev.RunResumed):
            return event.pid
    pid = source.meta.get(PID_KEY)
    return pid if isinstance(pid, int) and not isinstance(pid, bool) else None


def still_live(source: ResumeSource) -> int | None:
    """The pid of a mala-tui process still writing this run (not ended, alive), or None."""
    if isinstance(source.events[-1], ev.RunEnded):
        return None
    pid = writer_pid(source)
    if pid is None or pid == os.getpid() or not pid_alive(pid):
        return None
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return pid  # no /proc to tell by: alive is enough to refuse
    # A pid reused by an unrelated process does not hold the run.
    return pid if b"mala" in command else None


def plan_for(source: ResumeSource, check: TranscriptCheck | None = None) -> ResumePlan:
    """The plan; `check(name, session_id)` says whether a transcript is there (default: yes)."""
    return plan_resume(
        source.events,
        source.tasks(),
        check or (lambda _name, _session_id: True),
        run_id=source.folder.name,
    )


@dataclass
class Resumed:
    plan: ResumePlan
    journal: RunJournal
    supervisor: Supervisor


def specs_for(
    plan: ResumePlan, loaded: LoadedSettings, source: ResumeSource
) -> dict[str, SessionSpec]:
    """A spec per session that resumes, with the model it was started with."""
    models = {
        e.session: e.model for e in source.events if isinstance(e, ev.SessionStarted) and e.model
    }
    specs = {}
    for session in plan.resuming:
        folder = Path(session.cwd)
        if not folder.is_dir():
            raise ResumeError(f"{session.name}: its folder {session.cwd} is gone")
        plan_task = TaskPlan(session.name, session.task, folder)
        specs[session.name] = agent_spec(plan_task, loaded.settings, model=models.get(session.name))
    return specs


def prepare(
    source: ResumeSource,
    loaded: LoadedSettings,
    backend: Backend,
    approval_mode: ApprovalMode | None,
) -> Resumed:
    """Plan, open the journal again, and build the supervisor that carries the run on.

    Raises:
        ResumeError: still live (its pid alive, or its journal locked), nothing to resume,
            or a session's folder is gone.
        StorageError: the journal cannot be written.
    """
    mode = source.meta.get("mode", "run")
    if mode == "demo":
        raise ResumeError(
            "a demo run cannot be resumed: its scripted model server ended with it; "
            "start a new one with `mala-tui demo`"
        )
    live = still_live(source)
    if live is not None:
        raise ResumeError(
            f"run {source.folder.name} is still running: process {live} is writing its journal"
        )
    first = plan_for(source)
    if not first.resuming:
        ended = "; ".join(f"{s.name}: {s.reason}" for s in first.sessions) or "no sessions"
        raise ResumeError(f"run {source.folder.name} has nothing to resume ({ended})")
    specs = specs_for(first, loaded, source)

    def transcript_there(name: str, session_id: str) -> bool:
        spec = specs.get(name)
        path = backend.transcript_path(spec, session_id) if spec is not None else None
        return path is not None and path.is_file()

    plan = plan_for(source, transcript_there)
    try:
        journal = RunJournal.reopen(source.folder)
    except JournalInUse as exc:  # a live run whose pid was not recorded, or a resume racing
        raise ResumeError(f"run {source.folder.name} is still running: {exc}") from None
    try:
        supervisor = _carry_on(
            source, plan, specs, loaded=loaded, backend=backend, journal=journal, mode=approval_mode
        )
    except BaseException:
        journal.close()
        raise
    return Resumed(plan, journal, supervisor)


def _carry_on(
    source: ResumeSource,
    plan: ResumePlan,
    specs: dict[str, SessionSpec],
    *,
    loaded: LoadedSettings,
    backend: Backend,
    journal: RunJournal,
    mode: ApprovalMode | None,
) -> Supervisor:
    """The supervisor of the resumed sessions, its view holding the run's history so far."""
    now = time.time()
    supervisor = build_supervisor(
        loaded=loaded,
        backend=backend,
        journal=journal,
        specs=[specs[s.name] for s in plan.resuming],
        approval_mode=mode,
        mode=str(source.meta.get("mode", "run")),
    )
    supervisor.state.apply_all(source.events)  # the history so far, in the app too
    worktrees = {
        e.session: Worktree(
            e.session,
            Path(e.repository),
            Path(e.path),
            specs[e.session].cwd,
            e.branch,
            e.base_commit,
            e.base_branch,
        )
        for e in source.events
        if isinstance(e, ev.WorktreeCreated) and e.session in specs
    }
    if worktrees:  # what each session changed is measured again when it ends
        supervisor.listeners.events.append(WorktreeTracker(worktrees, supervisor.record))
    gap = plan.gap(now)
    for session in plan.resuming:
        history = []
        if session.session_id is not None and session.how is ResumeFrom.SESSION_ID:
            path = backend.transcript_path(specs[session.name], session.session_id)
            history = read_conversation(path) if path is not None else []
        supervisor.runners[session.name].manager.resume_from(session, gap, history)
        book = supervisor.permissions.book(session.name)
        book.asked, book.session_tools = permission_history(source.events, session.name)
    supervisor.resumed = ev.RunResumed(
        at=now,
        run_id=plan.run_id,
        gap_seconds=round(gap, 3),
        resumed={s.name: s.how.value for s in plan.resuming if s.how is not None},
        pid=os.getpid(),
    )
    return supervisor
