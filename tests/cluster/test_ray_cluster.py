"""Sessions on a real Ray cluster: simulated nodes, real Claude Code, a node lost.

Ray must only ever use 127.0.0.1, and it advertises the machine's first interface
even when told otherwise, so everything that starts Ray runs in a private network
namespace with only loopback up (mala_tui.bench.netns; we are root, CI too). Each
fixture starts Ray once for its module, runs its whole scenario inside, and the tests
judge what it left: journals, workspaces, exit statuses, processes.

- `cli_run`: `mala-tui run --engine ray --ray-address ...` on three real Claude Code
  sessions (the loopback model) over two simulated nodes; once each has worked a
  little, the node with the most of them is removed (the benchmark's `cli` scenario).
- `inside`: a cluster that declares no `mala_slot` (refused at once); the same cluster
  with a node: a run whose driver is killed with kill -9 while two sessions work, then
  `mala-tui resume`, which takes their hosts up again; then a local Ray started for a
  one-session run and stopped after it (tests/cluster/inside.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mala_tui.bench.netns import run as in_private_network
from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.runtime.journal.writer import read_events

# Alone (after the parallel run): each fixture starts a cluster of many processes once for
# the module, which a second worker would start again, and the node is removed at a moment
# chosen by the sessions' progress, which another test's load would only slow.
pytestmark = [pytest.mark.cluster, pytest.mark.integration, pytest.mark.alone]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("cluster-cli")
    out = folder / "figures.json"
    done = in_private_network(
        [
            sys.executable,
            "-m",
            "mala_tui.bench",
            "cluster",
            "--scenario",
            "cli",
            "--sessions",
            "3",
            "--data",
            str(folder / "data"),
            "--json",
            str(out),
        ],
        cwd=ROOT,
        timeout=900,
    )
    assert out.exists(), done.stdout + done.stderr
    (figures,) = json.loads(out.read_text())
    figures["report"] = done.stdout
    figures["returncode"] = done.returncode
    figures["workspaces"] = sorted((folder / "data").glob("cli-*/c*"))
    return dict(figures)


@pytest.fixture(scope="module")
def inside(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("cluster-inside")
    out = folder / "inside.json"
    done = in_private_network(
        [sys.executable, "-m", "tests.cluster.inside", str(out), str(folder / "root")],
        cwd=ROOT,
        timeout=900,
    )
    assert done.returncode == 0 and out.exists(), done.stdout + done.stderr
    return dict(json.loads(out.read_text()))


def journal(figures: dict[str, Any]) -> list[ev.Event]:
    contents = read_events(Path(figures["run_dir"]) / "events.jsonl")
    assert not contents.skipped
    return contents.events


def test_sessions_survive_the_loss_of_a_node_and_every_target_is_met(
    cli_run: dict[str, Any],
) -> None:
    assert cli_run["returncode"] == 0, cli_run["report"]
    assert cli_run["ok"], cli_run["report"]
    assert cli_run["finished"] == 3
    assert cli_run["lost_sessions"], "the removed node held sessions"
    assert cli_run["restarted_from_checkpoint"] == cli_run["lost_sessions"]
    assert cli_run["lines_lost"] == 0 and cli_run["processes_left"] == 0
    assert cli_run["stderr"] == "", "nothing of Ray's on the terminal, a node lost or not"


def test_each_lost_session_restarted_on_the_surviving_node_never_twice_at_once(
    cli_run: dict[str, Any],
) -> None:
    events = journal(cli_run)
    for name in cli_run["lost_sessions"]:
        mine = [e for e in events if e.session == name]
        placed = [e for e in mine if isinstance(e, ev.HostPlaced)]
        (lost,) = [e for e in mine if isinstance(e, ev.HostLost)]
        assert [p.attempt for p in placed] == [1, 2]
        assert lost.node == placed[0].node != placed[1].node and lost.restart
        assert lost.reason == "its node died"
        # The second host came only after the first was known gone.
        assert mine.index(lost) < mine.index(placed[1])
        (restart,) = [e for e in mine if isinstance(e, ev.Restarted)]
        assert restart.trigger == "node_lost" and restart.checkpoint_number >= 1
        assert mine.index(lost) < mine.index(restart)
        # The work received before the loss is in the journal, and the checkpoint says so.
        before = mine[: mine.index(lost)]
        assert any(isinstance(e, ev.MessageRecorded) and e.kind == "tool_result" for e in before)
        saved = [e for e in mine if isinstance(e, ev.CheckpointSaved)]
        assert saved and saved[-1].number == restart.checkpoint_number
        assert Path(saved[-1].path).is_file()
        (ended,) = [e for e in mine if isinstance(e, ev.SessionEnded)]
        assert ended.status is EndStatus.DONE


def test_the_restarted_agents_finished_the_work_in_their_folders(cli_run: dict[str, Any]) -> None:
    workspaces = cli_run["workspaces"]
    assert len(workspaces) == 3
    for workspace in workspaces:
        assert "VERSION = 2" in (workspace / "src" / "app.py").read_text()
        assert (workspace / "REPORT.md").is_file()


def test_a_cluster_without_slots_is_refused_at_once_in_one_line(inside: dict[str, Any]) -> None:
    refused = inside["no_slots"]
    assert refused["returncode"] == 2
    assert refused["stdout"] == ""
    assert refused["stderr"] == (
        f"mala-tui run: the Ray cluster at {refused['address']} declares no mala_slot: start "
        "each host with `ray start --resources '{\"mala_slot\": 8}'` (8 sessions on that host)\n"
    )
    assert not refused["made_anything"], "refused before any run was made"


def test_resume_after_the_driver_was_killed_takes_the_live_hosts_up_again(
    inside: dict[str, Any],
) -> None:
    resumed = inside["reattach"]
    assert resumed["killed_after"] > 0, "the driver was killed while the sessions worked"
    assert resumed["returncode"] == 0, resumed["stdout"] + resumed["stderr"]
    assert "its host still runs on the cluster: taken up again there" in resumed["stdout"]
    events = journal(resumed)
    for name in ("r0", "r1"):
        mine = [e for e in events if e.session == name]
        placed = [(e.attempt, e.reattached) for e in mine if isinstance(e, ev.HostPlaced)]
        assert placed == [(1, False), (1, True)], "the same host, never a second one"
        assert [e.status for e in mine if isinstance(e, ev.SessionEnded)] == [EndStatus.DONE]
        assert len([e for e in mine if isinstance(e, ev.SessionStarted)]) == 1
        assert len([e for e in mine if isinstance(e, ev.ProcessStarted)]) == 1
        # Every event once: none lost while no driver read, none journaled twice.
        lines = [
            ev.event_json(e.model_copy(update={"seq": 0}))  # the run's number aside
            for e in mine
            if not isinstance(e, ev.HostPlaced)
        ]
        assert len(lines) == len(set(lines))
        steps = [e for e in mine if isinstance(e, ev.MessageRecorded) and e.kind == "tool_call"]
        assert len(steps) >= 7, "the scenario's seven steps, at least"
    assert not any(isinstance(e, ev.ErrorRecorded) and e.where is ev.Where.HOST for e in events)
    assert resumed["version_2"] == [True, True]
    assert resumed["cli_alive"] == [] and resumed["left"] == []


def test_without_an_address_a_local_ray_runs_the_session_and_stops_after(
    inside: dict[str, Any],
) -> None:
    local = inside["local"]
    assert local["returncode"] == 0, local["stderr"]
    assert local["stderr"] == "", "Ray's own chatter stays off the terminal"
    assert "task-1: done - the agent finished its task" in local["stdout"]
    assert "host_placed" in local["stdout"]
    assert local["meta"]["engine"] == "ray" and local["meta"]["ray_address"] is None
    # --worktree: the host worked in a worktree of its own (its mirror, its data folder), and
    # pushed its snapshots; the driver's worktree, made when the session ended, has the work.
    assert local["host_version_2"], "the agent worked in the host's own worktree"
    assert local["snapshots"] and local["snapshots"][0].startswith("mala-tui: work in progress")
    assert local["version_2"], "the driver's worktree has the agent's work"
    assert local["source_untouched"], "nothing in the repository's own checkout changed"
    assert local["started_in"] == [local["driver_tree"]], "the journal names the driver's folder"
    assert local["cli_alive"] == [], "no agent outlives the run"
    # Ray's processes are stopped and waited for; an idle worker of theirs may take a moment
    # to notice its raylet gone, but none stays.
    assert local["ray_left"] == [], local["ray_exiting"]
