"""A model whose window is smaller than the session was told: learnt from the API's refusals.

Claude Code believes the window its model table gives (200,000 for a Claude name),
and reports that belief at every turn's end. A model behind a gateway may take far
less, and its refusal reaches mala-tui as a bare "Prompt is too long". The session
below plays a reader against such a model: it counts what the manager's transcript
holds (plus a fixed system prompt) and refuses any request past its real window.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from mala_tui.core import events as ev
from mala_tui.core.actions import ApplyMask, SendPrompt, StartFreshSession, StopTurn
from mala_tui.core.decision_figures import DecisionZone, decision_zone_of
from mala_tui.core.manager import ContextManager, Outcome
from mala_tui.core.observations import (
    MaskConfirmed,
    MessageObserved,
    RestartCompleted,
    ToolResultSeen,
    TurnEnded,
    UsageObserved,
)
from mala_tui.core.phases import Phase
from mala_tui.core.prompts import PromptKind
from mala_tui.core.transcript import Message, Role, TextBlock
from mala_tui.core.usage import CallUsage, ContextUsage, UsageSource, Zone, estimate_tokens
from mala_tui.core.window import RefusalBounds, WindowSource, learn_from_refusal
from mala_tui.prompt_files import load_prompts
from tests.core.phase_now import phase_now
from tests.support.factories import call, default_limits, result

PROMPTS = load_prompts()
BELIEVED = 200_000
SYSTEM = 14_000
CHECKPOINT = "<checkpoint>\n## Goal\nRead the modules.\n## Completed Work\n- some\n</checkpoint>"


def api_refusal(at: float = 2.0) -> TurnEnded:
    """How Claude Code ends a turn the API refused: the limit's figures are not passed on."""
    return TurnEnded(
        at,
        subtype="success",
        is_error=True,
        terminal_reason="prompt_too_long",
        result_text="Prompt is too long",
        context_window=BELIEVED,
        api_error_status=400,
    )


def refused_after(m: ContextManager, *, accepted: int, result_chars: int) -> Outcome:
    """One measured call of `accepted` tokens, a Read of `result_chars`, then the API's refusal."""
    m.observe(UsageObserved(1.0, CallUsage(input_tokens=accepted), starts_call=True))
    m.observe(MessageObserved(1.1, call("big", "Read")))
    m.observe(MessageObserved(1.2, result("big", "y" * result_chars)))
    return m.observe(api_refusal())


def hook_stopped(at: float = 2.0) -> TurnEnded:
    return TurnEnded(at, subtype="success", is_error=False, terminal_reason="hook_stopped")


def finished(text: str, at: float = 2.0, context_window: int | None = None) -> TurnEnded:
    return TurnEnded(
        at, subtype="success", is_error=False, result_text=text, context_window=context_window
    )


@dataclass
class Gateway:
    """The model: a real window, and requests counted from what the manager holds."""

    window: int
    system: int = SYSTEM
    refused: int = 0
    peak: int = 0
    refused_after_learning: int = 0

    def count(self, m: ContextManager) -> int:
        return self.system + estimate_tokens(m.transcript.characters)


@dataclass
class Played:
    restarts: int = 0
    masks: int = 0
    warnings: list[str] = field(default_factory=list)
    learnt: list[ev.WindowLearned] = field(default_factory=list)
    usage_windows: list[tuple[int, str]] = field(default_factory=list)
    done: bool = False


def reader(**limits: object) -> ContextManager:
    m = ContextManager(
        name="reader",
        task="Read the modules.",
        limits=default_limits(context_limit=BELIEVED, window_source=WindowSource.TABLE, **limits),
        prompts=PROMPTS,
    )
    m.start(0.0)
    return m


