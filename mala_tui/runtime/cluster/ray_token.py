"""A private token for a local Ray: 0600, in a 0700 folder of its own.

Ray left to itself writes the token it makes for a local cluster to `~/.ray/auth_token` as
the umask allows, often 0644, where any local user can read it and pass the cluster's
token check. A local Ray that mala-tui starts (no address) gets a token of its own instead.
"""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import tempfile
from pathlib import Path

from mala_tui.runtime.cluster.ray_refusals import EngineRefused
from mala_tui.runtime.private.files import append_private, private_folder

#: Where Ray reads a token from, before ~/.ray/auth_token: the token itself, or a file holding it.
TOKEN_VARIABLES = ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")


def private_token(parent: Path | None = None) -> Path:
    """A fresh token for a local Ray, in `auth_token` (0600) alone in a new folder (0700) of
    this user's, made under `parent` (the system's temporary folder by default).

    Raises:
        EngineRefused: the folder or the file cannot be made, or is not private.
    """
    try:
        folder = Path(tempfile.mkdtemp(prefix="mala-tui-ray-", dir=parent))
    except OSError as exc:
        where = parent or tempfile.gettempdir()
        raise EngineRefused(
            f"cannot make a private folder for the local Ray's token in {where}: "
            f"{exc.strerror or exc}"
        ) from None
    token = folder / "auth_token"
    try:
        # Exact modes, whatever the umask took away (Ray must still read it). Nobody else can
        # write in the new folder, so nothing can be planted between the checks and the chmod.
        folder.chmod(0o700)
        written = private_folder(folder, make=False) and append_private(
            token, secrets.token_hex(32)
        )
        if written:
            token.chmod(0o600)
    except OSError:
        written = False
    if not written:
        shutil.rmtree(folder, ignore_errors=True)
        raise EngineRefused(f"cannot write a private token for the local Ray in {folder}")
    return token


def token_for_local_ray() -> None:
    """Point the local Ray about to start at a private token (RAY_AUTH_TOKEN_PATH, which every
    process it starts inherits), removed when this process ends. One per process: Ray's
    driver keeps the first token it read for the life of the process. A token the user
    gave (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH) or token authentication turned off is theirs."""
    if any(os.environ.get(name) for name in TOKEN_VARIABLES):
        return
    if os.environ.get("RAY_AUTH_MODE", "token").lower() != "token":
        return
    token = private_token()
    atexit.register(shutil.rmtree, token.parent, ignore_errors=True)
    os.environ["RAY_AUTH_TOKEN_PATH"] = str(token)
