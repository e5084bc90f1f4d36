"""The runs a browser tab can open, and each one's state, read from its journal as it grows.

A tab's title says what its run waits for, and the picker says which runs are live.
Both come from the run's journal: a `RunWatch` reads only the bytes the journal
gained since it last looked (a long run's journal is megabytes; a tab asks every
few seconds) and applies them to the run's view, as `mala-tui show` does whole.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from mala_tui.core import events as ev
from mala_tui.core.notices import page_title, waiting_notice
from mala_tui.core.view import RunState
from mala_tui.runtime.journal import EVENTS_FILE, JournalError, runs_dir
from mala_tui.runtime.sockets import live_host

_RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
"""What a run id from a URL may look like: one folder name, never a path."""

READ_CHUNK = 1 << 20
"""Bytes read at a time: a journal read for the first time comes in pieces this big."""


class RunWatch:
    """One run's view, brought up to date with what its journal gained since the last look."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.state = RunState(run_id=directory.name)
        self._offset = 0
        self._partial = b""  # a line still being written

    @property
    def run_id(self) -> str:
        return self.directory.name

    def update(self) -> None:
        """Apply what the journal gained; a line not yet finished waits for its end."""
        path = self.directory / EVENTS_FILE
        try:
            with path.open("rb") as file:
                file.seek(self._offset)
                while chunk := file.read(READ_CHUNK):
                    self._offset += len(chunk)
                    self._take(chunk)
        except OSError:
            return  # gone or unreadable: the view stays as last read

    def _take(self, chunk: bytes) -> None:
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        for line in lines:
            event = _parse(line)
            if event is None:
                continue
            self.state.apply(event)

    def live(self) -> bool:
        """Whether the run is served to consoles now: its host answers on its socket."""
        return live_host(self.directory) is not None

    def title(self) -> str:
        """The page title: what waits in this run, or that it has ended (core.notices)."""
        self.update()
        live = self.live()
        return page_title(self.run_id, self.state.questions() if live else [], ended=not live)


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


class RunBook:
    """Every run under a data dir, each watched by one `RunWatch` for as long as the server runs."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._watches: dict[Path, RunWatch] = {}

    def watch(self, directory: Path) -> RunWatch:
        found = self._watches.get(directory)
        if found is None:
            found = self._watches[directory] = RunWatch(directory)
        return found

    def choices(self) -> list[RunChoice]:
        """Every run, newest first.

        Raises:
            JournalError: the runs folder cannot be listed.
        """
        return [self.choice(folder) for folder in self._folders()]

    def find(self, run: str) -> RunChoice | None:
        """The run named by an id, a unique prefix of one, or "latest"; None when none is.

        Raises:
            JournalError: the runs folder cannot be listed.
        """
        if run == "latest":
            folders = self._folders()
            return self.choice(folders[0]) if folders else None
        if not _RUN_NAME.fullmatch(run):
            return None
        exact = runs_dir(self.data_dir) / run
        if (exact / EVENTS_FILE).is_file():
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
        return RunChoice(
            run_id=watch.run_id,
            directory=directory,
            live=live,
            started_at=state.started_at,
            sessions=tuple(state.sessions),
            title=title,
            waiting=tuple(waiting_notice(q) for q in state.questions()) if live else (),
        )


__all__ = ["JournalError", "RunBook", "RunChoice", "RunWatch"]
