"""A Ray cluster of simulated nodes on this machine, for the cluster tests and benchmark.

`ray.cluster_utils.Cluster` runs a head and several nodes as separate raylets on one
machine; removing a node kills its raylet, and with it every process on it, as a
host's death does. Everything here must run in a private network namespace
(mala_tui.bench.netns): Ray would otherwise advertise, and use, this machine's other
addresses.

The cluster keeps its files under a short folder of its own (Ray's socket paths must
stay under about 107 bytes) and its token there too (token authentication is on,
never the user's ~/.ray), and after it is shut down no process of it is left: any
that is, is said and killed by its pid.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mala_tui.bench.netns import inside
from mala_tui.runtime.cluster.ray_engine import SLOT


class NotPrivate(RuntimeError):
    """A cluster was asked for outside a private network namespace."""


@dataclass
class SimCluster:
    cluster: Any
    folder: Path
    nodes: list[Any] = field(default_factory=list)
    removed: list[Any] = field(default_factory=list)
    leftover: list[int] = field(default_factory=list)
    """Processes of the cluster still there after its shutdown (then killed)."""

    @property
    def address(self) -> str:
        return str(self.cluster.address)

    def add_nodes(self, count: int, slots: int) -> None:
        for _ in range(count):
            self.nodes.append(self.cluster.add_node(num_cpus=1, resources={SLOT: slots}))

    def node_of(self, node_id: str) -> Any:
        return next(node for node in self.nodes if node.node_id == node_id)

    def remove(self, node: Any) -> None:
        """The node dies: its raylet and every process on it."""
        self.cluster.remove_node(node)
        self.nodes.remove(node)
        self.removed.append(node)

    def processes(self) -> list[int]:
        """Processes still running that belong to this cluster: their command line or
        their environment names its folder (Ray's workers rename their command line; what
        they start inherits the environment)."""
        mine = str(self.folder)
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                raw = (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
                text = raw.decode(errors="replace")
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if stat[0] != "Z" and mine in text:
                found.append(int(entry.name))
        return found


#: One token for every cluster this process starts: Ray's client keeps the first token it
#: read for the life of the process, so a second cluster with another would refuse it.
_TOKEN = secrets.token_hex(32)


def cluster_env(folder: Path) -> dict[str, str]:
    """What the cluster's processes (and a driver joining it) need in their environment."""
    (folder / "ray").mkdir(exist_ok=True)
    token = folder / "auth_token"
    if not token.exists():
        token.write_text(_TOKEN)
        token.chmod(0o600)
    return {
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN_PATH": str(token),
        "RAY_BACKEND_LOG_LEVEL": "error",
        "RAY_kill_child_processes_on_worker_exit_with_raylet_subreaper": "1",
        "RAY_USAGE_STATS_ENABLED": "0",
        # Ray's own files (the current cluster's address among them) stay in here too.
        "RAY_TMPDIR": str(folder),
    }


@contextlib.contextmanager
def simulated_cluster(nodes: int, slots: int) -> Iterator[SimCluster]:
    """A head with no slots and `nodes` nodes of `slots` each; shut down (nothing left) after.

    Raises:
        NotPrivate: not inside a private network namespace.
    """
    if not inside():
        raise NotPrivate("a simulated Ray cluster runs only in a private network namespace")
    folder = Path(tempfile.mkdtemp(prefix="mr", dir="/tmp"))
    saved = {name: os.environ.get(name) for name in cluster_env(folder)}
    os.environ.update(cluster_env(folder))
    from ray.cluster_utils import Cluster

    cluster: Any = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 0, "include_dashboard": False, "temp_dir": str(folder / "ray")},
    )
    sim = SimCluster(cluster, folder)
    try:
        sim.add_nodes(nodes, slots)
        yield sim
    finally:
        with contextlib.suppress(Exception):
            cluster.shutdown()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        deadline = time.monotonic() + 10
        while sim.processes() and time.monotonic() < deadline:
            time.sleep(0.2)
        sim.leftover = sim.processes()
        for pid in sim.leftover:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(folder, ignore_errors=True)
