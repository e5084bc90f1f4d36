"""A missing tmux or chromium skips its tests on a newcomer's machine and fails them in CI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.tools import in_ci, require


@pytest.fixture
def empty_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """PATH is one empty folder: no tool is found."""
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", str(folder))
    return folder


def test_a_missing_tool_skips_with_how_to_install_it(
    empty_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        require("chromium")
    assert "apt-get install chromium" in str(skipped.value)


@pytest.mark.parametrize("value", ["true", "1", "yes"])
def test_in_ci_a_missing_tool_fails_the_test(
    empty_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("CI", value)
    with pytest.raises(pytest.fail.Exception) as failed:
        require("tmux")
    assert "apt-get install tmux" in str(failed.value)
    assert "CI runs every test" in str(failed.value)


def test_a_tool_on_path_is_found_whether_or_not_in_ci(
    empty_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = empty_path / "chromium"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    for value in ("true", ""):
        monkeypatch.setenv("CI", value)
        assert require("chromium") == str(tool)


@pytest.mark.parametrize("value", ["", "0", "false", "FALSE"])
def test_ci_set_empty_or_false_is_not_ci(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("CI", value)
    assert not in_ci()