def play(m: ContextManager, model: Gateway, reads: int, size: int) -> Played:
    """`reads` results of `size` characters, one per request, against the gateway model.

    The runtime's part is played as it happens: a stop at the hook ends the turn, a
    mask is confirmed, a wind-down and a checkpoint request are answered, a fresh
    session is started and begins with its continuation prompt.
    """
    played = Played()

    def record(outcome: Outcome) -> list[object]:
        for event in outcome.events:
            if isinstance(event, ev.WarningRecorded):
                played.warnings.append(event.message)
            elif isinstance(event, ev.WindowLearned):
                played.learnt.append(event)
            elif isinstance(event, ev.UsageRecorded):
                played.usage_windows.append((event.window, str(event.window_source)))
            elif isinstance(event, ev.MaskApplied):
                played.masks += 1
        return list(outcome.actions)

    def carry_out(outcome: Outcome) -> None:
        for action in record(outcome):
            if isinstance(action, ApplyMask):
                if action.interrupt_first:
                    record(m.observe(hook_stopped()))
                carry_out(m.observe(MaskConfirmed(3.0, action.plan.ids)))
            elif isinstance(action, SendPrompt) and action.kind is PromptKind.WIND_DOWN:
                request()
                carry_out(m.observe(finished("Wrapping up.")))
            elif isinstance(action, SendPrompt) and action.kind is PromptKind.CHECKPOINT_REQUEST:
                request()
                carry_out(m.observe(finished(CHECKPOINT)))
            elif isinstance(action, StartFreshSession):
                played.restarts += 1
                carry_out(m.observe(RestartCompleted(4.0, f"fresh-{played.restarts}")))

    def request() -> bool:
        """One model request: measured if it fits, refused (and handled) if not."""
        count = model.count(m)
        if count > model.window:
            model.refused += 1
            model.refused_after_learning += bool(played.learnt)
            m.observe(
                MessageObserved(
                    1.9, Message(Role.ASSISTANT, (TextBlock("Prompt is too long"),), True)
                )
            )
            carry_out(m.observe(api_refusal()))
            return False
        model.peak = max(model.peak, count)
        carry_out(m.observe(UsageObserved(1.0, CallUsage(input_tokens=count), starts_call=True)))
        return True

    index = 0
    while index < reads and m.phase is not Phase.STOPPED:
        if not request() or m.phase is not Phase.RUNNING:
            continue
        tool_id = f"r{index:03d}"
        index += 1
        m.observe(MessageObserved(1.0, call(tool_id, "Read", file_path=f"/ws/src/{tool_id}.py")))
        content = "\n".join(
            f"{index:04d} def step_{line:05d}(value): ..." for line in range(size // 36)
        )
        seen = m.observe(ToolResultSeen(1.5, tool_id, "Read", len(content)))
        m.observe(MessageObserved(1.6, result(tool_id, content)))
        if any(isinstance(action, StopTurn) for action in seen.actions):
            carry_out(m.observe(hook_stopped()))
    if m.phase is Phase.RUNNING and request():
        record(m.observe(finished("All modules read.")))
        played.done = phase_now(m) is Phase.DONE
    return played


def test_bounds_narrow_with_each_refusal_and_acceptance() -> None:
    learn = learn_from_refusal
    assert learn(None, accepted=60_000, refused=80_000, news_below=160_000) == RefusalBounds(
        60_000, 80_000
    )
    assert RefusalBounds(60_000, 80_000).window == 70_000
    # A refusal the session's own thresholds would not have let through teaches nothing:
    # the session ran out (or its estimate was a little low) on an honest window.
    assert learn(None, accepted=120_000, refused=170_000, news_below=160_000) is None
    # Nor does one with nothing measured to bound it, or an estimate below a measurement.
    assert learn(None, accepted=0, refused=5, news_below=160_000) is None
    assert learn(None, accepted=60_000, refused=55_000, news_below=160_000) is None
    bounds = RefusalBounds(60_000, 80_000)
    assert bounds.refusing(75_000) == RefusalBounds(60_000, 75_000)
    assert bounds.refusing(90_000) == bounds  # a larger refusal says nothing new
    assert bounds.refusing(55_000) == bounds  # contradicts what was accepted
    assert bounds.accepting(72_000) == RefusalBounds(72_000, 80_000)
    assert bounds.accepting(50_000) == bounds
    # Accepted at or past the refused estimate: that estimate was too low, drop it.
    assert bounds.accepting(81_000) is None


def test_a_refused_prompt_smaller_than_the_window_believed_teaches_the_window() -> None:
    # Masking late and in large batches, the session comes near a 50,000 window.
    m = reader(soft_threshold=0.3, mask_min_batch_tokens=30_000)
    model = Gateway(window=50_000)
    played = play(m, model, reads=12, size=86_000)
    assert model.refused == 1 and model.refused_after_learning == 0
    assert played.restarts == 1 and played.done
    (learnt,) = played.learnt
    # Claude Code's report of 200,000 came with the refusal: what it believes.
    assert (learnt.believed, learnt.believed_source) == (BELIEVED, WindowSource.CLI)
    assert learnt.accepted <= model.window < learnt.refused
    # Prompts accepted since may raise it, never past the real window.
    assert learnt.window <= m.window <= model.window
    assert m.window_source is WindowSource.REFUSAL
    # The CLI's report at the refused turn's end (200,000) did not raise it back.
    assert all(window <= model.window for window, _ in played.usage_windows[-5:])
    assert played.usage_windows[-1][1] == WindowSource.REFUSAL.value
    # After the restart it masked inside the real window instead of being refused again.
    assert played.masks >= 1 and model.peak <= model.window


def test_an_honest_window_the_session_ran_out_of_teaches_nothing() -> None:
    # Refused at ~170,000, past the hard threshold (160,000) of the window believed: a
    # prompt the session's own thresholds would not have let through (an estimate a
    # little low, a result too large), not a sign of a smaller window.
    m = reader()
    outcome = refused_after(m, accepted=150_000, result_chars=80_000)  # ~20,000 more
    assert not [e for e in outcome.events if isinstance(e, ev.WindowLearned)]
    assert m.refusal is None and (m.window, m.window_source) == (BELIEVED, WindowSource.CLI)
    assert any(isinstance(a, StartFreshSession) for a in outcome.actions)  # the emergency


def test_claude_codes_own_limit_teaches_nothing() -> None:
    m = reader()
    m.observe(UsageObserved(1.0, CallUsage(input_tokens=150_000), starts_call=True))
    local = TurnEnded(
        2.0,
        subtype="success",
        is_error=True,
        terminal_reason="blocking_limit",
        result_text="Prompt is too long",
        context_window=BELIEVED,
    )
    outcome = m.observe(local)
    assert not [e for e in outcome.events if isinstance(e, ev.WindowLearned)]
    assert m.window == BELIEVED and m.window_source is WindowSource.CLI


def test_later_calls_raise_the_estimate_and_a_smaller_report_of_the_clis_wins() -> None:
    m = reader()
    outcome = refused_after(m, accepted=40_000, result_chars=160_000)  # ~40,000 more
    (learnt,) = [e for e in outcome.events if isinstance(e, ev.WindowLearned)]
    assert m.refusal is not None and m.refusal.accepted == 40_000
    assert m.refusal.refused == pytest.approx(80_000, rel=0.01)  # estimated from the text
    assert m.window == m.refusal.window == learnt.window
    m.observe(RestartCompleted(4.0, "fresh"))
    m.observe(UsageObserved(5.0, CallUsage(input_tokens=70_000), starts_call=True))
    assert m.refusal.accepted == 70_000
    assert m.window == m.refusal.window > 70_000 and m.window_source is WindowSource.REFUSAL
    # Claude Code reporting less than the estimate: the smaller limit binds.
    m.observe(finished("Done.", context_window=72_000))
    assert (m.window, m.window_source) == (72_000, WindowSource.CLI)


def test_an_estimate_the_api_proves_too_low_is_dropped() -> None:
    m = reader()
    refused_after(m, accepted=40_000, result_chars=160_000)
    assert m.window_source is WindowSource.REFUSAL
    m.observe(RestartCompleted(4.0, "fresh"))
    # The API takes more than the refusal was estimated at: the bounds are gone.
    m.observe(UsageObserved(5.0, CallUsage(input_tokens=90_000), starts_call=True))
    assert m.refusal is None and (m.window, m.window_source) == (BELIEVED, WindowSource.CLI)


@pytest.mark.parametrize("window", [17_000, 18_000])
def test_a_fresh_session_that_starts_past_hard_masks_instead_of_restarting_again(
    window: int,
) -> None:
    # So small a window that the system prompt and a checkpoint alone pass the hard
    # threshold: winding down for another restart would start there again, forever.
    m = reader(max_restarts=5)
    model = Gateway(window=window)
    played = play(m, model, reads=16, size=2_000)
    assert any("another restart would start there too" in w for w in played.warnings)
    assert played.restarts == model.refused == 1, "only the refused window restarted it"
    assert played.masks >= 3, "it masked, with any batch, to stay inside the window"
    assert played.done and model.refused_after_learning == 0


def test_the_guard_is_off_in_an_ordinary_session() -> None:
    # Every result kept, so the window fills and the session restarts at hard.
    m = reader(keep_recent_observations=50)
    model = Gateway(window=BELIEVED)
    played = play(m, model, reads=20, size=86_000)
    assert played.restarts >= 1 and not any("another restart" in w for w in played.warnings)
    assert m._state.restart_makes_room() and model.refused == 0


def test_the_batch_minimum_scales_down_with_a_small_window() -> None:
    # 30,000 tokens fits a 200,000 window; in a 50,000 one it would forbid every mask.
    m = ContextManager(
        name="small",
        task="Read.",
        limits=default_limits(context_limit=50_000, mask_min_batch_tokens=30_000),
        prompts=PROMPTS,
    )
    m.start(0.0)
    model = Gateway(window=50_000)
    played = play(m, model, reads=8, size=24_000)
    assert played.masks >= 1 and played.restarts == 0 and model.refused == 0
    assert model.peak < 0.8 * 50_000


def test_the_decision_zone_reads_hard_as_soft_where_a_restart_frees_nothing() -> None:
    m = reader(max_restarts=5)
    play(m, Gateway(window=17_000), reads=16, size=2_000)
    state = m._state
    assert not state.restart_makes_room()
    limits = state.limits
    past_hard = state.hard_tokens() + 1
    gauge = ContextUsage(past_hard, state.window, UsageSource.PER_CALL)
    assert gauge.zone(limits.soft_threshold, limits.hard_threshold) is Zone.HARD
    assert decision_zone_of(state, past_hard) is DecisionZone.SOFT
    # Past the whole window nothing can be sent: hard for decisions too.
    assert decision_zone_of(state, state.window) is DecisionZone.HARD
