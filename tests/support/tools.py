"""System tools some tests drive (tmux, Debian's chromium): skipped without them, but not in CI.

A newcomer's machine may lack them, and the README's test command must still pass
there, saying what it left out and how to get it. CI (the `CI` variable set, as
`.ci/run` does after installing both) runs every test: there a missing tool fails
the test instead, so a run cannot pass green without them.
"""

from __future__ import annotations

import os
import shutil

import pytest


def in_ci() -> bool:
    """Whether this is a CI run: CI set to anything but empty, 0 or false (CI=true, CI=1)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false")


def require(tool: str) -> str:
    """The path of `tool` on PATH; without it, skip the test (fail it in CI)."""
    found = shutil.which(tool)
    if found is not None:
        return found
    reason = f"{tool} is not installed (apt-get install {tool}; .ci/run installs it)"
    if in_ci():
        pytest.fail(f"{reason}: CI runs every test", pytrace=False)
    pytest.skip(reason)
