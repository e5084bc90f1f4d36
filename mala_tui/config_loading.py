"""Settings, layered: defaults < TOML file < environment < command line.

Every value remembers where it came from, so `mala-tui config show` can say so
and a bad value can be reported with its key, its value, its origin and what
would have been allowed. Layering is done here rather than with
pydantic-settings because that library does not keep per-value provenance.
What the settings are (every section, key, default and bound) is `mala_tui.config`.
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs
from pydantic import BaseModel, ValidationError

from mala_tui.config import (
    APP_NAME,
    SECTIONS,
    ContextSettings,
    ModelPriceSetting,
    Settings,
    SubagentSettings,
)
from mala_tui.core.numbers import NumberOutOfRange, loads_toml
from mala_tui.text_files import read_text

ENV_PREFIX = "MALA_TUI_"
CONFIG_FILE_ENV = "MALA_TUI_CONFIG_FILE"
DEFAULT_SOURCE = "default"


class ConfigError(Exception):
    """A configuration value, file or override that cannot be used; the message says why."""


@dataclass(frozen=True)
class LoadedSettings:
    """Effective settings and where each value came from."""

    settings: Settings
    sources: Mapping[str, str]
    config_file: Path
    config_file_exists: bool

    def rows(self) -> list[tuple[str, Any, str, str]]:
        """(dotted key, value, source, description) for every setting, in declaration order."""
        rows = []
        for section, model in SECTIONS.items():
            section_value = getattr(self.settings, section)
            for name, entry in (section_value.model_extra or {}).items():
                # Tables keyed by the user (a price per model) rather than declared fields.
                key = f"{section}.{name}"
                shown = entry.model_dump(exclude_none=True)
                rows.append(
                    (key, shown, self.sources.get(key, DEFAULT_SOURCE), model.__doc__ or "")
                )
            for name, info in model.model_fields.items():
                key = f"{section}.{name}"
                value = getattr(section_value, name)
                if isinstance(value, BaseModel):  # a table of the section (context.subagents)
                    value = value.model_dump()
                rows.append(
                    (
                        key,
                        value,
                        self.sources.get(key, DEFAULT_SOURCE),
                        info.description or "",
                    )
                )
        return rows


def user_config_dir() -> Path:
    """The folder holding config.toml, users' own prompts/ and themes/."""
    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False))


def no_config_file(path: Path) -> bool:
    """`MALA_TUI_CONFIG_FILE=/dev/null`: read no config file, only the defaults."""
    return str(path) == os.devnull


def config_file_path(env: Mapping[str, str] | None = None) -> Path:
    """The file read: `MALA_TUI_CONFIG_FILE` if set, else config.toml in the user config dir."""
    env = os.environ if env is None else env
    explicit = env.get(CONFIG_FILE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    return user_config_dir() / "config.toml"


@dataclass
class _Layered:
    values: dict[str, dict[str, Any]] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)

    def put(self, section: str, key: str, value: Any, source: str) -> None:
        table, _, inner = key.partition(".")
        if inner:  # a key of a table in the section (`context.subagents.hard_threshold`)
            nested = self.values.setdefault(section, {}).setdefault(table, {})
            if isinstance(nested, dict):
                nested[inner] = value
                self.sources[f"{section}.{key}"] = source
                return
        self.values.setdefault(section, {})[key] = value
        self.sources[f"{section}.{key}"] = source


def load_settings(
    *,
    env: Mapping[str, str] | None = None,
    overrides: Sequence[tuple[str, Any, str]] = (),
) -> LoadedSettings:
    """Build the effective settings.

    Args:
        env: environment to read (default: os.environ).
        overrides: (dotted key, value, source label) from the command line, applied last.

    Raises:
        ConfigError: one message naming the key, the value, where it came from and
            what is allowed.
    """
    env = os.environ if env is None else env
    path = config_file_path(env)
    layered = _Layered()
    # /dev/null: no config file at all (as pip, git and ssh read it), not an error.
    exists = path.is_file() and not no_config_file(path)
    if not exists and path.exists() and not no_config_file(path):
        raise ConfigError(f"config file {path}: not a file ({CONFIG_FILE_ENV} or the default)")
    if exists:
        _apply_file(layered, path)
    _apply_env(layered, env)
    for dotted, value, source in overrides:
        section, key = _split_key(dotted, source)
        layered.put(section, key, value, source)
    try:
        settings = Settings.model_validate(layered.values)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, layered)) from None
    return LoadedSettings(settings, dict(layered.sources), path, exists)


