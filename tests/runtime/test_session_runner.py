"""The session runner with a scripted backend: the idle-timeout cases and the flows.

The idle timeout is real (IDLE) in the tests about it; only the backoff sleep is
replaced, to record the delays without waiting them out. Every other test runs
with an idle timeout that never fires (NO_IDLE), so a busy machine that is slow
to deliver a scripted item cannot turn a flow into a hang recovery.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from mala_tui.core import events as ev
from mala_tui.core.actions import EndSession, EndStatus, StopTurn
from mala_tui.core.manager import ContextManager, Outcome
from mala_tui.core.observations import (
    Command,
    Decision,
    MessageObserved,
    Observation,
    SessionIdentified,
    ToolResultSeen,
    TurnEnded,
    UsageObserved,
)
from mala_tui.core.operator_actions import SessionCommand
from mala_tui.core.phases import IllegalTransition
from mala_tui.core.prompts import PromptKind
from mala_tui.core.transcript import Message, Role, TextBlock, ToolCall, ToolResult
from mala_tui.core.usage import CallUsage
from mala_tui.prompt_files import load_prompts
from mala_tui.runtime.backends.base import SessionSpec
from mala_tui.runtime.backends.scripted import HANG, ScriptedBackend, ScriptedClient, finished
from mala_tui.runtime.questions.approvals import Approvals
from mala_tui.runtime.questions.desk import Desk
from mala_tui.runtime.session.runner import SessionRunner
from tests.support.factories import default_limits, default_runner_limits, with_notice

E = TypeVar("E", bound=ev.EventBase)

PROMPTS = load_prompts()
TASK = "Fix issue 42."
IDLE = 0.2
NO_IDLE = 60.0


class Harness:
    def __init__(
        self,
        backend: ScriptedBackend,
        *,
        clean_point_timeout: float = 2.0,
        idle_timeout: float = NO_IDLE,
        session_timeout: float | None = None,
        real_sleep: bool = False,
        manager_class: type[ContextManager] = ContextManager,
        clock: Callable[[], float] = time.time,
        **limits: object,
    ) -> None:
        # The zone figures in these tests were chosen for these thresholds.
        settings: dict[str, object] = {
            "context_limit": 100_000,
            "soft_threshold": 0.7,
            "mask_target_threshold": 0.6,
            "keep_recent_observations": 4,
            "mask_min_batch_tokens": 1000,
        }
        settings.update(limits)
        self.backend = backend
        self.events: list[ev.Event] = []
        self._recorded = asyncio.Event()
        self.sleeps: list[float] = []
        self.approvals = Approvals(Desk())
        """The desk restart approvals are asked at and answered through."""
        self.manager = manager_class(
            name="s1", task=TASK, limits=default_limits(**settings), prompts=PROMPTS
        )
        self.runner = SessionRunner(
            spec=SessionSpec(name="s1", task=TASK, cwd=Path("/ws")),
            backend=backend,
            manager=self.manager,
            limits=default_runner_limits(
                idle_timeout=idle_timeout,
                disconnect_timeout=1.0,
                drain_timeout=1.0,
                clean_point_timeout=clean_point_timeout,
                **({} if session_timeout is None else {"session_timeout": session_timeout}),
            ),
            sink=self.sink,
            clock=clock,
            # Really waiting, the backoff is what runs out a session's clock.
            sleep=asyncio.sleep if real_sleep else self.sleep,
            approvals=self.approvals,
        )

    def sink(self, event: ev.Event) -> ev.Event:
        self.events.append(event)
        self._recorded.set()
        return event

    async def until(self, kind: type[ev.Event]) -> None:
        """Wait until an event of this kind has been recorded."""
        async with asyncio.timeout(10):
            while not self.of_type(kind):
                self._recorded.clear()
                await self._recorded.wait()

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)

    async def run(self) -> EndStatus:
        return await asyncio.wait_for(self.runner.run(), 10)

    def of_type(self, kind: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, kind)]


def idle_resume() -> str:
    return PROMPTS.render(PromptKind.IDLE_RESUME, session_name="s1")


def tool_call(tool_id: str = "t1") -> MessageObserved:
    return MessageObserved(
        0, Message(Role.ASSISTANT, (ToolCall(tool_id, "Bash", {"command": "make"}),))
    )


# -- the idle-timeout cases ------------------------------------------------------------------------


async def test_idle_timeout_retries_and_recovers() -> None:
    hanging = ScriptedClient([[SessionIdentified(0, "sess-1"), HANG]])
    recovering = ScriptedClient([[finished()]])
    h = Harness(ScriptedBackend([hanging, recovering]), idle_timeout=IDLE)
    assert await h.run() is EndStatus.DONE
    assert hanging.disconnected
    assert h.backend.created == [("s1", None), ("s1", "sess-1")]
    assert recovering.queries == [idle_resume()]
    (timeout,) = h.of_type(ev.IdleTimeoutSeen)
    assert (timeout.retry, timeout.decision) == (1, "resume")
    assert timeout.idle_seconds >= IDLE


async def test_idle_timeout_gives_up_after_max_retries() -> None:
    clients = [ScriptedClient([[SessionIdentified(0, "sess-1"), HANG]]) for _ in range(3)]
    h = Harness(ScriptedBackend(clients), idle_timeout=IDLE, max_idle_retries=2)
    assert await h.run() is EndStatus.FAILED
    assert len(h.backend.created) == 3
    assert h.runner.end_reason.endswith("max retries (2) exceeded")
    assert [t.decision for t in h.of_type(ev.IdleTimeoutSeen)] == ["resume", "resume", "give_up"]


async def test_idle_timeout_always_disconnects_even_on_final_failure() -> None:
    clients = [ScriptedClient([[SessionIdentified(0, "sess-1"), HANG]]) for _ in range(3)]
    h = Harness(ScriptedBackend(clients), idle_timeout=IDLE, max_idle_retries=2)
    await h.run()
    assert all(client.disconnected for client in clients)
    assert len(h.of_type(ev.ProcessEnded)) == len(h.of_type(ev.ProcessStarted)) == 3


async def test_idle_timeout_first_turn_no_side_effects_starts_fresh() -> None:
    silent = ScriptedClient([[HANG]])
    fresh = ScriptedClient([[finished()]])
    h = Harness(ScriptedBackend([silent, fresh]), idle_timeout=IDLE)
    assert await h.run() is EndStatus.DONE
    assert h.backend.created == [("s1", None), ("s1", None)]
    assert fresh.queries == [with_notice(TASK)]  # the original prompt, not the resume prompt


async def test_idle_timeout_first_turn_with_tool_calls_fails_fast() -> None:
    acted = ScriptedClient([[tool_call(), HANG]])
    h = Harness(ScriptedBackend([acted, ScriptedClient([[finished()]])]), idle_timeout=IDLE)
    assert await h.run() is EndStatus.FAILED
    assert "cannot retry: 1 tool calls occurred without session context" in h.runner.end_reason
    assert len(h.backend.created) == 1
    assert acted.disconnected


async def test_idle_timeout_non_query_phases_skip_the_query_block() -> None:
    # Waiting for approval nothing streams: no idle timeout, no client, no query,
    # however long the wait, until the answer comes.
    usage = UsageObserved(0, CallUsage(cache_read_input_tokens=95_000), starts_call=True)
    first = ScriptedClient(
        [
            [SessionIdentified(0, "sess-1"), usage, HANG],
            [finished("ok")],
            [finished("<checkpoint>## Goal\nG</checkpoint>")],
        ]
    )
    second = ScriptedClient([[finished()]])
    h = Harness(ScriptedBackend([first, second]), idle_timeout=IDLE, require_approval=True)
    task = asyncio.create_task(h.run())
    await h.until(ev.ApprovalRequested)
    assert h.runner.approval_pending == 1
    created, queries = len(h.backend.created), len(first.queries)
    # Not a synchronisation: six idle timeouts' worth of real time must pass unanswered
    # for the test to show that waiting for a person is never taken for a hang.
    await asyncio.sleep(IDLE * 6)
    assert h.of_type(ev.IdleTimeoutSeen) == []
    assert (len(h.backend.created), len(first.queries)) == (created, queries)
    h.approvals.decide("s1", Decision.APPROVE)
    assert await task is EndStatus.DONE
    assert second.queries[0].startswith("CONTINUING FROM A PREVIOUS SESSION")


async def test_idle_timeout_backoff_delays() -> None:
    clients = [ScriptedClient([[SessionIdentified(0, "sess-1"), HANG]]) for _ in range(3)] + [
        ScriptedClient([[finished()]])
    ]
    h = Harness(ScriptedBackend(clients), idle_timeout=IDLE, max_idle_retries=3)
    assert await h.run() is EndStatus.DONE
    assert h.sleeps == [0.0, 5.0, 15.0]


# -- the other flows through the runner -------------------------------------------------------------


def read_cycle(index: int, size: int) -> list[MessageObserved]:
    tool_id = f"r{index}"
    return [
        MessageObserved(
            0,
            Message(
                Role.ASSISTANT,
                (
                    TextBlock("reading"),
                    ToolCall(tool_id, "Read", {"file_path": f"/ws/f{index}.py"}),
                ),
            ),
        ),
        MessageObserved(0, Message(Role.USER, (ToolResult(tool_id, "x" * size),))),
    ]


def usage_at(tokens: int, *, final: bool = True) -> UsageObserved:
    return UsageObserved(
        0, CallUsage(input_tokens=3, cache_read_input_tokens=tokens - 3), starts_call=not final
    )


def write_cycle() -> tuple[MessageObserved, MessageObserved]:
    """A Write call and its result: the step in flight when soft pressure is seen."""
    return (
        MessageObserved(
            0, Message(Role.ASSISTANT, (ToolCall("w1", "Write", {"file_path": "/ws/out.md"}),))
        ),
        MessageObserved(0, Message(Role.USER, (ToolResult("w1", "File created"),))),
    )


async def test_soft_zone_masks_through_the_backend_and_resumes() -> None:
    reads = [item for i in range(10) for item in read_cycle(i, 16_000)]
    first = ScriptedClient([[SessionIdentified(0, "sess-1"), *reads, usage_at(75_000), HANG]])
    resumed = ScriptedClient([[usage_at(60_000), finished()]])
    h = Harness(ScriptedBackend([first, resumed]))
    assert await h.run() is EndStatus.DONE
    assert first.interrupted == 1 and first.disconnected
    assert h.backend.created == [("s1", None), ("s1", "sess-1")]
    (masked,) = h.backend.masked
    assert list(masked) == ["r0", "r1", "r2", "r3"]
    assert resumed.queries == [PROMPTS.render(PromptKind.MASK_RESUME, masked_count=4)]
    (measured,) = h.of_type(ev.MaskMeasured)
    assert measured.reclaimed == 15_000


async def test_the_interrupt_waits_for_the_tool_call_in_flight() -> None:
    # Soft pressure is seen at message_start of a call that goes on to write a file: the
    # interrupt comes after that Write's result, so the write is kept, not rejected.
    reads = [item for i in range(10) for item in read_cycle(i, 16_000)]
    write, written = write_cycle()
    first = ScriptedClient(
        [
            [
                SessionIdentified(0, "sess-1"),
                *reads,
                usage_at(75_000, final=False),
                write,
                usage_at(75_100),
                written,
                usage_at(75_200, final=False),
                HANG,
            ]
        ]
    )
    resumed = ScriptedClient([[finished()]])
    h = Harness(ScriptedBackend([first, resumed]))
    assert await h.run() is EndStatus.DONE
    assert first.interrupted == 1
    assert h.manager.transcript.exchanges()[-1].result == ToolResult("w1", "File created")
    (masked,) = h.backend.masked
    assert "w1" not in masked


async def test_a_client_that_can_stop_ends_the_turn_after_the_tool_with_no_interrupt() -> None:
    # The Claude client stops the turn from its PostToolUse hook: the Write in flight is
    # kept and no model request is started only to be thrown away by an interrupt.
    reads = [item for i in range(10) for item in read_cycle(i, 16_000)]
    write, written = write_cycle()
    first = ScriptedClient(
        [
            [
                SessionIdentified(0, "sess-1"),
                *reads,
                usage_at(75_000, final=False),
                write,
                written,
                HANG,
            ]
        ],
        can_stop=True,
    )
    resumed = ScriptedClient([[usage_at(60_000), finished()]])
    h = Harness(ScriptedBackend([first, resumed]))
    assert await h.run() is EndStatus.DONE
    assert (first.stops, first.interrupted) == (1, 0)
    assert h.backend.created == [("s1", None), ("s1", "sess-1")]
    (masked,) = h.backend.masked
    assert list(masked) == ["r0", "r1", "r2", "r3"] and "w1" not in masked
    assert resumed.queries == [PROMPTS.render(PromptKind.MASK_RESUME, masked_count=4)]


async def test_a_stop_that_does_not_take_is_followed_by_an_interrupt_at_once() -> None:
    # The client promised to stop after the Write but the next model request started:
    # the runner interrupts then, not after the clean-point timeout (an hour here).
    reads = [item for i in range(10) for item in read_cycle(i, 16_000)]
    write, written = write_cycle()
    first = ScriptedClient(
        [
            [
                SessionIdentified(0, "sess-1"),
                *reads,
                usage_at(75_000, final=False),
                write,
                written,
                usage_at(75_100, final=False),
                HANG,
            ]
        ],
        can_stop=True,
        ignores_stop=True,
    )
    resumed = ScriptedClient([[usage_at(60_000), finished()]])
    h = Harness(ScriptedBackend([first, resumed]), clean_point_timeout=3600.0)
    assert await h.run() is EndStatus.DONE
    assert (first.stops, first.interrupted) == (0, 1)
    (masked,) = h.backend.masked
    assert "w1" not in masked


async def test_mask_failure_resumes_without_the_mask() -> None:
    reads = [item for i in range(10) for item in read_cycle(i, 16_000)]
    first = ScriptedClient([[SessionIdentified(0, "sess-1"), *reads, usage_at(75_000), HANG]])
    resumed = ScriptedClient([[finished()]])
    backend = ScriptedBackend([first, resumed])
    backend.mask_error = "transcript /x.jsonl not found"
    h = Harness(backend)
    assert await h.run() is EndStatus.DONE
    assert resumed.queries == [idle_resume()]
    assert h.of_type(ev.ErrorRecorded)[0].message == "transcript /x.jsonl not found"


async def test_a_fold_or_breakpoint_that_fails_is_warned_and_the_mask_stands() -> None:
    reads = [item for i in range(10) for item in read_cycle(i, 16_000)]
    first = ScriptedClient([[SessionIdentified(0, "sess-1"), *reads, usage_at(75_000), HANG]])
    resumed = ScriptedClient([[finished()]])
    backend = ScriptedBackend([first, resumed])
    backend.fold_error = "s.jsonl: cannot be rewritten: No space left on device"
    backend.breakpoint_error = "s.jsonl: cannot be read: Permission denied"
    h = Harness(backend)
    assert await h.run() is EndStatus.DONE
    assert len(backend.masked) == 1  # the mask itself stands
    assert h.of_type(ev.MaskApplied) and not h.of_type(ev.ErrorRecorded)
    assert resumed.queries and resumed.queries[0].startswith("To keep your context window")
    warnings = [w.message for w in h.of_type(ev.WarningRecorded) if w.where is ev.Where.MASKING]
    assert warnings == [
        f"the masked steps were not folded: {backend.fold_error}",
        f"no cache breakpoint was kept after the mask: {backend.breakpoint_error}",
    ]


async def test_hard_zone_winds_down_checkpoints_and_restarts_fresh() -> None:
    reads = [item for i in range(3) for item in read_cycle(i, 400)]
    old = ScriptedClient(
        [
            [SessionIdentified(0, "sess-1"), *reads, usage_at(92_000), HANG],
            [finished("Notes saved.")],
            [
                finished(
                    "<checkpoint>\n## Goal\nFix issue 42.\n## Completed Work\n- Read /ws/f0.py\n</checkpoint>"
                )
            ],
        ]
    )
    new = ScriptedClient(
        [[SessionIdentified(0, "sess-2"), usage_at(5_000), finished(session_id="sess-2")]]
    )
    h = Harness(ScriptedBackend([old, new]))
    assert await h.run() is EndStatus.DONE
    wind_down, checkpoint_request = old.queries[1:]
    assert wind_down.startswith("CONTEXT WINDOW NEARLY FULL")
    assert checkpoint_request.startswith("CONTEXT LIMIT APPROACHING")
    assert h.backend.created == [("s1", None), ("s1", None)]  # the restart is a fresh session
    assert "- Read /ws/f0.py" in new.queries[0]
    (restart,) = h.of_type(ev.Restarted)
    assert restart.continuation == 1
    assert h.manager.continuation_count == 1 and h.manager.session_id == "sess-2"


async def test_operator_stop_ends_a_streaming_session() -> None:
    client = ScriptedClient([[SessionIdentified(0, "sess-1"), HANG]])
    h = Harness(ScriptedBackend([client]))
    task = asyncio.create_task(h.run())
    await h.until(ev.ProcessStarted)
    h.runner.apply(SessionCommand(session="s1", command=Command.STOP))
    assert await asyncio.wait_for(task, 5) is EndStatus.STOPPED
    assert client.disconnected


async def test_disconnect_is_bounded() -> None:
    stuck = ScriptedClient([[SessionIdentified(0, "sess-1"), HANG]], disconnect_delay=60)
    h = Harness(
        ScriptedBackend([stuck, ScriptedClient([[finished()]])]),
        idle_timeout=IDLE,
        disconnect_timeout=0.1,
    )
    assert await h.run() is EndStatus.DONE
    ended = h.of_type(ev.ProcessEnded)[0]
    assert ended.how == "killed after the disconnect bound"


async def test_cancelling_the_runner_disconnects_the_agent() -> None:
    client = ScriptedClient([[SessionIdentified(0, "sess-1"), HANG]])
    h = Harness(ScriptedBackend([client]))
    task = asyncio.create_task(h.runner.run())
    await h.until(ev.ProcessStarted)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert client.disconnected


async def test_the_session_timeout_covers_every_retry() -> None:
    clients = [ScriptedClient([[SessionIdentified(0, "sess-1"), HANG]]) for _ in range(6)]
    h = Harness(
        ScriptedBackend(clients),
        idle_timeout=IDLE,
        session_timeout=0.5,
        real_sleep=True,
        max_idle_retries=5,
        idle_retry_backoff=(0.2,),
    )
    assert await h.run() is EndStatus.FAILED
    assert h.runner.end_reason == "session timeout: 0.5 s passed, retries included"
    assert 1 <= len(h.of_type(ev.IdleTimeoutSeen)) < 5
    assert all(c.disconnected for c in clients if c.connected)


class BrokenClient(ScriptedClient):
    async def connect(self) -> None:
        raise RuntimeError("claude: command not found")


async def test_an_agent_that_cannot_start_fails_the_session_with_the_reason() -> None:
    h = Harness(ScriptedBackend([BrokenClient([])]))
    assert await h.run() is EndStatus.FAILED
    assert "claude: command not found" in h.runner.end_reason
    (error,) = h.of_type(ev.ErrorRecorded)
    assert error.where is ev.Where.RUNTIME


# -- the post-tool clean point: the gate the runner installs on every client ---------------------


class GateManager(ContextManager):
    """A manager whose answer to each tool result is the test's to choose.

    It stops the turn at the results named in `stop_at`, raises `fail_with` if set,
    and after a stop of its own ends the session (what a real manager would do at
    that clean point is its business, not the runner's).
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.seen: list[tuple[str, str, int]] = []
        self.stop_at: set[str] = set()
        self.fail_with: Exception | None = None
        self.stopped_turns: list[TurnEnded] = []
        self._stopping = False

    def observe(self, observation: Observation) -> Outcome:
        if isinstance(observation, ToolResultSeen):
            self.seen.append((observation.tool_use_id, observation.tool, observation.characters))
            if self.fail_with is not None:
                raise self.fail_with
            noted = ev.ErrorRecorded(
                at=observation.at,
                session=self.name,
                where=ev.Where.HOOK,
                message=observation.tool_use_id,
            )
            if observation.tool_use_id not in self.stop_at:
                return Outcome(events=(noted,))
            self._stopping = True
            return Outcome((StopTurn("the next request would pass hard"),), (noted,))
        if isinstance(observation, TurnEnded) and self._stopping:
            self.stopped_turns.append(observation)
            return Outcome((EndSession(EndStatus.STOPPED, "stopped at the clean point"),))
        return super().observe(observation)


async def test_the_gate_sees_each_tool_result_once_with_its_size() -> None:
    reads = [*read_cycle(0, 500), *read_cycle(1, 700)]
    client = ScriptedClient([[SessionIdentified(0, "sess-1"), *reads, usage_at(5_000), finished()]])
    h = Harness(ScriptedBackend([client]), manager_class=GateManager)
    assert await h.run() is EndStatus.DONE
    assert isinstance(h.manager, GateManager)
    assert h.manager.seen == [("r0", "Read", 500), ("r1", "Read", 700)]
    # The gate's observation is recorded like any other: its events reach the sink.
    assert [e.message for e in h.of_type(ev.ErrorRecorded) if e.where is ev.Where.HOOK] == [
        "r0",
        "r1",
    ]
    assert client.stops == 0


async def test_a_stop_from_the_gate_ends_the_turn_before_the_next_model_request() -> None:
    client = ScriptedClient(
        [
            [
                SessionIdentified(0, "sess-1"),
                *read_cycle(0, 500),
                usage_at(5_000, final=False),  # the request the result would go into
                *read_cycle(1, 500),
                finished(),
            ]
        ]
    )
    h = Harness(ScriptedBackend([client]), manager_class=GateManager)
    assert isinstance(h.manager, GateManager)
    h.manager.stop_at = {"r0"}
    assert await h.run() is EndStatus.STOPPED
    assert client.stops == 1 and client.interrupted == 0
    assert h.manager.seen == [("r0", "Read", 500)]
    (ended,) = h.manager.stopped_turns
    assert ended.terminal_reason == "hook_stopped"
    assert h.of_type(ev.UsageRecorded) == []  # the next request never started
    assert [o.call.id for o in h.manager.transcript.exchanges()] == ["r0"]


@pytest.mark.parametrize(
    "failure",
    [RuntimeError("the projection broke"), IllegalTransition("s1: not while masking")],
    ids=["exception", "illegal-transition"],
)
async def test_a_gate_that_fails_answers_no_stop_and_the_session_goes_on(
    failure: Exception,
) -> None:
    client = ScriptedClient([[SessionIdentified(0, "sess-1"), *read_cycle(0, 500), finished()]])
    h = Harness(ScriptedBackend([client]), manager_class=GateManager)
    assert isinstance(h.manager, GateManager)
    h.manager.fail_with = failure
    h.manager.stop_at = {"r0"}
    assert await h.run() is EndStatus.DONE
    assert client.stops == 0
    (error,) = h.of_type(ev.ErrorRecorded)
    assert str(failure) in error.message


async def test_a_result_projected_past_soft_is_masked_at_its_clean_point() -> None:
    # The real manager this time: the gate's answer is its projection of the next request,
    # which the big result would have pushed past soft. The turn stops before that request,
    # old results are masked, and the session resumes on the masked transcript.
    reads = [item for i in range(10) for item in read_cycle(i, 16_000)]
    big = read_cycle(10, 60_000)
    first = ScriptedClient(
        [
            [
                SessionIdentified(0, "sess-1"),
                *reads,
                usage_at(60_000),
                *big,
                usage_at(95_000, final=False),  # the request the big result would go into
                finished(),
            ]
        ]
    )
    resumed = ScriptedClient([[usage_at(40_000), finished()]])
    h = Harness(ScriptedBackend([first, resumed]))
    assert await h.run() is EndStatus.DONE
    assert (first.stops, first.interrupted) == (1, 0)
    assert all(usage.tokens < 95_000 for usage in h.of_type(ev.UsageRecorded))
    (applied,) = h.of_type(ev.MaskApplied)
    assert applied.trigger == "projection"
    (masked,) = h.backend.masked
    assert list(masked) == ["r0", "r1", "r2", "r3"]
    assert h.backend.created == [("s1", None), ("s1", "sess-1")]
    assert resumed.queries == [PROMPTS.render(PromptKind.MASK_RESUME, masked_count=4)]


async def test_what_the_agent_says_is_timed_by_the_runners_clock_as_it_is_handed_on() -> None:
    # The script's items say 0: the backend was given the runner's clock and times each.
    ticks = itertools.count(1_000)
    client = ScriptedClient([[SessionIdentified(0, "sess-1"), usage_at(5_000), finished()]])
    h = Harness(ScriptedBackend([client]), clock=lambda: float(next(ticks)))
    assert await h.run() is EndStatus.DONE
    (usage,) = h.of_type(ev.UsageRecorded)
    (named,) = h.of_type(ev.AgentSessionNamed)
    assert 1_000 <= named.at < usage.at
    assert all(event.at >= 1_000 for event in h.events)
