"""Secrets stay out of what mala-tui prints and keeps: headless lines, transcript copies."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

from mala_tui.config import Settings
from mala_tui.core import events as ev
from mala_tui.prompt_files import load_prompts
from mala_tui.runtime.backends.scripted import ScriptedBackend
from mala_tui.runtime.headless import printer
from mala_tui.runtime.journal import RunJournal
from mala_tui.runtime.supervisor import Supervisor

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


def test_transcript_copies_are_redacted_once_masking_kept_them(tmp_path: Path) -> None:
    with RunJournal.create(tmp_path, "run-1", {"mode": "test"}) as journal:
        sup = Supervisor(
            settings=Settings(),
            backend=ScriptedBackend([]),
            prompts=load_prompts(),
            journal=journal,
        )
        copies = journal.directory / "transcripts"
        copies.mkdir()
        copy = copies / "session.1.jsonl"  # as the backend leaves it before rewriting
        copy.write_text(json.dumps({"message": f"my key is {ANTHROPIC}, my token {GHP}"}) + "\n")
        sup.record(
            ev.MaskApplied(
                at=1.0,
                session="s",
                count=1,
                tool_use_ids=("t",),
                placeholders=("[masked]",),
                estimated_tokens=10,
                tokens_before=100,
                total_masked=1,
            )
        )
        assert json.loads(copy.read_text()) == {
            "message": "my key is [redacted], my token [redacted]"
        }
