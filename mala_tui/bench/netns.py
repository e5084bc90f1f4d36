"""Run a command in a private network namespace with only loopback up.

Ray advertises the machine's first network interface even when told
`--node-ip-address=127.0.0.1`, so a Ray cluster started on a shared machine (a test,
a benchmark) would be reachable from that interface's network, and would use it. In
a namespace of its own (`unshare -n`, which needs root or user namespaces) the only
interface is `lo`, brought up here: every address Ray finds is 127.0.0.1, and nothing
it starts can be reached from outside. The whole scenario (the model server, the
cluster, the driver) runs inside; only files cross back.

`python -m mala_tui.bench.netns COMMAND...` runs one command that way.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

#: Set in the environment of a command run inside (the namespace is already private).
INSIDE = "MALA_PRIVATE_NETNS"


class NetnsUnavailable(RuntimeError):
    """A private network namespace cannot be made here; the message says why."""


def inside() -> bool:
    """True in a process started by `private_network` (or a child of one)."""
    return os.environ.get(INSIDE) == "1"


def private_network(argv: Sequence[str]) -> list[str]:
    """The command line that runs `argv` in a private network namespace, loopback up.

    Raises:
        NetnsUnavailable: `unshare` or `ip` is missing.
    """
    unshare, ip = shutil.which("unshare"), shutil.which("ip")
    if unshare is None or ip is None:
        missing = "unshare (util-linux)" if unshare is None else "ip (iproute2)"
        raise NetnsUnavailable(f"a private network namespace needs {missing}")
    # `sh -c '...' sh ARGS`: the arguments go through "$@" untouched by the shell.
    script = f'{ip} link set lo up && export {INSIDE}=1 && exec "$@"'
    return [unshare, "--net", "--", "/bin/sh", "-c", script, "sh", *argv]


def run(
    argv: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float | None = None,
    capture: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run `argv` in a private network namespace and wait for it (text output captured).

    Raises:
        NetnsUnavailable: no namespace can be made (not root, no unshare, no ip).
        subprocess.TimeoutExpired: it ran longer than `timeout` (it is killed first).
    """
    command = private_network(argv)
    # Its own process group: on a timeout everything it started goes with it.
    with subprocess.Popen(
        command,
        env=env,
        cwd=cwd,
        text=True,
        stdout=subprocess.PIPE if capture else None,
        stderr=subprocess.PIPE if capture else None,
        start_new_session=True,
    ) as process:
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise
        except BaseException:  # Ctrl-C: nothing started here outlives it
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            raise
    result = subprocess.CompletedProcess(command, process.returncode, out, err)
    if result.returncode != 0 and "unshare failed" in (err or ""):
        raise NetnsUnavailable(f"unshare --net refused: {err.strip()}")
    return result


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m mala_tui.bench.netns COMMAND [ARG...]", file=sys.stderr)
        return 2
    try:
        return run(args, capture=False).returncode
    except NetnsUnavailable as exc:
        print(f"netns: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
