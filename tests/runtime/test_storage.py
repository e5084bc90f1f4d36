"""A disk that fills up, a data dir that cannot hold a run: clear errors, nothing lost.

The full disk is a real tmpfs where this test can mount one (root), and otherwise a
journal whose writes fail as a full disk's do; each test names which it used.
"""

from __future__ import annotations

import asyncio
import errno
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from mala_tui.bench.own_faults.disk_full import SimulatedFullDisk, fill, small_disk
from mala_tui.config import IdleSettings, Settings
from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.observations import SessionIdentified
from mala_tui.runtime.backends.scripted import HANG, ScriptedClient
from mala_tui.runtime.journal.writer import (
    RESERVE_FILE,
    RunJournal,
    StorageError,
    read_events,
)
from tests.support.backends import PerSession
from tests.support.supervisors import build_supervisor


class Disk:
    """A data dir whose disk can be filled: a real tmpfs, or the simulation."""

    def __init__(self, folder: Path, real: bool) -> None:
        self.folder = folder
        self.real = real
        self.journals: list[RunJournal] = []

    def journal(self, run_id: str = "run-1") -> RunJournal:
        kind = RunJournal if self.real else SimulatedFullDisk
        journal = kind.create(self.folder, run_id, {"mode": "test"})
        self.journals.append(journal)
        return journal

    def fill(self) -> None:
        if self.real:
            fill(self.folder)
        for journal in self.journals:
            if isinstance(journal, SimulatedFullDisk):
                journal.full = True


@pytest.fixture(params=["tmpfs", "simulated"])
def disk(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Disk]:
    size = 256 * 1024 if request.param == "tmpfs" else 0
    with small_disk(tmp_path / "disk", size) as mounted:
        found = Disk(tmp_path / "disk", mounted)
        print("full disk:", "a real 256 KB tmpfs" if mounted else "simulated (no tmpfs mount)")
        yield found
        for journal in found.journals:
            journal.close()


def event(index: int) -> ev.Event:
    return ev.ErrorRecorded(
        at=float(index), session="s", where=ev.Where.RUNTIME, message=f"line {index}"
    )


def test_a_full_disk_gives_back_the_reserve_and_loses_no_line(disk: Disk) -> None:
    journal = disk.journal()
    journal.write(event(0))
    disk.fill()
    written = 1
    while journal.disk_full is None and written < 5000:  # the last page fills, then the disk
        journal.write(event(written))
        written += 1
    for _ in range(20):  # the shutdown's lines, in the reserve
        journal.write(event(written))
        written += 1
    assert journal.disk_full is not None and journal.disk_full.errno == errno.ENOSPC
    assert not (journal.directory / RESERVE_FILE).exists()
    contents = read_events(journal.events_path)
    lines = [e for e in contents.events if isinstance(e, ev.ErrorRecorded)]
    assert lines == contents.events  # nothing but the lines written
    assert [e.message for e in lines] == [f"line {n}" for n in range(written)]
    assert journal.lines_written == written


def test_when_even_the_reserve_is_used_up_the_write_fails_and_says_so(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", 256 * 1024) as mounted:
        if not mounted:
            pytest.skip("needs a real tmpfs (root): the simulated disk has no size to run out of")
        journal = RunJournal.create(tmp_path / "disk", "run-1", {"mode": "test"})
        fill(tmp_path / "disk")
        big = ev.ErrorRecorded(at=1.0, session="s", where=ev.Where.RUNTIME, message="x" * 4000)
        with pytest.raises(OSError) as raised:
            for _ in range(100):
                journal.write(big)
        journal.close()
        assert raised.value.errno == errno.ENOSPC
        assert journal.failure is raised.value
        assert str(journal.events_path) == raised.value.filename
        written = read_events(journal.events_path)
        assert len(written.events) == journal.lines_written  # every line said written is there


def hanging(name: str) -> ScriptedClient:
    return ScriptedClient([[SessionIdentified(0, name), HANG]])


async def test_a_disk_that_fills_mid_run_stops_every_session_and_ends_the_journal(
    disk: Disk, tmp_path: Path
) -> None:
    journal = disk.journal()
    clients = {name: hanging(name) for name in ("a", "b")}
    sup = build_supervisor(
        PerSession({name: [client] for name, client in clients.items()}),
        clients,
        cwd=tmp_path,
        journal=journal,
        settings=Settings(idle=IdleSettings(idle_timeout_seconds=30)),
    )
    started = asyncio.Event()
    sup.listeners.events.append(
        lambda e: started.set() if isinstance(e, ev.SessionStarted) and e.session == "b" else None
    )
    run = asyncio.create_task(sup.run())
    await started.wait()
    disk.fill()
    # A line longer than what is left of the journal's last page (a long error from an
    # agent, say) is the first that finds no room.
    sup.record(ev.ErrorRecorded(at=1.0, session="a", where=ev.Where.AGENT, message="x" * 6000))
    result = await asyncio.wait_for(run, 30)
    assert result.statuses == {"a": EndStatus.STOPPED, "b": EndStatus.STOPPED}
    assert "could not be written" in result.stop_cause
    if disk.real:
        assert "No space left on device" in result.stop_cause
    assert all(result.reasons[name] == result.stop_cause for name in clients)
    assert all(client.disconnected for client in clients.values())
    events = read_events(journal.events_path).events
    assert len(events) == journal.lines_written
    assert {e.session for e in events if isinstance(e, ev.SessionEnded)} == {"a", "b"}
    assert isinstance(events[-1], ev.RunEnded) and events[-1].reason == result.stop_cause


def test_a_data_dir_that_is_a_file_is_one_clear_error() -> None:
    with pytest.raises(
        StorageError, match=r"^cannot keep a run under /dev/null: Not a directory \(/dev/null\)$"
    ):
        RunJournal.create(Path("/dev/null"), "run-1", {})


def test_a_read_only_data_dir_is_one_clear_error(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(folder)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        folder.chmod(0o500)  # not root: a folder without write permission says the same
    try:
        with pytest.raises(StorageError, match=r"(Read-only file system|Permission denied)"):
            RunJournal.create(folder, "run-1", {})
    finally:
        if done.returncode == 0:
            subprocess.run(["umount", str(folder)], check=False)
        else:
            folder.chmod(0o700)


def test_a_disk_too_small_for_a_run_is_one_clear_error(tmp_path: Path) -> None:
    with small_disk(tmp_path / "tiny", 64 * 1024) as mounted:
        if not mounted:
            pytest.skip("needs a real tmpfs (root): nothing to simulate a 64 KB disk with")
        fill(tmp_path / "tiny")
        with pytest.raises(StorageError, match="No space left on device"):
            RunJournal.create(tmp_path / "tiny", "run-1", {"mode": "test"})
