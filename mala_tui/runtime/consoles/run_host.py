"""The run's host: the process that owns a run's supervisor and serves it to consoles.

`run --detach` (and `resume --detach`, `demo --detach`) starts the same command
again as the host: a child in a session of its own (`start_new_session`), so no
terminal's hangup or Ctrl-C ever reaches it, with nothing of the terminal (stdin
from /dev/null). The host builds the run exactly as a foreground run is built,
serves its control channel (runtime.consoles.channel), and says it is ready on a pipe its
parent gave it (`--host-ready-fd`): the run's id, folder and socket. From then on
its output goes to the run's `host.log`, and the parent, having printed how to
attach, exits 0. What goes wrong before the host is ready (a bad tasks file, a
data dir that cannot be written) it says on the parent's stderr, and the parent
exits with the host's status, so a detached start fails as a foreground one does.

With no console attached the run goes on as it would with one: its questions wait
for a console (bounded by their timeouts, as always), and `ui.notify_command` is
run to tell someone (runtime.consoles.notify). `mala-tui stop`, and SIGTERM to the host, stop
the run resumably.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from mala_tui.runtime.consoles.sockets import ChannelError, socket_folder

READY_FD_OPTION: Final = "--host-ready-fd"
"""The hidden option naming the pipe a host says it is ready on."""
HOST_LOG: Final = "host.log"
EXIT_NO_SOCKET: Final = 74
"""No private folder for the run's control socket: nothing started (sysexits' EX_IOERR,
as for any place mala-tui cannot write)."""
"""The host's own output (its headless event lines, its errors), in the run's folder."""


@dataclass(frozen=True)
class Started:
    """A host that said it is ready."""

    run_id: str
    folder: Path
    socket: Path
    pid: int


def host_argv(argv: Sequence[str], command: str, fd: int) -> list[str]:
    """The command line as typed, with the host's ready pipe given to `command`."""
    found = list(argv)
    at = 0
    while at < len(found):
        if found[at] == "--set":  # the one option before the command, with its value
            at += 2
            continue
        if found[at] == command:
            return [*found[: at + 1], READY_FD_OPTION, str(fd), *found[at + 1 :]]
        at += 1
    raise ValueError(f"{command!r} is not in the command line")


def say_ready(fd: int, folder: Path, socket: Path) -> None:
    """Tell the parent the run is served, then leave its terminal for the run's log.

    stdout and stderr become `host.log` in the run's folder: the parent's terminal may
    close at any moment from now on, and a write to a closed terminal would fail.
    """
    record = {"run_id": folder.name, "folder": str(folder), "socket": str(socket)}
    with contextlib.suppress(OSError):
        os.write(fd, (json.dumps(record) + "\n").encode("utf-8"))
    with contextlib.suppress(OSError):
        os.close(fd)
    sys.stdout.flush()
    sys.stderr.flush()
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW
    log = os.open(folder / HOST_LOG, flags, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)


def spawn(argv: Sequence[str], command: str) -> Started | int:
    """Start `mala-tui ARGV` (whose subcommand is `command`) as a run's host, and wait
    until it is ready.

    Until then the host writes on this process's stdout and stderr (the run's first
    lines, or why it could not start). Returns the host once it is ready, or its exit
    status when it ended first. Ctrl-C meanwhile is passed on: the host stops its
    start-up, resumably, and its status (130) is returned.
    """
    try:
        # Checked before the host starts, not by it: a host that cannot serve would leave
        # a journal with nothing in it, listed as running for good.
        socket_folder()
    except ChannelError as exc:
        print(f"mala-tui {command}: cannot start the run's host: {exc}", file=sys.stderr)
        return EXIT_NO_SOCKET
    read, write = os.pipe()
    os.set_inheritable(write, True)  # the host's only descriptor from here, but 0-2
    sys.stdout.flush()
    try:
        # posix_spawn rather than Popen: nothing here need wait for the host (a detached
        # one outlives this process), and a Popen left unwaited complains when collected.
        pid = os.posix_spawn(
            sys.executable,
            [sys.executable, "-m", "mala_tui", *host_argv(argv, command, write)],
            os.environ,
            file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)],
            setsid=True,
        )
    finally:
        os.close(write)
    data = b""
    with os.fdopen(read, "rb") as pipe:
        while True:
            try:
                data = pipe.read()
                break
            except KeyboardInterrupt:
                # The host is in a session of its own: the terminal's Ctrl-C is passed on.
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGINT)
    try:
        said = json.loads(data)
        return Started(said["run_id"], Path(said["folder"]), Path(said["socket"]), pid)
    except (ValueError, KeyError, TypeError):
        return wait(pid)


def wait(pid: int) -> int:
    """The exit status of the host `pid` (this process's child), once it has ended:
    128 + the signal's number when a signal ended it, as a shell says it."""
    while True:
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:
            return 1  # reaped elsewhere: its status is lost
        except InterruptedError:
            continue
        code = os.waitstatus_to_exitcode(status)
        return code if code >= 0 else 128 - code
