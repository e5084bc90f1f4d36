"""A local Ray started by mala-tui, and where its token is (tests/cluster/test_ray_token.py).

`python -m tests.cluster.token_inside OUT.json ROOT` (only inside a namespace made by
mala_tui.bench.netns): with HOME under ROOT, no token setting of Ray's in the
environment and the usual umask (022, under which Ray's own ~/.ray/auth_token is 0644),
`RayEngine.connect` starts a local Ray; what its token file is, and what Ray's own
processes read, is written to OUT.json, then the Ray is stopped.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

from mala_tui.bench.netns import inside
from mala_tui.runtime.cluster.ray_engine import RayEngine
from mala_tui.runtime.cluster.ray_token import TOKEN_VARIABLES


def mode(path: Path) -> str:
    return oct(stat.S_IMODE(os.lstat(path).st_mode))


def environments(marker: str) -> dict[int, tuple[int, bool, dict[str, str]]]:
    """The processes that have `marker` in their environment (this Ray's): by pid, their
    parent, whether they renamed themselves, and the environment /proc shows.

    A process that renames itself (Ray's workers and agents: `ray::IDLE`,
    `ray::DashboardAgent`) writes its new name over the memory /proc reads its
    environment from, so what /proc shows of theirs can lack variables they were started
    with; they are children of the raylet, which hands them its own environment.
    """
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            raw = (entry / "environ").read_bytes().decode(errors="replace")
            renamed = (entry / "cmdline").read_bytes().startswith(b"ray::")
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if marker in raw:
            env = dict(item.partition("=")[::2] for item in raw.split("\0") if item)
            found[int(entry.name)] = (parent, renamed, env)
    return found


def main() -> int:
    if not inside():
        print("run me through mala_tui.bench.netns", file=sys.stderr)
        return 2
    out, root = Path(sys.argv[1]), Path(sys.argv[2])
    home = root / "home"
    home.mkdir(parents=True)
    os.environ["HOME"] = str(home)
    for name in (*TOKEN_VARIABLES, "RAY_AUTH_MODE"):
        os.environ.pop(name, None)
    ray_dir = tempfile.mkdtemp(prefix="mr", dir="/tmp")  # Ray's socket paths must stay short
    os.environ["RAY_TMPDIR"] = ray_dir
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    os.umask(0o022)
    engine = RayEngine.connect(None, local_slots=1, memory_mb=0, run_id="token")
    try:
        token = Path(os.environ["RAY_AUTH_TOKEN_PATH"])
        ray_processes = environments(ray_dir)
        found: dict[str, Any] = {
            "token": str(token),
            "token_mode": mode(token),
            "folder_mode": mode(token.parent),
            "folder_entries": sorted(entry.name for entry in token.parent.iterdir()),
            "home_ray": sorted(str(path) for path in (home / ".ray").rglob("*"))
            if (home / ".ray").exists()
            else [],
            "auth_mode": os.environ.get("RAY_AUTH_MODE"),
            "ray_processes": len(ray_processes),
            "their_token_paths": sorted(
                {
                    env.get("RAY_AUTH_TOKEN_PATH", "")
                    for _, renamed, env in ray_processes.values()
                    if not renamed
                }
            ),
            "renamed_with_a_checked_parent": sorted(
                parent in ray_processes and not ray_processes[parent][1]
                for parent, renamed, _ in ray_processes.values()
                if renamed
            ),
        }
    finally:
        engine.close()
        shutil.rmtree(ray_dir, ignore_errors=True)
    out.write_text(json.dumps(found, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
