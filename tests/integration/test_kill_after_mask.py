"""`kill -9` of mala-tui right after a mask: the transcript copy it kept holds no key."""

from __future__ import annotations

import asyncio
import os
import sys
import tomllib
from pathlib import Path

import pytest

from mala_tui.loopback import LoopbackServer, Scenario, materialize_workspace, offline_cli_env
from mala_tui.loopback.scenario import SHIPPED_DIR

pytestmark = pytest.mark.integration

KEYS = "ANTHROPIC_API_KEY=sk-ant-api03-" + "K" * 32 + "\ntoken ghp_" + "G" * 36 + "\n"


def reader_with_secrets() -> Scenario:
    """The soft-zone reader, reading a file of keys first: every mask copies them."""
    data = tomllib.loads((SHIPPED_DIR / "soft-zone-reader.toml").read_text(encoding="utf-8"))
    data["response_delay_s"] = 0
    data["workspace"]["files"].append({"path": "config/secrets.env", "content": KEYS})
    data["steps"].insert(0, {"tool": "Read", "path": "config/secrets.env"})
    return Scenario.model_validate(data)


async def test_a_kill_right_after_a_mask_leaves_no_key_in_the_runs_files(tmp_path: Path) -> None:
    scenario = reader_with_secrets()
    workspace, data = tmp_path / "project", tmp_path / "data"
    workspace.mkdir()
    materialize_workspace(scenario, workspace)
    async with LoopbackServer(scenario, response_delay_s=0) as server:
        env = dict(os.environ, **offline_cli_env(server.base_url, tmp_path / "claude-home"))
        env["MALA_TUI_STORAGE__DATA_DIR"] = str(data)
        process = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "mala_tui", "--set", "agent.model=claude-sonnet-4-5"),
            *("run", scenario.task, "--cwd", str(workspace), "--headless"),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            env=env,
        )
        try:
            async with asyncio.timeout(120):
                # The copy is the first thing a mask writes: kill the moment it appears.
                while not list(data.glob("runs/*/transcripts/*")):
                    assert process.returncode is None, "the run ended without a mask"
                    await asyncio.sleep(0.002)
        finally:
            process.kill()
            await process.wait()
    assert list(data.glob("runs/*/transcripts/*.jsonl"))
    leaks = [
        str(path)
        for path in data.rglob("*")
        if path.is_file() and (b"sk-ant-" in path.read_bytes() or b"ghp_" in path.read_bytes())
    ]
    assert leaks == []
