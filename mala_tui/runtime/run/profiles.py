"""Profiles: what one task of a tasks file runs with, over the run's settings.

A profile gives a task its model, permission mode, allowed and disallowed tools, MCP
servers (a path to an MCP config file, as `claude --mcp-config` takes), extra
environment, per-session budgets, management mode and thresholds, and in a worktree run
the branch its worktree starts from and lands on (`base`). Named profiles
(`[profile.review]`) are shared by tasks (`profile = "review"`); a task may also set any
of these keys itself, over its profile's.

Keys that are settings (`model` is `agent.model`, `soft_threshold` is
`context.soft_threshold`, `max_turns` is `budget.max_turns`...) are checked the way the
config file is: merged over the run's settings and validated by the same models, so a
bad value gets the same one-line error (the key, the value, why, what is allowed), and
rules across keys (soft below hard) hold for the values the task will really run with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ValidationError

from mala_tui.config import Settings, SubagentSettings
from mala_tui.config_loading import allowed_range, suggest
from mala_tui.core.phases import ManageMode
from mala_tui.runtime.backends.base import SessionSpec
from mala_tui.runtime.run.session_limits import subagent_limits_for

#: Profile keys that are settings, and the section of the settings each one is in.
SETTING_KEYS: Final[Mapping[str, str]] = {
    "model": "agent",
    "permission_mode": "agent",
    "allowed_tools": "agent",
    "manage": "context",
    "soft_threshold": "context",
    "hard_threshold": "context",
    "mask_target_threshold": "context",
    "subagents": "context",
    "max_cost_usd": "budget",
    "max_turns": "budget",
    "max_minutes": "budget",
}
#: Profile keys of its own: what the agent process is given beyond the settings.
OWN_KEYS: Final = ("disallowed_tools", "mcp_config", "env", "base")
PROFILE_KEYS: Final = (*SETTING_KEYS, *OWN_KEYS)


class ProfileError(ValueError):
    """A profile key that cannot be used: one line, the key, the value and why."""


@dataclass(frozen=True)
class Profile:
    """A task's own model, tools, environment, budgets and management, over the run's."""

    name: str = ""
    """The named profile the task used (`profile = "review"`); "" for none."""
    settings: Mapping[str, Any] = field(default_factory=dict)
    """Values of the keys that are settings (SETTING_KEYS), checked."""
    disallowed_tools: tuple[str, ...] = ()
    mcp_config: Path | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    base: str = ""
    """The branch a worktree session starts from and lands on (`--base`); "" for the
    branch checked out where the run starts."""

    @property
    def empty(self) -> bool:
        return not (
            self.name
            or self.settings
            or self.disallowed_tools
            or self.mcp_config
            or self.env
            or self.base
        )

    def under(self, task: Profile) -> Profile:
        """This (named) profile with a task's own keys over it."""
        return Profile(
            name=self.name or task.name,
            settings={**self.settings, **task.settings},
            disallowed_tools=task.disallowed_tools or self.disallowed_tools,
            mcp_config=task.mcp_config or self.mcp_config,
            env={**self.env, **task.env},
            base=task.base or self.base,
        )

    def apply(self, settings: Settings) -> Settings:
        """The run's settings with this profile's over them.

        Raises:
            ProfileError: a value the settings' own rules refuse, named with its key.
        """
        sections: dict[str, dict[str, Any]] = {}
        for key, value in self.settings.items():
            sections.setdefault(SETTING_KEYS[key], {})[key] = value
        update: dict[str, BaseModel] = {}
        for section, values in sections.items():
            current: BaseModel = getattr(settings, section)
            merged = {**current.model_dump(), **values}
            for key, value in values.items():
                # A table (`subagents = { hard_threshold = 0.9 }`) goes over the run's, key by key.
                run_value = current.model_dump().get(key)
                if isinstance(value, Mapping) and isinstance(run_value, dict):
                    merged[key] = {**run_value, **value}
            try:
                update[section] = type(current).model_validate(merged)
            except ValidationError as exc:
                raise ProfileError(_describe(exc, type(current), merged)) from None
        return settings.model_copy(update=update) if update else settings

    def to_json(self) -> dict[str, Any]:
        """As run.json keeps it, so a resumed session runs with its profile again."""
        data: dict[str, Any] = dict(self.settings)
        if self.name:
            data["name"] = self.name
        if self.disallowed_tools:
            data["disallowed_tools"] = list(self.disallowed_tools)
        if self.mcp_config is not None:
            data["mcp_config"] = str(self.mcp_config)
        if self.env:
            data["env"] = dict(self.env)
        if self.base:
            data["base"] = self.base
        return data

    @classmethod
    def from_json(cls, data: object) -> Profile:
        """What `to_json` wrote (in run.json).

        Raises:
            ProfileError: the entry is damaged.
        """
        if not isinstance(data, dict):
            raise ProfileError(f"expected a table, got {data!r}")
        rest = dict(data)
        name = rest.pop("name", "")
        profile = parse_profile(rest, Path("/"))
        return replace(profile, name=str(name))


