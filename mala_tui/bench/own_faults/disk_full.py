"""A disk that fills mid-run: every session stopped for that reason, the journal ended.

The data dir is a small tmpfs (root can mount one); otherwise the journal's writes are made
to fail as a full disk's would, and the trial's row says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

from mala_tui.bench.fault_harness import Planned, TrialRow, run_trial
from mala_tui.core import events as ev
from mala_tui.loopback import load_scenario
from mala_tui.runtime.journal.writer import RESERVE_FILE, RunJournal
from mala_tui.runtime.run.supervisor import Supervisor

#: Big enough for a run's files and its first lines; then filled on purpose.
DISK_BYTES = 1024 * 1024
DISK_FULL = "could not be written: No space left on device"
#: The designed reason of a session the full disk stopped (the simulation names no errno).
DISK_FULL_REASON = r"^the run's files could not be written: (No space left on device|\[Errno 28\])"


@contextlib.contextmanager
def small_disk(folder: Path, size: int = DISK_BYTES) -> Iterator[bool]:
    """A tmpfs of `size` bytes at `folder`; yields whether it could be mounted (root only).

    A size of 0 mounts nothing: the caller simulates the full disk instead."""
    folder.mkdir(parents=True, exist_ok=True)
    mounted = False
    if size > 0 and os.geteuid() == 0 and shutil.which("mount"):
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(folder)],
            capture_output=True,
            check=False,
        )
        mounted = done.returncode == 0
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", "--lazy", str(folder)], capture_output=True, check=False)


def fill(folder: Path) -> int:
    """Write a filler file in `folder` until the disk says it is full; the bytes written."""
    written = 0
    chunk = b"\0" * 4096
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        while True:
            try:
                written += os.write(fd, chunk)
            except OSError as exc:
                if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                    return written
                raise
    finally:
        os.close(fd)


class SimulatedFullDisk(RunJournal):
    """Where no tmpfs can be mounted: once `full`, journal writes fail as on a full disk
    until the reserve file is given back (then they go through, as on the real one)."""

    full = False

    def _write_bytes(self, fd: int, data: bytes) -> int:
        if self.full and (self.directory / RESERVE_FILE).exists():
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return super()._write_bytes(fd, data)


async def disk_full_trial(folder: Path, sessions: int) -> TrialRow:
    """Sessions run on a slow model; once each has its agent running, the disk fills."""
    base = load_scenario("quickstart")
    planned = [Planned(f"disk-{index:02d}", base) for index in range(sessions)]
    disk = folder / "disk"
    with small_disk(disk) as mounted:

        async def fill_when_running(supervisor: Supervisor) -> None:
            await agents_running(supervisor, sessions)
            journal = supervisor.journal
            if mounted:
                await asyncio.to_thread(fill, disk)
            elif isinstance(journal, SimulatedFullDisk):
                journal.full = True

        how = f"a {DISK_BYTES // 1024} KB tmpfs" if mounted else "simulated: no tmpfs mount"
        return await run_trial(
            f"disk full mid-run ({how})",
            planned,
            folder,
            data_dir=disk,
            journal_class=RunJournal if mounted else SimulatedFullDisk,
            meanwhile=fill_when_running,
            designed_stop=DISK_FULL if mounted else "could not be written",
            response_delay_s=0.3,
        )


async def agents_running(supervisor: Supervisor, count: int) -> None:
    """Until `count` agent processes have started."""
    started = asyncio.Event()
    seen = 0

    def listen(event: ev.Event) -> None:
        nonlocal seen
        if isinstance(event, ev.ProcessStarted):
            seen += 1
            if seen >= count:
                started.set()

    supervisor.listeners.events.append(listen)
    await started.wait()
