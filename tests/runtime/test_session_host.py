"""A session host alone: its outbox read in batches, a driver that reconnects, a driver gone."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

from mala_tui.config import Settings
from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.manager import ContextManager
from mala_tui.core.observations import MessageObserved, SessionIdentified, UsageObserved
from mala_tui.core.transcript import Message, Role, TextBlock, ToolCall, ToolResult
from mala_tui.core.usage import CallUsage
from mala_tui.prompt_files import load_prompts
from mala_tui.runtime.backends.base import SessionSpec
from mala_tui.runtime.backends.scripted import HANG, ScriptedBackend, ScriptedClient, finished
from mala_tui.runtime.cluster.session_host import HostSetup, SessionHost
from mala_tui.runtime.cluster.wire import Batch, message_from_json, message_json
from mala_tui.runtime.run.session_limits import limits_from, runner_limits_from

CHECKPOINT = "<checkpoint>\n## Goal\nG\n## Completed Work\n- Read /ws/a.py\n</checkpoint>"


def host(tmp_path: Path, *clients: ScriptedClient, orphan_seconds: float = 600.0) -> SessionHost:
    spec = SessionSpec(name="a", task="read the files", cwd=tmp_path)
    manager = ContextManager(
        name="a", task=spec.task, limits=limits_from(Settings()), prompts=load_prompts()
    )
    backend = ScriptedBackend(list(clients))
    setup = HostSetup(
        run_id="run-1",
        spec=spec,
        manager=manager,
        runner_limits=runner_limits_from(Settings()),
        backend=lambda folder: backend,
        orphan_seconds=orphan_seconds,
        flush_seconds=0.01,
        batch_events=4,
    )
    return SessionHost(setup)


def reads(count: int) -> list[MessageObserved | UsageObserved]:
    items: list[MessageObserved | UsageObserved] = []
    for index in range(count):
        tool_id, path = f"t{index}", f"/ws/f{index}.py"
        items.append(
            UsageObserved(0, CallUsage(input_tokens=3, cache_read_input_tokens=9_000 + index))
        )
        items.append(
            MessageObserved(
                0, Message(Role.ASSISTANT, (ToolCall(tool_id, "Read", {"file_path": path}),))
            )
        )
        items.append(MessageObserved(0, Message(Role.USER, (ToolResult(tool_id, "x = 1\n"),))))
    return items


async def collect(
    stream: AsyncIterator[Batch], until_end: bool = True, count: int | None = None
) -> list[Batch]:
    batches: list[Batch] = []
    async for batch in stream:
        batches.append(batch)
        if count is not None and len(batches) >= count:
            break
    return batches


async def test_batches_carry_every_event_once_in_order_and_end_with_the_status(
    tmp_path: Path,
) -> None:
    session = host(
        tmp_path, ScriptedClient([[SessionIdentified(0, "s1"), *reads(5), finished("ok", "s1")]])
    )
    session.start()
    batches = await asyncio.wait_for(collect(session.batches(0)), 10)
    lines = [line for batch in batches for line in batch.events]
    assert [batch.first for batch in batches] == [
        1 + sum(len(b.events) for b in batches[:i]) for i in range(len(batches))
    ]
    assert all(len(batch.events) <= 4 for batch in batches), "no batch over its size"
    kinds = [json.loads(line)["type"] for line in lines]
    assert kinds[0] == "session_started" and "session_ended" in kinds
    assert batches[-1].end is not None and batches[-1].end.status is EndStatus.DONE
    assert batches[-1].last == session.sent_up_to == len(lines)
    transcript = [message_from_json(m) for batch in batches for m in batch.messages]
    assert [m.tool_calls[0].input["file_path"] for m in transcript if m.tool_calls] == [
        f"/ws/f{i}.py" for i in range(5)
    ]


async def test_a_driver_that_reconnects_gets_what_follows_its_last_event_and_the_questions(
    tmp_path: Path,
) -> None:
    session = host(tmp_path, ScriptedClient([[SessionIdentified(0, "s1"), *reads(3), HANG]]))
    session.start()
    first = await asyncio.wait_for(collect(session.batches(0), count=2), 10)
    seen = first[-1].last
    session.ack(seen)  # journaled up to here; the host lets that go
    await asyncio.sleep(0.2)
    again = await asyncio.wait_for(collect(session.batches(seen), count=1), 10)
    assert again[0].first == seen + 1
    assert again[0].transcript_reset and again[0].messages, "the whole transcript comes again"
    everything = [line for batch in first for line in batch.events] + list(again[0].events)
    assert len(everything) == len(set(everything)), "nothing twice"
    await session.close()


async def test_an_orphaned_host_winds_its_session_down_to_a_checkpoint_and_exits(
    tmp_path: Path,
) -> None:
    client = ScriptedClient(
        [
            [SessionIdentified(0, "s1"), *reads(2), HANG],
            [finished("wrapped up", "s1")],
            [finished(CHECKPOINT, "s1")],
        ]
    )
    exited = asyncio.Event()
    session = host(tmp_path, client, orphan_seconds=0.3)
    session._on_exit = exited.set  # what the Ray actor does then: its process ends
    session.start()
    await asyncio.wait_for(exited.wait(), 10)
    assert session.orphaned
    assert session.end is not None and session.end.status is EndStatus.STOPPED
    assert "its driver has been gone for" in session.end.reason
    # Its last events are still there for a driver that comes back.
    kinds = [json.loads(line)["type"] for line in session.outbox.lines]
    assert "checkpoint_saved" in kinds and kinds[-1] in {"session_ended", "process_ended"}
    saved = [ev.parse_event(json.loads(line)) for line in session.outbox.lines]
    assert any(isinstance(e, ev.CheckpointSaved) and "Read /ws/a.py" in e.text for e in saved)


def test_transcript_deltas_are_redacted_and_shortened() -> None:
    key = "sk-ant-api03-" + "A" * 40
    message = Message(
        Role.ASSISTANT,
        (
            TextBlock(f"the key is {key}"),
            ToolCall("t1", "Write", {"file_path": "/ws/x", "content": "y" * 10_000}),
        ),
    )
    back = message_from_json(message_json(message))
    assert key not in back.text and "[redacted]" in back.text
    content = back.tool_calls[0].input["content"]
    assert isinstance(content, str) and len(content) < 5_000 and "characters left out" in content
    result = Message(Role.USER, (ToolResult("t1", "boom", is_error=True),))
    assert message_from_json(message_json(result)) == result