def with_profile(spec: SessionSpec, profile: Profile, settings: Settings) -> SessionSpec:
    """A session made like `spec` (the run's settings: model, tools, environment) running
    with `profile` over them, as a task naming it in the tasks file would: what a session
    added with a profile while the run runs gets.

    Raises:
        ProfileError: the profile does not hold over these settings.
    """
    task_settings = profile.apply(settings)
    agent = task_settings.agent
    return replace(
        spec,
        model=profile.settings.get("model") or spec.model,
        allowed_tools=tuple(agent.allowed_tools),
        disallowed_tools=profile.disallowed_tools or spec.disallowed_tools,
        permission_mode=agent.permission_mode,
        mcp_config=profile.mcp_config or spec.mcp_config,
        # The run's own variables (a model mala-tui provides, say) win, as for a task.
        env={**profile.env, **spec.env},
        own_compaction=task_settings.context.manage is ManageMode.OFF,
        subagent_limits=subagent_limits_for(
            task_settings, profile.settings.get("model") or spec.model, spec.betas
        ),
    )


def profiles_json(profiles: Mapping[str, Profile]) -> dict[str, dict[str, Any]]:
    """The run's named profiles as run.json keeps them, for sessions added later (and
    their resume)."""
    return {name: profile.to_json() for name, profile in profiles.items()}


def profiles_from_json(data: object) -> dict[str, Profile]:
    """What `profiles_json` wrote.

    Raises:
        ProfileError: an entry is damaged (named).
    """
    if not isinstance(data, dict):
        raise ProfileError(f"profiles: expected a table, got {data!r}")
    found = {}
    for name, entry in data.items():
        try:
            found[str(name)] = Profile.from_json(entry)
        except ProfileError as exc:
            raise ProfileError(f"profile {shown(str(name))}: {exc}") from None
    return found


def parse_profile(table: Mapping[str, Any], folder: Path, *, name: str = "") -> Profile:
    """A profile's keys, each checked for its kind (a setting's value is checked against
    the settings by `apply`); `mcp_config` is a file, relative to `folder`.

    Raises:
        ProfileError: an unknown key or a value of the wrong kind.
    """
    settings: dict[str, Any] = {}
    for key, value in table.items():
        if key not in PROFILE_KEYS:
            hint = suggest(key, PROFILE_KEYS)
            raise ProfileError(f"unknown key {key!r}{hint}; allowed: {', '.join(PROFILE_KEYS)}")
        if key in SETTING_KEYS:
            settings[key] = value
    return Profile(
        name=name,
        settings=settings,
        disallowed_tools=_names(table.get("disallowed_tools", [])),
        mcp_config=_file(table["mcp_config"], folder) if "mcp_config" in table else None,
        env=_environment(table.get("env", {})),
        base=check_branch(table["base"]) if "base" in table else "",
    )


def _names(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ProfileError(
            f'disallowed_tools = {value!r}: must be a list of tool names, e.g. ["Bash", "WebFetch"]'
        )
    return tuple(value)


def check_branch(value: object) -> str:
    """A branch's name as git could take it; whether the repository has it is checked
    once the run knows where each task works (runtime.git.worktree.base_tip).

    Raises:
        ProfileError: not a string, empty, with a space or a control character, or
            starting with "-".
    """
    if (
        not isinstance(value, str)
        or not value
        or not value.isprintable()
        or any(c.isspace() for c in value)
        or value.startswith("-")
    ):
        raise ProfileError(f'base = {value!r}: must be the name of a branch, e.g. "main"')
    return value


def _file(value: object, folder: Path) -> Path:
    if not isinstance(value, str) or not value.strip():
        raise ProfileError(f"mcp_config = {value!r}: must be the path of an MCP config file")
    try:
        path = (folder / value).resolve()
        if path.is_file():
            return path
    except (OSError, ValueError, RuntimeError):  # a NUL byte, a symlink loop, too long
        pass
    raise ProfileError(f"mcp_config = {value!r}: no such file ({folder / value})")


def _environment(value: object) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ProfileError(
            f'env = {value!r}: must be a table of variables, e.g. {{ LOG_LEVEL = "debug" }}'
        )
    for key, text in value.items():
        if not key or "=" in key or not key.isprintable():
            raise ProfileError(f"env: {key!r} is not a variable name")
        if not isinstance(text, str) or "\0" in text:
            raise ProfileError(f"env.{key} = {text!r}: must be a string")
    return dict(value)


def shown(name: str) -> str:
    """A name from a file as it can be shown on one line: as it is, or quoted when odd."""
    return name if name and name.isprintable() and name.strip() == name else repr(name)


def _describe(exc: ValidationError, model: type[BaseModel], merged: Mapping[str, Any]) -> str:
    """The settings' first complaint, said of the profile's key, as the config says it."""
    error = exc.errors(include_url=False)[0]
    message = str(error["msg"]).removeprefix("Value error, ")
    loc = [str(part) for part in error["loc"]]
    if not loc:  # a rule across keys: name each key it mentions, with its value
        named = [f"{key} = {merged[key]!r}" for key in model.model_fields if key in message]
        return f"{message} ({', '.join(named)})" if named else message
    key = loc[0]
    if len(loc) >= 2 and key == "subagents":  # a key of the profile's subagents table
        inner = SubagentSettings
        allowed = allowed_range(inner, loc[1])
        return f"subagents.{loc[1]} = {error['input']!r}: {message}" + (
            f"; allowed: {allowed}" if allowed else ""
        )
    allowed = allowed_range(model, key)
    return f"{key} = {merged.get(key)!r}: {message}" + (f"; allowed: {allowed}" if allowed else "")
