"""A mask's rewrite as the cache will bill it: the kept breakpoint, and whether to fold.

The figures behind two of the masking decisions (core.masking_decisions): what the
request after a mask still reads from the cache (the prompt up to the breakpoint kept
after the previous mask, core.rewrite_state), and whether this mask folds the structure
the masks left (core.fold), which rewrites the conversation from the task on. The
manager folds its own transcript as the runtime folds the agent's, so its estimates
count what the agent's prompt really holds.
"""

from __future__ import annotations

from mala_tui.core.fold import apply_fold
from mala_tui.core.manager_state import ManagerState
from mala_tui.core.mask_economics import warm_head, write_price
from mala_tui.core.masking import MaskPlan
from mala_tui.core.rewrite_state import current_digest, fold_pays, fold_plan, folded_characters
from mala_tui.core.transcript import Transcript


def unwritten_after_mask(state: ManagerState) -> int:
    """Tokens of the request after the next mask that the mask does not make it write
    again: what it reads from the cache (the system prompt and tools, or the prompt up to
    the kept breakpoint when there is one), and the newest result, which a mask landing
    right after it (at a clean point) leaves to be written once, as any new result is."""
    prefix = state.rewrites.warm_prefix(state.counters.continuation)
    results = [obs.result for obs in state.transcript.exchanges() if obs.result is not None]
    newest = state.calibrated(len(results[-1].content)) if results else 0
    return warm_head(state.density.overhead, prefix) + newest


def fold_now(state: ManagerState, plan: MaskPlan, tokens: int, *, cold: bool) -> bool:
    """Whether the mask of `plan`, with the window at `tokens`, also folds; `cold`: the
    prompt cache has gone cold, so the next request writes everything anyway."""
    continuation = state.counters.continuation
    masked = Transcript(state.transcript.messages)
    masked.replace_results(plan.placeholders)
    fold = fold_plan(masked.messages, state.rewrites.notes(continuation))
    if not fold:
        return False
    freed = state.calibrated(folded_characters(masked.messages, fold))
    after = max(0, tokens - plan.estimated_tokens - freed)
    steps = state.rewrites.steps_since_fold(continuation, len(masked.exchanges()))
    # With no breakpoint kept, or the cache gone cold, the mask rewrites the whole
    # conversation anyway: the fold then costs nothing of its own.
    rewrites_all = cold or state.rewrites.warm_prefix(continuation) == 0
    return fold_pays(
        freed,
        after,
        state.density.overhead,
        steps,
        write_price(state.limits.cache_ttl_seconds),
        cold=rewrites_all,
    )


def fold_own_transcript(state: ManagerState) -> int:
    """Fold the manager's transcript as the runtime folded the agent's; the tool steps
    left."""
    notes = state.rewrites.notes(state.counters.continuation)
    messages = state.transcript.messages
    plan = fold_plan(messages, notes)
    if plan:
        state.transcript.refold(apply_fold(messages, plan))
        state.tracker.observe_transcript_size(state.transcript.characters)
    return len(state.transcript.exchanges())


def marker_prefix(state: ManagerState) -> int | None:
    """Tokens of the prompt up to the breakpoint the runtime keeps after a mask: on the
    result just before the newest one, so up to the message that calls the newest step;
    on the digest when no result comes before the newest, so up to the task. None when
    there is neither (no breakpoint is written)."""
    messages = state.transcript.messages
    exchanges = [obs for obs in state.transcript.exchanges() if obs.result is not None]
    if len(exchanges) >= 2:
        end = exchanges[-1].call_index
    elif current_digest(messages):
        end = next(i for i, m in enumerate(messages) if m.is_prompt and m.text.strip()) + 1
    else:
        return None
    before = sum(message.characters for message in messages[:end])
    return state.density.overhead + state.calibrated(before)
