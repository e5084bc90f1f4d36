"""The Ray engine: session hosts as Ray actors, placed over a cluster's hosts.

Ray (an extra: `pip install 'mala-tui[ray]'`) places the hosts and says when one died;
everything else (the idle timeout, retries, restarts, the journal) is mala-tui's own
(runtime.cluster.session_host, runtime.cluster.driver_runner). Only the Ray engine's
modules touch Ray: this one, the actor and its link (runtime.cluster.ray_host), the checks
that refuse a cluster (runtime.cluster.ray_refusals, whose `ray_module` is the only import
of `ray`), a local Ray's private token (runtime.cluster.ray_token) and what Ray does to
this process, kept in check (runtime.cluster.ray_process).

- Each session host is an async actor, named after the run, the session and the
  attempt, detached so it outlives its driver, never restarted by Ray
  (`max_restarts=0`: recovery is mala-tui's, from checkpoints). It takes one
  `mala_slot`, the logical resource each host declares (`ray start --resources
  '{"mala_slot": 8}'`), and the memory a session needs, spread over the hosts.
- Events come back through the actor's streaming generator, in batches.
- Commands, approvals, permission answers and messages are actor method calls.

Connecting is refused, with one line and before anything is made, when Ray is not
installed, when the address cannot be reached, when the cluster's Ray or Python differs
from this one, or when it declares no `mala_slot`: it never hangs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path
from typing import Any

from mala_tui.runtime.cluster.ray_host import HostActor, RayLink, host_lost
from mala_tui.runtime.cluster.ray_process import (
    keep_raylet_messages_off_the_terminal,
    log_raylet_messages_to,
    own_exit_statuses,
    quiet_stderr,
)
from mala_tui.runtime.cluster.ray_refusals import (
    PROBE_SECONDS,
    EngineRefused,
    probe,
    ray_module,
    split_address,
    version_refusal,
)
from mala_tui.runtime.cluster.ray_token import token_for_local_ray
from mala_tui.runtime.cluster.session_host import HostSetup

#: The namespace every mala-tui actor lives in (`resume` finds a run's hosts there).
NAMESPACE = "mala-tui"
#: The logical resource a host declares, one per session it can run.
SLOT = "mala_slot"


class RayEngine:
    """A connection to a Ray cluster (or a local Ray started for the run)."""

    def __init__(self, *, address: str | None, slots: int, memory_mb: int, run_id: str) -> None:
        self.address = address
        """None: a local instance started for this run (and stopped with it)."""
        self.slots = slots
        self.memory_mb = memory_mb
        self.run_id = run_id
        self._actor: Any = None

    @classmethod
    def connect(
        cls, address: str | None, *, local_slots: int, memory_mb: int, run_id: str = ""
    ) -> RayEngine:
        """Join the cluster at `address`, or start a local one with `local_slots` slots.

        Raises:
            EngineRefused: Ray missing, the address unreachable, other versions, no slots.
        """
        if address is not None:
            split_address(address)
        with quiet_stderr():
            return cls._connect(
                address, local_slots=local_slots, memory_mb=memory_mb, run_id=run_id
            )

    @classmethod
    def _connect(
        cls, address: str | None, *, local_slots: int, memory_mb: int, run_id: str
    ) -> RayEngine:
        ray = ray_module()
        if address is not None:
            probe(address)
        os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "error")
        # A host's CLI is a grandchild of its worker: killed with it, whatever happens.
        os.environ.setdefault("RAY_kill_child_processes_on_worker_exit_with_raylet_subreaper", "1")
        options: dict[str, Any] = {
            "namespace": NAMESPACE,
            "include_dashboard": False,
            "log_to_driver": False,
            "logging_level": logging.ERROR,
        }
        if address is None:
            token_for_local_ray()
            options.update(num_cpus=1, resources={SLOT: local_slots})
        try:
            ray.init(address=address, **options)
        except (RuntimeError, ConnectionError, ValueError, TimeoutError) as exc:
            where = address or "a local Ray"
            refusal = version_refusal(str(exc), where)
            first = next((line for line in str(exc).splitlines() if line.strip()), "")
            raise (refusal or EngineRefused(f"cannot join {where}: {first}")) from None
        keep_raylet_messages_off_the_terminal(ray)
        own_exit_statuses()
        slots = int(ray.cluster_resources().get(SLOT, 0))
        if slots < 1:
            ray.shutdown()
            raise EngineRefused(
                f"the Ray cluster at {address} declares no {SLOT}: start each host with "
                f"`ray start --resources '{{\"{SLOT}\": 8}}'` (8 sessions on that host)"
            )
        return cls(address=address, slots=slots, memory_mb=memory_mb, run_id=run_id)

    def log_to(self, path: Path) -> None:
        """Keep what the raylets say in `path` (the run's folder's `ray.log`) from now on."""
        log_raylet_messages_to(path)

    def _actor_class(self) -> Any:
        ray = ray_module()
        if self._actor is None:
            self._actor = ray.remote(HostActor)
        return self._actor

    def actor_name(self, session: str, attempt: int) -> str:
        return f"{self.run_id}/{session}/{attempt}"

    async def place(self, name: str, attempt: int, setup: HostSetup) -> RayLink:
        ray = ray_module()
        options: dict[str, Any] = {
            "name": self.actor_name(name, attempt),
            "namespace": NAMESPACE,
            "lifetime": "detached",
            "num_cpus": 0,
            "resources": {SLOT: 1},
            "max_restarts": 0,
            "max_task_retries": 0,
            "scheduling_strategy": "SPREAD",
        }
        if self.memory_mb:
            options["memory"] = self.memory_mb * 1024 * 1024
        handle = self._actor_class().options(**options).remote(setup)
        try:
            node, address, pid = await handle.where.remote()
        except ray.exceptions.RayError as exc:
            raise host_lost(exc) from None
        except asyncio.CancelledError:
            with contextlib.suppress(ray.exceptions.RayError, ValueError):
                ray.kill(handle, no_restart=True)
            raise
        return RayLink(handle, node, address, pid)

    def _named(self, name: str, attempt: int) -> Any:
        """The host actor of that name, if the cluster still knows one."""
        ray = ray_module()
        try:
            return ray.get_actor(self.actor_name(name, attempt), namespace=NAMESPACE)
        except ValueError:
            return None

    async def find(self, name: str, attempt: int) -> RayLink | None:
        ray = ray_module()
        handle = self._named(name, attempt)
        if handle is None:
            return None
        try:
            node, address, pid = await handle.where.remote()
        except ray.exceptions.RayError:
            return None
        return RayLink(handle, node, address, pid)

    def alive(self, name: str, attempt: int) -> bool:
        ray = ray_module()
        handle = self._named(name, attempt)
        if handle is None:
            return False
        try:
            ray.get(handle.where.remote(), timeout=PROBE_SECONDS * 10)
        except (ray.exceptions.RayError, TimeoutError):
            return False
        return True

    def close(self) -> None:
        """Leave the cluster (a local instance started for the run stops with it)."""
        ray = ray_module()
        if ray.is_initialized():
            with quiet_stderr():
                # A local instance is waited for: nothing of it outlives the run.
                ray.shutdown(wait_for_processes=self.address is None)
