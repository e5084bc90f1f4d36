"""Background work: a turn that ends is not a task that is done (core.background).

The CLI lists what the agent runs in the background; a main turn that ends while
some of it is still to report leaves the session waiting for the CLI's next turn,
which the CLI starts on its own to hand the agent the reports. Silence from that
work past the idle timeout is a hang, or, with only reports left that came in with
the last turn, the task done.

A part of the ContextManager (core.manager): `BackgroundFlow` is given the
session's state (core.manager_state) and recovery (core.recovery), the one other
part it calls. The manager sends it the CLI's lists and the idle timeouts of a
waiting session; the turn flow asks it whether a turn's end is the task's.
"""

from __future__ import annotations

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.manager_state import ManagerState, Outcome
from mala_tui.core.observations import BackgroundChanged, IdleTimedOut
from mala_tui.core.phases import Trigger
from mala_tui.core.recovery import Recovery


class BackgroundFlow:
    """The manager's handlers for the agent's background work."""

    def __init__(self, state: ManagerState, recovery: Recovery) -> None:
        self._state = state
        self._recovery = recovery

    def on_background(self, obs: BackgroundChanged) -> Outcome:
        """The CLI's list of background work changed: kept, so that a turn's end can tell
        a task done from a task whose subagents, shells or reports are still to come."""
        work = self._state.background
        before = {task.id for task in work.tasks}
        work.listed(obs.tasks, obs.reports)
        if before == {task.id for task in obs.tasks}:
            return Outcome()  # a report counted, or a description changed: no news
        listed = ev.BackgroundListed(at=obs.at, session=self._state.name, tasks=obs.tasks)
        return Outcome(events=(listed,))

    def on_idle_while_waiting(self, obs: IdleTimedOut) -> Outcome:
        """Nothing came from the agent's background work for the idle timeout. With
        subagents out, that is a hang: recovered as one (the process goes, and its
        subagents with it: said so). With only reports left, the CLI started no turn
        for them (they came in with the last one): the task is done."""
        work = self._state.background
        if not work.tasks:
            work.taken_in()
            return self._state.end(
                obs.at, Trigger.TASK_DONE, EndStatus.DONE, "the agent finished its task"
            )
        stopped = self._state.background_stopped(obs.at, "silent past the idle timeout")
        recovered = self._recovery.on_idle(obs)
        return Outcome(recovered.actions, (*stopped, *recovered.events))

    def injected_turn_begins(self) -> None:
        """The CLI started a turn of its own while the session waited on its background
        work (a report handed to the agent): the session streams again, with no prompt
        of mala-tui's."""
        work = self._state.background
        if work.waiting and not self._state.turn.streaming:
            # The turn takes in the reports the CLI held (it says so too, as it begins).
            work.taken_in()
            self._state.cli_turn_begins()

    def done_or_waiting(self, at: float) -> Outcome:
        """The main thread finished its turn: the task is done, unless background work
        is still to report, in which case the session waits for the CLI's next turn."""
        work = self._state.background
        if not work.pending:
            return self._state.end(
                at, Trigger.TASK_DONE, EndStatus.DONE, "the agent finished its task"
            )
        work.wait()
        waiting = ev.BackgroundWaiting(
            at=at, session=self._state.name, tasks=work.tasks, reports=work.reports
        )
        return Outcome(events=(waiting,))