def parse_override(text: str) -> tuple[str, Any]:
    """Parse `section.key=value` from `--set`; the value is read as a TOML value, else a string."""
    if "=" not in text:
        raise ConfigError(
            f"--set {text!r}: expected section.key=value, e.g. context.soft_threshold=0.6"
        )
    dotted, raw = text.split("=", 1)
    dotted = dotted.strip()
    section, _, key = dotted.partition(".")
    return dotted, _parse_value(section, key, raw.strip(), f"--set {dotted}")


def _apply_file(layered: _Layered, path: Path) -> None:
    try:
        data = loads_toml(read_text(path))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path}: TOML syntax error: {exc}") from None
    except NumberOutOfRange as exc:
        raise ConfigError(f"config file {path}: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"config file {path}: cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {path}: cannot be read: {exc}") from None
    source = f"file {path}"
    for section, table in data.items():
        if section not in SECTIONS:
            raise ConfigError(_unknown_section(section, table, source))
        if not isinstance(table, dict):
            raise ConfigError(
                f"{section} = {table!r} ({source}): must be a table, e.g. [{section}]"
            )
        for key, value in table.items():
            layered.put(section, key, value, source)


def _apply_env(layered: _Layered, env: Mapping[str, str]) -> None:
    for name in sorted(env):
        if not name.startswith(ENV_PREFIX) or name == CONFIG_FILE_ENV:
            continue
        rest = name[len(ENV_PREFIX) :]
        source = f"env {name}"
        if "__" not in rest:
            raise ConfigError(
                f"{name}: not a setting; use {ENV_PREFIX}<SECTION>__<KEY>, "
                f"e.g. {ENV_PREFIX}CONTEXT__SOFT_THRESHOLD=0.6"
            )
        section, key = rest.split("__", 1)
        # A table's key: MALA_TUI_CONTEXT__SUBAGENTS__HARD_THRESHOLD.
        section, key = section.lower(), key.lower().replace("__", ".")
        if section not in SECTIONS:
            raise ConfigError(_unknown_section(section, env[name], source))
        layered.put(section, key, _parse_value(section, key, env[name], name), source)


def _split_key(dotted: str, source: str) -> tuple[str, str]:
    section, _, key = dotted.partition(".")
    if not key:
        raise ConfigError(f"{dotted} ({source}): expected section.key, e.g. context.soft_threshold")
    if section not in SECTIONS:
        raise ConfigError(_unknown_section(section, None, source))
    return section, key


def _parse_value(section: str, key: str, raw: str, source: str) -> Any:
    """An env or --set value for one setting: a text setting takes the text as written.

    `ui.notify_command=true` is the command `true`, not a boolean the setting then refuses.
    """
    parsed = _parse_scalar(raw, source)
    model = SECTIONS.get(section)
    info = model.model_fields.get(key) if model is not None else None
    if info is not None and info.annotation is str and not isinstance(parsed, str):
        return raw
    return parsed


def _parse_scalar(raw: str, source: str) -> Any:
    """Read an env or --set value as TOML (numbers, booleans, arrays); anything else is a string.

    Raises:
        ConfigError: a number too large to be any setting's value (named by `source`).
    """
    try:
        return loads_toml(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw
    except NumberOutOfRange as exc:
        raise ConfigError(f"{source}: {exc}") from None


def _unknown_section(section: str, value: Any, source: str) -> str:
    hint = suggest(section, list(SECTIONS))
    shown = "" if value is None else f" = {value!r}"
    return (
        f"[{section}]{shown} ({source}): unknown section{hint}; "
        f"allowed sections: {', '.join(SECTIONS)}"
    )


def suggest(name: str, choices: Sequence[str]) -> str:
    """ " (did you mean 'soft_threshold'?)" for a near miss; "" when nothing is close."""
    close = difflib.get_close_matches(name, choices, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _describe(exc: ValidationError, layered: _Layered) -> str:
    """Turn pydantic's first error into one sentence a user can act on."""
    error = exc.errors(include_url=False)[0]
    loc = [str(part) for part in error["loc"]]
    section = loc[0] if loc else ""
    model = SECTIONS.get(section)
    if section == "pricing":
        return _describe_price(error, loc, layered)
    if loc[:2] == ["context", "subagents"]:
        return _describe_subagents(error, loc, layered)
    if error["type"] == "extra_forbidden" and len(loc) >= 2 and model is not None:
        key = f"{section}.{loc[1]}"
        allowed = ", ".join(model.model_fields)
        return (
            f"{key} = {error['input']!r} ({layered.sources.get(key, DEFAULT_SOURCE)}): unknown key"
            f"{suggest(loc[1], list(model.model_fields))}; allowed keys in [{section}]: {allowed}"
        )
    if len(loc) == 1 and section == "context":
        # A cross-field rule: name both values and both origins.
        lower, upper, relation = (
            ("mask_target_threshold", "soft_threshold", "must not be above")
            if "mask_target_threshold" in str(error["msg"])
            else ("soft_threshold", "hard_threshold", "must be below")
        )
        return f"{_shown(layered, lower)} {relation} {_shown(layered, upper)}"
    key = ".".join(loc[:2])
    value = layered.values.get(section, {}).get(loc[1]) if len(loc) >= 2 else error["input"]
    allowed = allowed_range(model, loc[1]) if model is not None and len(loc) >= 2 else ""
    message = str(error["msg"]).removeprefix("Value error, ")
    # A choice of some of an enum's members is named by their values, as a file spells them.
    message = re.sub(r"<\w+\.\w+: ('[^']*')>", r"\1", message)
    return f"{key} = {value!r} ({layered.sources.get(key, DEFAULT_SOURCE)}): {message}" + (
        f"; allowed: {allowed}" if allowed else ""
    )


def _describe_subagents(error: Any, loc: list[str], layered: _Layered) -> str:
    """A bad `[context.subagents]` value: the key, the value, where it came from."""
    message = str(error["msg"]).removeprefix("Value error, ")
    fields = list(SubagentSettings.model_fields)
    table_source = layered.sources.get("context.subagents", DEFAULT_SOURCE)
    if len(loc) == 2 and error["type"] == "value_error":  # soft not below hard: name both
        given = layered.values.get("context", {}).get("subagents", {})
        shown = []
        for name in fields:
            value = given.get(name, SubagentSettings.model_fields[name].default)
            source = layered.sources.get(f"context.subagents.{name}", table_source)
            shown.append(f"context.subagents.{name} = {value!r} ({source})")
        return f"{message}: {', '.join(shown)}"
    if len(loc) == 2:
        return (
            f"context.subagents = {error['input']!r} ({table_source}): must be a table, "
            "e.g. [context.subagents] hard_threshold = 0.95"
        )
    key = f"context.subagents.{loc[2]}"
    source = layered.sources.get(key, table_source)
    if error["type"] == "extra_forbidden":
        hint = suggest(loc[2], fields)
        allowed_keys = ", ".join(fields)
        return (
            f"{key} = {error['input']!r} ({source}): unknown key{hint}; "
            f"allowed keys in [context.subagents]: {allowed_keys}"
        )
    allowed = allowed_range(SubagentSettings, loc[2])
    return f"{key} = {error['input']!r} ({source}): {message}" + (
        f"; allowed: {allowed}" if allowed else ""
    )


def _describe_price(error: Any, loc: list[str], layered: _Layered) -> str:
    """A bad `[pricing]` entry: the model, the field, the value, where it came from."""
    message = str(error["msg"]).removeprefix("Value error, ")
    if len(loc) < 2:  # a rule over the whole table: find the entry it names
        for name in layered.values.get("pricing", {}):
            if repr(name.strip().lower()) in message:
                source = layered.sources.get(f"pricing.{name}", DEFAULT_SOURCE)
                return f"pricing.{name} ({source}): {message}"
        return f"[pricing]: {message}"
    name = loc[1]
    key = f"pricing.{name}"
    source = layered.sources.get(key, DEFAULT_SOURCE)
    fields = ", ".join(ModelPriceSetting.model_fields)
    if len(loc) == 2:
        return (
            f"{key} = {error['input']!r} ({source}): must be a table of prices, "
            f'e.g. [pricing."{name}"] input = 3.0; allowed keys: {fields}'
        )
    field_name = loc[2]
    if error["type"] == "extra_forbidden":
        hint = suggest(field_name, list(ModelPriceSetting.model_fields))
        return f"{key}.{field_name} ({source}): unknown key{hint}; allowed keys: {fields}"
    allowed = allowed_range(ModelPriceSetting, field_name)
    return f"{key}.{field_name} = {error['input']!r} ({source}): {message}" + (
        f"; allowed: {allowed}" if allowed else ""
    )


def _shown(layered: _Layered, name: str) -> str:
    """`context.<name> = <value> (<where from>)` for a context setting."""
    default = ContextSettings.model_fields[name].default
    value = layered.values.get("context", {}).get(name, default)
    return f"context.{name} = {value!r} ({layered.sources.get(f'context.{name}', DEFAULT_SOURCE)})"


def allowed_range(model: type[BaseModel], name: str) -> str:
    """The numeric bounds of a field, e.g. "a number > 0 and <= 1"; empty when none apply."""
    info = model.model_fields.get(name)
    if info is None:
        return ""
    bounds = []
    for meta in info.metadata:
        for attr, word in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<=")):
            bound = getattr(meta, attr, None)
            if bound is not None:
                bounds.append(f"{word} {bound}")
    if not bounds:
        return ""
    kind = "a whole number" if info.annotation is int else "a number"
    return f"{kind} {' and '.join(bounds)}"
