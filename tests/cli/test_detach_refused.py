"""`--detach` with no private folder for the run's socket: refused before anything is made.

When another local user made `/tmp/mala-tui-<uid>` first, the run's host could not serve;
started anyway, it left a journal with nothing in it, listed as running for good. The
folder is now checked before the host starts (the check itself, on real folders, is
tests/runtime/test_channel.py's).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mala_tui.runtime.consoles import run_host as host
from mala_tui.runtime.consoles.sockets import ChannelError


def test_no_private_socket_folder_refuses_in_one_line_and_starts_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def planted() -> Path:
        raise ChannelError("/tmp/mala-tui-1000 is owned by another user")

    def never(*args: object, **kwargs: object) -> int:
        raise AssertionError("the host was started")

    monkeypatch.setattr(host, "socket_folder", planted)
    monkeypatch.setattr("os.posix_spawn", never)
    assert host.spawn(["run", "--detach", "t"], "run") == host.EXIT_NO_SOCKET == 74
    err = capsys.readouterr().err
    assert err == (
        "mala-tui run: cannot start the run's host: /tmp/mala-tui-1000 is owned by another user\n"
    )
