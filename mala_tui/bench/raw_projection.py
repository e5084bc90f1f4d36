"""Raw (nothing managed) past its window: its figures from the prompts it would send.

Raw is the reference every arm is measured against, but a task long or dense enough
passes even the 1M window (the reader at 2x token density, or 4x and 16x its length),
and the CLI then stops with "Prompt is too long". Its cost is still well defined: each
step adds to the prompt what that kind of step added while raw ran (its result, its
call, the agent's words), and each request reads the previous prompt from the cache and
writes what is new. The rule is checked against a measured raw run where both exist
(growth.py prints both at 1x).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from mala_tui.loopback import Scenario
from mala_tui.loopback.request_log import (
    CACHE_READ_COST,
    CACHE_WRITE_COST,
    OUTPUT_COST,
    RequestRecord,
)


@dataclass(frozen=True)
class Increments:
    """What raw's prompt grows by, measured on a run of it."""

    first: int
    """The first request's prompt: system prompt, tools and the task."""
    added: dict[str, int]
    """Mean tokens each kind of step adds, by its label's verb ("read", "run"...)."""
    output: int
    """Mean output tokens of a request."""


@dataclass(frozen=True)
class Projection:
    """Raw's figures over a whole scenario, computed."""

    requests: int
    prompt_tokens: int
    """Sum over requests of the whole prompt."""
    cost_units: float
    peak: int


def step_increments(records: Sequence[RequestRecord]) -> Increments:
    """From a raw run (finished or stopped at its window): the first prompt, what each
    kind of step adds to the prompt, and the mean output."""
    answered = [r for r in records if r.status == 200]
    if not answered:
        raise ValueError("raw answered no request: nothing to project from")
    added: dict[str, list[int]] = {}
    for before, after in itertools.pairwise(answered):
        verb = (before.step_label or "answer").split()[0]
        added.setdefault(verb, []).append(after.prompt_tokens - before.prompt_tokens)
    means = {verb: round(sum(v) / len(v)) for verb, v in added.items()}
    output = round(sum(r.output_tokens for r in answered) / len(answered))
    return Increments(answered[0].prompt_tokens, means, output)


def project_raw(scenario: Scenario, increments: Increments) -> Projection:
    """Raw over every step of `scenario`: a request per step after the first, each reading
    the previous prompt from the cache and writing what the step added."""
    prompt = peak = total = increments.first
    cost = increments.first * CACHE_WRITE_COST + increments.output * OUTPUT_COST
    plan = scenario.plan()
    for step in plan:
        new = increments.added.get(step.label.split()[0], 0)
        cost += prompt * CACHE_READ_COST + new * CACHE_WRITE_COST
        cost += increments.output * OUTPUT_COST
        prompt += new
        total += prompt
        peak = max(peak, prompt)
    return Projection(len(plan) + 1, total, round(cost, 1), peak)
