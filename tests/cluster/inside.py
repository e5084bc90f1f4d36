"""Checks that start Ray, run inside a private network namespace (tests/cluster drives them).

`python -m tests.cluster.inside OUT.json ROOT` (only inside a namespace made by
mala_tui.bench.netns), each with real Claude Code sessions on the loopback model:

- `mala-tui run --engine ray` against a cluster that declares no `mala_slot`;
- the same cluster given a node with slots: a run whose driver is killed (`kill -9`)
  while its sessions work, then `mala-tui resume`, which takes the hosts up again;
- a run on a local Ray started for it, and stopped after it, with `--worktree`: its host
  makes the worktree from its own mirror of the repository, and the driver its own once
  the session has ended, from what the host pushed.

What each did is written to OUT.json for the tests to judge.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mala_tui.bench.netns import inside
from mala_tui.bench.sim_cluster import simulated_cluster
from mala_tui.core import events as ev
from mala_tui.loopback import LoopbackServer, load_scenario, materialize_workspace, offline_cli_env
from mala_tui.runtime.journal.writer import list_runs, read_events
from mala_tui.runtime.session.processes import pid_alive


def mala(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mala_tui", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


async def on_a_cluster(root: Path) -> dict[str, Any]:
    data = root / "no-slots"
    with simulated_cluster(0, 0) as cluster:  # a head alone, no mala_slot anywhere
        env = dict(os.environ, MALA_TUI_STORAGE__DATA_DIR=str(data))
        began = time.monotonic()
        done = mala(
            [
                "run",
                "fix it",
                "--cwd",
                str(root),
                "--headless",
                "--engine",
                "ray",
                "--ray-address",
                cluster.address,
            ],
            env,
        )
        seconds = time.monotonic() - began
        address = cluster.address
        cluster.add_nodes(1, 4)
        reattached = await killed_and_resumed(root / "reattach", cluster.address)
    refused = {
        "returncode": done.returncode,
        "stdout": done.stdout,
        "stderr": done.stderr,
        "seconds": seconds,
        "address": address,
        "made_anything": data.exists(),
    }
    reattached["left"] = cluster.leftover
    return {"no_slots": refused, "reattach": reattached}


async def killed_and_resumed(root: Path, address: str) -> dict[str, Any]:
    """Two sessions; the driver killed once both have worked; `resume` takes their hosts up."""
    scenario = load_scenario("quickstart")
    names = ["r0", "r1"]
    data = root / "data"
    async with LoopbackServer({name: scenario for name in names}, response_delay_s=1.0) as server:
        lines = []
        for name in names:
            workspace = root / name
            workspace.mkdir(parents=True)
            materialize_workspace(scenario, workspace)
            env = offline_cli_env(server.url_for(name), root / "homes" / name)
            table = ", ".join(f"{key} = {json.dumps(value)}" for key, value in sorted(env.items()))
            lines += [
                "[[task]]",
                f'name = "{name}"',
                f"task = {json.dumps(scenario.task)}",
                f'cwd = "{workspace}"',
                f"env = {{ {table} }}",
                "",
            ]
        tasks = root / "tasks.toml"
        tasks.write_text("\n".join(lines))
        env = dict(os.environ, MALA_TUI_STORAGE__DATA_DIR=str(data))
        env["MALA_TUI_AGENT__ALLOWED_TOOLS"] = json.dumps(list(scenario.tools))
        first = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "mala_tui",
            "run",
            "--tasks",
            str(tasks),
            "--headless",
            "--approve",
            "auto",
            "--engine",
            "ray",
            "--ray-address",
            address,
            env=env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        killed_after = await _kill_once_working(first, data, names)
        resumed = await asyncio.to_thread(mala, ["resume", "latest", "--headless"], env)
    (run,) = list_runs(data)
    events = read_events(run.directory / "events.jsonl").events
    pids = [e.pid for e in events if isinstance(e, ev.ProcessStarted) and e.pid]
    return {
        "killed_after": killed_after,
        "returncode": resumed.returncode,
        "stdout": resumed.stdout,
        "stderr": resumed.stderr,
        "run_dir": str(run.directory),
        "cli_alive": [pid for pid in pids if pid_alive(pid)],
        "version_2": [
            "VERSION = 2" in (root / name / "src" / "app.py").read_text() for name in names
        ],
    }


async def _kill_once_working(process: Any, data: Path, names: list[str]) -> int:
    """kill -9 the driver once every session has had two tool results journaled."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.returncode is None:
        await asyncio.sleep(0.3)
        runs = list_runs(data) if data.exists() else []
        if not runs:
            continue
        events = read_events(runs[0].directory / "events.jsonl").events
        results = [
            e.session
            for e in events
            if isinstance(e, ev.MessageRecorded) and e.kind == "tool_result"
        ]
        if all(results.count(name) >= 2 for name in names):
            process.kill()
            await process.wait()
            return len(events)
    process.kill()
    await process.wait()
    return -1


