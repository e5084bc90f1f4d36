"""A scenario's steps: as its file lists them, and as its agent plays them.

The tool steps (Read, Bash, Grep, Glob, Edit, Write, Agent) are validated strictly; a step
with ``count = N`` is a generator, expanded with ``{i}`` filled in into N ``PlannedStep``
values. The template helpers that fill ``{i}`` in live here too, since every part of a
scenario file uses them.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator, model_validator

from mala_tui.loopback.content import ContentKind, generate_content

ToolName = Literal["Read", "Bash", "Grep", "Glob", "Edit", "Write", "Agent"]
TOOL_NAMES: tuple[ToolName, ...] = ("Read", "Bash", "Grep", "Glob", "Edit", "Write", "Agent")
#: What Claude Code's Agent tool is asked to start: its general-purpose agent.
SUBAGENT_TYPE = "general-purpose"
SUBAGENT_NAME = r"[A-Za-z0-9][A-Za-z0-9_-]{0,39}"
#: How an Agent call's prompt names its subagent: ``[subagent A] <task>``. The main agent
#: recognises its Agent calls by it, and the server a subagent's requests.
SUBAGENT_TAG = re.compile(rf"\[subagent ({SUBAGENT_NAME})\]")


def expand_template(template: str, number: int) -> str:
    return template.format(i=number)


def valid_template(value: str) -> str:
    """A string field may use ``{i}`` (with a format spec) and nothing else in braces."""
    for _, field_name, _, _ in string.Formatter().parse(value):
        if field_name is not None and field_name != "i":
            raise ValueError(f"template {value!r} uses {{{field_name}}}; only {{i}} is available")
    try:
        expand_template(value, 1)
    except (ValueError, IndexError) as exc:
        raise ValueError(f"template {value!r} does not format: {exc}") from exc
    return value


_INDEX_FIELD = re.compile(r"\{i(?::([^{}]*))?\}")
"""`{i}` or `{i:03d}` in file content: the only braces filled in there."""


def expand_content(text: str, number: int) -> str:
    """File content (a workspace file, a Write, an Edit's strings) with `{i}` filled in
    and every other brace kept as it is: content is code and JSON, full of braces."""
    return _INDEX_FIELD.sub(lambda match: format(number, match.group(1) or ""), text)


def valid_content(value: str) -> str:
    try:
        expand_content(value, 1)
    except ValueError as exc:
        raise ValueError(f"{{i}} in {value[:60]!r} does not format: {exc}") from exc
    return value


def valid_relative_path(value: str) -> str:
    path = PurePosixPath(value)
    if not value or path.is_absolute() or ".." in path.parts:
        raise ValueError(f"{value!r} must be a relative path inside the workspace")
    return valid_template(value)


class StrictSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _StepSpec(StrictSpec):
    id: str | None = None
    """Step id for logs and faults; defaults to ``s`` + the step's position (``s007``)."""
    label: str | None = None
    """Human label; defaults to a verb and the primary argument (``read src/app.py``)."""
    count: int = Field(default=1, ge=1, le=10_000)
    """Generator: repeat this step ``count`` times with ``{i}`` = start, start+1, ..."""
    start: int = 1
    needs: list[str] = Field(default_factory=list)
    """Ids of facts (``[[facts]]``) this step cannot be played without."""
    after: list[str] = Field(default_factory=list)
    """Subagents (started by earlier Agent steps) whose reports this step waits for."""

    @field_validator("id", "label")
    @classmethod
    def check_optional_template(cls, value: str | None) -> str | None:
        return None if value is None else valid_template(value)

    @field_validator("needs", "after")
    @classmethod
    def check_needs(cls, value: list[str]) -> list[str]:
        return [valid_template(item) for item in value]


class ReadStep(_StepSpec):
    tool: Literal["Read"]
    path: str

    @field_validator("path")
    @classmethod
    def check_path(cls, value: str) -> str:
        return valid_relative_path(value)


class BashStep(_StepSpec):
    tool: Literal["Bash"]
    command: str
    description: str | None = None

    @field_validator("command")
    @classmethod
    def check_command(cls, value: str) -> str:
        if not value.strip() or "\n" in value:
            raise ValueError(
                "a command must be one non-empty line (done steps are listed one a line)"
            )
        return valid_template(value)


class GrepStep(_StepSpec):
    tool: Literal["Grep"]
    pattern: str
    path: str | None = None
    glob: str | None = None
    output_mode: Literal["content", "files_with_matches", "count"] | None = None

    @field_validator("pattern", "glob")
    @classmethod
    def check_pattern(cls, value: str | None) -> str | None:
        return None if value is None else valid_template(value)

    @field_validator("path")
    @classmethod
    def check_path(cls, value: str | None) -> str | None:
        return None if value is None else valid_relative_path(value)


class GlobStep(_StepSpec):
    tool: Literal["Glob"]
    pattern: str
    path: str | None = None

    @field_validator("pattern")
    @classmethod
    def check_pattern(cls, value: str) -> str:
        return valid_template(value)

    @field_validator("path")
    @classmethod
    def check_path(cls, value: str | None) -> str | None:
        return None if value is None else valid_relative_path(value)


class EditStep(_StepSpec):
    tool: Literal["Edit"]
    path: str
    old: str
    new: str

    @field_validator("path")
    @classmethod
    def check_path(cls, value: str) -> str:
        return valid_relative_path(value)

    @field_validator("old", "new")
    @classmethod
    def check_strings(cls, value: str) -> str:
        return valid_content(value)


class WriteStep(_StepSpec):
    tool: Literal["Write"]
    path: str
    content: str | None = None
    """Literal content; or give ``size`` for generated content of that many bytes."""
    size: int | None = Field(default=None, ge=1, le=5_000_000)
    kind: ContentKind = "text"

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


class AgentStep(_StepSpec):
    """Start a subagent (``[[subagents]]``) through Claude Code's Agent tool."""

    tool: Literal["Agent"]
    subagent: str
    """The name of the ``[[subagents]]`` entry to start (``{i}`` allowed)."""
    background: StrictBool = True
    """Run it in the background (the call returns at once; the report comes later)."""
    description: str | None = None
    """The Agent call's short description; default ``subagent <name>``."""

    @field_validator("subagent", "description")
    @classmethod
    def check_strings(cls, value: str | None) -> str | None:
        return None if value is None else valid_template(value)


StepSpec = Annotated[
    ReadStep | BashStep | GrepStep | GlobStep | EditStep | WriteStep | AgentStep,
    Field(discriminator="tool"),
]


def subagent_tag(name: str) -> str:
    """The tag an Agent call's prompt starts with: ``[subagent NAME]``."""
    return f"[subagent {name}]"


def report_marker(name: str) -> str:
    """What a subagent's report starts with, and what the main agent looks for."""
    return f"REPORT {name}:"


@dataclass(frozen=True)
class PlannedStep:
    """One concrete step of a scenario after generators are expanded.

    ``primary`` is the argument that identifies the step: the workspace-relative path for
    Read/Write/Edit, the command for Bash, the pattern for Grep/Glob.
    """

    number: int
    id: str
    label: str
    tool: ToolName
    primary: str
    params: tuple[tuple[str, Any], ...] = ()
    needs: tuple[str, ...] = ()
    """Ids of the facts that must be visible before this step is played."""
    after: tuple[str, ...] = ()
    """Subagents whose reports must be visible before this step is played."""

    @property
    def key(self) -> tuple[str, str]:
        """What makes this step this step: tool and primary argument."""
        return (self.tool, self.primary)

    @property
    def done_line(self) -> str:
        """How the agent lists the step as done: ``Read src/a.py`` or ``Bash: pytest -q``."""
        if self.tool == "Bash":
            return f"Bash: {self.primary}"
        return f"{self.tool} {self.primary}"

    def param(self, name: str) -> Any:
        return dict(self.params).get(name)

    def tool_input(self, workspace: Path | None) -> dict[str, Any]:
        """The tool_use input the agent sends; paths are absolute when the workspace is known."""

        def where(relative: str) -> str:
            return str(workspace / relative) if workspace is not None else relative

        params = dict(self.params)
        if self.tool == "Read":
            return {"file_path": where(self.primary)}
        if self.tool == "Write":
            return {"file_path": where(self.primary), "content": params["content"]}
        if self.tool == "Edit":
            return {
                "file_path": where(self.primary),
                "old_string": params["old"],
                "new_string": params["new"],
            }
        if self.tool == "Bash":
            return {"command": self.primary, "description": params.get("description") or self.label}
        if self.tool == "Agent":
            return {
                "description": params.get("description") or f"subagent {self.primary}",
                "prompt": f"{subagent_tag(self.primary)} {params.get('task', '')}",
                "subagent_type": SUBAGENT_TYPE,
                "run_in_background": bool(params.get("background", True)),
            }
        result: dict[str, Any] = {"pattern": self.primary}
        if params.get("path") is not None:
            result["path"] = where(params["path"])
        elif workspace is not None:
            result["path"] = str(workspace)
        for name in ("glob", "output_mode"):
            if params.get(name) is not None:
                result[name] = params[name]
        return result


def _default_label(tool: ToolName, primary: str) -> str:
    verb = {
        "Read": "read",
        "Write": "write",
        "Edit": "edit",
        "Bash": "run",
        "Grep": "search for",
        "Glob": "list",
        "Agent": "delegate to subagent",
    }[tool]
    return f"{verb} {primary}"


def expand_step(spec: StepSpec, number: int, i: int) -> PlannedStep:
    def fmt(value: str | None) -> str | None:
        return None if value is None else expand_template(value, i)

    params: dict[str, Any]
    if isinstance(spec, ReadStep):
        primary, params = expand_template(spec.path, i), {}
    elif isinstance(spec, BashStep):
        primary, params = expand_template(spec.command, i), {"description": fmt(spec.description)}
    elif isinstance(spec, GrepStep):
        primary = expand_template(spec.pattern, i)
        params = {"path": fmt(spec.path), "glob": fmt(spec.glob), "output_mode": spec.output_mode}
    elif isinstance(spec, GlobStep):
        primary, params = expand_template(spec.pattern, i), {"path": fmt(spec.path)}
    elif isinstance(spec, AgentStep):
        primary = expand_template(spec.subagent, i)
        params = {"description": fmt(spec.description), "background": spec.background}
    elif isinstance(spec, EditStep):
        primary, params = (
            expand_template(spec.path, i),
            {"old": expand_content(spec.old, i), "new": expand_content(spec.new, i)},
        )
    else:
        primary = expand_template(spec.path, i)
        content = (
            expand_content(spec.content, i)
            if spec.content is not None
            else generate_content(primary, spec.size or 0, spec.kind)
        )
        params = {"content": content}
    return PlannedStep(
        number=number,
        id=fmt(spec.id) or f"s{number:03d}",
        label=fmt(spec.label) or _default_label(spec.tool, primary),
        tool=spec.tool,
        primary=primary,
        params=tuple((key, value) for key, value in params.items() if value is not None),
        needs=tuple(expand_template(need, i) for need in spec.needs),
        after=tuple(expand_template(name, i) for name in spec.after),
    )
