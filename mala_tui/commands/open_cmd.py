"""`mala-tui open RUN SESSION`: a session of a run that is over, in the interactive Claude Code.

The session is resumed by its latest agent session id in its folder (its worktree, in a
worktree run), with its config dir and the environment the run gave it, in this terminal
until Claude Code exits. The run's journal is held meanwhile, so no `resume` or `land`
writes the run while the person works in it; afterwards what the person did (their
prompts, the window of their latest call) is journaled, and `show` tells it. A session
that had not ended goes on from there when the run is resumed.

A live run's sessions are opened from its app (`h`), which ends the supervised process
first. Refused with one line (exit status 2): a live run, no terminal, a browser tab, a
session that ran on a cluster's host, one without an agent session. When Claude Code
itself fails (exits with another status than 0) that is said (exit status 1), and nothing
is journaled: the session is left as it was.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from mala_tui.config_loading import LoadedSettings

if TYPE_CHECKING:
    from mala_tui.runtime.session.by_hand import Interactive

#: Claude Code itself failed (it exited with a status other than 0).
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_STORAGE = 74


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    opened = commands.add_parser(
        "open",
        help="open a session of a run that is over in the interactive Claude Code (claude "
        "--resume), in this terminal",
    )
    opened.add_argument("run", help="run id, a unique prefix of it, or 'latest'")
    opened.add_argument("session", help="the session's name, as `show` lists it")
    opened.add_argument("--data-dir", type=Path, help="where runs are journaled")


class OpenRefused(Exception):
    """One line saying why the session cannot be opened."""


def open_session(args: argparse.Namespace, loaded: LoadedSettings, out: TextIO = sys.stdout) -> int:
    from mala_tui.core import events as ev
    from mala_tui.core.text import plural, safe_line
    from mala_tui.runtime.journal.writer import JournalInUse, RunJournal, StorageError
    from mala_tui.runtime.session.by_hand import ByHandError, console_problem, read_back, size_of

    try:
        opening = _prepare(args, loaded)
    except (OpenRefused, ByHandError) as exc:
        return _refuse(str(exc))
    problem = console_problem()
    if problem is None and not (sys.stdin.isatty() and sys.stdout.isatty()):
        problem = "Claude Code needs a terminal (stdin and stdout)"
    if problem is not None:
        return _refuse(problem)
    try:
        journal = RunJournal.reopen(opening.folder)
    except JournalInUse as exc:
        return _refuse(f"the run is still running ({exc}): open its sessions from its app (h)")
    except StorageError as exc:
        print(f"mala-tui open: {exc}", file=sys.stderr)
        return EXIT_STORAGE
    how, transcript = opening.how, opening.transcript
    with journal:
        since = size_of(transcript)
        said = f"opening Claude Code (claude --resume {how.session_id})"
        out.write(f"{safe_line(how.session, 80)}: {said}\n")
        out.flush()
        try:
            done = subprocess.run(
                list(how.argv), cwd=how.cwd, env={**os.environ, **how.env}, check=False
            )
        except OSError as exc:
            return _refuse(f"Claude Code could not be started: {exc}")
        if done.returncode != 0:
            # It failed (a bad flag, a session it could not resume): nothing was handed
            # back, so nothing is journaled and the session stays as the run left it.
            ended = (
                f"exit status {done.returncode}"
                if done.returncode > 0
                else f"killed by signal {-done.returncode}"
            )
            print(
                f"mala-tui open: Claude Code failed ({ended}); {safe_line(how.session, 80)} "
                "was left as it was",
                file=sys.stderr,
            )
            return EXIT_FAILED
        back = read_back(transcript, since)
        tokens = back.call.context_tokens if back.call is not None else None
        event = ev.HandedBack(at=_now(), session=how.session, prompts=back.prompts, tokens=tokens)
        try:
            journal.write(event)
        except OSError as exc:
            print(f"mala-tui open: the run's journal could not say so: {exc}", file=sys.stderr)
            return EXIT_STORAGE
    window = f", window {tokens:,} tokens" if tokens is not None else ""
    prompts = plural(back.prompts, "prompt")
    out.write(f"{safe_line(how.session, 80)}: {prompts} by hand{window}\n")
    return 0


@dataclass
class _Opening:
    folder: Path
    """The run's: its journal is held while the person has the session."""
    how: Interactive
    transcript: Path


def _prepare(args: argparse.Namespace, loaded: LoadedSettings) -> _Opening:
    """The run, how to open the session, and its transcript.

    Raises:
        OpenRefused: no such run or session, a live run, a cluster's session, no agent session.
        ByHandError: no Claude Code CLI.
    """
    from mala_tui.core import events as ev
    from mala_tui.core.run_view import RunState
    from mala_tui.core.text import safe_line
    from mala_tui.runtime.backends.claude import ClaudeBackend
    from mala_tui.runtime.journal.writer import JournalError, find_run
    from mala_tui.runtime.run.launch import agent_spec
    from mala_tui.runtime.run.profiles import Profile, ProfileError
    from mala_tui.runtime.run.resume import profiles_of
    from mala_tui.runtime.run.run_source import ResumeError, read_source, still_live
    from mala_tui.runtime.run.task_plans import TaskPlan
    from mala_tui.runtime.session.by_hand import interactive

    data_dir = args.data_dir or loaded.settings.resolved_data_dir()
    try:
        folder = find_run(data_dir, args.run)
        source = read_source(folder)
        profiles = profiles_of(source)
    except (JournalError, ResumeError) as exc:
        raise OpenRefused(str(exc)) from None
    run = RunState(run_id=folder.name).apply_all(source.events)
    name = args.session
    session = run.sessions.get(name)
    shown = safe_line(name, 80)
    if session is None:
        known = ", ".join(safe_line(s, 80) for s in run.sessions) or "none"
        raise OpenRefused(f"run {folder.name} has no session {shown!r} (its sessions: {known})")
    live = still_live(source)
    if live is not None:
        raise OpenRefused(
            f"run {folder.name} is still running (process {live} writes its journal): open "
            f"{shown} from its app (h), which ends its supervised Claude Code first"
        )
    if source.meta.get("engine") == "ray" or any(
        isinstance(e, ev.HostPlaced) and e.session == name for e in source.events
    ):
        raise OpenRefused(
            f"{shown} ran on a host of the cluster, which keeps its transcript: it cannot be "
            "opened by hand from here"
        )
    session_id = next(
        (
            e.session_id
            for e in reversed(source.events)
            if isinstance(e, ev.AgentSessionNamed) and e.session == name
        ),
        None,
    )
    if session_id is None:
        raise OpenRefused(f"{shown} has no agent session to open: it never got as far")
    if not Path(session.cwd).is_dir():
        raise OpenRefused(f"{shown}: its folder {session.cwd} is gone")
    plan = TaskPlan(name, session.task, Path(session.cwd), profiles.get(name, Profile()))
    try:
        spec = agent_spec(plan, loaded.settings, model=session.model)
    except ProfileError as exc:
        raise OpenRefused(
            f"{shown}: its profile does not hold over the current settings: {exc}"
        ) from None
    transcript = ClaudeBackend().transcript_path(spec, session_id)
    if transcript is None:
        raise OpenRefused(f"{shown}: the transcript of agent session {session_id} is gone")
    return _Opening(folder, interactive(spec, session_id), transcript)


def _now() -> float:
    import time

    return time.time()


def _refuse(why: str) -> int:
    print(f"mala-tui open: {why}", file=sys.stderr)
    return EXIT_USAGE
