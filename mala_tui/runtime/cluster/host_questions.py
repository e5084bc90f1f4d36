"""The questions a session's host waits on, asked at the driver's desk.

A restart approval goes to the run's approvals, a permission request through the
session's permission gate; each answer goes back to the host. When the host is lost,
nobody there waits any more: its questions are withdrawn.
"""

from __future__ import annotations

import asyncio

from mala_tui.core.observations import Decision
from mala_tui.runtime.backends.base import PermissionAsk, PermissionGate
from mala_tui.runtime.cluster.host_link import HostLink
from mala_tui.runtime.cluster.wire import (
    ApprovalAsk,
    Ask,
    PermissionAskWire,
    PermissionWithdrawn,
)
from mala_tui.runtime.questions.approvals import Approvals
from mala_tui.runtime.questions.desk import Desk, Reply


class HostQuestions:
    """One remote session's questions: asked here, answered back to its host."""

    def __init__(
        self, name: str, approvals: Approvals, desk: Desk, permissions: PermissionGate | None
    ) -> None:
        self.name = name
        self._approvals = approvals
        self._desk = desk
        self._permissions = permissions
        self._approvals_asked: set[int] = set()
        self._permission_tasks: dict[int, asyncio.Task[None]] = {}

    def ask(self, ask: Ask, link: HostLink) -> None:
        name = self.name
        match ask:
            case ApprovalAsk(number=number) if number not in self._approvals_asked:
                self._approvals_asked.add(number)

                def answered(reply: Reply, number: int = number) -> None:
                    self._approvals_asked.discard(number)
                    edited = reply.edited_text
                    link.tell(
                        "answer_approval",
                        number,
                        Decision(reply.answer),
                        edited,
                        reply.by,
                        reply.reason,
                    )

                self._approvals.ask(name, number, answered)
            case PermissionAskWire() if (
                ask.key not in self._permission_tasks and self._permissions is not None
            ):
                self._permission_tasks[ask.key] = asyncio.create_task(
                    self._permission(ask, link, self._permissions),
                    name=f"permission {name} {ask.key}",
                )
            case PermissionWithdrawn(key=key):
                task = self._permission_tasks.pop(key, None)
                if task is not None:
                    task.cancel()
            case _:
                pass

    async def _permission(
        self, ask: PermissionAskWire, link: HostLink, gate: PermissionGate
    ) -> None:
        verdict = await gate(PermissionAsk(ask.tool_use_id, ask.tool, ask.tool_input))
        self._permission_tasks.pop(ask.key, None)
        link.tell("answer_permission", ask.key, verdict.allow, verdict.message)

    def drop(self, reason: str) -> None:
        """The host is gone: nobody there waits for an answer any more."""
        for task in self._permission_tasks.values():
            task.cancel()
        self._permission_tasks.clear()
        self._approvals_asked.clear()
        self._desk.withdraw_session(self.name, reason)
