"""The questions a session waits on at its host, relayed to the driver to be asked there.

A restart approval and a permission request are not asked on the host: each goes to the
driver (as an `Ask`, runtime.cluster.wire), whose desk asks it (runtime.cluster.host_questions);
the answer comes back as a call (`answer_approval`, `answer_permission`). The policies, the
timeouts and "answered once, by whoever is first" are the driver's, as in a local run.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable

from mala_tui.core.observations import Decision
from mala_tui.core.permissions import AnsweredBy
from mala_tui.runtime.backends.base import PermissionAsk, PermissionVerdict
from mala_tui.runtime.cluster.wire import ApprovalAsk, Ask, PermissionAskWire, PermissionWithdrawn
from mala_tui.runtime.questions.desk import Reply


class QuestionRelay:
    """A host's questions that wait for the driver's answers."""

    def __init__(self, send: Callable[[Ask], None]) -> None:
        """`send`: puts a question asked, or withdrawn, in what goes to the driver."""
        self._send = send
        self._approval_waits: dict[int, tuple[Callable[[Reply], None], asyncio.Future[Reply]]]
        self._approval_waits = {}
        self._permission_waits: dict[int, tuple[PermissionAsk, asyncio.Future[PermissionVerdict]]]
        self._permission_waits = {}
        self._keys = itertools.count(1)

    def waiting(self) -> list[Ask]:
        """Every question still waiting (asked again on a new connection)."""
        return [
            *(ApprovalAsk(number) for number in self._approval_waits),
            *(_wire(key, ask) for key, (ask, _) in self._permission_waits.items()),
        ]

    def relay_approval(
        self, number: int, on_answer: Callable[[Reply], None]
    ) -> asyncio.Future[Reply]:
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._approval_waits[number] = (on_answer, future)
        self._send(ApprovalAsk(number))
        return future

    def answer_approval(
        self,
        number: int,
        decision: Decision,
        edited_text: str | None,
        by: AnsweredBy,
        reason: str = "",
    ) -> bool:
        """The driver's desk settled the approval of checkpoint `number`; False when the
        session no longer waits for it."""
        waiting = self._approval_waits.pop(number, None)
        if waiting is None:
            return False
        on_answer, future = waiting
        reply = Reply(decision, by, reason, edited_text)
        on_answer(reply)
        if not future.done():
            future.set_result(reply)
        return True

    async def relay_permission(self, ask: PermissionAsk) -> PermissionVerdict:
        """The session's permission gate on the host: the driver's answer."""
        key = next(self._keys)
        future: asyncio.Future[PermissionVerdict] = asyncio.get_running_loop().create_future()
        self._permission_waits[key] = (ask, future)
        self._send(_wire(key, ask))
        try:
            return await future
        finally:
            if self._permission_waits.pop(key, None) is not None:
                self._send(PermissionWithdrawn(key))  # the agent stopped waiting

    def answer_permission(self, key: int, allow: bool, message: str) -> bool:
        """The driver's answer to permission request `key`; False when nothing waits."""
        waiting = self._permission_waits.pop(key, None)
        if waiting is None:
            return False
        _, future = waiting
        if not future.done():
            future.set_result(PermissionVerdict(allow, message))
        return True


def _wire(key: int, ask: PermissionAsk) -> PermissionAskWire:
    return PermissionAskWire(key, ask.tool_use_id, ask.tool, dict(ask.tool_input))


class RelayedApprovals:
    """The runner's approvals on a host: each question goes to the driver, whose desk asks
    it; the answer comes back through the relay."""

    def __init__(self, relay: QuestionRelay) -> None:
        self._relay = relay

    def ask(
        self, session: str, checkpoint_number: int, on_answer: Callable[[Reply], None]
    ) -> asyncio.Future[Reply]:
        return self._relay.relay_approval(checkpoint_number, on_answer)
