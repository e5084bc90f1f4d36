"""Picking an interrupted run up again (`mala-tui resume RUN`), in the same folder.

Reads the run's journal and run.json, refuses what cannot be resumed (a run another
mala-tui process is still writing, a journal that never started, nothing left to
do), asks the backend whether each agent session's transcript is still on disk, and
builds a supervisor whose sessions start from the plan (core.resume_plan) and whose
journal goes on in the same events.jsonl, opened by a `run_resumed` event.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from mala_tui.config_loading import LoadedSettings
from mala_tui.core import events as ev
from mala_tui.core.resume_plan import (
    ResumeFrom,
    ResumePlan,
    TranscriptCheck,
    plan_resume,
)
from mala_tui.runtime.backends.base import Backend, SessionSpec
from mala_tui.runtime.backends.claude_history import read_conversation
from mala_tui.runtime.cluster.host_link import HostEngine
from mala_tui.runtime.cluster.mirror import plan_all
from mala_tui.runtime.cluster.session_host import BackendFactory
from mala_tui.runtime.git.worktree import Worktree, WorktreeError, create_all, remove
from mala_tui.runtime.git.worktree_journal import WorktreeTracker
from mala_tui.runtime.journal.writer import JournalInUse, RunJournal
from mala_tui.runtime.questions.approvals import ApprovalMode
from mala_tui.runtime.run.launch import (
    PROFILES_KEY,
    WORKTREE_KEY,
    agent_spec,
    build_supervisor,
    plain_spec,
)
from mala_tui.runtime.run.new_sessions import Joining
from mala_tui.runtime.run.profiles import Profile, ProfileError, profiles_from_json
from mala_tui.runtime.run.run_source import (
    PID_KEY,
    ResumeError,
    ResumeSource,
    read_source,
    still_live,
    writer_pid,
)
from mala_tui.runtime.run.runners import HostPlan
from mala_tui.runtime.run.supervisor import Supervisor
from mala_tui.runtime.run.task_plans import TaskPlan
from mala_tui.runtime.run.worktree_sessions import (
    ended_on_host,
    host_workspaces,
    worktree_joining,
)


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
    template: SessionSpec
    """What a session added to the resumed run is made like (without any task's profile)."""


def run_mode(source: ResumeSource) -> ev.RunMode:
    """What started the run, as run.json says (a run.json without it: `mala-tui run`).

    Raises:
        ResumeError: run.json names a mode this version does not know.
    """
    mode = source.meta.get("mode", ev.RunMode.RUN)
    try:
        return ev.RunMode(mode)
    except ValueError:
        raise ResumeError(
            f"{source.folder / 'run.json'}: unknown mode {mode!r} (known: {', '.join(ev.RunMode)})"
        ) from None


def named_profiles(source: ResumeSource) -> dict[str, Profile]:
    """The run's named profiles, as run.json kept them (for sessions added with one).

    Raises:
        ResumeError: they are damaged.
    """
    try:
        return profiles_from_json(source.meta.get(PROFILES_KEY) or {})
    except ProfileError as exc:
        raise ResumeError(f"{source.folder / 'run.json'}: {exc}") from None


def profiles_of(source: ResumeSource) -> dict[str, Profile]:
    """Each session's profile, as run.json kept it: a task's own, or the named profile a
    session added while the run ran was given (sessions without one are left out).

    Raises:
        ResumeError: a profile in run.json is damaged.
    """
    found = {}
    for entry in source.meta.get("tasks") or ():
        if isinstance(entry, dict) and "profile" in entry and isinstance(entry.get("name"), str):
            try:
                found[entry["name"]] = Profile.from_json(entry["profile"])
            except ProfileError as exc:
                raise ResumeError(f"{entry['name']}: its profile in run.json: {exc}") from None
    named = named_profiles(source)
    for event in source.events:
        if isinstance(event, ev.SessionAdded) and event.profile:
            if event.profile not in named:
                raise ResumeError(
                    f"{event.session}: its profile {event.profile!r} is not in run.json"
                )
            found[event.session] = named[event.profile]
    return found


def specs_for(
    plan: ResumePlan,
    loaded: LoadedSettings,
    source: ResumeSource,
    profiles: Mapping[str, Profile] | None = None,
) -> dict[str, SessionSpec]:
    """A spec per session that resumes, with the model (and profile) it was started with."""
    models = {
        e.session: e.model for e in source.events if isinstance(e, ev.SessionStarted) and e.model
    }
    specs = {}
    # On a cluster a worktree is made on the driver only when its session ends: the folder
    # of one that did not is not there yet (its host makes its own from the repository).
    on_hosts = source.meta.get(WORKTREE_KEY) is True and source.meta.get("engine") == "ray"
    for session in plan.resuming:
        folder = Path(session.cwd)
        if not folder.is_dir() and not on_hosts:
            raise ResumeError(f"{session.name}: its folder {session.cwd} is gone")
        profile = (profiles or {}).get(session.name, Profile())
        plan_task = TaskPlan(session.name, session.task, folder, profile)
        try:
            specs[session.name] = agent_spec(
                plan_task, loaded.settings, model=models.get(session.name)
            )
        except ProfileError as exc:
            raise ResumeError(
                f"{session.name}: its profile does not hold over the current settings: {exc}"
            ) from None
    return specs


def prepare(
    source: ResumeSource,
    loaded: LoadedSettings,
    backend: Backend,
    approval_mode: ApprovalMode | None,
    *,
    until: Callable[[], bool] = lambda: False,
    engine: HostEngine | None = None,
    host_backend: BackendFactory | None = None,
) -> Resumed:
    """Plan, open the journal again, and build the supervisor that carries the run on.

    In a worktree run, a session whose worktree was never made (its start-up was stopped
    first) gets one now, unless `until()` says the resume is being stopped.

    With `engine` (a run whose sessions ran on a cluster's hosts) a session whose latest
    host still runs (it outlived the driver) is taken up again there, never started a
    second time; the others are placed anew, from a checkpoint or their task: an agent's
    transcript stayed on its host.

    Raises:
        ResumeError: still live (its pid alive, or its journal locked), nothing to resume,
            a session's folder is gone, or its worktree cannot be made.
        StorageError: the journal cannot be written.
    """
    first = _resumable(source)
    profiles = profiles_of(source)
    specs = specs_for(first, loaded, source, profiles)
    worktrees = worktrees_of(source, specs)
    specs.update({name: replace(specs[name], cwd=w.cwd) for name, w in worktrees.items()})
    template = _template(first, loaded, source, profiles)

    def transcript_there(name: str, session_id: str) -> bool:
        if engine is not None:
            return False  # on the host that ran it, or gone with it
        spec = specs.get(name)
        path = backend.transcript_path(spec, session_id) if spec is not None else None
        return path is not None and path.is_file()

    plan = plan_for(source, transcript_there)
    hosts: set[str] = set()
    if engine is not None:
        plan, hosts = _live_hosts(plan, source, engine)
    try:
        journal = RunJournal.reopen(source.folder)
    except JournalInUse as exc:  # a live run whose pid was not recorded, or a resume racing
        raise ResumeError(f"run {source.folder.name} is still running: {exc}") from None
    made: dict[str, Worktree] = {}
    try:
        if source.meta.get(WORKTREE_KEY) is True:
            missing = [(name, spec.cwd) for name, spec in specs.items() if name not in worktrees]
            made = _make_worktrees(
                source.folder, plan.run_id, missing, profiles, engine=engine, until=until
            )
            specs.update({name: replace(specs[name], cwd=w.cwd) for name, w in made.items()})
        supervisor = _carry_on(
            source,
            plan,
            specs,
            loaded=loaded,
            backend=backend,
            journal=journal,
            mode=approval_mode,
            profiles=profiles,
            template=template,
            worktrees=worktrees | made,
            engine=engine,
            host_backend=host_backend,
            hosts=hosts,
        )
    except BaseException:
        journal.close()
        for worktree in made.values():
            remove(worktree)  # not journaled yet: the resume leaves none behind
        raise
    return Resumed(plan, journal, supervisor, template)


def _resumable(source: ResumeSource) -> ResumePlan:
    """The run's plan as its journal leaves it, when it can be resumed at all.

    Raises:
        ResumeError: a demo run, still live, or nothing to resume.
    """
    if run_mode(source) is ev.RunMode.DEMO:
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
    return first


def _make_worktrees(
    folder: Path,
    run_id: str,
    missing: list[tuple[str, Path]],
    profiles: Mapping[str, Profile],
    *,
    engine: HostEngine | None,
    until: Callable[[], bool],
) -> dict[str, Worktree]:
    """The worktrees (under the run's `folder`) of the sessions whose start-up was stopped
    before theirs was made: made here, or with `engine` planned for each host to make
    (runtime.cluster.mirror).

    Raises:
        ResumeError: git would not make one.
    """
    # A task's base (its own, or the run's --base) is kept in its profile.
    bases = {name: profile.base for name, profile in profiles.items() if profile.base}
    try:
        if engine is not None:
            return plan_all(missing, run_id, folder / "worktrees", bases)
        return create_all(missing, run_id, folder / "worktrees", until=until, bases=bases)
    except WorktreeError as exc:
        raise ResumeError(str(exc)) from None


def worktrees_of(source: ResumeSource, specs: Mapping[str, SessionSpec]) -> dict[str, Worktree]:
    """The worktree each resuming session had (its latest `worktree_created`), the agent's
    folder in it where the session worked, or, for one that never started, where its task's
    folder is in the repository."""
    found = {}
    for e in source.events:
        if isinstance(e, ev.WorktreeCreated) and e.session in specs:
            path, repository = Path(e.path), Path(e.repository)
            cwd = specs[e.session].cwd
            if not cwd.is_relative_to(path):
                try:
                    cwd = path / cwd.resolve().relative_to(repository.resolve())
                except (OSError, ValueError):
                    cwd = path
            found[e.session] = Worktree(
                e.session, repository, path, cwd, e.branch, e.base_commit, e.base_branch, e.base
            )
    return found


def _template(
    plan: ResumePlan, loaded: LoadedSettings, source: ResumeSource, profiles: Mapping[str, Profile]
) -> SessionSpec:
    """The first resuming session's spec without its profile (its model only when the run,
    not a profile, gave it)."""
    first = plan.resuming[0]
    model = None
    if first.name not in profiles:
        model = next(
            (
                e.model
                for e in source.events
                if isinstance(e, ev.SessionStarted) and e.session == first.name and e.model
            ),
            None,
        )
    return plain_spec(
        TaskPlan(first.name, first.task, Path(first.cwd)), loaded.settings, model=model
    )


def _carry_on(
    source: ResumeSource,
    plan: ResumePlan,
    specs: dict[str, SessionSpec],
    *,
    loaded: LoadedSettings,
    backend: Backend,
    journal: RunJournal,
    mode: ApprovalMode | None,
    profiles: Mapping[str, Profile],
    template: SessionSpec,
    worktrees: dict[str, Worktree],
    engine: HostEngine | None = None,
    host_backend: BackendFactory | None = None,
    hosts: set[str] | None = None,
) -> Supervisor:
    """The supervisor of the resumed sessions, built whole: its view holding the run's
    history so far, sessions added to it made as in the run (in a worktree run, each in a
    worktree of its own).

    `hosts`: sessions whose host still runs on the cluster: taken up again there."""
    now, gap = time.time(), plan.gap(time.time())
    on_hosts = engine is not None
    resumed = ev.RunResumed(
        at=now,
        run_id=plan.run_id,
        gap_seconds=round(gap, 3),
        # A session whose host still runs goes on where it is: its state (its phase, the
        # question it waits on) is not reset as a resumed one's is.
        resumed={
            s.name: s.how.value
            for s in plan.resuming
            if s.how is not None and s.name not in (hosts or set())
        },
        pid=os.getpid(),
    )
    joining = Joining(profiles=named_profiles(source))
    if worktrees:
        joining = worktree_joining(
            template, worktrees, journal, on_hosts=on_hosts, profiles=joining.profiles
        )
    try:
        supervisor = build_supervisor(
            loaded=loaded,
            backend=backend,
            journal=journal,
            specs=[specs[s.name] for s in plan.resuming],
            approval_mode=mode,
            mode=run_mode(source),
            profiles=profiles,
            template=template,
            joining=joining,
            engine=engine,
            host_backend=host_backend,
            hosts=HostPlan(
                workspace_for=host_workspaces(worktrees, plan.run_id),
                # Its history, for a restart after a loss.
                history={
                    s.name: [*(e for e in source.events if e.session == s.name), resumed]
                    for s in plan.resuming
                },
                reattach=frozenset(hosts or ()),
            ),
            resumed=resumed,
            past=source.events,
        )
    except WorktreeError as exc:
        raise ResumeError(str(exc)) from None
    if worktrees:  # what each session changed is measured again when it ends
        prepare = ended_on_host(plan.run_id) if on_hosts else None
        supervisor.listeners.events.append(
            WorktreeTracker(worktrees, supervisor.record, prepare=prepare)
        )
    for session in plan.resuming:
        history = []
        if session.session_id is not None and session.how is ResumeFrom.SESSION_ID:
            path = backend.transcript_path(specs[session.name], session.session_id)
            history = read_conversation(path) if path is not None else []
        supervisor.runners[session.name].manager.resume_from(session, gap, history)
    return supervisor


def _live_hosts(
    plan: ResumePlan, source: ResumeSource, engine: HostEngine
) -> tuple[ResumePlan, set[str]]:
    """The sessions whose latest host still runs (said so in the plan), and the plan."""
    attempts: dict[str, int] = {}
    for e in source.events:
        if isinstance(e, ev.HostPlaced):
            attempts[e.session] = max(attempts.get(e.session, 0), e.attempt)
    alive = {
        s.name
        for s in plan.resuming
        if s.name in attempts and engine.alive(s.name, attempts[s.name])
    }
    sessions = tuple(
        replace(s, reason="its host still runs on the cluster: taken up again there")
        if s.name in alive
        else s
        for s in plan.sessions
    )
    return replace(plan, sessions=sessions), alive


# Reading the run back lives in run_source (no SDK there); its names are kept here too.
__all__ = [
    "PID_KEY",
    "ResumeError",
    "ResumeSource",
    "Resumed",
    "plan_for",
    "prepare",
    "profiles_of",
    "read_source",
    "specs_for",
    "still_live",
    "writer_pid",
]
