"""Finishing a worktree session's work from the app: landing it, or discarding it.

Landing commits what the agent left (the message drafted from its checkpoint, the
person's to edit) and merges its branch; discarding removes its worktree and branch,
asked first and told what would be lost. Both go through the run's landings (real
git), so a refusal (the session still running, nothing to land) is the run's own.
"""

from __future__ import annotations

from mala_tui.core import events as ev
from mala_tui.core.session_records import SessionSnapshot
from mala_tui.core.text import plural
from mala_tui.runtime.git.landing import LandingError
from mala_tui.ui.bridge import UpdateBridge
from mala_tui.ui.controller import Controller
from mala_tui.ui.shell import Shell


class LandingActions:
    """The land and discard actions of `ui.session_actions.SessionActions`."""

    def __init__(self, shell: Shell, controller: Controller, bridge: UpdateBridge) -> None:
        self.shell = shell
        self.controller = controller
        self.bridge = bridge

    def land(self, snapshot: SessionSnapshot) -> None:
        """The landing screen on its work, unless there is nothing to land."""
        from mala_tui.core.describe import summary
        from mala_tui.ui.screens.land import LandScreen

        landings = self.controller.landings()
        if landings is None:
            return
        name = snapshot.name
        try:
            target = landings.target(name)
            draft = landings.draft(name)
        except LandingError as exc:
            self.shell.notify(str(exc), severity="warning", markup=False)
            return
        left = snapshot.worktree_status
        if left is not None and not left.to_land:
            self.shell.notify(f"{name}: nothing to land ({left.label})", markup=False)
            return

        def landed(event: ev.WorktreeLanded | None) -> None:
            if event is not None:
                self.shell.notify(f"{name}: {summary(event)}", title="Landed", markup=False)
                self.bridge.flush()

        self.shell.push_screen(
            LandScreen(
                name,
                target.branch,
                target.base_branch,
                draft,
                land=lambda message: landings.land(name, message),
                read_status=lambda: landings.status(name),
            ),
            landed,
        )

    def discard(self, snapshot: SessionSnapshot) -> None:
        """Its worktree and branch removed, once the person has said so."""
        self.shell.run_worker(self._discard_asking(snapshot.name), group="discard")

    async def _discard_asking(self, name: str) -> None:
        """Discarded only once the person says so, told what would be lost (if anything):
        a worktree and its branch cannot be had back."""
        from mala_tui.ui.screens.confirm import ConfirmScreen

        landings = self.controller.landings()
        if landings is None:
            return
        try:
            found = await landings.status(name)
            target = landings.target(name)
        except LandingError as exc:
            self.shell.notify(str(exc), severity="warning", markup=False)
            return
        work = found is not None and found.to_land

        def answered(yes: bool | None) -> None:
            if yes:
                self.shell.run_worker(self._discard_now(name, force=work), group="discard")

        if found is not None and found.to_land:
            into = target.base_branch or "the commit the run started from"
            lost = [f"{plural(found.ahead, 'commit')} not in {into}"] if found.ahead else []
            if found.uncommitted:
                lost.append("uncommitted edits")
            body = (
                f"Its branch {target.branch} has {' and '.join(lost)}. Discarding removes its "
                "worktree and its branch: that work is lost. Land it (L) to keep it."
            )
        else:
            left = found.label if found is not None else "nothing to land"
            body = (
                f"Its branch {target.branch}: {left}, so no work is lost. Discarding removes "
                "its worktree and its branch."
            )
        self.shell.push_screen(ConfirmScreen(f"Discard {name}?", body, confirm="Discard"), answered)

    async def _discard_now(self, name: str, *, force: bool) -> None:
        from mala_tui.core.describe import summary

        landings = self.controller.landings()
        if landings is None:
            return
        try:
            event = await landings.discard(name, force=force)
        except LandingError as exc:
            self.shell.notify(str(exc), severity="warning", markup=False)
            return
        self.shell.notify(f"{name}: {summary(event)}", title="Discarded", markup=False)
        self.bridge.flush()
