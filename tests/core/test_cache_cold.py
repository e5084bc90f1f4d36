"""A wait that lets the prompt cache go cold makes the waiting mask free.

The session here sits in the soft zone with a mask it would not make yet (too little to
mask at once for the cache rewrite it costs). A permission request or a pause then keeps
it waiting: answered within the cache's lifetime nothing changes; answered after it, the
next request writes the whole prompt anyway, so the mask goes first and is journaled as
free. The times are the observations' own: the core keeps no clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from mala_tui.core import events as ev
from mala_tui.core.actions import ApplyMask, Interrupt, SendPrompt, StopTurn
from mala_tui.core.decision_figures import cache_warm_until
from mala_tui.core.describe import summary
from mala_tui.core.manager import ContextManager, Outcome
from mala_tui.core.mask_economics import cache_cold, worthwhile_batch, write_price
from mala_tui.core.observations import (
    Command,
    MaskConfirmed,
    MessageObserved,
    OperatorCommand,
    ToolResultSeen,
    TurnEnded,
    UsageObserved,
)
from mala_tui.core.phases import Phase
from mala_tui.core.prompts import PromptKind
from mala_tui.core.usage import CallUsage, estimate_tokens
from mala_tui.prompt_files import load_prompts
from tests.support.factories import call, default_limits, result

PROMPTS = load_prompts()
#: The CLI's system prompt and tools: a large fixed part of every request.
OVERHEAD = 40_000
RESULT = "\n".join(["y" * 79] * 250)  # 20,000 characters: 5,000 tokens
TTL = 300.0


@dataclass
class Session:
    manager: ContextManager
    now: float = 0.0
    calls: int = 0

    def tokens(self) -> int:
        return OVERHEAD + estimate_tokens(self.manager.transcript.characters)

    def request(self) -> Outcome:
        """The agent sends its next request; it reads (and keeps warm) the cache."""
        self.now += 1.0
        return self.manager.observe(
            UsageObserved(self.now, CallUsage(input_tokens=self.tokens()), starts_call=True)
        )

    def tool_call(self, *, answered_after: float = 0.5) -> Outcome:
        """A Read, its result seen by the post-tool hook `answered_after` seconds later
        (a permission request keeps the tool waiting that long), then joining."""
        self.calls += 1
        tool_id = f"t{self.calls:03d}"
        self.manager.observe(MessageObserved(self.now, call(tool_id)))
        self.now += answered_after
        seen = self.manager.observe(ToolResultSeen(self.now, tool_id, "Read", len(RESULT)))
        self.manager.observe(MessageObserved(self.now, result(tool_id, RESULT)))
        return seen

    def stopped_at_hook(self) -> Outcome:
        self.now += 1.0
        return self.manager.observe(
            TurnEnded(self.now, "success", False, terminal_reason="hook_stopped", session_id="s")
        )


def in_the_soft_zone(**limits: Any) -> Session:
    """Five results in: past the soft threshold (60,000), with ~20,000 tokens maskable,
    under the batch minimum: the mask waits."""
    limits = {"soft_threshold": 0.3, "mask_min_batch_tokens": 30_000, **limits}
    manager = ContextManager(
        name="waiter",
        task="Read the modules.",
        limits=default_limits(context_limit=200_000, **limits),
        prompts=PROMPTS,
    )
    manager.start(0.0)
    one = Session(manager)
    skipped: list[str] = []
    for _ in range(6):
        decided = one.request()
        assert not decided.actions
        skipped += [e.reason for e in decided.events if isinstance(e, ev.MaskSkipped)]
        if len(manager.transcript.exchanges()) < 5:
            assert not any(isinstance(a, StopTurn) for a in one.tool_call().actions)
    assert manager.zone.value == "soft"
    assert skipped and "batch minimum" in skipped[0]
    return one


def test_a_permission_answered_within_the_cache_lifetime_changes_nothing() -> None:
    waiter = in_the_soft_zone()
    seen = waiter.tool_call(answered_after=TTL - 20)
    assert not seen.actions
    assert waiter.manager.phase is Phase.RUNNING


def test_a_permission_answered_after_the_cache_went_cold_masks_first_and_free() -> None:
    waiter = in_the_soft_zone()
    seen = waiter.tool_call(answered_after=TTL + 60)
    assert [type(a) for a in seen.actions] == [StopTurn]
    ended = waiter.stopped_at_hook()
    (mask,) = [a for a in ended.actions if isinstance(a, ApplyMask)]
    assert len(mask.plan.ids) == 5  # every result but the newest, whatever the batch size
    waiter.now += 1.0
    confirmed = waiter.manager.observe(MaskConfirmed(waiter.now, mask.plan.ids))
    (applied,) = [e for e in confirmed.events if isinstance(e, ev.MaskApplied)]
    assert applied.free
    # From the last request (as the tool was called) to the clean point after the answer.
    assert applied.idle_seconds == pytest.approx(TTL + 60 + 1.0, abs=0.1)
    assert "free: the prompt cache had gone cold (6 min" in summary(applied)
    assert waiter.manager.phase is Phase.RUNNING


def test_with_the_hour_cache_the_same_wait_keeps_it_warm() -> None:
    waiter = in_the_soft_zone(cache_ttl_seconds=3600.0)
    assert not waiter.tool_call(answered_after=TTL + 60).actions


def test_in_the_normal_zone_a_cold_cache_is_no_reason_to_mask() -> None:
    manager = ContextManager(
        name="small",
        task="Read.",
        limits=default_limits(context_limit=1_000_000),
        prompts=PROMPTS,
    )
    manager.start(0.0)
    small = Session(manager)
    for _ in range(6):
        small.request()
        small.tool_call()
    small.request()
    assert not small.tool_call(answered_after=TTL * 3).actions


def test_a_pause_past_the_cache_lifetime_resumes_on_the_masked_transcript() -> None:
    waiter = in_the_soft_zone()
    waiter.tool_call()
    paused = waiter.manager.observe(OperatorCommand(waiter.now, Command.PAUSE))
    assert [type(a) for a in paused.actions] == [Interrupt]
    waiter.now += 1.0
    waiter.manager.observe(TurnEnded(waiter.now, "error_during_execution", True))
    assert waiter.manager.phase is Phase.PAUSED
    waiter.now += TTL + 30
    resumed = waiter.manager.observe(OperatorCommand(waiter.now, Command.RESUME))
    (mask,) = resumed.actions
    assert isinstance(mask, ApplyMask) and mask.resume_prompt is not None
    assert not mask.interrupt_first
    phases = [(e.before, e.after) for e in resumed.events if isinstance(e, ev.PhaseChanged)]
    assert phases == [(Phase.PAUSED, Phase.RUNNING), (Phase.RUNNING, Phase.MASKING)]
    confirmed = waiter.manager.observe(MaskConfirmed(waiter.now + 1, mask.plan.ids))
    (applied,) = [e for e in confirmed.events if isinstance(e, ev.MaskApplied)]
    assert applied.free and applied.idle_seconds is not None and applied.idle_seconds > TTL
    assert waiter.manager.streaming  # the agent resumed with the mask's prompt


def test_a_short_pause_resumes_as_always() -> None:
    waiter = in_the_soft_zone()
    waiter.manager.observe(OperatorCommand(waiter.now, Command.PAUSE))
    waiter.manager.observe(TurnEnded(waiter.now + 1, "error_during_execution", True))
    resumed = waiter.manager.observe(OperatorCommand(waiter.now + 60, Command.RESUME))
    (prompt,) = resumed.actions
    assert isinstance(prompt, SendPrompt) and prompt.kind is PromptKind.OPERATOR_RESUME


def test_the_cache_goes_cold_a_lifetime_after_the_last_request() -> None:
    assert not cache_cold(None, 10_000.0, TTL)
    assert not cache_cold(100.0, 399.0, TTL)
    assert cache_cold(100.0, 400.0, TTL)
    waiter = in_the_soft_zone()
    state = waiter.manager._state
    assert state.cache_refreshed_at is not None
    assert cache_warm_until(state) == pytest.approx(state.cache_refreshed_at + TTL)


def test_the_hour_caches_dearer_writes_make_a_mask_wait_for_more() -> None:
    assert write_price(300.0) == 1.25 and write_price(3600.0) == 2.0
    assert worthwhile_batch(30_000, 10_000, 5_000, write_price(3600.0)) > worthwhile_batch(
        30_000, 10_000, 5_000, write_price(300.0)
    )
