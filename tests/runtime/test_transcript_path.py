"""Each backend answers for where its agent keeps a session's transcript; the supervisor asks it."""

from __future__ import annotations

import time
from pathlib import Path

from mala_tui.core.actions import EndStatus
from mala_tui.core.observations import SessionIdentified
from mala_tui.runtime.backends.base import SessionSpec
from mala_tui.runtime.backends.claude import ClaudeBackend
from mala_tui.runtime.backends.scripted import ScriptedBackend, ScriptedClient, finished
from tests.support.supervisors import build_supervisor


def test_the_claude_backend_finds_the_clis_transcript_under_its_config_dir(tmp_path: Path) -> None:
    spec = SessionSpec(name="s1", task="t", cwd=tmp_path, private_home=tmp_path / "home")
    project = tmp_path / "home" / "claude-config" / "projects" / "-ws-project"
    project.mkdir(parents=True)
    (project / "sess-1.jsonl").write_text('{"type": "user"}\n', encoding="utf-8")
    backend = ClaudeBackend()
    assert backend.transcript_path(spec, "sess-1") == project / "sess-1.jsonl"
    assert backend.transcript_path(spec, "sess-2") is None


async def test_the_supervisor_asks_the_backend_once_the_agent_named_its_session(
    tmp_path: Path,
) -> None:
    stored = tmp_path / "sess-1.jsonl"
    client = ScriptedClient([[SessionIdentified(0, "sess-1"), finished()]])
    backend = ScriptedBackend([client], transcripts={"sess-1": stored})
    sup = build_supervisor(backend, [SessionSpec(name="s1", task="t", cwd=tmp_path)])
    assert sup.transcript_path("s1") is None  # no session id yet
    result = await sup.run()
    assert result.statuses == {"s1": EndStatus.DONE}
    assert sup.transcript_path("s1") == stored


def test_a_forks_first_process_forks_and_finds_the_forked_transcript_in_its_folder(
    tmp_path: Path,
) -> None:
    from dataclasses import replace

    from mala_tui.runtime.backends.claude_options import build_options
    from mala_tui.runtime.backends.claude_transcripts import copy_for_fork, project_folder

    home = tmp_path / "home"
    work = tmp_path / "trees" / "a_fork.1"
    work.mkdir(parents=True)
    spec = SessionSpec(name="f", task="t", cwd=work, private_home=home, fork_of="sa")
    # Only the process that resumes the forked session forks; later ones resume the fork's.
    assert build_options(spec, resume="sa", hooks={}).fork_session
    assert not build_options(spec, resume="sf", hooks={}).fork_session
    assert not build_options(replace(spec, fork_of=None), resume="sa", hooks={}).fork_session

    root = home / "claude-config"
    parent_project = root / "projects" / "-ws-parent"
    parent_project.mkdir(parents=True)
    (parent_project / "sa.jsonl").write_text('{"type": "user"}\n', encoding="utf-8")
    folder = project_folder(root, work)
    assert folder.name == str(work).replace("/", "-").replace("_", "-").replace(".", "-")
    copied = copy_for_fork(root, "sa", work)
    assert copied == folder / "sa.jsonl"
    assert copied.read_text(encoding="utf-8") == '{"type": "user"}\n'
    assert copy_for_fork(root, "sa", work) == copied  # there already: left alone
    assert copy_for_fork(root, "gone", work) is None
    # The backend copies it when it makes the fork's first client.
    other = tmp_path / "elsewhere"
    other.mkdir()
    ClaudeBackend().create(replace(spec, cwd=other), resume="sa", clock=time.time)
    assert (project_folder(root, other.resolve()) / "sa.jsonl").is_file()
