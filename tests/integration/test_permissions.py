"""Permission requests with the real CLI on the loopback: allowed, the tool runs; denied,
the agent's tool result carries the reason.

The scenario's agent runs one Bash command while the session's allowed tools lack Bash:
the CLI asks through `can_use_tool` before running it (Read, and Write under
acceptEdits, are not asked), and the request waits at the supervisor's desk.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.operator_actions import AnswerPermission
from mala_tui.core.permissions import AnsweredBy, PermissionAnswer
from mala_tui.core.questions import PermissionQuestion, Question
from mala_tui.core.transcript import ToolCall, ToolResult
from mala_tui.loopback import LoopbackServer, load_scenario
from mala_tui.runtime.backends.claude import ClaudeBackend
from mala_tui.runtime.run.supervisor import Supervisor
from tests.integration.harness import session_spec
from tests.support.supervisors import build_supervisor

pytestmark = pytest.mark.integration

WITHOUT_BASH = ("Read", "Write", "Edit", "Grep", "Glob")


async def run_answering(
    tmp_path: Path, answer: PermissionAnswer, reason: str = ""
) -> tuple[Supervisor, list[Question], Path]:
    """Run the scenario, answering each permission request as the operator would.

    The scripted agent tries a refused step again (as a model might), up to a few times.
    """
    scenario = load_scenario("permission-request")
    asked: list[Question] = []
    async with LoopbackServer(scenario, response_delay_s=0) as server:
        spec = replace(session_spec("p", scenario, server, tmp_path), allowed_tools=WITHOUT_BASH)
        sup = build_supervisor(ClaudeBackend(), [spec])
        loop = asyncio.get_running_loop()

        def seen(pending: list[Question]) -> None:
            for request in pending:
                if request not in asked:
                    asked.append(request)
                    if isinstance(request, PermissionQuestion):  # any other fails below
                        loop.call_soon(
                            sup.act,
                            AnswerPermission(
                                session="p",
                                request_id=request.request_id,
                                answer=answer,
                                reason=reason,
                            ),
                        )

        sup.listeners.questions.append(seen)
        result = await asyncio.wait_for(sup.run(), 180)
    assert result.statuses == {"p": EndStatus.DONE}
    assert asked, "the CLI should have asked before running the Bash command"
    for request in asked:
        assert isinstance(request, PermissionQuestion), request
        assert request.tool == "Bash"
        assert request.summary.startswith("sh -c 'wc -l logs/service.log > logs/summary.txt'")
    return sup, asked, spec.cwd


def bash_result(sup: Supervisor) -> ToolResult:
    """The Bash call's result as the CLI gave it to the agent."""
    messages = list(sup.runners["p"].manager.transcript)
    call = next(
        b for m in messages for b in m.blocks if isinstance(b, ToolCall) and b.name == "Bash"
    )
    return next(
        b
        for m in messages
        for b in m.blocks
        if isinstance(b, ToolResult) and b.tool_use_id == call.id
    )


async def test_allowed_the_tool_runs_and_its_effect_is_on_disk(tmp_path: Path) -> None:
    sup, asked, workspace = await run_answering(tmp_path, PermissionAnswer.ALLOW_ONCE)
    assert len(asked) == 1
    summary = (workspace / "logs" / "summary.txt").read_text()
    assert summary.strip().endswith("logs/service.log")
    result = bash_result(sup)
    assert not result.is_error and "logs/service.log" in result.content
    (decided,) = [e for e in sup.state.sessions["p"].log if isinstance(e, ev.PermissionDecided)]
    assert (decided.answer, decided.decided_by) == (
        PermissionAnswer.ALLOW_ONCE,
        AnsweredBy.OPERATOR,
    )
    assert sup.state.sessions["p"].idle_retries == 0


async def test_denied_the_agent_reads_the_operators_reason(tmp_path: Path) -> None:
    reason = "no shell commands in this repository"
    sup, _, workspace = await run_answering(tmp_path, PermissionAnswer.DENY, reason)
    assert not (workspace / "logs" / "summary.txt").exists()
    result = bash_result(sup)
    assert result.is_error
    assert reason in result.content
    assert "denied by the operator" in result.content
