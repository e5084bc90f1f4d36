"""The Ray engine: session hosts as Ray actors, placed over a cluster's hosts.

The only module that imports `ray` (an extra: `pip install 'mala-tui[ray]'`). Ray
places the hosts and says when one died; everything else (the idle timeout, retries,
restarts, the journal) is mala-tui's own (runtime.cluster.session_host,
runtime.cluster.driver_runner).

- Each session host is an async actor, named after the run, the session and the
  attempt, detached so it outlives its driver, never restarted by Ray
  (`max_restarts=0`: recovery is mala-tui's, from checkpoints). It takes one
  `mala_slot`, the logical resource each host declares (`ray start --resources
  '{"mala_slot": 8}'`), and the memory a session needs, spread over the hosts.
- Events come back through the actor's streaming generator, in batches.
- Commands, approvals, permission answers and messages are actor method calls.

A local Ray (no address) gets a token of its own, 0600 in a 0700 folder of its own:
Ray left to itself writes the token it makes to `~/.ray/auth_token` as the umask
allows, often 0644, where any local user can read it and pass the cluster's token check.

Connecting is refused, with one line and before anything is made, when Ray is not
installed, when the address cannot be reached (probed first, with a short timeout:
Ray itself would wait a long time), when the cluster's Ray or Python differs from this
one, or when it declares no `mala_slot`: it never hangs.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import logging
import os
import secrets
import shutil
import signal
import socket
import sys
import tempfile
from collections import deque
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mala_tui.core.observations import Decision
from mala_tui.core.permissions import AnsweredBy
from mala_tui.runtime.cluster.host_link import HostLostError
from mala_tui.runtime.cluster.session_host import HostSetup, SessionHost
from mala_tui.runtime.cluster.wire import Batch
from mala_tui.runtime.private.files import append_private, private_folder
from mala_tui.runtime.private.redaction import redact

#: The namespace every mala-tui actor lives in (`resume` finds a run's hosts there).
NAMESPACE = "mala-tui"
#: The logical resource a host declares, one per session it can run.
SLOT = "mala_slot"
EXTRA = "pip install 'mala-tui[ray]'"
#: How long reaching the cluster's address may take before the run is refused.
PROBE_SECONDS = 3.0
_PR_SET_PDEATHSIG = 1


class EngineRefused(Exception):
    """The cluster cannot be used as asked; the message is one line saying why and what to do."""


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Ray's native code writes to the process's stderr (file descriptor 2) as it loads and
    connects, whatever its log level: warnings about the network, a line saying which level
    it took. That is the app's screen, or the one line a refusal must be; so while Ray
    starts, descriptor 2 writes into a scratch file instead, which is then dropped."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as scratch:
        os.dup2(scratch.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


#: Where Ray reads a token from, before ~/.ray/auth_token: the token itself, or a file holding it.
TOKEN_VARIABLES = ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")


def private_token(parent: Path | None = None) -> Path:
    """A fresh token for a local Ray, in `auth_token` (0600) alone in a new folder (0700) of
    this user's, made under `parent` (the system's temporary folder by default).

    Raises:
        EngineRefused: the folder or the file cannot be made, or is not private.
    """
    try:
        folder = Path(tempfile.mkdtemp(prefix="mala-tui-ray-", dir=parent))
    except OSError as exc:
        where = parent or tempfile.gettempdir()
        raise EngineRefused(
            f"cannot make a private folder for the local Ray's token in {where}: "
            f"{exc.strerror or exc}"
        ) from None
    token = folder / "auth_token"
    try:
        # Exact modes, whatever the umask took away (Ray must still read it). Nobody else can
        # write in the new folder, so nothing can be planted between the checks and the chmod.
        folder.chmod(0o700)
        written = private_folder(folder, make=False) and append_private(
            token, secrets.token_hex(32)
        )
        if written:
            token.chmod(0o600)
    except OSError:
        written = False
    if not written:
        shutil.rmtree(folder, ignore_errors=True)
        raise EngineRefused(f"cannot write a private token for the local Ray in {folder}")
    return token


def _token_for_local_ray() -> None:
    """Point the local Ray about to start at a private token (RAY_AUTH_TOKEN_PATH, which every
    process it starts inherits), removed when this process ends. One per process: Ray's
    driver keeps the first token it read for the life of the process. A token the user
    gave (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH) or token authentication turned off is theirs."""
    if any(os.environ.get(name) for name in TOKEN_VARIABLES):
        return
    if os.environ.get("RAY_AUTH_MODE", "token").lower() != "token":
        return
    token = private_token()
    atexit.register(shutil.rmtree, token.parent, ignore_errors=True)
    os.environ["RAY_AUTH_TOKEN_PATH"] = str(token)


def _ray() -> Any:
    """The `ray` module (typed loosely: its stubs are partial), or the refusal to run without it."""
    try:
        import ray
    except ImportError:
        raise EngineRefused(f"--engine ray needs Ray, which is not installed: {EXTRA}") from None
    return ray


def split_address(address: str) -> tuple[str, int]:
    """HOST:PORT of a cluster's GCS (`ray start --head` prints it).

    Raises:
        EngineRefused: not of that shape, or a Ray Client address (ray://).
    """
    if "://" in address:
        raise EngineRefused(
            f"--ray-address {address}: Ray Client addresses are not supported; run mala-tui on "
            "a host of the cluster and give the head's address as HOST:PORT (e.g. 10.0.0.5:6379)"
        )
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise EngineRefused(
            f"--ray-address {address}: expected HOST:PORT, the address `ray start --head` printed"
        )
    return host.strip("[]"), int(port)


#: HTTP/2's connection preface and an empty SETTINGS frame: what a gRPC client says first.
_H2_HELLO = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
_H2_SETTINGS = 0x04


def probe(address: str, timeout: float = PROBE_SECONDS) -> None:
    """Raise EngineRefused unless a Ray cluster's GCS answers at the address within `timeout`.

    Something must accept the connection, and (unless Ray's TLS is on) answer HTTP/2 as a
    gRPC server does, with a SETTINGS frame: `ray.init` on an address where some other
    service listens would otherwise wait for minutes.
    """
    host, port = split_address(address)
    try:
        with socket.create_connection((host, port), timeout=timeout) as connection:
            if os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true"):
                return
            connection.sendall(_H2_HELLO)
            answer = b""
            while len(answer) < 9:
                chunk = connection.recv(9 - len(answer))
                if not chunk:
                    break
                answer += chunk
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise EngineRefused(
            f"cannot reach the Ray cluster at {address}: {reason} (is `ray start --head` running "
            "there, and is this host allowed to reach its port?)"
        ) from None
    if len(answer) < 9 or answer[3] != _H2_SETTINGS:
        raise EngineRefused(
            f"something answers at {address}, but not a Ray cluster's GCS: give the address "
            "`ray start --head` printed (its --port, 6379 by default)"
        )


def version_refusal(message: str, address: str) -> EngineRefused | None:
    """The refusal for Ray's "Version mismatch" error (None for any other message)."""
    if "Version mismatch" not in message:
        return None
    versions: list[tuple[str, str]] = []
    ray_version = ""
    for line in message.splitlines():
        key, _, value = line.strip().partition(":")
        if key == "Ray":
            ray_version = value.strip()
        elif key == "Python":
            versions.append((ray_version, value.strip()))
    if len(versions) != 2:
        return EngineRefused(f"the Ray cluster at {address} runs another Ray or Python version")
    (theirs_ray, theirs_py), (ours_ray, ours_py) = versions
    return EngineRefused(
        f"the Ray cluster at {address} runs Ray {theirs_ray} on Python {theirs_py}, this mala-tui "
        f"Ray {ours_ray} on Python {ours_py}: every host and the driver need the same versions"
    )


#: What the cluster's raylets said to this driver (their warnings, a worker that died),
#: kept for the run's `ray.log` (see `RayEngine.log_to`) instead of printed.
RAYLET_MESSAGES: deque[str] = deque(maxlen=500)
_log_file: list[Path] = []


def _keep(data: dict[str, Any], ignore_prefix: bool = False) -> None:
    lines = [str(line) for line in data.get("lines", ())]
    RAYLET_MESSAGES.extend(lines)
    if _log_file:
        with contextlib.suppress(OSError), _log_file[0].open("a", encoding="utf-8") as log:
            log.writelines(f"{redact(line)}\n" for line in lines)


def _keep_raylet_messages_off_the_terminal(ray: Any) -> None:
    """Ray's driver prints what the raylets report (start-up warnings, a worker that died)
    on this process's stdout: the headless lines, or the app's screen. They are kept for
    the run's `ray.log` instead (the journal says what matters: a host lost)."""
    worker_module = sys.modules.get("ray._private.worker")
    if worker_module is not None:
        setattr(worker_module, "print_to_stdstream", _keep)  # noqa: B010 (no stub for it)


def _die_with_parent() -> None:
    """The host's worker dies the moment its raylet (its parent) does, and with it the CLI
    (which dies with the worker): a node gone takes its sessions with it, at once."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _own_exit_statuses() -> None:
    """Children's exit statuses back to this process. With the raylet as subreaper (set in
    `connect`), Ray's core worker, in the driver and in every worker, sets SIGCHLD to be
    ignored, so the kernel reaps each child itself and every `subprocess.run` reads 0 as
    its exit status, whatever it was: a git that failed would pass for one that worked.
    The default disposition gives them back (everything this process starts, it waits for);
    the raylet still kills what a dead worker leaves behind."""
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    except ValueError:  # not the main thread (an async actor's): the process-wide call
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.signal(int(signal.SIGCHLD), 0)  # SIG_DFL


class HostActor:
    """A session host in a Ray worker (the actor class; `ray.remote` is applied on use)."""

    def __init__(self, setup: HostSetup) -> None:
        _die_with_parent()
        _own_exit_statuses()
        ray = _ray()
        self.host = SessionHost(setup, on_exit=self._exit)
        context = ray.get_runtime_context()
        self.node = context.get_node_id()
        self.address = ray.util.get_node_ip_address()

    async def where(self) -> tuple[str, str, int]:
        """Start the session (in the actor's event loop) and say where it runs."""
        self.host.start()
        return self.node, self.address, os.getpid()

    async def batches(self, after: int) -> AsyncIterator[Batch]:
        async for batch in self.host.batches(after):
            yield batch

    async def ack(self, position: int) -> None:
        self.host.ack(position)

    async def apply(self, action: str) -> None:
        self.host.apply(action)

    async def hurry(self) -> None:
        self.host.hurry()

    async def budget_reached(self, over: bool, reason: str) -> None:
        self.host.budget_reached(over, reason)

    async def answer_approval(
        self,
        number: int,
        decision: Decision,
        edited_text: str | None,
        by: AnsweredBy,
        reason: str,
    ) -> bool:
        return self.host.answer_approval(number, decision, edited_text, by, reason)

    async def answer_permission(self, key: int, allow: bool, message: str) -> bool:
        return self.host.answer_permission(key, allow, message)

    async def release(self) -> None:
        """The driver has what it needs: the host goes."""
        ray = _ray()
        await self.host.close()
        ray.actor.exit_actor()

    def _exit(self) -> None:
        """Orphaned, its session wound down, and nobody came for the rest: the host goes."""
        os._exit(0)


def _lost(exc: BaseException, node: str = "", address: str = "") -> HostLostError:
    text = str(exc)
    reason = "its node died" if "node has died" in text or "node died" in text else ""
    if not reason:
        first = next((line.strip() for line in text.splitlines() if line.strip()), "")
        reason = f"{type(exc).__name__}: {first}"[:300]
    return HostLostError(reason, node, address)


@dataclass
class RayLink:
    """The driver's end of one host actor."""

    handle: Any
    node: str
    address: str
    pid: int = 0
    """The host's process on its node."""

    async def batches(self, after: int) -> AsyncIterator[Batch]:
        ray = _ray()
        try:
            stream = self.handle.batches.options(num_returns="streaming").remote(after)
            async for ref in stream:
                batch: Batch = await ref
                yield batch
        except ray.exceptions.RayError as exc:
            raise _lost(exc, self.node, self.address) from None

    def tell(self, method: str, *args: object) -> None:
        ray = _ray()
        with contextlib.suppress(ray.exceptions.RayError):
            getattr(self.handle, method).remote(*args)

    async def release(self) -> None:
        ray = _ray()
        with contextlib.suppress(ray.exceptions.RayError):
            await self.handle.release.remote()

    async def kill(self) -> None:
        ray = _ray()
        with contextlib.suppress(ray.exceptions.RayError, ValueError):
            ray.kill(self.handle, no_restart=True)


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
        with _quiet_stderr():
            return cls._connect(
                address, local_slots=local_slots, memory_mb=memory_mb, run_id=run_id
            )

    @classmethod
    def _connect(
        cls, address: str | None, *, local_slots: int, memory_mb: int, run_id: str
    ) -> RayEngine:
        ray = _ray()
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
            _token_for_local_ray()
            options.update(num_cpus=1, resources={SLOT: local_slots})
        try:
            ray.init(address=address, **options)
        except (RuntimeError, ConnectionError, ValueError, TimeoutError) as exc:
            where = address or "a local Ray"
            refusal = version_refusal(str(exc), where)
            first = next((line for line in str(exc).splitlines() if line.strip()), "")
            raise (refusal or EngineRefused(f"cannot join {where}: {first}")) from None
        _keep_raylet_messages_off_the_terminal(ray)
        _own_exit_statuses()
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
        _log_file[:] = [path]
        if RAYLET_MESSAGES:
            _keep({"lines": list(RAYLET_MESSAGES)})

    def _actor_class(self) -> Any:
        ray = _ray()
        if self._actor is None:
            self._actor = ray.remote(HostActor)
        return self._actor

    def actor_name(self, session: str, attempt: int) -> str:
        return f"{self.run_id}/{session}/{attempt}"

    async def place(self, name: str, attempt: int, setup: HostSetup) -> RayLink:
        ray = _ray()
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
            raise _lost(exc) from None
        except asyncio.CancelledError:
            with contextlib.suppress(ray.exceptions.RayError, ValueError):
                ray.kill(handle, no_restart=True)
            raise
        return RayLink(handle, node, address, pid)

    def _named(self, name: str, attempt: int) -> Any:
        """The host actor of that name, if the cluster still knows one."""
        ray = _ray()
        try:
            return ray.get_actor(self.actor_name(name, attempt), namespace=NAMESPACE)
        except ValueError:
            return None

    async def find(self, name: str, attempt: int) -> RayLink | None:
        ray = _ray()
        handle = self._named(name, attempt)
        if handle is None:
            return None
        try:
            node, address, pid = await handle.where.remote()
        except ray.exceptions.RayError:
            return None
        return RayLink(handle, node, address, pid)

    def alive(self, name: str, attempt: int) -> bool:
        ray = _ray()
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
        ray = _ray()
        if ray.is_initialized():
            with _quiet_stderr():
                # A local instance is waited for: nothing of it outlives the run.
                ray.shutdown(wait_for_processes=self.address is None)
