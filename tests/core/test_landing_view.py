"""What the view and the event log make of a worktree session's work: to land, merged, gone."""

from __future__ import annotations

import pytest

from mala_tui.core import events as ev
from mala_tui.core.describe import summary
from mala_tui.core.run_view import RunState
from mala_tui.core.session_records import BranchStatus

BRANCH = "mala/r1/fix"


def created() -> ev.WorktreeCreated:
    return ev.WorktreeCreated(
        at=1.0,
        session="fix",
        path="/runs/r1/worktrees/fix",
        branch=BRANCH,
        base_commit="a" * 40,
        repository="/src/project",
        base_branch="main",
    )


def changed(ahead: int | None, uncommitted: bool | None) -> ev.WorktreeChanged:
    files = (ev.ChangedFile(path="src/app.py", added=2, deleted=1),)
    return ev.WorktreeChanged(
        at=2.0, session="fix", files=files, commits_ahead=ahead, uncommitted=uncommitted
    )


def landed() -> ev.WorktreeLanded:
    return ev.WorktreeLanded(
        at=3.0,
        session="fix",
        branch=BRANCH,
        into="main",
        how="merge commit",
        commit="c" * 40,
        commits=2,
        committed="d" * 40,
        in_checkout=True,
    )


@pytest.mark.parametrize(
    ("status", "label", "to_land"),
    [
        (BranchStatus(0, False), "nothing to land", False),
        (BranchStatus(0, False, merged=True), "merged", False),
        (BranchStatus(1, False), "1 commit to land", True),
        (BranchStatus(3, True), "3 commits + uncommitted edits to land", True),
        (BranchStatus(0, True), "uncommitted edits to land", True),
        (BranchStatus(2, True, discarded=True), "discarded", False),
    ],
)
def test_a_branch_status_says_what_is_left_to_land(
    status: BranchStatus, label: str, to_land: bool
) -> None:
    assert (status.label, status.to_land) == (label, to_land)


def test_the_view_follows_a_session_from_its_changes_to_landed() -> None:
    run = RunState().apply_all([created(), changed(1, True)])
    session = run.sessions["fix"]
    assert session.worktree is not None and session.worktree.base_branch == "main"
    assert session.snapshot().worktree_status == BranchStatus(1, True)
    run.apply(landed())
    assert session.worktree.landed == landed()
    assert session.snapshot().worktree_status == BranchStatus(0, False, merged=True)
    status = session.snapshot().worktree_status
    assert status is not None and status.label == "merged"


def test_a_change_measured_by_an_older_version_leaves_the_status_unknown() -> None:
    run = RunState().apply_all([created(), changed(None, None)])
    assert run.sessions["fix"].snapshot().worktree_status is None
    worktree = run.sessions["fix"].worktree
    assert worktree is not None and worktree.files is not None


def test_a_push_counts_the_commit_of_its_edits_and_a_discard_ends_it() -> None:
    pushed = ev.WorktreePushed(
        at=3.0,
        session="fix",
        branch=BRANCH,
        remote="origin",
        commit="e" * 40,
        committed="f" * 40,
        pr_command="gh pr create --draft",
    )
    run = RunState().apply_all([created(), changed(1, True), pushed])
    assert run.sessions["fix"].snapshot().worktree_status == BranchStatus(2, False)
    run.apply(
        ev.WorktreeDiscarded(at=4.0, session="fix", branch=BRANCH, path="/x", unmerged_commits=2)
    )
    status = run.sessions["fix"].snapshot().worktree_status
    assert status is not None and status.discarded and status.label == "discarded"


def test_git_read_afresh_replaces_the_journaled_status() -> None:
    run = RunState().apply_all([created(), changed(1, False)])
    run.sessions["fix"].set_branch_status(BranchStatus(0, False, merged=True))
    assert run.sessions["fix"].snapshot().worktree_status == BranchStatus(0, False, merged=True)


def test_each_landing_event_reads_as_one_line_and_round_trips() -> None:
    discarded = ev.WorktreeDiscarded(
        at=4.0, session="fix", branch=BRANCH, path="/x", unmerged_commits=1, uncommitted=True
    )
    pushed = ev.WorktreePushed(
        at=3.0, session="fix", branch=BRANCH, remote="origin", commit="e" * 40, pr_url="https://x/1"
    )
    lines = {
        "changed": summary(changed(2, True)),
        "landed": summary(landed()),
        "pushed": summary(pushed),
        "discarded": summary(discarded),
    }
    assert lines == {
        "changed": "1 file changed, +2 -1, 2 commits + uncommitted edits to land",
        "landed": f"landed 2 commits of {BRANCH} on main (merge commit, now cccccccccc), "
        "its edits committed as dddddddddd",
        "pushed": f"pushed {BRANCH} to origin at eeeeeeeeee; draft PR https://x/1",
        "discarded": f"discarded worktree /x and branch {BRANCH}, "
        "dropping 1 unmerged commit and uncommitted edits",
    }
    for event in (created(), changed(2, True), landed(), pushed, discarded):
        assert ev.parse_event(event.model_dump(mode="json")) == event
    old = created().model_dump(mode="json")
    del old["base_branch"]  # a journal written before the base branch was recorded
    parsed = ev.parse_event(old)
    assert isinstance(parsed, ev.WorktreeCreated) and parsed.base_branch == ""
