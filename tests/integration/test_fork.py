"""A session forked with the SDK's `fork_session`, supervised to its end on the loopback.

The parent works in a git worktree of its own and ends its task with an edit it never
committed. It is forked, once it has ended, with another instruction; the fork gets a
worktree made from the parent's (its commit and its uncommitted edit), the parent's
transcript copied into the fork's project folder, and goes on in the parent's
conversation under an agent session of its own. The loopback's scripted agent obeys
the instruction's `Bash:` line as a model would follow it.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.operator_actions import ForkSession
from mala_tui.loopback import LoopbackServer, load_scenario
from mala_tui.runtime.backends.claude import ClaudeBackend
from mala_tui.runtime.backends.claude_transcripts import find_transcript, project_folder
from mala_tui.runtime.backends.cli_env import config_dir
from mala_tui.runtime.git.worktree import create
from mala_tui.runtime.git.worktree_journal import WorktreeTracker
from mala_tui.runtime.journal.writer import RunJournal, read_events
from mala_tui.runtime.run.new_sessions import Joining
from mala_tui.runtime.run.worktree_sessions import fork_in_worktree
from tests.integration.harness import session_spec
from tests.support.factories import default_limits
from tests.support.supervisors import build_supervisor

pytestmark = pytest.mark.integration

INSTRUCTION = "Instead of stopping there, leave a note.\n- Bash: echo forked > FORK.txt"


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


async def test_a_fork_starts_from_the_parents_conversation_and_runs_to_its_end(
    tmp_path: Path,
) -> None:
    scenario = load_scenario("quickstart")
    async with LoopbackServer(scenario, response_delay_s=0, keep_bodies=True) as server:
        spec = session_spec("parent", scenario, server, tmp_path)
        repo = spec.cwd
        git(repo, "init", "-q", "-b", "main")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "start")
        (repo / "CHANGES.md").write_text("started\n")  # uncommitted in main: not carried
        journal = RunJournal.create(tmp_path / "data", "run-1", {"mode": "test"})
        tree = create(repo, "run-1", "parent", journal.directory / "worktrees")
        worktrees = {"parent": tree}
        sup = build_supervisor(
            ClaudeBackend(),
            journal=journal,
            joining=Joining(spec_for_fork=fork_in_worktree(worktrees, journal, on_hosts=False)),
        )
        sup.listeners.events.append(WorktreeTracker(worktrees, sup.record))
        parent = replace(spec, cwd=tree.cwd)
        sup.add_session(parent, limits=default_limits())
        parent_id: list[str] = []

        def on_event(event: ev.Event) -> None:
            if event.session == "parent" and isinstance(event, ev.AgentSessionNamed):
                parent_id.append(event.session_id)
            if event.session == "parent" and isinstance(event, ev.SessionEnded):
                # The parent's work: a commit of its own and an edit left uncommitted.
                git(tree.path, "add", "src/app.py")
                git(tree.path, "commit", "-q", "-m", "bump")
                (tree.path / "WIP.md").write_text("not committed\n")
                sup.act(ForkSession(parent="parent", name="parent-fork1", instruction=INSTRUCTION))

        sup.listeners.events.append(on_event)
        try:
            result = await sup.run()
        finally:
            journal.close()
        requests = server.request_log

    assert result.statuses == {"parent": EndStatus.DONE, "parent-fork1": EndStatus.DONE}, (
        result.reasons
    )
    events = read_events(journal.events_path).events
    (added,) = [e for e in events if isinstance(e, ev.SessionAdded)]
    assert (added.session, added.forked_from, added.fork_of) == (
        "parent-fork1",
        "parent",
        parent_id[0],
    )
    # Journaled side by side: each has its own agent session, the fork's not the parent's.
    named = {e.session: e.session_id for e in events if isinstance(e, ev.AgentSessionNamed)}
    assert named["parent"] == parent_id[0]
    assert named["parent-fork1"] != parent_id[0]
    # The parent's id is never journaled as the fork's (a resume would write both).
    assert [
        e.session_id
        for e in events
        if isinstance(e, ev.AgentSessionNamed) and e.session == "parent-fork1"
    ] == [named["parent-fork1"]]

    # Its own worktree, from the parent's HEAD with the parent's uncommitted edit.
    created = {e.session: e for e in events if isinstance(e, ev.WorktreeCreated)}
    fork_tree = Path(created["parent-fork1"].path)
    assert fork_tree != tree.path
    assert git(fork_tree, "rev-parse", "HEAD~0") != git(repo, "rev-parse", "main")
    assert git(fork_tree, "log", "-1", "--format=%s") == "bump"
    assert (fork_tree / "WIP.md").read_text() == "not committed\n"
    assert "WIP.md" in git(fork_tree, "status", "--porcelain")  # still not committed
    assert not (fork_tree / "CHANGES.md").exists()
    # The instruction was followed there, and only there.
    assert (fork_tree / "FORK.txt").read_text().strip() == "forked"
    assert not (tree.path / "FORK.txt").exists()

    # The fork went on in the parent's conversation: its first request carries the
    # parent's task and work, then the instruction.
    fork_cwd = fork_tree / tree.cwd.relative_to(tree.path)
    root = config_dir(parent)
    own = find_transcript(root, named["parent-fork1"])
    assert own.parent == project_folder(root, fork_cwd.resolve())
    assert (own.parent / f"{parent_id[0]}.jsonl").is_file()  # the parent's, copied there
    bodies = [json.dumps(r.body) for r in requests if r.body]
    first_of_fork = next(i for i, body in enumerate(bodies) if "echo forked" in body)
    assert scenario.task in bodies[first_of_fork]
    assert "Done: reviewed src/app.py" in bodies[first_of_fork]  # the parent's final answer
    # The fork's gauge starts from a window already holding the parent's conversation.
    usage = [e for e in events if isinstance(e, ev.UsageRecorded)]
    parent_peak = max(e.tokens for e in usage if e.session == "parent")
    fork_first = next(e.tokens for e in usage if e.session == "parent-fork1")
    assert fork_first >= parent_peak
