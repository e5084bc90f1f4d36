"""A mask's rewrite priced as the cache bills it: the kept breakpoint, and folding rarely."""

from __future__ import annotations

from mala_tui.core.actions import ApplyMask
from mala_tui.core.fold import digest_lines
from mala_tui.core.mask_economics import CACHE_WRITE
from mala_tui.core.observations import MaskConfirmed, MessageObserved, UsageObserved
from mala_tui.core.phases import Phase
from mala_tui.core.rewrite_state import RewriteState, current_digest, fold_pays
from mala_tui.core.usage import CallUsage
from tests.core.test_measured_decisions import DenseModel, session
from tests.support.factories import call, result


def test_a_breakpoint_and_notes_belong_to_one_agent_session() -> None:
    state = RewriteState()
    state.masked(0, prefix=40_000, note="Continue.", folded_to=None)
    assert state.warm_prefix(0) == 40_000 and state.notes(0) == {"Continue."}
    assert state.steps_since_fold(0, 12) == 12
    # A restart: the new session has no breakpoint and sent no note yet.
    assert state.warm_prefix(1) == 0 and state.notes(1) == frozenset()


def test_a_fold_forgets_the_notes_it_took_out_and_counts_steps_from_there() -> None:
    state = RewriteState()
    state.masked(0, prefix=None, note="first", folded_to=None)
    state.masked(0, prefix=30_000, note="second", folded_to=7)
    assert state.notes(0) == {"second"}  # sent after the fold
    assert state.steps_since_fold(0, 10) == 3


def test_a_fold_pays_once_the_structure_repays_the_rewrite() -> None:
    after, head, steps = 60_000, 20_000, 40
    assert not fold_pays(0, after, head, steps, CACHE_WRITE)
    # 40,000 rewritten, the structure grown by freed / 40 per request: the rewrite is
    # repaid over the cycle once freed x steps reaches 23 x 40,000 (core.mask_economics).
    assert not fold_pays(22_000, after, head, steps, CACHE_WRITE)
    assert fold_pays(24_000, after, head, steps, CACHE_WRITE)
    # A cold cache rewrites everything anyway.
    assert fold_pays(1, after, head, steps, CACHE_WRITE, cold=True)


def test_masks_fold_rarely_once_a_breakpoint_is_kept() -> None:
    m = session(soft_threshold=0.2, keep_recent_observations=1, mask_min_batch_tokens=100)
    model = DenseModel(1.0)
    folds: list[bool] = []
    prefixes: list[int | None] = []
    for index in range(150):
        outcome = m.observe(
            UsageObserved(1.0 + index, CallUsage(input_tokens=model.count(m)), starts_call=True)
        )
        if m.phase is Phase.MASKING:
            (mask,) = [a for a in outcome.actions if isinstance(a, ApplyMask)]
            folds.append(mask.fold)
            m.observe(MaskConfirmed(1.5 + index, mask.plan.ids))
            prefixes.append(m._state.rewrites.marker_prefix)
        command = f"grep -rn 'pattern {index}' src/ --include='*.py' | sort | head -400"
        m.observe(MessageObserved(1.6 + index, call(f"b{index:03d}", "Bash", command=command)))
        m.observe(MessageObserved(1.7 + index, result(f"b{index:03d}", "x" * 40_000)))
    # The first mask rewrites everything (no breakpoint yet): it folds, as it costs nothing.
    assert folds[0]
    # Then most masks rewrite only the tail and leave the structure, until it pays to fold.
    assert folds.count(False) > 2 * folds.count(True) and folds.count(True) >= 2
    # A breakpoint was kept after every mask, past the system prompt and tools.
    assert all(prefix is not None and prefix > model.overhead for prefix in prefixes)
    # The manager folded its own transcript as the agent's: the steps are digest lines.
    assert len(digest_lines(current_digest(m.transcript.messages))) > 50
