"""A task larger than the window is never cut and reported done: it is refused before the
run (by its estimate), and a first prompt the API refuses as too long ends the session,
saying so, instead of an emergency checkpoint that would cut the task to fit."""

from __future__ import annotations

from mala_tui.core import events as ev
from mala_tui.core.actions import EndSession, EndStatus, StartFreshSession
from mala_tui.core.checkpoint import checkpoint_for_prompt, harness_checkpoint
from mala_tui.core.limits import oversized_task
from mala_tui.core.manager import ContextManager
from mala_tui.core.observations import MessageObserved, RestartCompleted, TurnEnded, UsageObserved
from mala_tui.core.phases import ManageMode, Phase
from mala_tui.core.transcript import Message, Role, TextBlock, Transcript
from mala_tui.core.usage import CallUsage
from mala_tui.prompt_files import load_prompts
from tests.support.factories import call, default_limits, result

PROMPTS = load_prompts()
WINDOW = 100_000
TOO_LONG = TurnEnded(
    2.0,
    subtype="error_during_execution",
    is_error=True,
    terminal_reason="prompt_too_long",
    result_text="Prompt is too long",
)
REFUSAL = MessageObserved(1.9, Message(Role.ASSISTANT, (TextBlock("Prompt is too long"),), True))


def manager(task: str, **limits: object) -> ContextManager:
    m = ContextManager(
        name="s1",
        task=task,
        limits=default_limits(context_limit=WINDOW, **limits),
        prompts=PROMPTS,
    )
    m.start(0.0)
    return m


# -- before the run: the estimate ----------------------------------------------------------------


def test_a_task_that_fits_below_the_hard_threshold_is_accepted() -> None:
    limits = default_limits(context_limit=WINDOW, hard_threshold=0.8)
    assert oversized_task("x" * (4 * 79_000), limits) is None


def test_a_task_past_the_hard_threshold_is_refused_with_its_size_against_the_window() -> None:
    limits = default_limits(context_limit=WINDOW, hard_threshold=0.8)
    said = oversized_task("x" * 400_000, limits)
    assert said == (
        "about 100,000 tokens (400,000 characters at 4 a token): more than the 80,000 of "
        "its 100,000-token window a session may fill before it restarts (hard threshold 0.8); "
        "shorten it, or put its bulk in a file the agent reads"
    )


def test_without_management_the_whole_window_is_the_bound() -> None:
    limits = default_limits(context_limit=WINDOW, hard_threshold=0.8, manage=ManageMode.OFF)
    assert oversized_task("x" * (4 * 90_000), limits) is None
    said = oversized_task("x" * (4 * 101_000), limits)
    assert said is not None and "more than its 100,000-token window" in said


# -- during the run: the API's refusal ---------------------------------------------------------


def test_a_first_prompt_refused_as_too_long_fails_the_session_and_says_why() -> None:
    task = "Summarise this: " + "lorem " * 5_000
    m = manager(task)
    m.observe(REFUSAL)
    outcome = m.observe(TOO_LONG)
    assert m.phase is Phase.FAILED
    assert not [a for a in outcome.actions if isinstance(a, StartFreshSession)]
    (end,) = [a for a in outcome.actions if isinstance(a, EndSession)]
    assert end.status is EndStatus.FAILED
    (ended,) = [e for e in outcome.events if isinstance(e, ev.SessionEnded)]
    assert ended.reason.startswith(
        f"the task ({len(task):,} characters, about {len(task) // 4:,} tokens) does not fit "
        "the window: its first request was refused as too long"
    )
    assert not [e for e in outcome.events if isinstance(e, ev.CheckpointSaved)]


def test_a_fresh_sessions_first_prompt_refused_fails_instead_of_restarting_again() -> None:
    m = manager("Refactor the parser.")
    m.observe(MessageObserved(0.5, call("t1")))
    m.observe(MessageObserved(0.6, result("t1", "y" * 400)))
    m.observe(UsageObserved(0.7, CallUsage(input_tokens=20_000)))
    first = m.observe(TOO_LONG)  # the window is gone after work: the emergency restart
    assert any(isinstance(a, StartFreshSession) for a in first.actions)
    m.observe(RestartCompleted(3.0, "sess-2"))
    m.observe(REFUSAL)
    outcome = m.observe(TOO_LONG)  # and the fresh session's first prompt is refused too
    assert m.phase is Phase.FAILED
    (ended,) = [e for e in outcome.events if isinstance(e, ev.SessionEnded)]
    assert ended.reason.startswith("this fresh session's first prompt (")
    assert "does not fit the window" in ended.reason


def test_after_work_a_refusal_still_restarts_from_a_checkpoint() -> None:
    m = manager("Refactor the parser.")
    m.observe(MessageObserved(0.5, call("t1")))
    m.observe(MessageObserved(0.6, result("t1", "y" * 400)))
    outcome = m.observe(TOO_LONG)
    assert any(isinstance(a, StartFreshSession) for a in outcome.actions)


# -- the task is never cut in a checkpoint mala-tui writes -------------------------------------


def test_a_harness_checkpoint_keeps_the_whole_task_and_its_prompt_copy_too() -> None:
    task = "Do these steps:\n" + "".join(f"- step {n}: {'z' * 60}\n" for n in range(700))
    task += "LAST-STEP: say banana"
    checkpoint = harness_checkpoint(
        Transcript([Message.harness_prompt(task)]),
        reason="the prompt is too long",
        carryover_turns=2,
        goal=task,
    )
    assert task in checkpoint.text
    assert len(task) > 40_000
    copy = checkpoint_for_prompt(checkpoint, 10_000)
    assert task in copy
