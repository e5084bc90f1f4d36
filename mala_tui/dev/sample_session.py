"""One session of the sample run, written event by event: the sample run's clock and window.

`SampleSession` writes what a real session would journal (a start, usage climbing
towards the window, masks, subagents, phase changes, messages) in a few calls each,
so that `dev.sample_run` reads as the story of each session rather than as a list of
events. Every time is an offset from `T0`, one fixed instant, and nothing is random:
the screens made from it are the same on every machine.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mala_tui.core import events as ev
from mala_tui.core.phases import Phase, Trigger
from mala_tui.core.transcript import Role
from mala_tui.core.usage import CallUsage, UsageSource

T0 = 1_750_000_000.0
"""The sample run's start, seconds since the epoch."""
WINDOW = 200_000
"""Every sample session's context window, in tokens."""


@dataclass
class SampleSession:
    """A session's events, written by what happened to it (`sample_run` merges every
    session's by time)."""

    name: str
    task: str
    max_restarts: int = 3
    require_approval: bool = False
    events: list[ev.Event] = field(default_factory=list)
    phase: Phase = Phase.RUNNING

    def add(self, event: ev.Event) -> None:
        self.events.append(event)

    def start(self, at: float) -> None:
        self.add(
            ev.SessionStarted(
                at=T0 + at,
                session=self.name,
                task=self.task,
                cwd=f"/work/{self.name}",
                model="claude-sonnet-4-5",
                window=WINDOW,
                soft_threshold=0.4,
                hard_threshold=0.8,
                max_restarts=self.max_restarts,
                require_approval=self.require_approval,
            )
        )

    def usage(self, at: float, pressure: float, source: UsageSource = UsageSource.PER_CALL) -> None:
        tokens = round(pressure * WINDOW)
        # A per-call figure carries its split, as the API reports it: most of the prompt
        # read from the cache, a little written to it, a short answer (the cost estimate).
        split = (
            CallUsage(
                input_tokens=3,
                cache_creation_input_tokens=tokens - 3 - int(tokens * 0.9) - 300,
                cache_read_input_tokens=int(tokens * 0.9),
                output_tokens=300,
            )
            if source is UsageSource.PER_CALL and tokens > 3_000
            else CallUsage()
        )
        self.add(
            ev.UsageRecorded(
                at=T0 + at,
                session=self.name,
                tokens=tokens,
                window=WINDOW,
                source=source,
                input_tokens=split.input_tokens,
                cache_creation_input_tokens=split.cache_creation_input_tokens,
                cache_read_input_tokens=split.cache_read_input_tokens,
                output_tokens=split.output_tokens,
            )
        )

    def climb(
        self,
        start: float,
        end: float,
        low: float,
        high: float,
        *,
        steps: int,
        source: UsageSource = UsageSource.PER_CALL,
    ) -> None:
        for step in range(steps):
            fraction = step / max(1, steps - 1)
            self.usage(start + (end - start) * fraction, low + (high - low) * fraction, source)

    def subagent(
        self, at: float, agent_id: str, kind: str, description: str, *, background: bool = True
    ) -> None:
        self.add(
            ev.SubagentStarted(
                at=T0 + at,
                session=self.name,
                agent_id=agent_id,
                agent_type=kind,
                description=description,
                background=background,
                model="claude-sonnet-4-5",
            )
        )

    def subagent_calls(
        self, start: float, end: float, agent_id: str, low: float, high: float, *, steps: int
    ) -> None:
        """A subagent's calls, its window growing from `low` to `high` of the session's."""
        for step in range(steps):
            fraction = step / max(1, steps - 1)
            tokens = round((low + (high - low) * fraction) * WINDOW)
            self.add(
                ev.SubagentCall(
                    at=T0 + start + (end - start) * fraction,
                    session=self.name,
                    agent_id=agent_id,
                    input_tokens=3,
                    cache_creation_input_tokens=tokens - 3 - int(tokens * 0.85) - 400,
                    cache_read_input_tokens=int(tokens * 0.85),
                    output_tokens=400,
                    model="claude-sonnet-4-5",
                    tool_uses=1 + step % 2,
                )
            )

    def phase_to(self, at: float, after: Phase, trigger: Trigger) -> None:
        self.add(
            ev.PhaseChanged(
                at=T0 + at, session=self.name, before=self.phase, after=after, trigger=trigger
            )
        )
        self.phase = after

    def mask(self, at: float, count: int, before: float, total: int, reclaimed: int) -> None:
        placeholders = tuple(
            f"[Read result masked -- src/module_{total - count + index:02d}.py, "
            f"{120 + 7 * index} lines]"
            for index in range(count)
        )
        self.add(
            ev.MaskApplied(
                at=T0 + at,
                session=self.name,
                count=count,
                tool_use_ids=tuple(f"toolu_{index:03d}" for index in range(count)),
                placeholders=placeholders,
                estimated_tokens=reclaimed + 1_500,
                tokens_before=round(before * WINDOW),
                total_masked=total,
            )
        )
        self.add(
            ev.MaskMeasured(
                at=T0 + at + 4,
                session=self.name,
                tokens_before=round(before * WINDOW),
                tokens_after=round(before * WINDOW) - reclaimed,
                reclaimed=reclaimed,
            )
        )

    def message(
        self, at: float, kind: ev.MessageKind, tool: str, excerpt: str, *, error: bool = False
    ) -> None:
        role = Role.ASSISTANT if kind == "tool_call" else Role.USER
        self.add(
            ev.MessageRecorded(
                at=T0 + at,
                session=self.name,
                role=role,
                kind=kind,
                tool=tool,
                excerpt=excerpt,
                size=len(excerpt) * 40,
                is_error=error,
            )
        )
