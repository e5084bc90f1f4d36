"""The fold with the real CLI: an Edit right after a fold works, and no step is redone;
an Edit to a file whose step was folded is refused once, and works after a Read.

Claude Code refuses to edit a file it believes it has not read ("File has not been read
yet. Read it first before writing to it."), and on resume it rebuilds what it has read
from the transcript: the newest successful Read, Write or Edit of each path. The fold
keeps those steps whole for the newest files only (`KEPT_FILES`); these tests let the
real CLI resume on folded transcripts and edit files whose steps were folded or kept.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mala_tui.core import events as ev
from mala_tui.core import fold
from mala_tui.core.actions import EndStatus
from mala_tui.core.fold import DIGEST_HEADER
from mala_tui.loopback import LoopbackServer, Scenario
from mala_tui.loopback.progress import Progress
from mala_tui.runtime.backends.claude_transcripts import find_transcript
from mala_tui.runtime.backends.cli_env import config_dir
from tests.integration.harness import alive, runner, session_spec
from tests.support.factories import default_limits

pytestmark = pytest.mark.integration

#: Long enough to be masked (a result under twice its placeholder's size is not), so the
#: fold must keep its Read whole on purpose.
CONFIG = "[service]\nretries = 3\ntimeout_s = 10\n" + "".join(
    f"# option_{i} = {i}  (unused, kept for reference)\n" for i in range(60)
)
NOTES = "# Notes\n\n- pending\n"
OLD_NOTES = "# Notes\n\n" + "".join(f"- observation {i}: nothing unusual\n" for i in range(60))


def edit_after_fold() -> Scenario:
    """Read a config and some notes, rewrite the notes, dump big logs (masks and folds),
    then edit the notes (their Read folded, their Write kept whole) and the config (its
    Read, the newest step on it, kept whole)."""
    return Scenario.model_validate(
        {
            "name": "edit-after-fold",
            "task": "Tune the service: check its logs, then raise retries and note why.",
            "final_answer": "retries raised after checking the logs; NOTES.md says why.",
            "response_delay_s": 0,
            "workspace": {
                "files": [
                    {"path": "config/service.toml", "content": CONFIG},
                    {"path": "NOTES.md", "content": OLD_NOTES},
                    # Under the CLI's cut for a Bash output (larger, it shows a preview).
                    {"path": "logs/run-{i}.log", "count": 6, "size": 20000, "kind": "log"},
                ]
            },
            "steps": [
                {"tool": "Read", "path": "config/service.toml"},
                {"tool": "Read", "path": "NOTES.md"},
                {"tool": "Write", "path": "NOTES.md", "content": NOTES},
                {"tool": "Bash", "command": "cat logs/run-{i}.log", "count": 6},
                {"tool": "Edit", "path": "NOTES.md", "old": "- pending", "new": "- retries 3 -> 5"},
                {
                    "tool": "Edit",
                    "path": "config/service.toml",
                    "old": "retries = 3",
                    "new": "retries = 5",
                },
            ],
        }
    )


def edit_of_a_folded_file() -> Scenario:
    """Read two docs, dump big logs (masks and folds), then edit the docs: the newer one's
    Read kept whole, the older one's folded (one file kept)."""
    return Scenario.model_validate(
        {
            "name": "edit-of-a-folded-file",
            "task": "Check the logs, then raise retries in both service docs.",
            "final_answer": "retries raised in both docs after checking the logs.",
            "response_delay_s": 0,
            "workspace": {
                "files": [
                    {"path": "docs/old.md", "content": CONFIG},
                    {"path": "docs/new.md", "content": CONFIG},
                    {"path": "logs/run-{i}.log", "count": 6, "size": 20000, "kind": "log"},
                ]
            },
            "steps": [
                {"tool": "Read", "path": "docs/old.md"},
                {"tool": "Read", "path": "docs/new.md"},
                {"tool": "Bash", "command": "cat logs/run-{i}.log", "count": 6},
                {"tool": "Edit", "path": "docs/new.md", "old": "retries = 3", "new": "retries = 5"},
                {"tool": "Edit", "path": "docs/old.md", "old": "retries = 3", "new": "retries = 5"},
            ],
        }
    )


def entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def tool_outcomes(path: Path) -> dict[str, tuple[str, bool]]:
    """Each tool call of the transcript: (tool name, whether its result was an error)."""
    names: dict[str, str] = {}
    errors: dict[str, bool] = {}
    for entry in entries(path):
        content = entry.get("message", {}).get("content") if "message" in entry else None
        if entry.get("type") not in ("user", "assistant") or not isinstance(content, list):
            continue
        for part in content:
            if part.get("type") == "tool_use":
                names[part["id"]] = part["name"]
            elif part.get("type") == "tool_result":
                errors[part["tool_use_id"]] = bool(part.get("is_error"))
    return {tool_id: (name, errors.get(tool_id, False)) for tool_id, name in names.items()}


def edit_results(path: Path) -> list[tuple[str, bool, str]]:
    """Each Edit of the transcript, in order: its file, whether it failed, its result (an
    entry the transcript holds twice, once)."""
    calls: dict[str, str] = {}
    results: dict[str, tuple[str, bool, str]] = {}
    for entry in entries(path):
        content = entry.get("message", {}).get("content") if "message" in entry else None
        if not isinstance(content, list):
            continue
        for part in content:
            if part.get("type") == "tool_use" and part["name"] == "Edit":
                calls[part["id"]] = part["input"]["file_path"]
            elif part.get("type") == "tool_result" and part["tool_use_id"] in calls:
                text = part["content"]
                text = text if isinstance(text, str) else json.dumps(text)
                tool_id = part["tool_use_id"]
                results[tool_id] = (calls[tool_id], bool(part.get("is_error")), text)
    return list(results.values())


def request_calls(body: Any) -> list[tuple[str, str]]:
    """The (tool, file or command) of every tool call a request shows."""
    return [
        (part["name"], str(part["input"].get("file_path") or part["input"].get("command")))
        for message in body["messages"]
        if message["role"] == "assistant" and isinstance(message["content"], list)
        for part in message["content"]
        if part.get("type") == "tool_use"
    ]


def request_text(body: Any) -> str:
    return json.dumps(body["messages"])


async def test_an_edit_right_after_a_fold_works_in_the_real_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The scripted agent edits without reading the file again, as a model that saw it
    # would: only the CLI's own read-file state, rebuilt from the folded transcript on
    # resume, decides whether the Edit is accepted.
    monkeypatch.setattr(Progress, "read_succeeded_after", lambda *_: True)
    scenario = edit_after_fold()
    limits = default_limits(
        soft_threshold=0.08,
        hard_threshold=0.9,
        keep_recent_observations=1,
        mask_min_batch_tokens=500,
    )
    async with LoopbackServer(scenario, response_delay_s=0, keep_bodies=True) as server:
        spec = session_spec("f", scenario, server, tmp_path)
        run, recorded = runner(spec, limits, backup_dir=tmp_path / "backup")
        assert await run.run() is EndStatus.DONE
        session_id = run.manager.session_id
    folds = recorded.of(ev.TranscriptFolded)
    assert folds, "the logs should have been masked, and the mask folded"
    assert all(fold.steps > 0 and fold.tokens_after < fold.tokens_before for fold in folds)
    assert folds[-1].digest_lines == sum(fold.steps for fold in folds)

    log = server.request_log
    assert not any(r.redone for r in log), "a resumed session redoes no step"
    steps = [r.step_id for r in log if r.response_kind == "tool_use"]
    assert len(steps) == len(set(steps))

    # The first request after a fold: the digest is after the task, the folded Bash calls
    # and the Read of the module (its Edit is newer) are gone, the CLI's read-file state
    # is still backed by the Read of the config and the Edit of the module.
    folded = next(r for r in log if r.body is not None and DIGEST_HEADER in request_text(r.body))
    assert folded.body is not None
    calls = request_calls(folded.body)
    workspace = spec.cwd
    assert ("Read", str(workspace / "config/service.toml")) in calls
    assert ("Write", str(workspace / "NOTES.md")) in calls
    assert ("Read", str(workspace / "NOTES.md")) not in calls
    first = folded.body["messages"][0]["content"]
    assert DIGEST_HEADER in first[-1]["text"]
    assert "- Read " + str(workspace / "NOTES.md") in first[-1]["text"]

    # Both Edits after the fold were accepted by the CLI, none refused.
    transcript = find_transcript(config_dir(spec), str(session_id))
    edits = [failed for name, failed in tool_outcomes(transcript).values() if name == "Edit"]
    assert edits == [False, False]
    assert (workspace / "config/service.toml").read_text() == CONFIG.replace(
        "retries = 3", "retries = 5"
    )
    assert (workspace / "NOTES.md").read_text() == NOTES.replace("pending", "retries 3 -> 5")
    # The Edits were asked for after a fold, and no file step came between: the CLI's
    # read-file state for both files was the one it rebuilt from the folded transcript
    # on resume. (When the fold comes relative to the logs depends on the mask's timing.)
    first_edit = next(r for r in log if (r.step_label or "").startswith("edit"))
    assert folded.index < first_edit.index
    between = [r.step_label or "" for r in log[folded.index - 1 : first_edit.index - 1]]
    assert all(label.startswith("run ") for label in between), between
    assert first_edit.body is not None and DIGEST_HEADER in request_text(first_edit.body)
    assert all(not alive(pid) for pid in run.pids)


