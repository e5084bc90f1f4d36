"""`mala-tui loopback serve` as a user runs it: a foreground process stopped with Ctrl-C."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import sys
from pathlib import Path

import aiohttp
import pytest

from mala_tui.cli import main
from mala_tui.loopback import read_jsonl
from tests.loopback.loopback_bodies import Conversation

SERVE = [sys.executable, "-m", "mala_tui", "loopback", "serve"]


async def test_serve_prints_url_and_env_serves_and_writes_its_log_on_ctrl_c(
    tmp_path: Path,
) -> None:
    log = tmp_path / "log.jsonl"
    process = await asyncio.create_subprocess_exec(
        *SERVE,
        "--scenario",
        "quickstart",
        "--port",
        "0",
        "--log",
        str(log),
        "--workspace",
        str(tmp_path / "ws"),
        "--home",
        str(tmp_path / "home"),
        "--delay",
        "0",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    try:
        async with asyncio.timeout(20):
            banner = (await process.stdout.readuntil(b"--allowedTools")).decode()
            base_url = re.search(r"loopback model server: (http://127\.0\.0\.1:\d+)", banner)
            assert base_url is not None
            assert f"export ANTHROPIC_BASE_URL={base_url.group(1)}\n" in banner
            assert f"export CLAUDE_CONFIG_DIR={tmp_path / 'home'}/claude-config\n" in banner
            # The CLI's own compaction stays on, as for the sessions mala-tui manages.
            assert "DISABLE_AUTO_COMPACT" not in banner
            assert "--model claude-sonnet-4-5 --tools Read,Bash,Grep,Glob,Edit,Write" in banner
            assert (tmp_path / "ws/src/app.py").stat().st_size == 6000

            async with aiohttp.ClientSession() as http:
                url = base_url.group(1) + "/v1/messages"
                async with http.post(url, json=Conversation("review").body(stream=False)) as reply:
                    answer = await reply.json()
            assert answer["content"][-1]["name"] == "Glob"

            process.send_signal(signal.SIGINT)
            rest, errors = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0, errors.decode()
    assert re.search(r"1 requests \(0 count_tokens\); prompt tokens \d+", rest.decode())
    records = read_jsonl(log)
    assert [(r.step_id, r.status) for r in records] == [("s001", 200)]


def test_a_bad_scenario_is_a_usage_error_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"name": "x", "task": "t", "final_answer": "f", "steps": []}))
    assert main(["loopback", "serve", "--scenario", str(bad)]) == 2
    captured = capsys.readouterr()
    assert f"{bad}: steps: List should have at least 1 item" in captured.err
