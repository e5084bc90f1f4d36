"""A mask carried out: the transcript rewritten, folded when the manager says so, a cache
breakpoint kept, the session resumed.

The manager decides what to mask (core.masking); this is where its `ApplyMask` meets the
agent's transcript (the backend's `mask_transcript` and `fold_transcript`, core.fold)
and the process that resumes on it.
"""

from __future__ import annotations

from mala_tui.core import events as ev
from mala_tui.core.actions import ApplyMask
from mala_tui.core.manager import ContextManager, Outcome
from mala_tui.core.observations import MaskConfirmed, MaskFailed
from mala_tui.runtime.backends.base import Backend, MaskError, SessionSpec
from mala_tui.runtime.session.agent_process import AgentProcess
from mala_tui.runtime.session.manager_feed import Clock, ManagerFeed
from mala_tui.runtime.session.runner_limits import RunnerLimits
from mala_tui.runtime.session.turn_stop import TurnStopper


class MaskApplier:
    """Applies a session's masks for its runner."""

    def __init__(
        self,
        *,
        backend: Backend,
        process: AgentProcess,
        feed: ManagerFeed,
        manager: ContextManager,
        limits: RunnerLimits,
        clock: Clock,
        stopper: TurnStopper,
    ) -> None:
        self._backend = backend
        self._process = process
        self._feed = feed
        self._manager = manager
        self._limits = limits
        self._clock = clock
        self._stopper = stopper
        self._mask_notes: list[str] = []
        """The resume notes sent after masks: the next fold takes them out."""

    async def apply(self, action: ApplyMask, spec: SessionSpec) -> Outcome | None:
        """Rewrite the transcript, fold it, and resume with the note; what the manager
        decided of it (None: nothing more to do)."""
        if action.interrupt_first:
            drained = await self._stopper.interrupt_and_drain(at_clean_point=True)
            if drained.actions or self._manager.phase.terminal:
                return drained
        session_id = self._manager.session_id
        await self._process.close(self._limits.disconnect_timeout)
        try:
            if session_id is None:
                raise MaskError("the session has no id yet, so its transcript cannot be found")
            replaced = await self._backend.mask_transcript(
                spec, session_id, action.plan.placeholders
            )
            if replaced == 0:
                raise MaskError(
                    f"none of the {len(action.plan.ids)} results was found in the transcript"
                )
        except MaskError as exc:
            failed = self._feed.observe(MaskFailed(self._clock(), str(exc)))
            return failed if failed.actions else None
        confirmed = self._feed.observe(MaskConfirmed(self._clock(), action.plan.ids))
        if action.fold:
            await self._fold(spec, session_id)
        await self._keep_breakpoint(spec, session_id)
        if action.resume_prompt is not None:
            self._mask_notes.append(action.resume_prompt)
            await self._process.query(action.resume_prompt, resume=session_id)
        return confirmed if confirmed.actions else None

    def _warn(self, spec: SessionSpec, message: str) -> None:
        """A part of the mask that failed without undoing it, journaled."""
        self._feed.emit(
            ev.WarningRecorded(
                at=self._clock(), session=spec.name, where=ev.Where.MASKING, message=message
            )
        )

    async def _keep_breakpoint(self, spec: SessionSpec, session_id: str) -> None:
        """Mark the result before the newest for the prompt cache, so that the next mask
        rewrites only what follows it; one that fails costs only that saving."""
        try:
            await self._backend.keep_breakpoint(spec, session_id)
        except MaskError as exc:
            self._warn(spec, f"no cache breakpoint was kept after the mask: {exc}")

    async def _fold(self, spec: SessionSpec, session_id: str) -> None:
        """Fold the masked steps into the transcript's digest (core.fold); a fold that
        fails leaves the masked transcript as it was, which resumes as well."""
        try:
            report = await self._backend.fold_transcript(spec, session_id, self._mask_notes)
        except MaskError as exc:
            self._warn(spec, f"the masked steps were not folded: {exc}")
            return
        if report is not None:
            self._feed.emit(
                ev.TranscriptFolded(
                    at=self._clock(),
                    session=spec.name,
                    steps=report.steps,
                    notes=report.notes,
                    digest_lines=report.digest_lines,
                    tokens_before=report.tokens_before,
                    tokens_after=report.tokens_after,
                    digest_tokens=report.digest_tokens,
                )
            )
