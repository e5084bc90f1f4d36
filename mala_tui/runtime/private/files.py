"""Files only their user may read, appended to without following a planted link.

Error details and what the CLIs print can hold paths, prompts and (before redaction
misses one) secrets. They go to files created 0600 in folders closed to others, opened
with O_NOFOLLOW so a symlink planted where the file goes is refused, not written through.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def private_folder(folder: Path, *, make: bool = True) -> bool:
    """Accept `folder` when it is this user's own: a real folder, not a link, that nobody
    else can write to; with `make`, made first (0700) if missing. False for anything else."""
    try:
        if make:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return False
    return folder_problem(folder) is None


def folder_problem(folder: Path) -> str | None:
    """Why `folder` is not this user's own (a real folder, not a link, that nobody else
    can write to), in a few words; None when it is.

    Another user who can write to a folder can put in it what this user then reads and
    runs (a run's journal names the commands its sessions start): such a folder is
    refused, not read.
    """
    try:
        found = os.lstat(folder)
    except OSError as exc:
        return f"{folder} cannot be checked: {exc.strerror or exc}"
    if stat.S_ISLNK(found.st_mode):
        return f"{folder} is a link, not a folder"
    if not stat.S_ISDIR(found.st_mode):
        return f"{folder} is not a folder"
    if found.st_uid != os.getuid():
        return f"{folder} belongs to another user (uid {found.st_uid})"
    if found.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{folder} can be written to by other users (mode {stat.S_IMODE(found.st_mode):o})"
    return None


def append_private(path: Path, text: str, *, limit: int | None = None) -> bool:
    """Append `text` to `path`, created 0600, never through a symlink.

    False, and nothing written, when it cannot be (a link, a full disk, a missing
    folder) or once the file holds `limit` bytes: what goes wrong writing a log must not
    be a second error.
    """
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except OSError:
        return False
    try:
        if limit is not None and os.fstat(fd).st_size >= limit:
            return False
        data = text.encode("utf-8", "replace")
        while data:
            data = data[os.write(fd, data) :]
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
