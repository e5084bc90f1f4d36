"""Decisions in measured tokens: a session played against models of several token densities.

The model here counts `overhead + density x chars/4` for whatever the manager's
transcript holds, the way a real tokenizer counts dense text (logs, numbers,
JSON, CJK) at several times the chars/4 estimate. The manager only ever sees
those counts through usage, as it would from the API, and must still mask in
the soft zone, never let a request pass the hard threshold, and size what it
masks within 10% of the truth.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from mala_tui.core import events as ev
from mala_tui.core.actions import ApplyMask, SendPrompt, StartFreshSession, StopTurn
from mala_tui.core.manager import ContextManager, Outcome
from mala_tui.core.mask_economics import pays_for_itself
from mala_tui.core.mask_rewrites import unwritten_after_mask
from mala_tui.core.observations import (
    Command,
    MaskConfirmed,
    MessageObserved,
    OperatorCommand,
    ToolResultSeen,
    TurnEnded,
    UsageObserved,
)
from mala_tui.core.phases import Cause, Phase
from mala_tui.core.prompts import PromptKind
from mala_tui.core.state_parts import StopFor
from mala_tui.core.usage import CallUsage, estimate_tokens
from mala_tui.prompt_files import load_prompts
from tests.support.factories import call, default_limits, result

PROMPTS = load_prompts()
WINDOW = 200_000
HOOK_STOPPED = TurnEnded(
    2.0, subtype="success", is_error=False, terminal_reason="hook_stopped", session_id="s"
)


@dataclass
class DenseModel:
    density: float
    overhead: int = 13_000

    def count(self, m: ContextManager) -> int:
        return self.overhead + round(self.density * estimate_tokens(m.transcript.characters))


@dataclass
class Decision:
    kind: str
    estimated: int
    truth: int

    @property
    def error(self) -> float:
        return abs(self.estimated - self.truth) / max(1, self.truth)


@dataclass
class Played:
    peak: int = 0
    masks: list[ev.MaskApplied] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    wound_down: bool = False
    skipped: list[str] = field(default_factory=list)


def session(**limits: object) -> ContextManager:
    m = ContextManager(
        name="reader",
        task="Read the logs and report.",
        limits=default_limits(context_limit=WINDOW, **limits),
        prompts=PROMPTS,
    )
    m.start(0.0)
    m.observe(MessageObserved(0.0, call("warmup", "Bash", command="ls")))
    return m


def play(m: ContextManager, model: DenseModel, reads: int, size: int) -> Played:
    """The reader: `reads` results of `size` characters, one per model request."""
    played = Played()

    def record(outcome: Outcome) -> None:
        for event in outcome.events:
            if isinstance(event, ev.MaskApplied):
                played.masks.append(event)
            elif isinstance(event, ev.MaskSkipped):
                played.skipped.append(event.reason)
            elif isinstance(event, ev.WindDownSent):
                played.wound_down = True

    def carry_out(outcome: Outcome) -> None:
        record(outcome)
        for action in outcome.actions:
            if isinstance(action, ApplyMask) and not action.interrupt_first:
                before = model.count(m)
                confirmed = m.observe(MaskConfirmed(3.0, action.plan.ids))
                played.decisions.append(
                    Decision("mask", action.plan.estimated_tokens, before - model.count(m))
                )
                carry_out(confirmed)
            elif isinstance(action, SendPrompt) and action.kind is PromptKind.WIND_DOWN:
                played.wound_down = True
            elif isinstance(action, StartFreshSession):
                raise AssertionError(f"restarted: {action.prompt[:80]}")

    carry_out(m.observe(UsageObserved(1.0, CallUsage(input_tokens=model.count(m)))))
    m.observe(MessageObserved(1.0, result("warmup", "a.log b.log")))
    stop_at_next_result = False
    for index in range(reads):
        if played.wound_down:
            break
        tool_id = f"r{index:03d}"
        count = model.count(m)
        played.peak = max(played.peak, count)
        carry_out(m.observe(UsageObserved(1.0, CallUsage(input_tokens=count))))
        if m.phase is Phase.MASKING:
            stop_at_next_result = True  # the runtime stops at the next clean point
        m.observe(MessageObserved(1.0, call(tool_id, "Read", file_path=f"/ws/logs/{tool_id}.log")))
        content = "\n".join(
            f"{index:04d} 0x{line:08x} ERR code={line * 7}" for line in range(size // 36)
        )
        # The hook sees the tool's response serialised: a little larger than the result.
        seen = m.observe(ToolResultSeen(1.5, tool_id, "Read", round(len(content) * 1.04)))
        m.observe(MessageObserved(1.6, result(tool_id, content)))
        if StopTurn in [type(a) for a in seen.actions] or stop_at_next_result:
            stop_at_next_result = False
            truth = model.count(m)  # the request the stop kept from being sent
            ended = m.observe(HOOK_STOPPED)
            for event in ended.events:
                if isinstance(event, ev.PhaseChanged) and event.trigger == "projection":
                    pending = m._state.pending.mask
                    assert pending is not None and pending.projected is not None
                    played.decisions.append(Decision("projection", pending.projected, truth))
            carry_out(ended)
    return played


@pytest.mark.parametrize("density", [1.0, 2.0, 4.0])
def test_the_soft_zone_reader_masks_in_the_soft_zone_and_stays_under_hard(density: float) -> None:
    m = session()
    model = DenseModel(density)
    # Enough reading to fill the window several times over at every density.
    played = play(m, model, reads=int(60 / density), size=24_000)
    soft, hard = m.limits.soft_threshold * WINDOW, m.limits.hard_threshold * WINDOW
    assert played.masks, f"never masked at {density}x: {played.skipped}"
    assert played.peak < hard, f"peak {played.peak} at {density}x"
    assert not played.wound_down
    for mask in played.masks:
        assert mask.trigger == "projection"
        assert mask.projected_tokens is not None and soft <= mask.projected_tokens < hard
    for decision in played.decisions:
        assert decision.error <= 0.10, f"{decision} at {density}x"
    assert m.density.measured and m.density.ratio == pytest.approx(density, rel=0.05)


@pytest.mark.parametrize("density", [1.0, 2.0, 4.0])
def test_the_batch_minimum_is_judged_in_measured_tokens(density: float) -> None:
    # Two old results of 20,000 characters: 10,000 tokens by chars/4, 40,000 at 4x. With a
    # 30,000-token batch minimum only the dense model has enough to mask in one batch
    # (the soft threshold is low enough that every density is in the soft zone).
    m = session(soft_threshold=0.10, mask_min_batch_tokens=30_000, keep_recent_observations=1)
    model = DenseModel(density, overhead=13_000)
    played = play(m, model, reads=3, size=24_000)
    assert bool(played.masks) == (density >= 4.0), (density, played.skipped)
    if not played.masks:
        assert any("30000-token batch minimum" in reason for reason in played.skipped)


def test_a_result_that_would_pass_hard_never_reaches_the_model_in_that_session() -> None:
    m = session(keep_recent_observations=2)
    model = DenseModel(1.0)
    play(m, model, reads=4, size=40_000)  # 40,000 tokens of reads, in the normal zone
    before = model.count(m)
    m.observe(UsageObserved(2.0, CallUsage(input_tokens=before)))
    m.observe(MessageObserved(2.1, call("huge", "Bash", command="cat everything.log")))
    huge = "x" * 600_000  # 150,000 tokens: past the hard threshold from anywhere
    stop = m.observe(ToolResultSeen(2.2, "huge", "Bash", len(huge)))
    assert [type(a) for a in stop.actions] == [StopTurn]
    m.observe(MessageObserved(2.3, result("huge", huge)))
    decided = m.observe(HOOK_STOPPED)
    (mask,) = decided.actions
    assert isinstance(mask, ApplyMask) and "huge" in mask.plan.ids
    assert mask.resume_prompt is None  # the wind-down goes on the masked transcript instead
    wound = m.observe(MaskConfirmed(3.0, mask.plan.ids))
    (prompt,) = wound.actions
    assert isinstance(prompt, SendPrompt) and prompt.kind is PromptKind.WIND_DOWN
    assert m.phase is Phase.WINDING_DOWN
    # What the wind-down request carries is under the hard threshold.
    assert model.count(m) < 0.80 * WINDOW
    sent = [e for e in wound.events if isinstance(e, ev.WindDownSent)]
    assert sent and sent[0].trigger == "projection"


def test_a_result_that_cannot_be_masked_and_cannot_fit_is_an_emergency_with_its_reason() -> None:
    m = session(never_mask_tools=frozenset({"Bash"}))
    model = DenseModel(1.0)
    m.observe(UsageObserved(1.0, CallUsage(input_tokens=model.count(m))))
    m.observe(MessageObserved(2.1, call("huge", "Bash", command="cat everything.log")))
    huge = "x" * 700_000
    stop = m.observe(ToolResultSeen(2.2, "huge", "Bash", len(huge)))
    assert [type(a) for a in stop.actions] == [StopTurn]
    m.observe(MessageObserved(2.3, result("huge", huge)))
    decided = m.observe(HOOK_STOPPED)
    assert any(isinstance(a, StartFreshSession) for a in decided.actions)
    (restart,) = [e for e in decided.events if isinstance(e, ev.Restarted)]
    assert restart.trigger == "emergency"
    assert "larger than the room left" in restart.reason
    # The fresh session gets an excerpt of the result it never saw, not the result.
    fresh = decided.actions[-1]
    assert isinstance(fresh, StartFreshSession)
    assert "more characters not shown" in fresh.prompt and len(fresh.prompt) < 50_000


def test_results_below_every_threshold_do_not_stop_the_turn() -> None:
    m = session()
    m.observe(UsageObserved(1.0, CallUsage(input_tokens=20_000)))
    m.observe(MessageObserved(2.1, call("small")))
    assert m.observe(ToolResultSeen(2.2, "small", "Read", 4_000)).actions == ()


def test_what_the_agent_fetches_again_after_a_mask_is_kept_from_the_next_one() -> None:
    m = session(keep_recent_observations=1, mask_min_batch_tokens=100)
    for name in ("a", "b", "c"):
        m.observe(MessageObserved(1.0, call(name, "Read", file_path=f"/ws/{name}.py")))
        m.observe(MessageObserved(1.1, result(name, f"{name} = 1\n" * 4_000)))
    (mask,) = m.observe(OperatorCommand(1.3, Command.MASK_NOW)).actions
    assert isinstance(mask, ApplyMask) and set(mask.plan.ids) == {"a", "b"}
    m.observe(HOOK_STOPPED)
    m.observe(MaskConfirmed(1.4, mask.plan.ids))
    # The agent needs a.py after all: it reads it again, then reads on.
    m.observe(MessageObserved(1.5, call("a2", "Read", file_path="/ws/a.py")))
    m.observe(MessageObserved(1.6, result("a2", "a = 1\n" * 4_000)))
    m.observe(MessageObserved(1.7, call("d", "Read", file_path="/ws/d.py")))
    m.observe(MessageObserved(1.8, result("d", "d = 1\n" * 4_000)))
    assert m.counters.refetched == 1
    plan = m._masking.plan_mask(10**9, Cause.SOFT_THRESHOLD)
    assert "c" in plan.ids and "a2" not in plan.ids


def test_a_stop_holds_through_the_previous_calls_final_usage_and_ends_at_the_clean_point() -> None:
    m = session(mask_min_batch_tokens=100, keep_recent_observations=1)
    model = DenseModel(1.0)
    play(m, model, reads=5, size=40_000)
    m.observe(UsageObserved(2.0, CallUsage(input_tokens=model.count(m)), starts_call=True))
    m.observe(MessageObserved(2.1, call("big")))
    stop = m.observe(ToolResultSeen(2.2, "big", "Read", 200_000))
    assert [type(a) for a in stop.actions] == [StopTurn]
    # The final report of the call that asked for the tool, handled late: not a new request.
    m.observe(UsageObserved(2.3, CallUsage(input_tokens=model.count(m), output_tokens=50)))
    m.observe(MessageObserved(2.4, result("big", "b" * 200_000)))
    decided = m.observe(HOOK_STOPPED)
    assert [type(a) for a in decided.actions] == [ApplyMask]
    assert m.phase is Phase.MASKING


def test_a_new_request_after_a_stop_means_the_agent_went_on() -> None:
    m = session(mask_min_batch_tokens=100, keep_recent_observations=1)
    model = DenseModel(1.0)
    play(m, model, reads=5, size=40_000)
    m.observe(MessageObserved(2.1, call("big")))
    m.observe(ToolResultSeen(2.2, "big", "Read", 200_000))
    m.observe(MessageObserved(2.4, result("big", "b" * 200_000)))
    assert m.stopping is StopFor.PROJECTION
    m.observe(UsageObserved(2.5, CallUsage(input_tokens=model.count(m)), starts_call=True))
    # Released: the measured figure of the request that went out decides from here.
    assert m.stopping is not StopFor.PROJECTION


def test_in_the_soft_zone_a_mask_waits_until_it_pays_for_its_rewrite() -> None:
    # Three results kept: the two before the newest are written again after the mask.
    m = session(soft_threshold=0.10, keep_recent_observations=3, mask_min_batch_tokens=100)
    model = DenseModel(1.0)
    waited: list[str] = []
    for index in range(40):
        count = model.count(m)
        outcome = m.observe(UsageObserved(1.0, CallUsage(input_tokens=count), starts_call=True))
        waited += [e.reason for e in outcome.events if isinstance(e, ev.MaskSkipped)]
        if m.phase is Phase.MASKING:
            break
        m.observe(MessageObserved(1.1, call(f"w{index}", "Read", file_path=f"/ws/w{index}.py")))
        m.observe(MessageObserved(1.2, result(f"w{index}", "w" * 8_000)))
    assert any(reason.startswith("waiting:") for reason in waited)
    assert m.phase is Phase.MASKING
    pending = m._state.pending.mask
    assert pending is not None
    # It went when the batch was worth it: the rewrite of what stays is paid back.
    assert pays_for_itself(
        pending.plan.estimated_tokens,
        count - pending.plan.estimated_tokens,
        unwritten_after_mask(m._state),
        m.growth.rate,
    )


def test_a_stop_that_finds_nothing_to_do_sends_the_turn_on_its_way() -> None:
    m = session(mask_min_batch_tokens=100, keep_recent_observations=1)
    model = DenseModel(1.0)
    play(m, model, reads=3, size=20_000)
    m.observe(MessageObserved(2.1, call("odd")))
    # The hook's view of the result is far larger than what arrives (a serialised image,
    # say): projected into the soft zone at the hook, normal at the clean point.
    stop = m.observe(ToolResultSeen(2.2, "odd", "Read", 300_000))
    assert [type(a) for a in stop.actions] == [StopTurn]
    m.observe(MessageObserved(2.3, result("odd", "tiny")))
    decided = m.observe(HOOK_STOPPED)
    (resume,) = decided.actions
    assert isinstance(resume, SendPrompt) and resume.kind is PromptKind.STOPPED_RESUME
    assert m.phase is Phase.RUNNING and m.streaming
