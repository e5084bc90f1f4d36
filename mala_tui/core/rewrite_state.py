"""What the next mask's rewrite costs: the breakpoint kept in the transcript, and the
structure left since the last fold.

A mask changes the prompt at the oldest result it masks. With the CLI's own cache
breakpoints (the system prompt, the request's last block) the API finds no cached
prefix past the system prompt and tools there, so the whole conversation is written
again. After each mask the runtime writes a breakpoint of mala-tui's into the
transcript, on the result just before the newest one the mask kept: the next mask
starts changing the prompt after it, so everything up to it stays a cache read and
only the tail is written again (docs/BENCHMARKS.md, "A breakpoint kept in the
transcript"). The manager keeps here where that breakpoint is, in tokens, so the mask
economics (core.mask_economics) price the rewrite as it will be billed.

A fold (core.fold) takes the masked steps' structure out, but it rewrites the
conversation from the task on: the digest goes right after the task, before every
breakpoint. So masks fold only when the structure has grown enough to pay for that
rewrite (`fold_pays`): mask always, fold rarely. What a fold would take out is counted
here from the manager's own transcript, with the resume notes it sent since.

A breakpoint and the notes belong to one agent session: a restart or a fork starts
another, so each is kept with the continuation it was made in.
"""

from __future__ import annotations

from collections.abc import Sequence

from mala_tui.core.fold import FoldPlan, is_digest, plan_fold
from mala_tui.core.mask_economics import pays_for_itself
from mala_tui.core.transcript import Message, TextBlock, ToolCall, ToolResult


class RewriteState:
    """The breakpoint kept after the latest mask, and what the next fold would take out."""

    __slots__ = ("_continuation", "_notes", "_steps_at_fold", "marker_prefix")

    def __init__(self) -> None:
        self._continuation = -1
        self.marker_prefix: int | None = None
        """Tokens of the prompt up to the breakpoint kept after the latest mask, the system
        prompt and tools included; None when there is none."""
        self._notes: list[str] = []
        self._steps_at_fold = 0

    def _session(self, continuation: int) -> None:
        if continuation != self._continuation:
            self._continuation = continuation
            self.marker_prefix = None
            self._notes = []
            self._steps_at_fold = 0

    def warm_prefix(self, continuation: int) -> int:
        """What the request after the next mask still reads from the cache, past the
        head: the prompt up to the kept breakpoint (0 when there is none)."""
        self._session(continuation)
        return self.marker_prefix or 0

    def notes(self, continuation: int) -> frozenset[str]:
        """The resume notes sent after this session's masks since its last fold."""
        self._session(continuation)
        return frozenset(self._notes)

    def steps_since_fold(self, continuation: int, steps: int) -> int:
        """Tool steps the session took since its last fold (since it began, if none)."""
        self._session(continuation)
        return max(1, steps - self._steps_at_fold if steps >= self._steps_at_fold else steps)

    def masked(
        self, continuation: int, *, prefix: int | None, note: str | None, folded_to: int | None
    ) -> None:
        """A mask landed: its breakpoint's prefix, the note it resumed with, and the steps
        left when it folded too (None: it did not fold)."""
        self._session(continuation)
        if folded_to is not None:
            self._notes = []
            self._steps_at_fold = folded_to
        self.marker_prefix = prefix
        if note:
            self._notes.append(note.strip())


def current_digest(messages: Sequence[Message]) -> str:
    """The digest an earlier fold put after the task ("" if none)."""
    for message in messages:
        if message.is_prompt and message.text.strip():
            return next(
                (b.text for b in message.blocks if isinstance(b, TextBlock) and is_digest(b.text)),
                "",
            )
    return ""


def fold_plan(messages: Sequence[Message], notes: frozenset[str]) -> FoldPlan:
    """What a fold of `messages` (placeholders in) would take out."""
    return plan_fold(messages, digest=current_digest(messages), notes=notes)


def folded_characters(messages: Sequence[Message], plan: FoldPlan) -> int:
    """Characters a fold takes out: the folded calls and results and the notes, less the
    digest lines it adds."""
    gone = set(plan.folded)
    taken = 0
    for index, message in enumerate(messages):
        if index in plan.notes:
            taken += message.characters
            continue
        taken += Message(
            message.role,
            tuple(
                block
                for block in message.blocks
                if (isinstance(block, ToolCall) and block.id in gone)
                or (isinstance(block, ToolResult) and block.tool_use_id in gone)
            ),
        ).characters
    added = sum(len(line) + 1 for line in plan.new_lines)
    return max(0, taken - added)


def fold_pays(
    freed: int, after: int, head: int, steps: int, write: float, *, cold: bool = False
) -> bool:
    """Whether folding `freed` tokens of structure pays for rewriting the conversation
    from the task on (`after` tokens left, `head` of them the cached system prompt and
    tools). The structure grew by freed / steps per request since the last fold; the
    same rule as a mask's (core.mask_economics): fold once what it frees repays the
    rewrite over the cycle it starts. A cold cache rewrites everything anyway: fold."""
    if freed <= 0:
        return False
    return pays_for_itself(freed, after, head, freed / max(1, steps), write, cold=cold)
