"""The runs a browser tab can open, and each one's state, read from its journal as it grows.

A tab's title says what its run waits for, and the picker says which runs are live.
Both come from the run's journal: a `RunWatch` reads only the bytes the journal
gained since it last looked (a long run's journal is megabytes; a tab asks every
few seconds) and applies them to the run's view, as `mala-tui show` does whole.

Reading is blocking file work, in time linear in the bytes gained (a line of 100 MB
is gathered piece by piece and joined once): the server calls it off its event loop
(`asyncio.to_thread`), so one big journal stalls no other tab. Each watch reads under
a lock of its own, so two requests for one run never read it at once.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from mala_tui.core import events as ev
from mala_tui.core.notices import page_title, waiting_notice
from mala_tui.core.questions import Question, touches_questions
from mala_tui.core.run_view import RunState
from mala_tui.runtime.consoles.sockets import live_host
from mala_tui.runtime.journal.writer import EVENTS_FILE, JournalError, runs_dir
from mala_tui.runtime.questions.desk import Reply

_RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
"""What a run id from a URL may look like: one folder name, never a path."""
RUN_NAME_CHARS = 200
"""The longest run id asked for: ids are about 20 characters, and a file name has at most 255."""

READ_CHUNK = 1 << 20
"""Bytes read at a time: a journal read for the first time comes in pieces this big."""


class RunWatch:
    """One run's view, brought up to date with what its journal gained since the last look."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.state = RunState(run_id=directory.name)
        self._offset = 0
        self._partial: list[bytes] = []  # the pieces of a line still being written
        self._lock = threading.Lock()
        self.settled: dict[str, str] = {}
        """How each question that waited and waits no more was settled, by its id:
        "answered already: allowed once by the operator", "withdrawn: its session ended"."""

    @property
    def run_id(self) -> str:
        return self.directory.name

    def update(self) -> None:
        """Apply what the journal gained; a line not yet finished waits for its end."""
        path = self.directory / EVENTS_FILE
        try:
            with self._lock, path.open("rb") as file:
                file.seek(self._offset)
                while chunk := file.read(READ_CHUNK):
                    self._offset += len(chunk)
                    self._take(chunk)
        except OSError:
            return  # gone or unreadable: the view stays as last read

    def _take(self, chunk: bytes) -> None:
        if b"\n" not in chunk:
            # Kept as a piece, not added to what came before: adding would copy the whole
            # line so far for every chunk, quadratic in a long line.
            self._partial.append(chunk)
            return
        first, *lines, rest = chunk.split(b"\n")
        lines.insert(0, b"".join([*self._partial, first]))
        self._partial = [rest] if rest else []
        for line in lines:
            event = _parse(line)
            if event is None:
                continue
            if touches_questions(event):
                before = {question.id for question in self.state.questions()}
                self.state.apply(event)
                after = {question.id for question in self.state.questions()}
                for gone in before - after:
                    self.settled[gone] = _settled(event)
                for asked in after:
                    self.settled.pop(asked, None)  # asked again (a resumed run)
            else:
                self.state.apply(event)

    def settled_now(self) -> dict[str, str]:
        """A copy of `settled`, taken while no request reads the journal into it."""
        with self._lock:
            return dict(self.settled)

    def live(self) -> bool:
        """Whether the run is served to consoles now: its host answers on its socket."""
        return live_host(self.directory) is not None

    def title(self) -> str:
        """The page title: what waits in this run, or that it has ended (core.notices);
        blocking (it reads the journal)."""
        self.update()
        live = self.live()
        return page_title(self.run_id, self.state.questions() if live else [], ended=not live)


def _settled(event: ev.Event) -> str:
    """How the questions this event closed were settled, as a console says it."""
    match event:
        case ev.ApprovalDecided() | ev.PermissionDecided():
            return f"answered already: {Reply.of(event).describe()}"
        case ev.SessionEnded():
            return "withdrawn: its session ended"
        case _:
            return "no longer waits"