async def test_an_edit_of_a_file_whose_step_was_folded_is_refused_once_then_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The scripted agent edits without reading again until a refusal says it must (as a
    # model that saw the file would); the fold keeps one file's step only.
    seen = Progress.read_succeeded_after
    monkeypatch.setattr(
        Progress,
        "read_succeeded_after",
        lambda self, path, index: index < 0 or seen(self, path, index),
    )
    monkeypatch.setattr(fold, "KEPT_FILES", 1)
    scenario = edit_of_a_folded_file()
    limits = default_limits(
        soft_threshold=0.08,
        hard_threshold=0.9,
        keep_recent_observations=1,
        mask_min_batch_tokens=500,
    )
    async with LoopbackServer(scenario, response_delay_s=0, keep_bodies=True) as server:
        spec = session_spec("g", scenario, server, tmp_path)
        run, recorded = runner(spec, limits, backup_dir=tmp_path / "backup")
        assert await run.run() is EndStatus.DONE
        session_id = run.manager.session_id
    assert recorded.of(ev.TranscriptFolded), "the logs should have been masked and folded"
    workspace = spec.cwd
    old, new = str(workspace / "docs/old.md"), str(workspace / "docs/new.md")

    # After the first fold the old doc's Read is a digest line; the new doc's stays whole.
    log = server.request_log
    folded = next(r for r in log if r.body is not None and DIGEST_HEADER in request_text(r.body))
    assert folded.body is not None
    calls = request_calls(folded.body)
    assert ("Read", new) in calls and ("Read", old) not in calls
    assert "- Read " + old in folded.body["messages"][0]["content"][-1]["text"]

    # The CLI took the new doc's Edit, refused the old doc's once, and took it after the
    # agent read the file again: the one step redone.
    transcript = find_transcript(config_dir(spec), str(session_id))
    edits = edit_results(transcript)
    assert [(path, failed) for path, failed, _ in edits] == [
        (new, False),
        (old, True),
        (old, False),
    ]
    assert "File has not been read yet. Read it first before writing to it." in edits[1][2]
    redone = [r for r in log if r.redone]
    assert [(r.step_label or "").split()[0] for r in redone] == ["read"]
    for name in ("old", "new"):
        assert (workspace / f"docs/{name}.md").read_text() == CONFIG.replace(
            "retries = 3", "retries = 5"
        )
    assert all(not alive(pid) for pid in run.pids)
