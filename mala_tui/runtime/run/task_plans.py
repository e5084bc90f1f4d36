"""A run's tasks, planned: from the command line or a tasks file, with their profiles.

Each task becomes a `TaskPlan` (its name, its task, its folder, its profile), checked
before anything is made, so a tasks file with a mistake is refused in one line naming
the file and the entry.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mala_tui.config import Settings
from mala_tui.config_loading import suggest
from mala_tui.core.numbers import NumberOutOfRange, loads_json, loads_toml
from mala_tui.runtime.run.profiles import (
    PROFILE_KEYS,
    Profile,
    ProfileError,
    check_branch,
    parse_profile,
    shown,
)
from mala_tui.text_files import read_text


class TaskFileError(ValueError):
    """A tasks file that cannot be used; the message names the file and the entry."""


@dataclass(frozen=True)
class TaskPlan:
    name: str
    task: str
    cwd: Path
    profile: Profile = field(default_factory=Profile)
    """What the task runs with over the run's settings (runtime.run.profiles); empty for most."""


def plan_tasks(
    tasks: Sequence[str],
    tasks_file: Path | None,
    cwd: Path | None,
    settings: Settings | None = None,
) -> list[TaskPlan]:
    """The tasks of `plan_run`, without the file's named profiles."""
    return plan_run(tasks, tasks_file, cwd, settings)[0]


def plan_run(
    tasks: Sequence[str],
    tasks_file: Path | None,
    cwd: Path | None,
    settings: Settings | None = None,
) -> tuple[list[TaskPlan], dict[str, Profile]]:
    """Tasks from the command line, then from a TOML or JSON file of [[task]] entries.

    A file entry is a table with `task` and optionally `name`, `cwd`, `profile` (one of
    the file's `[profile.NAME]` tables) and any profile key of its own. Names must be
    unique; missing ones are task-1, task-2... Each task's profile is checked against
    `settings` (the defaults when None).

    Where each task works: a file entry's own `cwd` (relative to the file), else `cwd`
    (`--cwd`, relative to the current folder), else the file's folder; a task from the
    command line works in `cwd`, else the current folder.
    """
    plans = []
    profiles: dict[str, Profile] = {}
    given = None if cwd is None else _task_folder(cwd, "--cwd")
    if tasks:
        folder = given or _task_folder(Path(), "--cwd")
        for index, text in enumerate(tasks, start=1):
            if not text.strip():
                raise TaskFileError(f"task {index} on the command line is empty")
            plans.append(TaskPlan("", text, folder))
    if tasks_file is not None:
        from_file, profiles = _read_tasks_file(tasks_file, settings or Settings(), given)
        plans += from_file
    named: list[TaskPlan] = []
    seen: set[str] = set()
    for index, plan in enumerate(plans, start=1):
        name = plan.name or f"task-{index}"
        if name in seen:
            raise TaskFileError(f"two tasks are named {name!r}; names must be unique")
        seen.add(name)
        named.append(replace(plan, name=name))
    if not named:
        raise TaskFileError("no task given: pass TASK arguments or --tasks FILE")
    return named, profiles


def with_base(plans: Sequence[TaskPlan], base: str | None, *, worktree: bool) -> list[TaskPlan]:
    """The tasks with `--base` as the base of each whose profile names none; a base is
    only for a worktree run. Whether the branch exists is checked where each task works
    (runtime.git.worktree.base_tip).

    Raises:
        TaskFileError: a base that is not a branch's name, or one without a worktree run.
    """
    if base is not None:
        try:
            base = check_branch(base)
        except ProfileError as exc:
            raise TaskFileError(f"--base: {exc}") from None
        plans = [
            plan if plan.profile.base else replace(plan, profile=replace(plan.profile, base=base))
            for plan in plans
        ]
    if not worktree:
        if base is not None:
            raise TaskFileError("--base needs --worktree (the base is where each worktree starts)")
        for plan in plans:
            if plan.profile.base:
                raise TaskFileError(
                    f"task {shown(plan.name)}: base = {plan.profile.base!r} needs --worktree "
                    "(the base is where each worktree starts)"
                )
    return list(plans)


def _task_folder(folder: Path, where: str) -> Path:
    """The folder, resolved; a clear error when it is not one (or not a path at all)."""
    try:
        resolved = folder.resolve()
        if resolved.is_dir():
            return resolved
    except (OSError, ValueError, RuntimeError):  # a NUL byte, a symlink loop, too long
        pass
    raise TaskFileError(f"{where}: {str(folder)!r} is not a folder")


