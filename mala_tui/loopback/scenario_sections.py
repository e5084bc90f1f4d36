"""A scenario's other tables: its subagents, workspace files, facts and operator waits.

Each is validated strictly on its own here; ``Scenario`` checks them against its steps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal, Self

from pydantic import Field, StrictBool, field_validator, model_validator

from mala_tui.loopback.content import ContentKind, generate_content
from mala_tui.loopback.scenario_steps import (
    SUBAGENT_NAME,
    AgentStep,
    PlannedStep,
    StepSpec,
    StrictSpec,
    expand_template,
    report_marker,
    valid_content,
    valid_relative_path,
    valid_template,
)


class SubagentSpec(StrictSpec):
    """A subagent an Agent step starts: its own task, steps and report."""

    name: str = Field(pattern=rf"^{SUBAGENT_NAME}$")
    """Letters, digits, '-' and '_' (at most 40): the Agent step's ``subagent``."""
    task: str = Field(min_length=1)
    """What the subagent is asked to do: the Agent call's prompt after its tag."""
    steps: list[StepSpec] = Field(min_length=1)
    final_answer: str = Field(min_length=1)
    """The report; ``REPORT <name>:`` is put in front of it unless it starts with it."""
    fail: StrictBool = False
    """The subagent reports that it failed: ``REPORT <name>: FAILED: <final_answer>``."""

    def started(self) -> list[tuple[int, AgentStep, str]]:
        """The subagents this one starts: (step index, Agent step, name), ``{i}`` filled in."""
        return [
            (index, step, expand_template(step.subagent, i))
            for index, step in enumerate(self.steps)
            if isinstance(step, AgentStep)
            for i in range(step.start, step.start + step.count)
        ]

    @property
    def report(self) -> str:
        """The subagent's final answer as it gives it: the marker first."""
        marker = report_marker(self.name)
        body = self.final_answer.removeprefix(marker).strip()
        if self.fail:
            body = f"FAILED: {body}"
        return f"{marker} {body}"


class WorkspaceFile(StrictSpec):
    """A file to generate in the workspace (or ``count`` files from a template)."""

    path: str
    size: int | None = Field(default=None, ge=0, le=5_000_000)
    """Bytes of generated content; or give ``content``."""
    content: str | None = None
    kind: ContentKind = "text"
    count: int = Field(default=1, ge=1, le=10_000)
    start: int = 1

    @field_validator("path")
    @classmethod
    def check_path(cls, value: str) -> str:
        return valid_relative_path(value)

    @field_validator("content")
    @classmethod
    def check_content(cls, value: str | None) -> str | None:
        return None if value is None else valid_content(value)

    @model_validator(mode="after")
    def check_content_or_size(self) -> Self:
        if (self.content is None) == (self.size is None):
            raise ValueError("give exactly one of content or size")
        return self


class WorkspaceSpec(StrictSpec):
    files: list[WorkspaceFile] = Field(default_factory=list)


_FACT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class FactSpec(StrictSpec):
    """One line of a workspace file that a later step needs to see again (or ``count``
    of them from a template: ``{i}`` in the id, path, text and source)."""

    id: str
    path: str
    """The workspace file that holds the line."""
    text: str = Field(min_length=8, max_length=400)
    """The line itself; visible means this exact text is somewhere in the request."""
    source: str | None = None
    """Id of the step whose result shows the line; default: the step that Reads ``path``."""
    at: float = Field(default=0.5, ge=0.0, le=1.0)
    """Where a generated file gets the line, as a fraction of its length."""
    count: int = Field(default=1, ge=1, le=10_000)
    start: int = 1

    @field_validator("id")
    @classmethod
    def check_id(cls, value: str) -> str:
        if not _FACT_ID.match(expand_template(valid_template(value), 1)):
            raise ValueError(f"{value!r}: a fact id is letters, digits, '_', '.' and '-'")
        return value

    @field_validator("path")
    @classmethod
    def check_path(cls, value: str) -> str:
        path = PurePosixPath(value)
        if not value or path.is_absolute() or ".." in path.parts:
            raise ValueError(f"{value!r} must be a relative path inside the workspace")
        return valid_template(value)

    @field_validator("text")
    @classmethod
    def check_text(cls, value: str) -> str:
        if "\n" in value or not value.strip():
            raise ValueError("a fact is one non-empty line")
        return valid_template(value)

    @field_validator("source")
    @classmethod
    def check_source(cls, value: str | None) -> str | None:
        return None if value is None else valid_template(value)

    def expanded(self) -> list[FactSpec]:
        """One spec a fact, ``{i}`` filled in."""
        if self.count == 1 and self.start == 1 and "{" not in self.id:
            return [self]
        return [
            self.model_copy(
                update={
                    "id": expand_template(self.id, i),
                    "path": expand_template(self.path, i),
                    "text": expand_template(self.text, i),
                    "source": None if self.source is None else expand_template(self.source, i),
                    "count": 1,
                    "start": 1,
                }
            )
            for i in range(self.start, self.start + self.count)
        ]


WaitKind = Literal["permission", "pause"]


class WaitSpec(StrictSpec):
    """An operator's wait, in simulated minutes (the scenario's ``time_scale`` applies).

    ``permission``: the step's tool call is one Claude Code asks permission for (a Bash
    step, Bash then left out of the allowed tools), answered after ``minutes``.
    ``pause``: once the step has been played, the operator pauses the session for
    ``minutes``, then resumes it.
    """

    kind: WaitKind
    step: str
    """Id of the step the wait comes with."""
    minutes: float = Field(gt=0, le=24 * 60, allow_inf_nan=False)

    @property
    def seconds(self) -> float:
        """The wait in simulated seconds."""
        return self.minutes * 60


@dataclass(frozen=True)
class Fact:
    """A fact with its source step resolved."""

    id: str
    path: str
    text: str
    source: PlannedStep


def content_with_facts(path: str, size: int, kind: ContentKind, facts: list[FactSpec]) -> str:
    """Generated content of ``size`` bytes with each fact's line inserted where it asks."""
    if not facts:
        return generate_content(path, size, kind)
    extra = sum(len(fact.text) + 1 for fact in facts)
    lines = generate_content(path, max(0, size - extra), kind).splitlines()
    for fact in sorted(facts, key=lambda fact: fact.at, reverse=True):
        lines.insert(round(fact.at * len(lines)), fact.text)
    return "\n".join(lines) + "\n"