def _parse(line: bytes) -> ev.Event | None:
    """The event on one journal line; None for a blank or damaged one (`show` reports those)."""
    if not line.strip():
        return None
    try:
        data = json.loads(line)
        return ev.parse_event(data) if isinstance(data, dict) else None
    except (ValueError, RecursionError, TypeError, ev.UnknownEventError, ev.BadEventError):
        return None


@dataclass(frozen=True)
class RunChoice:
    """A run a tab can open: attached when live, read-only when it has ended."""

    run_id: str
    directory: Path
    live: bool
    started_at: float | None
    sessions: tuple[str, ...]
    title: str
    waiting: tuple[str, ...]
    """What each question of a live run waits for, oldest first (core.notices)."""
    questions: tuple[Question, ...] = ()
    """The questions of a live run that wait, oldest first."""
    settled: dict[str, str] | None = None
    """How each question that waited no longer does (RunWatch.settled), by its id."""

    def question_status(self, question: str) -> tuple[bool, str]:
        """Whether `question` waits now, and if not, what a console says of it."""
        if any(asked.id == question for asked in self.questions):
            return True, ""
        said = (self.settled or {}).get(question)
        if said is not None:
            return False, said
        if not self.live:
            return False, "the run has ended: it no longer waits"
        return False, "no such question waits in this run"


class RunBook:
    """Every run under a data dir, each watched by one `RunWatch` for as long as the server runs."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._watches: dict[Path, RunWatch] = {}
        self._lock = threading.Lock()  # requests read in threads of their own

    def watch(self, directory: Path) -> RunWatch:
        with self._lock:
            found = self._watches.get(directory)
            if found is None:
                found = self._watches[directory] = RunWatch(directory)
            return found

    def choices(self) -> list[RunChoice]:
        """Every run, newest first; blocking (it reads every journal's news).

        Raises:
            JournalError: the runs folder cannot be listed.
        """
        return [self.choice(folder) for folder in self._folders()]

    def find(self, run: str) -> RunChoice | None:
        """The run named by an id, a unique prefix of one, or "latest"; None when none is.
        Blocking (it reads the run's journal).

        Raises:
            JournalError: the runs folder cannot be listed.
        """
        if run == "latest":
            folders = self._folders()
            return self.choice(folders[0]) if folders else None
        if len(run) > RUN_NAME_CHARS or not _RUN_NAME.fullmatch(run):
            return None
        exact = runs_dir(self.data_dir) / run
        try:
            found = (exact / EVENTS_FILE).is_file()
        except OSError:  # a name the file system refuses (too long): no such run
            return None
        if found:
            return self.choice(exact)
        matches = [folder for folder in self._folders() if folder.name.startswith(run)]
        return self.choice(matches[0]) if len(matches) == 1 else None

    def _folders(self) -> list[Path]:
        """Every run's folder, newest first (run ids start with their time)."""
        root = runs_dir(self.data_dir)
        if not root.is_dir():
            return []
        try:
            folders = sorted(root.iterdir(), reverse=True)
        except OSError as exc:
            raise JournalError(f"{root}: cannot be listed: {exc.strerror or exc}") from None
        return [folder for folder in folders if (folder / EVENTS_FILE).is_file()]

    def choice(self, directory: Path) -> RunChoice:
        watch = self.watch(directory)
        title = watch.title()  # brings the view up to date first
        state, live = watch.state, watch.live()
        questions = tuple(state.questions()) if live else ()
        return RunChoice(
            run_id=watch.run_id,
            directory=directory,
            live=live,
            started_at=state.started_at,
            sessions=tuple(state.sessions),
            title=title,
            waiting=tuple(waiting_notice(q) for q in questions),
            questions=questions,
            settled=watch.settled_now(),
        )


__all__ = ["JournalError", "RunBook", "RunChoice", "RunWatch"]
