"""The fold with the real CLI: an Edit right after a fold works, and no step is redone.

Claude Code refuses to edit a file it believes it has not read ("File has not been read
yet"), and on resume it rebuilds what it has read from the transcript: the newest Read,
Write or Edit of each path, with its result. The fold keeps exactly those steps whole;
these tests let the real CLI resume on folded transcripts and edit files whose reads
were folded or kept.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mala_tui.core import events as ev
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
    # The first Edit was asked for right after a fold: between the request before it and
    # its own, the conversation lost the folded steps.
    first_edit = next(r for r in log if (r.step_label or "").startswith("edit"))
    before = log[first_edit.index - 2]
    assert first_edit.message_count < before.message_count
    assert first_edit.body is not None and DIGEST_HEADER in request_text(first_edit.body)
    assert all(not alive(pid) for pid in run.pids)
