"""What a session waits on a person for: a restart's approval, a tool's permission.

Each is asked at the run's desk (runtime.questions), and meanwhile the session is not
stalled (the idle timeout is off while a permission waits) while its prompt cache
cools (the cache watch says when half its life has gone). An approval's answer comes
back through the session's inbox, as operator input does.
"""

from __future__ import annotations

from collections.abc import Callable

from mala_tui.core.observations import Decision
from mala_tui.runtime.backends.base import PermissionAsk, PermissionGate, PermissionVerdict
from mala_tui.runtime.questions.approvals import ApprovalAsker
from mala_tui.runtime.questions.desk import Reply
from mala_tui.runtime.session.cache_watch import CacheWatch
from mala_tui.runtime.session.inbox import Answer, Inbox, PermissionWait


class PersonWaits:
    """The questions one session waits on a person for, for its runner."""

    def __init__(
        self,
        *,
        session: str,
        approvals: ApprovalAsker,
        permissions: PermissionGate | None,
        cache_watch: CacheWatch,
        inbox: Inbox,
        ended: Callable[[], bool],
    ) -> None:
        """`approvals`: the run's (a runner of its own has its own desk, with no policy);
        `ended`: the session has ended (an answer then reaches nobody)."""
        self._session = session
        self._approvals = approvals
        self._permissions = permissions
        self._cache_watch = cache_watch
        self._inbox = inbox
        self._ended = ended
        self.approval_pending: int | None = None
        """The checkpoint number an approval is awaited for; answers to nothing else count."""
        self.permissions_waiting = 0
        """Permission requests waiting now: the agent is waiting for a person, not stalled."""

    def ask_approval(self, number: int) -> None:
        """Ask the approval of checkpoint `number`; the answer comes through the inbox."""
        self.approval_pending = number
        self._cache_watch.start("approval", f"approval of checkpoint #{number}")
        self._approvals.ask(self._session, number, lambda reply: self._answered(number, reply))

    def take_answer(self, number: int) -> bool:
        """An answer to the approval of checkpoint `number` arrived: whether it counts."""
        if number != self.approval_pending:
            return False
        self.approval_pending = None
        return True

    def _answered(self, number: int, reply: Reply) -> None:
        """The desk's answer (a person's, the policy's, the timeout's): to the inbox, as
        operator input is, unless the session has ended meanwhile (nobody reads it)."""
        self._cache_watch.stop("approval")
        if not self._ended():
            decision = Decision(reply.answer)
            self._inbox.put_nowait(Answer(number, decision, reply.edited_text, reply.by))

    async def permit(self, ask: PermissionAsk) -> PermissionVerdict:
        """Asked by the agent before a tool outside its allowed set; it waits for the answer
        (the run's desk gives it) and meanwhile is not stalled: the idle timeout is off."""
        assert self._permissions is not None
        self.permissions_waiting += 1
        self._inbox.put_nowait(PermissionWait())  # wakes the loop: the idle timeout goes off
        key = f"permission {ask.tool_use_id or id(ask)}"
        self._cache_watch.start(key, f"permission to use {ask.tool}")
        try:
            return await self._permissions(ask)
        finally:
            self._cache_watch.stop(key)
            self.permissions_waiting -= 1
            self._inbox.put_nowait(PermissionWait())  # and back on, counted from now
