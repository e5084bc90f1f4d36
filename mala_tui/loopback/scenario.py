"""Scenario files: the task a scripted agent plays, validated strictly.

A scenario (TOML or JSON) names a task, a workspace to generate (files of given sizes), the
ordered tool steps (Read, Bash, Grep, Glob, Edit, Write with real arguments, run for real by
the CLI), a final answer, pacing, misbehaviour switches and faults. A step or workspace
entry with ``count = N`` is a generator: it expands to N entries, with ``{i}`` in its string
fields replaced by ``start``, ``start + 1``, ... (format specs work: ``mod_{i:03d}.py``).

Every step must differ from the others by tool and primary argument (the file path, the
command, or the pattern): that pair is how the agent recognises a step as done, in tool
calls and in one-line mentions such as ``- Read src/mod_07.py`` or ``Bash: pytest -q``.

A scenario can make its agent need the past: a ``[[facts]]`` entry is one line of a
workspace file (a number in a log, a function's signature, a config value) that an earlier
step's result shows, and a step with ``needs = ["fact-id"]`` cannot be played until that
line is visible in the request. When it is not (masked, cleared, summarised away), the
agent first runs the fact's source step again: a re-read, which the server logs.
``token_ratio`` makes every token count the server reports that many times denser.

A scenario can delegate: an ``Agent`` step (``subagent = "A"``, ``background = true`` by
default) starts the ``[[subagents]]`` entry of that name through Claude Code's Agent tool.
A subagent has its own task, steps and final answer, its report, which always starts with
``REPORT <name>:`` so the main agent can tell it arrived. The main agent gives its final
answer only once every subagent it started has reported; a step with ``after = ["A"]`` is
played only once A's report is visible (one subagent after another). A subagent may start
one of the ``[[subagents]]`` in the foreground (one level of nesting: that one starts none).
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import Field, PrivateAttr, ValidationError, field_validator, model_validator

from mala_tui.loopback.faults import FaultSpec
from mala_tui.loopback.scenario_sections import (
    Fact,
    FactSpec,
    SubagentSpec,
    WaitSpec,
    WorkspaceFile,
    WorkspaceSpec,
    content_with_facts,
)
from mala_tui.loopback.scenario_steps import (
    TOOL_NAMES,
    PlannedStep,
    StepSpec,
    StrictSpec,
    expand_content,
    expand_step,
    expand_template,
    valid_relative_path,
)
from mala_tui.loopback.tokens import MAX_TOKEN_RATIO

CheckpointStyle = Literal["tagged", "untagged", "code_fence"]
SCENARIO_SUFFIXES = (".toml", ".json")
SHIPPED_DIR = Path(__file__).resolve().parent / "scenarios"
#: Largest time scale accepted: an hour a second.
MAX_TIME_SCALE = 3600.0


class ScenarioError(ValueError):
    """A scenario that cannot be used; the message names the file and the field."""


_OUTPUT_TOOLS = frozenset({"Read", "Bash", "Grep"})


class Scenario(StrictSpec):
    """A scripted agent's task. Build with ``load_scenario`` or ``Scenario.model_validate``."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    """Route-safe name; a server serves the scenario under ``/agents/<name>``."""
    description: str = ""
    task: str
    """The first prompt to send the agent."""
    goal: str | None = None
    """One or two sentences for the checkpoint's Goal section; defaults to ``task``."""
    final_answer: str
    response_delay_s: float = Field(default=0.0, ge=0, le=60)
    """Pause after each message_start, so people watching see the gauges move."""
    checkpoint_style: CheckpointStyle = "tagged"
    """Misbehaviour switch: ``untagged`` drops the tags, ``code_fence`` wraps them in ```xml."""
    wind_down_notes: str | None = None
    """If set, the agent writes its progress to this workspace file when asked to wrap up."""
    token_ratio: float = Field(default=1.0, gt=0, le=MAX_TOKEN_RATIO, allow_inf_nan=False)
    """Token density: every count the server reports is this many times chars/4."""
    time_scale: float = Field(default=1.0, gt=0, le=MAX_TIME_SCALE, allow_inf_nan=False)
    """Simulated seconds per real second: the prompt cache's lifetime and the operator's
    waits are in simulated time, so at 60 a 6-minute wait takes 6 seconds."""
    workspace: WorkspaceSpec = Field(default_factory=WorkspaceSpec)
    steps: list[StepSpec] = Field(min_length=1)
    facts: list[FactSpec] = Field(default_factory=list)
    faults: list[FaultSpec] = Field(default_factory=list)
    waits: list[WaitSpec] = Field(default_factory=list)
    subagents: list[SubagentSpec] = Field(default_factory=list)
    """The subagents the Agent steps start, each by exactly one step."""

    _plan: tuple[PlannedStep, ...] = PrivateAttr(default=())
    _facts: dict[str, Fact] = PrivateAttr(default_factory=dict)
    _subagents: dict[str, Scenario] = PrivateAttr(default_factory=dict)

    @field_validator("wind_down_notes")
    @classmethod
    def check_notes_path(cls, value: str | None) -> str | None:
        return None if value is None else valid_relative_path(value)

    @model_validator(mode="after")
    def expand_and_cross_check(self) -> Self:
        plan: list[PlannedStep] = []
        ids: dict[str, int] = {}
        keys: dict[tuple[str, str], int] = {}
        for index, spec in enumerate(self.steps):
            for i in range(spec.start, spec.start + spec.count):
                step = expand_step(spec, len(plan) + 1, i)
                where = f"steps.{index}"
                if step.id in ids:
                    raise ValueError(f"{where}.id: step id {step.id!r} is used twice")
                if step.key in keys:
                    raise ValueError(
                        f"{where}: {step.done_line!r} repeats step {keys[step.key]}; "
                        "steps must differ by tool and primary argument"
                    )
                ids[step.id] = step.number
                keys[step.key] = step.number
                plan.append(step)
        for index, fault in enumerate(self.faults):
            if fault.at_step is not None and fault.at_step not in ids:
                raise ValueError(f"faults.{index}.at_step: no step has id {fault.at_step!r}")
        for index, wait in enumerate(self.waits):
            if wait.step not in ids:
                raise ValueError(f"waits.{index}.step: no step has id {wait.step!r}")
            tool = plan[ids[wait.step] - 1].tool
            if wait.kind == "permission" and tool != "Bash":
                raise ValueError(
                    f"waits.{index}: a permission wait needs a Bash step, not a {tool} one "
                    "(Claude Code, accepting edits, asks about no other tool in its workspace)"
                )
        if len({wait.step for wait in self.waits}) < len(self.waits):
            raise ValueError("waits: one wait a step")
        self._plan = tuple(self._with_subagent_tasks(plan))
        self._facts = self._resolve_facts(ids, keys)
        return self

    def _with_subagent_tasks(self, plan: list[PlannedStep]) -> list[PlannedStep]:
        """Check the Agent steps against ``[[subagents]]`` (each subagent started by exactly
        one step, the main agent's or a subagent's, nested one level at most), give each step
        its subagent's task, and build each subagent's scenario."""
        specs: dict[str, SubagentSpec] = {}
        for index, spec in enumerate(self.subagents):
            if spec.name in specs:
                raise ValueError(f"subagents.{index}.name: subagent {spec.name!r} is defined twice")
            specs[spec.name] = spec
        starter: dict[str, str] = {}
        result: list[PlannedStep] = []
        for step in plan:
            for name in step.after:
                if starter.get(name) != "the main agent":
                    raise ValueError(
                        f"step {step.id}: after {name!r}, which no earlier Agent step starts"
                    )
            if step.tool == "Agent":
                started_spec = specs.get(step.primary)
                if started_spec is None:
                    raise ValueError(
                        f"step {step.id}: starts subagent {step.primary!r}, which no "
                        "[[subagents]] entry names"
                    )
                starter[step.primary] = "the main agent"
                task = ("task", started_spec.task)
                result.append(replace(step, params=(*step.params, task)))
            else:
                result.append(step)
        for index, spec in enumerate(self.subagents):
            for step_index, agent_step, name in spec.started():
                where = f"subagents.{index}.steps.{step_index}"
                if name not in specs or name == spec.name:
                    raise ValueError(
                        f"{where}: subagent {spec.name!r} starts {name!r}, which no other "
                        "[[subagents]] entry names"
                    )
                if name in starter:
                    raise ValueError(
                        f"{where}: subagent {name!r} is started twice "
                        f"(by {starter[name]} and by subagent {spec.name!r})"
                    )
                if agent_step.background:
                    # A subagent's one turn is its whole life: it cannot end that turn
                    # waiting for a background report, as the main agent does.
                    raise ValueError(
                        f"{where}: a subagent starts its own subagents in the foreground: "
                        "set background = false"
                    )
                starter[name] = f"subagent {spec.name!r}"
        for index, spec in enumerate(self.subagents):
            if spec.name in starter and starter[spec.name] != "the main agent" and spec.started():
                raise ValueError(
                    f"subagents.{index}: subagent {spec.name!r}, started by "
                    f"{starter[spec.name]}, cannot start subagents of its own "
                    "(one level of nesting)"
                )
        unused = [name for name in specs if name not in starter]
        if unused:
            raise ValueError(f"subagents: no Agent step starts {', '.join(map(repr, unused))}")
        self._subagents = {}
        for index, spec in enumerate(self.subagents):
            nested = [specs[name] for _, _, name in spec.started()]
            try:
                self._subagents[spec.name] = Scenario.model_validate(
                    {
                        "name": f"{self.name}-{spec.name.lower()}",
                        "task": spec.task,
                        "final_answer": spec.report,
                        "checkpoint_style": self.checkpoint_style,
                        "token_ratio": self.token_ratio,
                        "time_scale": self.time_scale,
                        "steps": spec.steps,
                        "subagents": nested,
                    }
                )
            except ValidationError as exc:
                raise ValueError(f"subagents.{index}: {_describe(exc)}") from None
        return result

    def subagent(self, name: str) -> Scenario | None:
        """The scenario a subagent plays (its steps; its report as final answer), if any."""
        return self._subagents.get(name)

    @property
    def subagent_names(self) -> tuple[str, ...]:
        return tuple(self._subagents)

    def _resolve_facts(
        self, ids: dict[str, int], keys: dict[tuple[str, str], int]
    ) -> dict[str, Fact]:
        literal = {
            entry.path: entry.content
            for entry in self.workspace.files
            if entry.count == 1 and entry.content is not None
        }
        files = {path for path, _ in self._workspace_entries()}
        facts: dict[str, Fact] = {}
        for index, spec in self._fact_specs():
            where = f"facts.{index}"
            if spec.id in facts:
                raise ValueError(f"{where}.id: fact id {spec.id!r} is used twice")
            if spec.path not in files:
                raise ValueError(f"{where}.path: {spec.path!r} is not a workspace file")
            if spec.path in literal and spec.text not in (literal[spec.path] or ""):
                raise ValueError(f"{where}.text: not in the given content of {spec.path!r}")
            if spec.source is not None:
                if spec.source not in ids:
                    raise ValueError(f"{where}.source: no step has id {spec.source!r}")
                source = self._plan[ids[spec.source] - 1]
            elif ("Read", spec.path) in keys:
                source = self._plan[keys[("Read", spec.path)] - 1]
            else:
                raise ValueError(f"{where}.source: no step Reads {spec.path!r}; name the step")
            if source.tool not in _OUTPUT_TOOLS:
                raise ValueError(f"{where}.source: a {source.tool} step shows no file content")
            facts[spec.id] = Fact(spec.id, spec.path, spec.text, source)
        for step in self._plan:
            for need in step.needs:
                fact = facts.get(need)
                if fact is None:
                    raise ValueError(f"step {step.id}: needs {need!r}, which no fact has as id")
                if fact.source.number >= step.number:
                    raise ValueError(
                        f"step {step.id}: needs {need!r}, whose source {fact.source.id} "
                        "does not come before it"
                    )
        return facts

    def _fact_specs(self) -> list[tuple[int, FactSpec]]:
        return [(index, one) for index, spec in enumerate(self.facts) for one in spec.expanded()]

    def fact(self, fact_id: str) -> Fact:
        return self._facts[fact_id]

    def wait_at(self, step_id: str) -> WaitSpec | None:
        """The operator's wait that comes with this step, if any."""
        return next((wait for wait in self.waits if wait.step == step_id), None)

    def permission_wait(self, tool: str, tool_input: Mapping[str, Any]) -> WaitSpec | None:
        """The permission wait for a tool call Claude Code asks about, if it is one."""
        steps = {step.id: step for step in self._plan}
        for wait in self.waits:
            step = steps[wait.step]
            if (
                wait.kind == "permission"
                and tool == step.tool
                and tool_input.get("command") == step.primary
            ):
                return wait
        return None

    @property
    def allowed_tools(self) -> list[str]:
        """The tools Claude Code may use without asking: every tool the scenario uses,
        but Bash when a permission wait needs Claude Code to ask about a command."""
        asked = {"Bash"} if any(wait.kind == "permission" for wait in self.waits) else set()
        return [name for name in self.tools if name not in asked]

    @property
    def fact_list(self) -> tuple[Fact, ...]:
        return tuple(self._facts.values())

    def plan(self) -> tuple[PlannedStep, ...]:
        """The concrete steps in order, generators expanded."""
        return self._plan

    @property
    def tools(self) -> list[str]:
        """Tool names the CLI must offer (pass as ``tools=``/``allowed_tools=``)."""
        used: set[str] = {step.tool for step in self._plan}
        for subagent in self._subagents.values():
            used |= set(subagent.tools)
        if self.wind_down_notes is not None:
            used |= {"Write", "Read"}
        if "Edit" in used:
            used.add("Read")
        return [name for name in TOOL_NAMES if name in used]

    def _workspace_entries(self) -> list[tuple[str, WorkspaceFile]]:
        return [
            (expand_template(entry.path, i), entry)
            for entry in self.workspace.files
            for i in range(entry.start, entry.start + entry.count)
        ]

    def workspace_files(self) -> list[tuple[str, str]]:
        """Each workspace file as (relative path, content), generators expanded; a
        generated file holds its facts' lines and still has its declared size."""
        files: list[tuple[str, str]] = []
        for entry in self.workspace.files:
            for i in range(entry.start, entry.start + entry.count):
                path = expand_template(entry.path, i)
                if entry.content is not None:
                    files.append((path, expand_content(entry.content, i)))
                    continue
                facts = [fact for _, fact in self._fact_specs() if fact.path == path]
                files.append((path, content_with_facts(path, entry.size or 0, entry.kind, facts)))
        return files


