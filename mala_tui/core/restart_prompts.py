"""What a restart says: the checkpoint built when the agent cannot write one, the fresh
session's first prompt, and the words for a first prompt that does not fit. Every new
agent session's first prompt (its task too) ends with the masking notice when mala-tui
may mask its output.

What goes into the fresh session is the checkpoint and the agent's own last
complete steps, never mala-tui's prompts: carried over, a wind-down would tell the
new session to wrap up too. Both are bounded in tokens, by the session's measured
density, so a dense transcript cannot fill the fresh window on its own.

Read off the manager's state (core.manager_state), changing nothing; the restart
flow (core.restart_flow) and a resumed start (core.resumed_start) send them.
"""

from __future__ import annotations

from mala_tui.core.background import BackgroundTask, describe_tasks
from mala_tui.core.checkpoint import (
    Checkpoint,
    carryover_text,
    checkpoint_for_prompt,
    harness_checkpoint,
)
from mala_tui.core.manager_state import ManagerState
from mala_tui.core.phases import ManageMode
from mala_tui.core.prompts import PromptKind
from mala_tui.core.text import clean
from mala_tui.core.usage import estimate_tokens


def checkpoint_from_transcript(state: ManagerState, reason: str) -> Checkpoint:
    """A checkpoint built from the transcript, for when the agent cannot write one."""
    # The goal is the task, not this session's first prompt (after a restart that
    # is the continuation prompt); what earlier checkpoints listed stays listed;
    # nothing from the wind-down on counts as work.
    return harness_checkpoint(
        state.transcript,
        reason=reason,
        carryover_turns=state.limits.carryover_turns,
        goal=state.task,
        previous=state.checkpoint,
        before=state.pending.work_ends_at,
        carryover_chars=state.tokens_as_chars(state.limits.carryover_tokens),
    )


def first_prompt(state: ManagerState, prompt: str) -> str:
    """A fresh agent session's first prompt, with the masking notice when its output may
    be masked: a fact the agent restates outlives the result it came from, and spares the
    re-read a mask would otherwise cost (docs/BENCHMARKS.md)."""
    notice = state.prompts.render(PromptKind.MASKING_NOTICE)
    if state.manage is ManageMode.OFF or not notice:
        return prompt
    return f"{prompt}\n\n{notice}"


def continuation_prompt(state: ManagerState, number: int) -> str:
    """The fresh session's first prompt: the checkpoint and the agent's last steps."""
    assert state.checkpoint is not None
    carried = (
        "(included in the checkpoint above)"
        if state.checkpoint.harness_made
        else carryover_text(
            state.transcript.carryover(
                state.limits.carryover_turns, before=state.pending.work_ends_at
            ),
            max_chars=state.tokens_as_chars(state.limits.carryover_tokens),
        )
    )
    return first_prompt(
        state,
        state.prompts.render(
            PromptKind.CONTINUATION,
            checkpoint=checkpoint_for_prompt(
                state.checkpoint, state.tokens_as_chars(state.limits.checkpoint_prompt_tokens)
            ),
            carryover=carried,
            continuation_number=number,
        ),
    )


def first_prompt_refused(state: ManagerState) -> str:
    """Why a session whose first request was refused as too long ends instead."""
    messages = state.transcript.messages
    first = messages[0].text if messages else state.turn.prompt
    is_task = state.counters.continuation == 0 and first.startswith(state.task)
    what = "the task" if is_task else "this fresh session's first prompt"
    size = len(state.task) if is_task else len(first)  # the notice after it is not its
    return (
        f"{what} ({size:,} characters, about {estimate_tokens(size):,} tokens) "
        "does not fit the window: its first request was refused as too long for the "
        f"{state.window:,}-token window, and a restart would only send it again; "
        + (
            "shorten the task, or put its bulk in a file the agent reads"
            if is_task
            else "its checkpoint is kept"
        )
    )


def lost_background_note(tasks: tuple[BackgroundTask, ...]) -> str:
    """What the agent is told of background work that ended with the run: each one by its
    kind and description, so it can start it again or go on without it."""
    lines = [f"- {task.kind}: {clean(task.description) or task.id}" for task in tasks]
    return (
        "Background work you had started was lost when the run stopped, and its reports "
        f"will not come ({describe_tasks(tasks)}):\n" + "\n".join(lines) + "\n"
        "Start it again if you still need it, or go on without it."
    )
