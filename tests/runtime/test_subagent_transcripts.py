"""Subagents read from the transcripts Claude Code writes beside the session's (real files,
entries shaped as the bundled CLI 2.1.330 writes them)."""

from __future__ import annotations

import json
from pathlib import Path

from mala_tui.core import events as ev
from mala_tui.core.events.subagents import SubagentEnd
from mala_tui.runtime.backends.subagent_transcripts import SubagentTranscripts


def assistant(message_id: str, *blocks: str, output: int = 20) -> dict[str, object]:
    content = [{"type": kind} for kind in blocks]
    usage = {
        "input_tokens": 10,
        "cache_creation_input_tokens": 100,
        "cache_read_input_tokens": 1000,
        "output_tokens": output,
    }
    message = {"id": message_id, "model": "claude-sonnet-4-5", "content": content, "usage": usage}
    return {"type": "assistant", "isSidechain": True, "message": message}


def write(path: Path, *entries: object, partial: str = "") -> None:
    with path.open("a") as out:
        for entry in entries:
            out.write(json.dumps(entry) + "\n")
        out.write(partial)


def reader(folder: Path) -> SubagentTranscripts:
    transcripts = SubagentTranscripts("s1", lambda: 5.0)
    transcripts.follow(folder)
    return transcripts


def test_each_call_once_with_its_final_usage_and_its_tool_uses(tmp_path: Path) -> None:
    meta = {"agentType": "Explore", "description": "look", "spawnDepth": 1}
    (tmp_path / "agent-a1.meta.json").write_text(json.dumps(meta))
    path = tmp_path / "agent-a1.jsonl"
    write(path, {"type": "user"}, assistant("m1", "text"), assistant("m1", "tool_use"))
    transcripts = reader(tmp_path)
    transcripts.in_stream("a1")
    first = transcripts.read()
    assert [type(e) for e in first] == [ev.SubagentStarted]  # m1 may have more blocks
    started = first[0]
    assert isinstance(started, ev.SubagentStarted)
    assert (started.agent_type, started.description, started.nested) == ("Explore", "look", False)
    write(path, {"type": "user"}, partial='{"type": "assis')
    (call,) = transcripts.read()
    assert isinstance(call, ev.SubagentCall)
    assert (call.call.context_tokens, call.tool_uses, call.model) == (1130, 1, "claude-sonnet-4-5")
    write(path, partial='tant"}\n')  # the line being written is read once whole
    assert transcripts.read() == []


def test_its_end_as_the_cli_reported_it_and_its_last_call_once_the_process_closed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "agent-a1.jsonl"
    write(path, assistant("m1", "tool_use"), {"type": "user"})
    transcripts = reader(tmp_path)
    transcripts.read()
    ended = transcripts.ended("a1", "failed", "the tool broke")
    assert [(e.how, e.reason) for e in ended if isinstance(e, ev.SubagentEnded)] == [
        (SubagentEnd.FAILED, "the tool broke")
    ]
    write(path, assistant("m2", "text", output=33))  # written after its end was reported
    (last,) = transcripts.final()
    assert isinstance(last, ev.SubagentCall) and last.output_tokens == 33


def test_a_compaction_and_a_nested_subagent_known_only_from_its_files(tmp_path: Path) -> None:
    meta = {"agentType": "general-purpose", "spawnDepth": 2, "parentAgentId": "a1"}
    (tmp_path / "agent-n2.meta.json").write_text(json.dumps(meta))
    boundary = {
        "type": "system",
        "subtype": "compact_boundary",
        "compactMetadata": {"preTokens": 150_000, "postTokens": 9_000},
    }
    write(tmp_path / "agent-n2.jsonl", assistant("m1", "text"), boundary, "not json", [1])
    events = reader(tmp_path).read()
    started = [e for e in events if isinstance(e, ev.SubagentStarted)]
    assert started and started[0].nested and started[0].parent == "a1" and started[0].depth == 2
    compacted = [e for e in events if isinstance(e, ev.SubagentCompacted)]
    assert [(e.pre_tokens, e.post_tokens) for e in compacted] == [(150_000, 9_000)]
    meta["finished"] = True
    (tmp_path / "agent-n2.meta.json").write_text(json.dumps(meta))
    transcripts = reader(tmp_path)
    ends = [e for e in transcripts.read() if isinstance(e, ev.SubagentEnded)]
    assert [e.how for e in ends] == [SubagentEnd.COMPLETED]


def test_no_folder_yet_or_an_unreadable_one_reads_as_nothing(tmp_path: Path) -> None:
    assert SubagentTranscripts("s1", lambda: 0.0).read() == []
    assert reader(tmp_path / "missing").read() == []