def _read_tasks_file(
    path: Path, settings: Settings, cwd: Path | None
) -> tuple[list[TaskPlan], dict[str, Profile]]:
    try:
        text = read_text(path)
    except OSError as exc:
        raise TaskFileError(f"tasks file {path}: cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise TaskFileError(
            f"tasks file {path}: not UTF-8 text (byte {exc.start}: {exc.reason})"
        ) from None
    kind = "JSON" if path.suffix == ".json" else "TOML"
    try:
        data: Any = loads_json(text) if kind == "JSON" else loads_toml(text)
    except NumberOutOfRange as exc:
        raise TaskFileError(f"tasks file {path}: {exc}") from None
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise TaskFileError(f"tasks file {path}: not valid {kind}: {exc}") from None
    except RecursionError:
        raise TaskFileError(f"tasks file {path}: {kind} nested too deeply") from None
    profiles: dict[str, Profile] = {}
    if isinstance(data, dict):
        unknown = set(data) - {"task", "profile"}
        if unknown:
            key = sorted(unknown)[0]
            raise TaskFileError(
                f"tasks file {path}: unknown table {key!r}{suggest(key, ['task', 'profile'])}; "
                "allowed: task, profile"
            )
        profiles = _read_profiles(path, data.get("profile", {}), settings)
    entries = data.get("task") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise TaskFileError(f"tasks file {path}: expected a list of [[task]] tables")
    plans = []
    allowed = ("task", "name", "cwd", "profile", *PROFILE_KEYS)
    for index, entry in enumerate(entries, start=1):
        where = f"tasks file {path}, task {index}"
        if not isinstance(entry, dict):
            raise TaskFileError(f"{where}: expected a table with a `task` string")
        unknown = set(entry) - set(allowed)
        if unknown:
            key = sorted(unknown)[0]
            hint = suggest(key, allowed)
            raise TaskFileError(
                f"{where}: unknown key {key!r}{hint}; allowed: {', '.join(allowed)}"
            )
        task, name, own = entry.get("task"), entry.get("name", ""), entry.get("cwd")
        if not isinstance(task, str) or not task.strip():
            raise TaskFileError(f"{where}: `task` must be a non-empty string")
        if not isinstance(name, str) or not isinstance(own, str | None):
            raise TaskFileError(f"{where}: `name` and `cwd` must be strings")
        if own is not None:
            folder = _task_folder(path.parent / own, f"{where}: cwd")
        else:
            folder = cwd or _task_folder(path.parent, f"{where}: the tasks file's folder")
        profile = _task_profile(path, where, entry, profiles, settings)
        plans.append(TaskPlan(name, task, folder, profile))
    return plans, profiles


def _read_profiles(path: Path, tables: object, settings: Settings) -> dict[str, Profile]:
    """The file's `[profile.NAME]` tables, each checked."""
    if not isinstance(tables, dict):
        raise TaskFileError(
            f"tasks file {path}: profile must be tables of settings, e.g. [profile.review]"
        )
    profiles = {}
    for name, table in tables.items():
        where = f"tasks file {path}, profile {shown(name)}"
        if not isinstance(table, dict):
            raise TaskFileError(f'{where}: must be a table, e.g. [profile.review] model = "..."')
        try:
            profiles[name] = parse_profile(table, path.parent, name=name)
            profiles[name].apply(settings)
        except ProfileError as exc:
            raise TaskFileError(f"{where}: {exc}") from None
    return profiles


def _task_profile(
    path: Path,
    where: str,
    entry: dict[str, Any],
    profiles: dict[str, Profile],
    settings: Settings,
) -> Profile:
    """The task's named profile, with the task's own profile keys over it; checked."""
    chosen = entry.get("profile")
    base = Profile()
    if chosen is not None:
        if not isinstance(chosen, str) or chosen not in profiles:
            known = ", ".join(shown(name) for name in profiles) or f"none in {path.name}"
            hint = suggest(chosen, list(profiles)) if isinstance(chosen, str) else ""
            raise TaskFileError(
                f"{where}: profile {chosen!r} is not defined{hint}; profiles: {known}"
            )
        base = profiles[chosen]
    own = {key: value for key, value in entry.items() if key in PROFILE_KEYS}
    try:
        profile = base.under(parse_profile(own, path.parent)) if own else base
        profile.apply(settings)
    except ProfileError as exc:
        raise TaskFileError(f"{where}: {exc}") from None
    return profile
