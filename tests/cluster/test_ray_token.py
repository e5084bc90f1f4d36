"""A local Ray started by `--engine ray` without an address keeps its token private.

Ray left to itself writes the token of the local cluster it starts to ~/.ray/auth_token
with the umask's mode, 0644 under the usual 022: another local user could read it and
pass the cluster's token check. mala-tui gives it a token of its own instead, 0600 in a
0700 folder, which every process of that Ray reads and which goes when the driver does.
It starts a real Ray, so it runs in a private network namespace (tests/cluster/token_inside.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mala_tui.bench.netns import run as in_private_network

# Alone: a Ray of its own, started once for the module (as tests/cluster/test_ray_cluster.py).
pytestmark = [pytest.mark.cluster, pytest.mark.integration, pytest.mark.alone]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("ray-token")
    out = folder / "token.json"
    done = in_private_network(
        [sys.executable, "-m", "tests.cluster.token_inside", str(out), str(folder / "root")],
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0 and out.exists(), done.stdout + done.stderr
    return dict(json.loads(out.read_text()))


def test_the_local_rays_token_is_0600_in_a_0700_folder_and_never_in_home(
    local: dict[str, Any],
) -> None:
    assert local["token_mode"] == "0o600"
    assert local["folder_mode"] == "0o700"
    assert local["folder_entries"] == ["auth_token"]
    assert local["home_ray"] == [], "nothing written to ~/.ray"
    assert local["auth_mode"] == "token", "token authentication is on"


def test_every_process_of_that_ray_reads_that_token_and_it_goes_with_the_driver(
    local: dict[str, Any],
) -> None:
    assert local["ray_processes"] > 0
    assert local["their_token_paths"] == [local["token"]]
    # The renamed ones (workers, agents) start with their raylet's environment.
    assert set(local["renamed_with_a_checked_parent"]) <= {True}
    assert not Path(local["token"]).parent.exists(), "removed when the driver exited"
