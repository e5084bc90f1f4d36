"""Where a live run's control socket lives, how its folder records it, and whether it answers.

A Unix socket's path is limited to about 108 bytes, too few for a data dir's paths, so
sockets go in a short per-user runtime folder: `$XDG_RUNTIME_DIR/mala-tui` (the
session's own, private by the XDG spec), or, when that is unset or unfit,
`/tmp/mala-tui-<uid>`. Either is made 0700 and then checked as made: a real folder (a
link planted in its place is refused, never followed), this user's, closed to everyone
else. The socket is bound before it listens and made 0600 in between, so no one else
could connect even for a moment.

The run's folder records the socket in `host.json` (with the host's pid). A crash
leaves both behind: a socket nothing answers on is stale, and the next host of that
run (a resume) replaces it; a socket something answers on is a live run's, never
taken over.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

HOST_FILE: Final = "host.json"
PROTOCOL: Final = 2
"""The channel's protocol version, in `host.json` and `/info` (2: what a person does is
one value, POSTed to `/act`)."""
SOCKET_PATH_BYTES: Final = 107
"""The longest socket path Linux takes (108 bytes with its terminating NUL)."""
CONNECT_SECONDS: Final = 1.0
"""How long a socket is given to answer before it counts as stale."""


class ChannelError(Exception):
    """The control channel cannot be served or reached; the message says why."""


@dataclass(frozen=True)
class HostRecord:
    """What `host.json` says: where the run's host listens, and who it is."""

    socket: Path
    pid: int
    run_id: str
    protocol: int = PROTOCOL
    """The channel's version the host speaks (1 before what a person does was one value)."""


def socket_folder(environ: Mapping[str, str] | None = None) -> Path:
    """This user's private folder for control sockets, made if missing.

    Raises:
        ChannelError: neither `$XDG_RUNTIME_DIR/mala-tui` nor `/tmp/mala-tui-<uid>` is a
            private folder of this user's (a link, another owner, open to others).
    """
    env = os.environ if environ is None else environ
    uid = os.getuid()
    candidates = []
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if runtime and Path(runtime).is_absolute() and _owned_closed(Path(runtime), group_ok=False):
        candidates.append(Path(runtime) / "mala-tui")
    candidates.append(Path("/tmp") / f"mala-tui-{uid}")
    problems = []
    for folder in candidates:
        problem = _private_folder(folder)
        if problem is None:
            return folder
        problems.append(problem)
    raise ChannelError("; ".join(problems))


def socket_path(run_id: str, environ: Mapping[str, str] | None = None) -> Path:
    """The control socket of the run `run_id`.

    Raises:
        ChannelError: no private folder for it, or its path too long for a socket.
    """
    path = socket_folder(environ) / f"{run_id}.sock"
    if len(os.fsencode(path)) > SOCKET_PATH_BYTES:
        raise ChannelError(f"{path}: too long for a socket path ({SOCKET_PATH_BYTES} bytes)")
    return path


def _owned_closed(folder: Path, *, group_ok: bool) -> bool:
    try:
        found = os.lstat(folder)
    except OSError:
        return False
    closed = stat.S_IRWXO | (0 if group_ok else stat.S_IRWXG)
    return (
        stat.S_ISDIR(found.st_mode) and found.st_uid == os.getuid() and not found.st_mode & closed
    )


def _private_folder(folder: Path) -> str | None:
    """Make `folder` (0700) if missing and check it; None when fit, else why not."""
    try:
        folder.mkdir(mode=0o700)  # never follows a link planted there: that is EEXIST
    except FileExistsError:
        pass
    except OSError as exc:
        return f"cannot make {folder}: {exc.strerror or exc}"
    if not _owned_closed(folder, group_ok=False):
        return (
            f"{folder} is not a private folder of this user's "
            "(a link, another user's, or open to others)"
        )
    return None


def bind_socket(path: Path) -> socket.socket:
    """A listening socket at `path`, 0600; a stale one a crash left is replaced first.

    Raises:
        ChannelError: a live process answers at `path` (the run is served already), or
            the socket cannot be made.
    """
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise ChannelError(f"{path}: {exc.strerror or exc}") from None
    else:
        if stat.S_ISSOCK(found.st_mode) and answers(path):
            raise ChannelError(f"{path}: another process serves this run")
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # stale: left by a host that crashed (or not a socket at all)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(path))
        # The folder is closed to others already; the socket is too before anyone can
        # connect to it, since nobody can until it listens.
        path.chmod(0o600)
        sock.listen(128)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        raise ChannelError(f"cannot listen at {path}: {exc.strerror or exc}") from None
    return sock


def answers(path: Path, timeout: float = CONNECT_SECONDS) -> bool:
    """Whether a process accepts connections on the socket at `path` now."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(timeout)
        try:
            probe.connect(str(path))
        except OSError as exc:
            # EAGAIN or a timeout: there, but its backlog is full: busy, not stale.
            return exc.errno in (errno.EAGAIN, errno.ETIMEDOUT) or isinstance(exc, TimeoutError)
    return True


def write_host_file(folder: Path, record: HostRecord) -> None:
    """Record in the run's folder where its host listens (0600, replaced whole)."""
    data = {
        "protocol": PROTOCOL,
        "socket": str(record.socket),
        "pid": record.pid,
        "run_id": record.run_id,
    }
    scratch = folder / f".{HOST_FILE}.{os.getpid()}"
    fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(data) + "\n")
    scratch.replace(folder / HOST_FILE)


def remove_host_file(folder: Path) -> None:
    with contextlib.suppress(OSError):
        (folder / HOST_FILE).unlink()


def read_host_file(folder: Path) -> HostRecord | None:
    """What the run's folder says of its host; None when it says nothing usable."""
    try:
        data = json.loads((folder / HOST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    path, pid, run_id = data.get("socket"), data.get("pid"), data.get("run_id")
    if not isinstance(path, str) or not isinstance(pid, int) or isinstance(pid, bool):
        return None
    protocol = data.get("protocol", 1)
    return HostRecord(
        Path(path),
        pid,
        run_id if isinstance(run_id, str) else folder.name,
        protocol if isinstance(protocol, int) and not isinstance(protocol, bool) else 0,
    )


def live_host(folder: Path) -> HostRecord | None:
    """The run's host, if it has one that answers now (a crashed one does not)."""
    record = read_host_file(folder)
    if record is None or not answers(record.socket):
        return None
    return record