def _after_a_while(find: Any, seconds: float = 10.0) -> list[str]:
    """What `find()` still finds once `seconds` have passed (or as soon as it finds none):
    a worker of a Ray just stopped may take a moment to see its raylet gone."""
    deadline = time.monotonic() + seconds
    found: list[str] = find()
    while found and time.monotonic() < deadline:
        time.sleep(0.2)
        found = find()
    return found


def ray_processes(marker: str) -> list[str]:
    """Processes whose environment names `marker` (every process of that Ray has it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker in (entry / "environ").read_bytes().decode(errors="replace") and pid_alive(
                int(entry.name)
            ):
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
                found.append(f"{entry.name} {cmdline.decode(errors='replace')[:200]}")
        except OSError:
            continue
    return found


async def local_ray(root: Path) -> dict[str, Any]:
    """One real session on a Ray started for the run, and stopped with it."""
    scenario = load_scenario("quickstart")
    workspace = root / "local" / "project"
    workspace.mkdir(parents=True)
    materialize_workspace(scenario, workspace)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "start"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
            cwd=workspace,
            check=True,
            capture_output=True,
        )
    ray_dir = Path(tempfile.mkdtemp(prefix="mr", dir="/tmp"))
    token = ray_dir / "auth_token"
    token.write_text(secrets.token_hex(32))
    async with LoopbackServer(scenario, response_delay_s=0) as server:
        env = dict(os.environ, **offline_cli_env(server.base_url, root / "local" / "home"))
        env.update(
            MALA_TUI_STORAGE__DATA_DIR=str(root / "local" / "data"),
            MALA_TUI_AGENT__ALLOWED_TOOLS=json.dumps(list(scenario.tools)),
            RAY_TMPDIR=str(ray_dir),
            RAY_AUTH_MODE="token",
            RAY_AUTH_TOKEN_PATH=str(token),
        )
        done = await asyncio.to_thread(
            mala,
            [
                *("run", scenario.task, "--cwd", str(workspace), "--headless"),
                *("--engine", "ray", "--worktree"),
            ],
            env,
        )
    (run,) = list_runs(root / "local" / "data")
    events = read_events(run.directory / "events.jsonl").events
    pids = [e.pid for e in events if isinstance(e, ev.ProcessStarted) and e.pid]
    left = _after_a_while(lambda: ray_processes(str(ray_dir)))
    shutil.rmtree(ray_dir, ignore_errors=True)
    started = [e.cwd for e in events if isinstance(e, ev.SessionStarted)]
    made = [e for e in events if isinstance(e, ev.WorktreeCreated)]
    driver_tree = Path(made[0].path) if made else workspace
    wip = subprocess.run(
        ["git", "log", "--format=%s", f"refs/mala/wip/{run.directory.name}/task-1"],
        cwd=workspace,
        capture_output=True,
        text=True,
        check=False,
    )
    host_tree = root / "xdg" / "mala-tui" / "hosts" / run.directory.name / "worktrees" / "task-1"
    return {
        "returncode": done.returncode,
        "stdout": done.stdout,
        "stderr": done.stderr,
        "run_dir": str(run.directory),
        "meta": json.loads((run.directory / "run.json").read_text()),
        "cli_alive": [pid for pid in pids if pid_alive(pid)],
        "ray_exiting": ray_processes(str(ray_dir)),
        "ray_left": left,
        "version_2": "VERSION = 2" in (driver_tree / "src" / "app.py").read_text(),
        "source_untouched": "VERSION = 1" in (workspace / "src" / "app.py").read_text(),
        "driver_tree": str(driver_tree),
        "started_in": started,
        "snapshots": wip.stdout.splitlines(),
        "host_version_2": "VERSION = 2" in (host_tree / "src" / "app.py").read_text(),
    }


def main() -> int:
    if not inside():
        print("run me through mala_tui.bench.netns", file=sys.stderr)
        return 2
    out, root = Path(sys.argv[1]), Path(sys.argv[2])  # the test's folders: it reads them after
    root.mkdir(parents=True, exist_ok=True)
    os.environ["XDG_DATA_HOME"] = str(root / "xdg")
    results = {**asyncio.run(on_a_cluster(root)), "local": asyncio.run(local_ray(root))}
    out.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
