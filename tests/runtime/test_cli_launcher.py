"""The CLI wrapper: an agent process that outlives a killed mala-tui is ended by the kernel."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mala_tui.runtime.backends import cli_launcher

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or shutil.which("setpriv") is None,
    reason="parent-death signals are a Linux feature (util-linux setpriv)",
)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_the_wrapped_program_dies_with_its_parent(tmp_path: Path) -> None:
    setpriv = shutil.which("setpriv")
    assert setpriv is not None
    script = tmp_path / "wrapped"
    script.write_text(cli_launcher.wrapper_text(setpriv, Path("/bin/sleep")))
    script.chmod(0o700)
    pid_file = tmp_path / "child.pid"
    # A parent that starts the wrapper (as the SDK would) and is then killed with -9.
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys, time\n"
            f"child = subprocess.Popen([{str(script)!r}, '300'])\n"
            f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
            "time.sleep(300)\n",
        ]
    )
    try:
        deadline = time.monotonic() + 20
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline, "the parent did not start its child"
            time.sleep(0.05)
        child = int(pid_file.read_text())
        assert alive(child)
        assert Path(f"/proc/{child}/exe").resolve() == Path("/bin/sleep").resolve()  # exec'd
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(10)
        deadline = time.monotonic() + 10
        while alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(child)
    finally:
        parent.kill()


def test_the_cli_path_points_at_a_wrapper_of_the_bundled_cli() -> None:
    cli_launcher.cli_path.cache_clear()
    path = cli_launcher.cli_path()
    assert path is not None
    text = Path(path).read_text()
    bundled = cli_launcher.bundled_cli()
    assert bundled is not None and str(bundled) in text and "--pdeathsig KILL" in text
    assert os.access(path, os.X_OK)


def test_a_wrapper_that_does_not_run_here_is_not_used(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.write_text("#!/bin/sh\necho 'setpriv: unrecognized option --pdeathsig' >&2\nexit 1\n")
    broken.chmod(0o700)
    working = tmp_path / "working"
    working.write_text("#!/bin/sh\nexit 0\n")
    working.chmod(0o700)
    assert not cli_launcher._runs(broken)
    assert cli_launcher._runs(working)
    assert not cli_launcher._runs(tmp_path / "missing")


def test_each_cli_gets_its_own_wrapper() -> None:
    cli_launcher.cli_path.cache_clear()
    path = cli_launcher.cli_path()
    assert path is not None
    bundled = cli_launcher.bundled_cli()
    assert bundled is not None
    digest = hashlib.sha256(str(bundled).encode()).hexdigest()[:12]
    assert Path(path).name == f"{cli_launcher.WRAPPER_NAME}-{digest}"
