"""Fixtures shared by every tier: no test reads or writes the real user's dirs."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.support.supervisors import close_journals
from tests.support.tools import require

# CI runs on 2 busy cores: generation speed and per-example deadlines are not what
# these property tests are about.
settings.register_profile(
    "mala", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=150
)
# The fault suite's long fuzzing: HYPOTHESIS_PROFILE=long (see docs/BENCHMARKS.md).
settings.register_profile("long", settings.get_profile("mala"), max_examples=5000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "mala"))


@pytest.fixture(autouse=True)
def isolated_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Config, data and cache dirs under tmp_path; no MALA_TUI_ setting leaks in from outside."""
    for name in list(os.environ):
        if name.startswith("MALA_TUI_"):
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    for var, sub in (
        ("XDG_CONFIG_HOME", "config"),
        ("XDG_DATA_HOME", "data"),
        ("XDG_CACHE_HOME", "cache"),
        ("XDG_STATE_HOME", "state"),
    ):
        (home / sub).mkdir(parents=True)
        monkeypatch.setenv(var, str(home / sub))
    monkeypatch.setenv("MALA_TUI_CONFIG_FILE", str(home / "config" / "mala-tui" / "config.toml"))
    yield home


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--web-screenshot",
        metavar="PATH",
        help="the browser test also saves its picture of the web console here "
        "(how screenshots/web-console.png is made)",
    )


@pytest.fixture(autouse=True)
def closed_journals() -> Iterator[None]:
    """Journals a test's supervisors opened are closed when it ends, pass or fail."""
    yield
    close_journals()


@pytest.fixture
def tmux_installed() -> None:
    """A test in a real terminal: skipped without tmux, failed in CI (tests/support/tools.py)."""
    require("tmux")


@pytest.fixture
def chromium_installed() -> None:
    """A test in a real browser: skipped without chromium, failed in CI (tests/support/tools.py)."""
    require("chromium")
