"""`mala-tui config show|path`: the effective configuration and the file it comes from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO

from mala_tui.config_loading import CONFIG_FILE_ENV, LoadedSettings, no_config_file


def show(loaded: LoadedSettings, out: TextIO, *, as_json: bool = False) -> int:
    """Print every setting with its value, where it came from, and what it does."""
    if as_json:
        payload = {
            key: {"value": _jsonable(value), "source": source, "description": doc}
            for key, value, source, doc in loaded.rows()
        }
        out.write(json.dumps(payload, indent=2) + "\n")
        return 0
    if no_config_file(loaded.config_file):
        out.write(f"# config file: none ({CONFIG_FILE_ENV}={loaded.config_file})\n")
    else:
        state = "" if loaded.config_file_exists else " (not present: defaults apply)"
        out.write(f"# config file: {loaded.config_file}{state}\n")
    section = ""
    for key, value, source, doc in loaded.rows():
        this_section, name = key.split(".", 1)
        if this_section != section:
            section = this_section
            out.write(f"\n[{section}]\n")
        for line in doc.split("\n"):
            out.write(f"# {' '.join(line.split())}\n")
        if value is None:
            # TOML has no null: show it commented out so the output stays valid TOML.
            out.write(f"# {name} =    # not set, from {source}\n")
        else:
            out.write(f"{_toml_key(name)} = {_toml(value)}    # from {source}\n")
    return 0


def path(loaded: LoadedSettings, out: TextIO) -> int:
    """Print the config file mala-tui reads (whether or not it exists yet)."""
    out.write(f"{loaded.config_file}\n")
    return 0


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    if isinstance(value, dict):
        # An inline table: the output stays one valid TOML line per setting.
        pairs = ", ".join(f"{json.dumps(str(k))} = {_toml(v)}" for k, v in value.items())
        return "{" + (f" {pairs} " if pairs else "") + "}"
    return json.dumps(str(value))


def _toml_key(name: str) -> str:
    """A bare key when TOML allows one (letters, digits, _ and -), else a quoted one."""
    bare = name and all(char.isascii() and (char.isalnum() or char in "_-") for char in name)
    return name if bare else json.dumps(name)
