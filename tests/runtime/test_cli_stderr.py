"""What the CLI and the SDK print is cleaned, redacted and kept, never passed on raw."""

from __future__ import annotations

import logging
import stat
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mala_tui.runtime.backends.base import ProblemItem, SessionSpec
from mala_tui.runtime.backends.claude import AgentStreamError, ClaudeBackend
from mala_tui.runtime.backends.claude_options import build_options
from mala_tui.runtime.backends.cli_stderr import StderrLog, keep_sdk_log
from mala_tui.runtime.private.files import append_private

HOSTILE = "boom \x1b]0;PWNED\x07\x1b[2J key sk-ant-api03-abcdefghijklmnop x-api-key: hunter2"


def test_a_line_is_kept_cleaned_and_redacted_in_a_private_file(tmp_path: Path) -> None:
    log = StderrLog(tmp_path / "stderr" / "s.log")
    line = log.add(HOSTILE + "\n")
    assert line == "boom \u241b]0;PWNED\u2407\u241b[2J key [redacted] x-api-key: [redacted]"
    assert (tmp_path / "stderr" / "s.log").read_text(encoding="utf-8") == line + "\n"
    assert stat.S_IMODE((tmp_path / "stderr" / "s.log").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "stderr").stat().st_mode) == 0o700
    assert log.said(line).endswith(f"(all of it in {tmp_path / 'stderr' / 's.log'})")


def test_a_planted_symlink_is_not_followed_and_the_file_is_bounded(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("")
    (tmp_path / "s.log").symlink_to(target)
    assert not append_private(tmp_path / "s.log", "x\n")
    assert target.read_text() == ""
    assert append_private(tmp_path / "b.log", "x" * 10, limit=10)
    assert not append_private(tmp_path / "b.log", "more", limit=10)
    assert (tmp_path / "b.log").read_text() == "x" * 10


def test_the_sdks_log_records_go_to_the_runs_folder_not_the_terminal(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    keep_sdk_log(tmp_path / "sdk.log")
    try:
        logging.getLogger("claude_agent_sdk._internal.query").error("reader: %s", HOSTILE)
    finally:
        keep_sdk_log(None)
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")
    kept = (tmp_path / "sdk.log").read_text(encoding="utf-8")
    assert (
        kept == "reader: boom \u241b]0;PWNED\u2407\u241b[2J key [redacted] x-api-key: [redacted]\n"
    )


def test_the_clis_stderr_is_always_piped(tmp_path: Path) -> None:
    spec = SessionSpec(name="s", task="t", cwd=tmp_path)
    assert build_options(spec, resume=None, hooks={}).stderr is not None


async def test_stderr_is_said_once_a_turn_and_with_a_broken_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = ClaudeBackend.for_run(tmp_path)
    client = backend.create(
        SessionSpec(name="a/b", task="t", cwd=tmp_path), resume=None, clock=time.time
    )
    client._on_stderr(HOSTILE)
    client._on_stderr("second line of the same turn")

    async def ended() -> AsyncIterator[object]:
        return
        yield

    monkeypatch.setattr(client._client, "receive_messages", ended)
    items = [item async for item in client.stream()]
    assert len(items) == 1 and isinstance(items[0], ProblemItem)
    assert items[0].message.startswith("boom \u241b]0;PWNED\u2407\u241b[2J key [redacted]")
    (kept,) = (tmp_path / "stderr").iterdir()
    assert kept.name.startswith("a-b-") and len(kept.read_text().splitlines()) == 2

    async def broken() -> AsyncIterator[object]:
        async for message in ended():  # no message, then the CLI's failure
            yield message
        raise RuntimeError("Command failed with exit code 1")

    monkeypatch.setattr(client._client, "receive_messages", broken)
    with pytest.raises(AgentStreamError, match="exit code 1; Claude Code said: second line"):
        [item async for item in client.stream()]
