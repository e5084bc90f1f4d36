"""`mala-tui land RUN SESSION` and `mala-tui discard RUN SESSION`: finish a worktree session.

Both find the session's worktree in the run's journal, refuse while the run is still
being written (its sessions may still be running), do the git work
(runtime.git.landing), and append what was done to the run's journal, so `show` and the
app tell it afterwards. A refusal is one line on stderr and exit status 2, with nothing
changed; a journal that cannot be written is 74.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from mala_tui.config_loading import LoadedSettings
from mala_tui.core import events as ev

if TYPE_CHECKING:
    from mala_tui.core.run_view import RunState
    from mala_tui.core.view import SessionState
    from mala_tui.runtime.git.landing import Target
    from mala_tui.runtime.journal.writer import RunJournal

EXIT_USAGE = 2
EXIT_STORAGE = 74
#: Where a pull request's body is written for `gh pr create --body-file`, in the run's folder.
PR_BODIES_DIR = "pull-requests"


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    land = commands.add_parser(
        "land",
        help="commit a worktree session's edits and merge its branch into the branch the run "
        "started from (or push it for a pull request)",
    )
    _run_and_session(land)
    land.add_argument(
        "--pr",
        action="store_true",
        help="push the branch and open a draft pull request (with gh; else print the "
        "command) instead of merging",
    )
    land.add_argument(
        "--message",
        "-m",
        help="commit message for the edits the agent left uncommitted (default: drafted from "
        "its latest checkpoint and its task)",
    )
    land.add_argument("--data-dir", type=Path, help="where runs are journaled")
    discard = commands.add_parser("discard", help="remove a worktree session's worktree and branch")
    _run_and_session(discard)
    discard.add_argument(
        "--force",
        action="store_true",
        help="also when the branch has commits not merged, or the worktree uncommitted edits",
    )
    discard.add_argument("--data-dir", type=Path, help="where runs are journaled")


def _run_and_session(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", help="run id, a unique prefix of it, or 'latest'")
    parser.add_argument("session", help="the session's name, as `show` lists it")


class LandRefused(Exception):
    """One line saying why nothing was done."""


class Unwritable(Exception):
    """The run's journal cannot be written (a read-only or full disk): nothing was done."""


@dataclass
class _Opened:
    folder: Path
    run: RunState
    session: SessionState
    target: Target
    journal: RunJournal


def _open(args: argparse.Namespace, loaded: LoadedSettings) -> _Opened:
    """The session's worktree, with the run's journal held so nothing else writes the run.

    Raises:
        LandRefused: no such run or session, no worktree, discarded already, or a run still
            being written.
        Unwritable: the journal cannot be written.
    """
    from mala_tui.core.run_view import RunState
    from mala_tui.core.text import safe_line
    from mala_tui.runtime.git.landing import Target
    from mala_tui.runtime.journal.writer import (
        JournalError,
        JournalInUse,
        RunJournal,
        StorageError,
        find_run,
    )
    from mala_tui.runtime.run.run_source import ResumeError, read_source, still_live

    data_dir = args.data_dir or loaded.settings.resolved_data_dir()
    try:
        folder = find_run(data_dir, args.run)
        source = read_source(folder)
    except (JournalError, ResumeError) as exc:
        raise LandRefused(str(exc)) from None
    run = RunState(run_id=folder.name).apply_all(source.events)
    name = args.session
    session = run.sessions.get(name)
    if session is None:
        known = ", ".join(safe_line(s, 80) for s in run.sessions) or "none"
        raise LandRefused(
            f"run {folder.name} has no session {safe_line(name, 80)!r} (its sessions: {known})"
        )
    shown = safe_line(name, 80)
    if session.worktree is None:
        raise LandRefused(
            f"{shown} has no worktree of its own: its run was not started with --worktree"
        )
    if session.worktree.status is not None and session.worktree.status.discarded:
        raise LandRefused(f"{shown}: its worktree and branch were discarded already")
    live = still_live(source)
    if live is not None:
        raise LandRefused(_still_running(folder.name, f"process {live} is writing its journal"))
    try:
        journal = RunJournal.reopen(folder)
    except JournalInUse as exc:
        raise LandRefused(_still_running(folder.name, str(exc))) from None
    except StorageError as exc:
        raise Unwritable(str(exc)) from None
    return _Opened(folder, run, session, Target.of(name, session.worktree), journal)


