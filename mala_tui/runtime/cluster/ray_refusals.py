"""Refusing a Ray cluster before anything is made on it, in one line saying why.

A run with `--engine ray` is refused when Ray is not installed (an extra: `pip install
'mala-tui[ray]'`), when the address is not a cluster's GCS HOST:PORT or cannot be reached
(probed first, with a short timeout: Ray itself would wait a long time), or when the
cluster's Ray or Python differs from this one: it never hangs. `ray_module` is the only
place in mala-tui that imports `ray`.
"""

from __future__ import annotations

import os
import socket
from typing import Any

EXTRA = "pip install 'mala-tui[ray]'"
#: How long reaching the cluster's address may take before the run is refused.
PROBE_SECONDS = 3.0


class EngineRefused(Exception):
    """The cluster cannot be used as asked; the message is one line saying why and what to do."""


def ray_module() -> Any:
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
