"""A remote session's host lost, or wound down: whether and how the session starts again.

`RestartPlanner` is the part of a `RemoteRunner` (runtime.cluster.driver_runner) that keeps
the session's events as the run recorded them and plans from them (core.resume_plan), as
`resume` would. After a lost host the session restarts from a checkpoint: its latest, or,
when the agent has worked since, one built from the transcript the driver received (the
latest listed as done before it), journaled as a harness-made checkpoint. The restart is a
`node_lost` one, which goes through the usual approval when approval is on. A session
that ended before its host went is not restarted; after `max_restarts`, or in a management
mode that does not restart, it ends failed instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.checkpoint import Checkpoint, harness_checkpoint
from mala_tui.core.limits import Limits
from mala_tui.core.manager import ContextManager
from mala_tui.core.phases import ManageMode
from mala_tui.core.prompts import PromptSet
from mala_tui.core.resume_plan import ResumeFrom, SessionResume, TaskRecord, plan_resume
from mala_tui.core.transcript import Role, Transcript
from mala_tui.runtime.backends.base import SessionSpec
from mala_tui.runtime.cluster.wire import HostEnd
from mala_tui.runtime.session.agent_process import EventSink


class RestartPlanner:
    """One remote session's events so far, and the restarts planned from them."""

    def __init__(
        self,
        *,
        spec: SessionSpec,
        manager: ContextManager,
        prompts: PromptSet,
        sink: EventSink,
        clock: Callable[[], float],
        history: Sequence[ev.Event] = (),
    ) -> None:
        """`manager`: the one the session started with, whose limits a restart's has
        (under the approval policy set since); `history`: the session's events journaled
        before (a resumed run's)."""
        self._spec = spec
        self._first = manager
        self._prompts = prompts
        self._sink = sink
        self._clock = clock
        self.events: list[ev.Event] = list(history)
        """Every event of this session so far: what a restart is planned from."""
        self.require_approval = manager.require_approval
        """The approval policy now (a restart keeps it)."""

    def recorded(self, event: ev.Event) -> None:
        """An event of this session, as the run recorded it."""
        self.events.append(event)
        if isinstance(event, ev.ApprovalPolicySet):
            self.require_approval = event.required

    def placed(self) -> list[ev.HostPlaced]:
        """Every host placed for the session so far, the latest last."""
        return [e for e in self.events if isinstance(e, ev.HostPlaced)]

    def plan(self) -> SessionResume | None:
        """The session as its events leave it (core.resume_plan), its transcript gone."""
        record = TaskRecord(self._spec.name, self._spec.task, str(self._spec.cwd))
        plan = plan_resume(self.events, [record], lambda _name, _id: False)
        found = [session for session in plan.sessions if session.name == self._spec.name]
        return found[0] if found else None

    def _limits(self) -> Limits:
        return replace(self._first.limits, require_approval=self.require_approval)

    def _manager(self, resume: SessionResume, limits: Limits) -> ContextManager:
        manager = ContextManager(
            name=self._spec.name, task=self._spec.task, limits=limits, prompts=self._prompts
        )
        manager.resume_from(resume, 0.0)
        return manager

    def orphan_resumed(self) -> ContextManager | None:
        """The manager that restarts a session its host wound down (from its checkpoint),
        as `resume` would have; None when there is nothing to restart from."""
        plan = self.plan()
        if plan is None or plan.how is not ResumeFrom.CHECKPOINT:
            return None
        return self._manager(plan, self._limits())

    def after_loss(
        self, node: str, address: str, lost: str, reason: str, mirror: Transcript
    ) -> ContextManager | HostEnd | EndStatus:
        """Record the loss (`lost`: why the host went; `reason`: the restart's) and say how
        the session goes on: the manager it restarts with; the failed end to record (it
        does not restart); or how it had ended already, before its host went."""
        plan = self.plan()
        limits = self._limits()
        ended = plan.ended if plan is not None else None
        if ended is not None:  # it ended before its host went: nothing to restart
            self.record_loss(node, address, lost, restart=False)
            return ended
        why_not = ""
        if plan is None:
            why_not = "its task is not known"
        elif plan.carried.manage not in (None, ManageMode.FULL):
            why_not = f"management mode {plan.carried.manage.value!r} does not restart"
        elif plan.carried.restarts >= limits.max_restarts:
            why_not = f"max restarts ({limits.max_restarts}) reached"
        if plan is None or why_not:
            self.record_loss(node, address, lost, restart=False)
            return HostEnd(EndStatus.FAILED, f"{reason}; {why_not}")
        self.record_loss(node, address, lost, restart=True)
        checkpoint, number = self._checkpoint_after_loss(
            plan, limits.carryover_turns, reason, mirror
        )
        carried = replace(plan.carried, checkpoints=max(plan.carried.checkpoints, number))
        resume = replace(
            plan,
            how=ResumeFrom.CHECKPOINT,
            reason=reason,
            session_id=None,
            checkpoint=checkpoint,
            checkpoint_number=number,
            carried=carried,
            awaiting_approval=None,
            lost_host=reason,
        )
        return self._manager(resume, limits)

    def record_loss(self, node: str, address: str, reason: str, *, restart: bool) -> None:
        self._sink(
            ev.HostLost(
                at=self._clock(),
                session=self._spec.name,
                node=node,
                address=address,
                reason=reason,
                restart=restart,
            )
        )

    def _checkpoint_after_loss(
        self, plan: SessionResume, carryover_turns: int, reason: str, mirror: Transcript
    ) -> tuple[Checkpoint, int]:
        """The latest checkpoint when the agent has done nothing since; else one built from
        the transcript received (journaled as a harness-made checkpoint)."""
        latest = plan.checkpoint
        since_restart = [
            e for e in reversed(self.events) if isinstance(e, ev.Restarted | ev.CheckpointSaved)
        ]
        covered = bool(since_restart) and isinstance(since_restart[0], ev.CheckpointSaved)
        worked = any(m.role is Role.ASSISTANT and not m.from_harness for m in mirror)
        if latest is not None and (covered or not worked):
            return latest, plan.checkpoint_number
        built = harness_checkpoint(
            mirror,
            reason=reason,
            carryover_turns=carryover_turns,
            goal=self._spec.task,
            previous=latest,
        )
        number = plan.carried.checkpoints + 1
        self._sink(
            ev.CheckpointSaved(
                at=self._clock(),
                session=self._spec.name,
                number=number,
                origin=built.origin,
                text=built.text,
            )
        )
        return built, number
