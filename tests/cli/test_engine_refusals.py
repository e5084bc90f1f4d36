"""`run --engine ray` refused in one line with exit status 2, before anything is made.

The refusals that need no cluster are here; the one that needs a cluster (no
`mala_slot` declared) is in tests/cluster, on a real one.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from mala_tui.runtime.cluster.ray_refusals import EngineRefused, version_refusal


def run_cli(tmp_path: Path, *args: str, prelude: str = "") -> subprocess.CompletedProcess[str]:
    """`mala-tui run --headless ...` in a fresh interpreter (after `prelude`), data under tmp."""
    code = f"{prelude}\nimport sys\nfrom mala_tui.cli import main\nsys.exit(main(sys.argv[1:]))"
    env = dict(os.environ, MALA_TUI_STORAGE__DATA_DIR=str(tmp_path / "data"))
    return subprocess.run(
        [sys.executable, "-c", code, "run", "fix it", "--cwd", str(tmp_path), "--headless", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_without_ray_installed_the_refusal_names_the_extra(tmp_path: Path) -> None:
    # `import ray` fails as it does where the extra was not installed.
    done = run_cli(tmp_path, "--engine", "ray", prelude="import sys; sys.modules['ray'] = None")
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "mala-tui run: --engine ray needs Ray, which is not installed: "
        "pip install 'mala-tui[ray]'\n"
    )
    assert not (tmp_path / "data").exists(), "nothing was made"


def test_an_address_nobody_answers_at_is_refused_at_once(tmp_path: Path) -> None:
    address = f"127.0.0.1:{free_port()}"
    done = run_cli(tmp_path, "--engine", "ray", "--ray-address", address)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"mala-tui run: cannot reach the Ray cluster at {address}: ")
    assert "Connection refused" in done.stderr and done.stderr.count("\n") == 1
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize(
    ("address", "said"),
    [
        ("ray://10.0.0.5:10001", "Ray Client addresses are not supported"),
        ("10.0.0.5", "expected HOST:PORT"),
        ("10.0.0.5:http", "expected HOST:PORT"),
    ],
)
def test_addresses_of_the_wrong_shape_are_refused(tmp_path: Path, address: str, said: str) -> None:
    done = run_cli(tmp_path, "--engine", "ray", "--ray-address", address)
    assert done.returncode == 2
    assert done.stderr.startswith(f"mala-tui run: --ray-address {address}: ")
    assert said in done.stderr and done.stderr.count("\n") == 1


def test_an_address_without_the_ray_engine_is_refused(tmp_path: Path) -> None:
    done = run_cli(tmp_path, "--ray-address", "127.0.0.1:6379")
    assert done.returncode == 2
    assert done.stderr == "mala-tui run: --ray-address needs --engine ray\n"


def test_rays_version_mismatch_becomes_one_line_naming_both_sides() -> None:
    # The text Ray 2.60 raises when the cluster was started with other versions.
    message = (
        "Version mismatch: The cluster was started with:\n"
        "    Ray: 2.59.0\n    Python: 3.12.3\n"
        "This process on node 10.0.0.7 was started with:\n"
        "    Ray: 2.60.0\n    Python: 3.11.2\n"
    )
    refusal = version_refusal(message, "10.0.0.5:6379")
    assert isinstance(refusal, EngineRefused)
    assert str(refusal) == (
        "the Ray cluster at 10.0.0.5:6379 runs Ray 2.59.0 on Python 3.12.3, this mala-tui "
        "Ray 2.60.0 on Python 3.11.2: every host and the driver need the same versions"
    )
    assert version_refusal("Failed to connect to GCS", "x:1") is None


def test_an_address_where_another_service_listens_is_refused_not_waited_on(
    tmp_path: Path,
) -> None:
    # Ray would wait minutes on it: an HTTP/1 server, as a web server on that port would be.
    import http.server
    import threading

    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    try:
        address = f"127.0.0.1:{server.server_address[1]}"
        done = run_cli(tmp_path, "--engine", "ray", "--ray-address", address)
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"mala-tui run: something answers at {address}, but not a Ray cluster's GCS: give the "
        "address `ray start --head` printed (its --port, 6379 by default)\n"
    )
    assert not (tmp_path / "data").exists()
