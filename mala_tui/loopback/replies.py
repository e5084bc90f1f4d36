"""The texts a scripted agent writes: checkpoints, compaction summaries, wind-down notes.

All of them are built only from what the request shows (the Progress of one request), and
they list done steps one a line in the form the done rule recognises (``- Read src/a.py``,
``- Bash: pytest -q``), so a fresh session seeded with them skips exactly that work. Plans
go under headings the rule ignores ("Remaining Tasks", "Pending Tasks", "Next Step").
Steps an operator asked to skip are listed under "Skipped at the Operator's Request", in
the form operator_requests.py reads back, so the skip holds in a fresh session too.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from mala_tui.loopback.operator_requests import SKIPPED_HEADING
from mala_tui.loopback.request_view import RequestView
from mala_tui.loopback.scenario import CheckpointStyle, Scenario
from mala_tui.loopback.scenario_sections import Fact
from mala_tui.loopback.scenario_steps import PlannedStep

# A summary describes the work in progress in detail: the results of this many latest
# tool calls are what it is "currently working on", and their facts survive it.
CURRENT_WORK_RESULTS = 2


def facts_a_summary_keeps(
    scenario: Scenario, view: RequestView, done: Sequence[PlannedStep]
) -> list[Fact]:
    """The facts a summary written from this request keeps: what was done and decided.

    A summary keeps a fact when it is visible now and either a done step needed it (it
    went into a decision: "the call uses charge(order, cents)") or it is in one of the
    latest results (the current work, which summaries describe in detail). A detail read
    earlier and not yet used is not kept: that is what summaries lose.
    """
    used = {need for step in done for need in step.needs}
    recent = [call.result_text or "" for call in view.calls if call.result_intact]
    recent = recent[-CURRENT_WORK_RESULTS:]
    return [
        fact
        for fact in scenario.fact_list
        if (fact.id in used and view.shows(fact.text)) or any(fact.text in text for text in recent)
    ]


def _facts_list(facts: Sequence[Fact]) -> str:
    if not facts:
        return "- None recorded."
    return "\n".join(f"- {fact.id}: {fact.text}" for fact in facts)


CHECKPOINT_SECTIONS = (
    "## Goal",
    "## Completed Work",
    "## Remaining Tasks",
    "## Do Not Redo",
    "## Key Decisions",
)


def _done_list(done: Sequence[PlannedStep]) -> str:
    if not done:
        return "- Nothing yet."
    return "\n".join(f"- {step.done_line}" for step in done)


def _todo_list(remaining: Sequence[PlannedStep]) -> str:
    if not remaining:
        return "1. Nothing: give the final answer."
    return "\n".join(
        f"{number}. {step.label} (step {step.id})" for number, step in enumerate(remaining, 1)
    )


def _skipped_list(skipped: Sequence[PlannedStep]) -> str:
    return "\n".join(f"- Skip: {step.id} ({step.label})" for step in skipped)


def skipped_note(skipped: Sequence[PlannedStep]) -> str:
    """What a final answer adds when the operator had steps skipped: nothing otherwise."""
    if not skipped:
        return ""
    return f"\n\n## {SKIPPED_HEADING}\n{_skipped_list(skipped)}"


def checkpoint_text(
    scenario: Scenario,
    done: Sequence[PlannedStep],
    remaining: Sequence[PlannedStep],
    workspace: Path | None,
    style: CheckpointStyle,
    *,
    facts: Sequence[Fact] = (),
    skipped: Sequence[PlannedStep] = (),
) -> str:
    """The answer to a checkpoint request, in the requested (mis)behaviour style."""
    total = len(done) + len(remaining)
    body = "\n\n".join(
        (
            f"## Goal\n{scenario.goal or scenario.task}",
            f"## Completed Work\n{_done_list(done)}",
            f"## Remaining Tasks\n{_todo_list(remaining)}",
            f"## Do Not Redo\n{_done_list(done)}",
            "## Key Decisions\n"
            f"- Working directory: {workspace or 'unknown'}\n"
            f"- Steps are done strictly in order; {len(done)} of {total} are complete."
            + (f"\n{_facts_list(facts)}" if facts else ""),
        )
    ) + skipped_note(skipped)
    if style == "untagged":
        return body
    tagged = f"<checkpoint>\n{body}\n</checkpoint>"
    if style == "code_fence":
        return f"```xml\n{tagged}\n```"
    return tagged


def compaction_summary_text(
    scenario: Scenario,
    done: Sequence[PlannedStep],
    remaining: Sequence[PlannedStep],
    facts: Sequence[Fact] = (),
    *,
    skipped: Sequence[PlannedStep] = (),
) -> str:
    """The answer to the CLI's own compaction request: <analysis> then <summary>."""
    current = f"- {done[-1].done_line}" if done else "- Nothing yet."
    following = f"{remaining[0].label} (step {remaining[0].id})" if remaining else "final answer"
    return (
        "<analysis>\n"
        f"The task has {len(done) + len(remaining)} steps; {len(done)} are visible as done "
        "in this conversation.\n"
        "</analysis>\n\n"
        "<summary>\n"
        f"1. Primary Request and Intent:\n{scenario.task}\n\n"
        f"2. Completed Work:\n{_done_list(done)}\n\n"
        f"3. Key Decisions and Facts:\n{_facts_list(facts)}\n\n"
        f"4. Pending Tasks:\n{_todo_list(remaining)}\n\n"
        f"5. Current Work:\n{current}\n\n"
        f"6. Optional Next Step:\n{following}\n"
        + (f"\n7. {SKIPPED_HEADING}:\n{_skipped_list(skipped)}\n" if skipped else "")
        + "</summary>"
    )


def compaction_block_text(
    scenario: Scenario,
    done: Sequence[PlannedStep],
    remaining: Sequence[PlannedStep],
    workspace: Path | None,
    facts: Sequence[Fact] = (),
    *,
    skipped: Sequence[PlannedStep] = (),
) -> str:
    """The summary the API's server-side compaction writes: the same rule as the CLI's
    compaction summary, and the working directory, which a summary of a coding session
    keeps (the environment block it replaces said it)."""
    text = compaction_summary_text(scenario, done, remaining, facts, skipped=skipped)
    summary = text[text.index("<summary>") :]
    where = f"- Working directory: {workspace}\n" if workspace is not None else ""
    return summary.replace("3. Key Decisions and Facts:\n", "3. Key Decisions and Facts:\n" + where)


def wind_down_text(done: Sequence[PlannedStep], remaining: Sequence[PlannedStep]) -> str:
    """The short answer to a wind-down message."""
    if not remaining:
        return "Wrapping up: every step is done; nothing is left in progress."
    return (
        f"Wrapping up: {len(done)} of {len(done) + len(remaining)} steps are done. "
        f"Stopping before {remaining[0].label}."
    )


def progress_notes_text(
    scenario: Scenario, done: Sequence[PlannedStep], remaining: Sequence[PlannedStep]
) -> str:
    """The progress-notes file written on wind-down, when the scenario asks for one."""
    return (
        f"# Progress notes: {scenario.name}\n\n"
        f"## Done\n{_done_list(done)}\n\n"
        f"## Remaining Tasks\n{_todo_list(remaining)}\n"
    )


def step_intro_text(step: PlannedStep, note: str = "", noted: Sequence[Fact] = ()) -> str:
    """The text the agent says before a tool call: a line, and what it just looked up."""
    lines = [f"Next: {note or step.label}."]
    lines += [f"Noted ({fact.id}): {fact.text}" for fact in noted]
    return "\n".join(lines)
