"""Secrets stay out of what mala-tui prints and keeps: headless lines, transcript copies."""

from __future__ import annotations

import io
import json
import stat
import time
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.runtime.backends.base import MaskError
from mala_tui.runtime.backends.claude_transcripts import rewrite_transcript
from mala_tui.runtime.private.redaction import redact, redact_json_line
from mala_tui.ui.headless import printer

ANTHROPIC = "sk-ant-api03-" + "Q" * 24
GHP = "ghp_" + "Z" * 36


def test_headless_output_is_redacted_as_the_journal_is() -> None:
    out = io.StringIO()
    listen = printer(out, clock=time.gmtime)
    listen(
        ev.SessionStarted(
            at=0.0,
            session="s",
            task=f"use {ANTHROPIC} and {GHP}",
            cwd="/ws",
            window=1000,
            soft_threshold=0.4,
            hard_threshold=0.8,
            max_restarts=1,
            require_approval=False,
        )
    )
    printed = out.getvalue()
    assert "task: use [redacted] and [redacted]" in printed
    assert "sk-ant" not in printed and "ghp_" not in printed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"x-api-key": "plainsecret1", "n": 1}', '{"x-api-key": "[redacted]", "n": 1}'),
        ('"Authorization": "Bearer tok123"', '"Authorization": "[redacted]"'),
        ("headers = {'x-api-key': 'abc'}", "headers = {'x-api-key': '[redacted]'}"),
        ('{\\"x-api-key\\": \\"abc\\"}', '{\\"x-api-key\\": \\"[redacted]\\"}'),
        ("OPENAI_API_KEY='sk-proj-abcdefghijklmnop'", "OPENAI_API_KEY='[redacted]'"),
        ("key sk-proj-AbC_123-xyzXYZ789 end", "key [redacted] end"),
        ("aws AKIAIOSFODNN7EXAMPLE here", "aws [redacted] here"),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG", "aws_secret_access_key = [redacted]"),
        ("the api key idea; AKIA is a prefix", "the api key idea; AKIA is a prefix"),
    ],
)
def test_keys_in_every_quoting_are_redacted(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_a_json_value_is_redacted_by_its_keys_name() -> None:
    line = json.dumps({"headers": {"X-Api-Key": "no-known-shape", "Accept": "json"}})
    assert json.loads(redact_json_line(line)) == {
        "headers": {"X-Api-Key": "[redacted]", "Accept": "json"}
    }


def test_run_json_text_with_a_quoted_key_stays_json() -> None:
    text = json.dumps({"env": {"ANTHROPIC_API_KEY": "abc\\def", "x": 'a "x-api-key": "v" b'}})
    assert json.loads(redact(text)) == {
        "env": {"ANTHROPIC_API_KEY": "[redacted]", "x": 'a "x-api-key": "[redacted]" b'}
    }


def test_the_transcript_copy_is_redacted_as_it_is_written(tmp_path: Path) -> None:
    transcript = tmp_path / "session.jsonl"
    result = {"type": "tool_result", "tool_use_id": "t1", "content": f"{ANTHROPIC} {GHP}"}
    entry = {"type": "user", "message": {"content": [result]}, "toolUseResult": "r"}
    transcript.write_text(json.dumps(entry) + "\nnot json x-api-key: plain\n")
    copies = tmp_path / "copies"
    assert rewrite_transcript(transcript, {"t1": "[masked]"}, copies) == 1
    (copy,) = copies.iterdir()
    kept = copy.read_text()
    assert "sk-ant" not in kept and "ghp_" not in kept and "plain" not in kept
    assert json.loads(kept.splitlines()[0])["message"]["content"][0]["content"] == (
        "[redacted] [redacted]"
    )
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600


def test_a_link_planted_where_the_copy_goes_is_not_followed(tmp_path: Path) -> None:
    transcript = tmp_path / "session.jsonl"
    result = {"type": "tool_result", "tool_use_id": "t1", "content": ANTHROPIC}
    transcript.write_text(json.dumps({"type": "user", "message": {"content": [result]}}) + "\n")
    before = transcript.read_text()
    copies, target = tmp_path / "copies", tmp_path / "target"
    copies.mkdir()
    (copies / "session.originals.jsonl").symlink_to(target)
    with pytest.raises(MaskError, match="the original cannot be kept"):
        rewrite_transcript(transcript, {"t1": "[masked]"}, copies)
    assert not target.exists() and transcript.read_text() == before