def shipped_scenarios() -> dict[str, Path]:
    """Scenarios that ship with mala-tui, by name (the file's stem)."""
    return {
        path.stem: path
        for path in sorted(SHIPPED_DIR.iterdir())
        if path.suffix in SCENARIO_SUFFIXES and path.is_file()
    }


def _read_mapping(path: Path) -> Mapping[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    try:
        data: Any = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ScenarioError(f"{path}: not valid {path.suffix[1:].upper()}: {exc}") from exc
    except RecursionError:
        raise ScenarioError(f"{path}: nested too deeply") from None
    if not isinstance(data, Mapping):
        raise ScenarioError(f"{path}: the top level must be a table/object")
    return data


def _describe(error: ValidationError) -> str:
    lines = []
    for detail in error.errors():
        location = ".".join(str(part) for part in detail["loc"])
        message = detail["msg"].removeprefix("Value error, ")
        lines.append(f"{location}: {message}" if location else message)
    return "; ".join(lines)


def load_scenario(path_or_name: str | Path) -> Scenario:
    """Load a scenario from a .toml/.json file, or a shipped one by name.

    Raises ScenarioError naming the file and the field for anything wrong.
    """
    path = Path(path_or_name)
    if not path.is_file():
        shipped = shipped_scenarios()
        if str(path_or_name) not in shipped:
            raise ScenarioError(
                f"{path_or_name}: no such scenario file, and no shipped scenario by that name "
                f"(shipped: {', '.join(shipped) or 'none'})"
            )
        path = shipped[str(path_or_name)]
    if path.suffix not in SCENARIO_SUFFIXES:
        raise ScenarioError(f"{path}: a scenario file must end in .toml or .json")
    data = _read_mapping(path)
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(f"{path}: {_describe(exc)}") from exc
