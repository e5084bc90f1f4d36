"""The CLI's background work read from its stream, in the order bundled CLI 2.1.330 sends it.

The sequence below is the one recorded from the real CLI with two background subagents
(docs/ARCHITECTURE.md, "Subagents and background work"): the main turn ends while both
run; the first report arrives between turns and starts the CLI's own turn; the second
arrives during that turn, so one more turn follows.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from claude_agent_sdk import ResultMessage, SystemMessage, TaskNotificationMessage

from mala_tui.core.background import BackgroundKind, BackgroundTask
from mala_tui.core.observations import BackgroundChanged, SessionIdentified, TurnEnded
from mala_tui.runtime.backends.base import ActivityItem
from mala_tui.runtime.backends.claude_options import WAKEUP_REFUSED, WAKEUP_TOOLS, refuse_wakeup
from mala_tui.runtime.backends.claude_stream import StreamConverter

A = {"task_id": "a64d", "task_type": "local_agent", "description": "look A"}
B = {"task_id": "a4db", "task_type": "local_agent", "description": "look B"}
TASK_A = BackgroundTask(id="a64d", kind=BackgroundKind.SUBAGENT, description="look A")
TASK_B = BackgroundTask(id="a4db", kind=BackgroundKind.SUBAGENT, description="look B")


def init() -> SystemMessage:
    return SystemMessage(subtype="init", data={"type": "system", "session_id": "s-1"})


def listed(*tasks: dict[str, str]) -> SystemMessage:
    return SystemMessage(subtype="background_tasks_changed", data={"tasks": list(tasks)})


def notified(task_id: str) -> TaskNotificationMessage:
    data = {"task_id": task_id, "status": "completed", "summary": "REPORT"}
    return TaskNotificationMessage(
        subtype="task_notification",
        data=data,
        task_id=task_id,
        status="completed",
        output_file="",
        summary="REPORT",
        uuid="u",
        session_id="s-1",
    )


def result() -> ResultMessage:
    return ResultMessage(
        subtype="success",
        duration_ms=1,
        duration_api_ms=1,
        is_error=False,
        num_turns=1,
        session_id="s-1",
        terminal_reason="completed",
    )


def test_a_run_of_two_background_subagents_reads_as_the_cli_meant_it() -> None:
    convert = StreamConverter(lambda: 0.0).convert
    assert convert(init()) == [SessionIdentified(0, "s-1")]
    assert convert(listed(A)) == [BackgroundChanged(0, (TASK_A,), 0)]
    assert convert(listed(A, B)) == [BackgroundChanged(0, (TASK_A, TASK_B), 0)]
    first_end = convert(result())
    assert isinstance(first_end[0], TurnEnded)
    # A's report arrives between turns: the turn it starts takes it in.
    assert convert(notified("a64d")) == [ActivityItem("background")]
    assert convert(listed(B)) == [BackgroundChanged(0, (TASK_B,), 0)]
    assert convert(init()) == [SessionIdentified(0, "s-1")]
    # B's arrives during that turn: one report waits for the turn after.
    assert convert(notified("a4db")) == [BackgroundChanged(0, (TASK_B,), 1)]
    assert convert(listed()) == [BackgroundChanged(0, (), 1)]
    convert(result())
    # The CLI's next turn takes it in: nothing is left.
    assert convert(init()) == [BackgroundChanged(0, (), 0), SessionIdentified(0, "s-1")]


def test_a_notification_for_a_task_never_listed_is_not_a_report_for_the_agent() -> None:
    # A subagent's own shell ends with a notification too; it is not the main thread's.
    convert = StreamConverter(lambda: 0.0).convert
    convert(init())
    assert convert(notified("bash-of-a-subagent")) == [ActivityItem("background")]


def test_an_odd_task_list_reads_as_nothing_rather_than_breaking_the_stream() -> None:
    convert = StreamConverter(lambda: 0.0).convert
    convert(listed(A))
    odd = SystemMessage(subtype="background_tasks_changed", data={"tasks": "nonsense"})
    assert convert(odd) == [BackgroundChanged(0, (), 0)]
    junk = SystemMessage(subtype="background_tasks_changed", data={"tasks": [1, {"x": 2}]})
    assert convert(junk) == [ActivityItem("background")]


def test_a_scheduled_wakeup_is_refused_to_the_agent_with_the_reason() -> None:
    """Seen with the real CLI: the agent reads the reason as the tool's error result."""
    hook_input: Any = {"hook_event_name": "PreToolUse", "tool_name": "ScheduleWakeup"}
    said: Mapping[str, object] = asyncio.run(refuse_wakeup(hook_input, "toolu_1", {"signal": None}))
    output = said["hookSpecificOutput"]
    assert isinstance(output, dict)
    assert output["permissionDecision"] == "deny"
    assert output["permissionDecisionReason"] == WAKEUP_REFUSED
    assert set(WAKEUP_TOOLS.split("|")) == {"ScheduleWakeup", "CronCreate"}