def _still_running(run_id: str, why: str) -> str:
    return (
        f"run {run_id} is still running ({why}); its sessions can be landed or discarded "
        "once it has ended"
    )


def land(args: argparse.Namespace, loaded: LoadedSettings, out: TextIO = sys.stdout) -> int:
    from mala_tui.core.commit_message import (
        draft_commit_message,
        pull_request_body,
        session_notes,
    )
    from mala_tui.runtime.git.landing import LandingError
    from mala_tui.runtime.git.landing import land as land_branch
    from mala_tui.runtime.git.pushing import push
    from mala_tui.runtime.journal.writer import safe_file_name

    if args.message is not None and not args.message.strip():
        return _refuse("land", "--message must not be empty (leave it out for the draft)")
    try:
        opened = _open(args, loaded)
    except LandRefused as exc:
        return _refuse("land", str(exc))
    except Unwritable as exc:
        return _storage("land", exc)
    with opened.journal:
        session, target = opened.session, opened.target
        notes = session_notes(session)
        message = args.message or draft_commit_message(
            session.task,
            notes,
            session=target.session,
            branch=target.branch,
            run_id=opened.folder.name,
        )
        if not message.endswith("\n"):
            message += "\n"
        event: ev.WorktreeLanded | ev.WorktreePushed
        try:
            if args.pr:
                body_file = opened.folder / PR_BODIES_DIR / f"{safe_file_name(target.session)}.md"
                event = push(target, message, pull_request_body(notes, message), body_file)
            else:
                event = land_branch(target, message)
        except LandingError as exc:
            return _refuse("land", str(exc))
        return _journal(opened.journal, event, "land", out)


def discard(args: argparse.Namespace, loaded: LoadedSettings, out: TextIO = sys.stdout) -> int:
    from mala_tui.runtime.git.landing import LandingError
    from mala_tui.runtime.git.landing import discard as discard_branch

    try:
        opened = _open(args, loaded)
    except LandRefused as exc:
        return _refuse("discard", str(exc))
    except Unwritable as exc:
        return _storage("discard", exc)
    with opened.journal:
        try:
            event = discard_branch(opened.target, force=args.force)
        except LandingError as exc:
            return _refuse("discard", str(exc))
        return _journal(opened.journal, event, "discard", out)


def _journal(
    journal: RunJournal,
    event: ev.WorktreeLanded | ev.WorktreePushed | ev.WorktreeDiscarded,
    verb: str,
    out: TextIO,
) -> int:
    """Append what was done to the run's journal and say it on one line."""
    from mala_tui.core.describe import summary
    from mala_tui.core.text import safe_line

    # Names, paths and the command come from the journal and git: shown literally.
    out.write(f"{safe_line(event.session, 80)}: {safe_line(summary(event), 4000)}\n")
    try:
        journal.write(event)
    except OSError as exc:
        print(
            f"mala-tui {verb}: done in git, but the run's journal could not say so: {exc}",
            file=sys.stderr,
        )
        return EXIT_STORAGE
    return 0


def _refuse(verb: str, why: str) -> int:
    _say(verb, why)
    return EXIT_USAGE


def _storage(verb: str, exc: Exception) -> int:
    _say(verb, str(exc))
    return EXIT_STORAGE


def _say(verb: str, why: str) -> None:
    """One line on stderr: a reason may quote names from the journal, git and the agent
    (a session's, a file's), shown literally, never as terminal escapes."""
    from mala_tui.core.text import clean

    print(f"mala-tui {verb}: {clean(why, one_line=True)}", file=sys.stderr)
