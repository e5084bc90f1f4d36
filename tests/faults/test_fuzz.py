"""Fuzzed bad input: configs, journal lines (JSON of every shape), tasks files (any bytes)
and scenario files.

Whatever comes in, the outcome is the value or the project's own clear error, never a
crash and never a silent loss. (Checkpoints and usage fields are fuzzed beside their
parsers, in tests/core.)
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mala_tui.config import SECTIONS
from mala_tui.config_loading import ConfigError, load_settings
from mala_tui.core import events as ev
from mala_tui.loopback import ScenarioError, load_scenario
from mala_tui.runtime.journal.writer import read_events

KNOWN_KEYS = {section: list(model.model_fields) for section, model in SECTIONS.items()}

toml_scalar = st.one_of(
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.booleans(),
    st.text(max_size=20),
)
toml_value = st.one_of(toml_scalar, st.lists(st.integers(-100, 100), max_size=4))


def toml_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        assert math.isfinite(value)
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_literal(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value)  # JSON string escapes are valid TOML basic strings
    return str(value)


@st.composite
def config_files(draw: st.DrawFn) -> str:
    lines = []
    for section in draw(st.lists(st.sampled_from([*KNOWN_KEYS, "extra"]), max_size=3)):
        lines.append(f"[{section}]")
        keys = [*KNOWN_KEYS.get(section, []), "unknown_key"]
        for key in draw(st.lists(st.sampled_from(keys), max_size=4, unique=True)):
            lines.append(f"{key} = {toml_literal(draw(toml_value))}")
    return "\n".join(lines) + "\n"


def load_from(text: str) -> tuple[bool, str]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "config.toml"
        path.write_text(text, encoding="utf-8")
        try:
            load_settings(env={"MALA_TUI_CONFIG_FILE": str(path)})
        except ConfigError as exc:
            message = str(exc)
            assert message.strip() and "\n" not in message.strip(), message
            # One message that says where: the file, or the key and the file it came from.
            assert str(path) in message, message
            return False, message
    return True, ""


@given(config_files())
def test_any_structured_config_loads_or_names_the_file_and_key(text: str) -> None:
    ok, message = load_from(text)
    if not ok and "TOML syntax" not in message:
        assert any(key in message for keys in KNOWN_KEYS.values() for key in keys) or (
            "unknown" in message
        ), message


@given(st.text(max_size=300))
def test_any_text_as_a_config_file_loads_or_is_one_clear_error(text: str) -> None:
    load_from(text)


def valid_event(index: int) -> str:
    return ev.event_json(
        ev.ErrorRecorded(
            at=float(index), session="s1", where=ev.Where.RUNTIME, message=f"line {index}"
        )
    )


junk_lines = st.one_of(
    st.text(max_size=80).filter(lambda t: "\n" not in t and "\r" not in t),
    st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=8), max_size=4).map(
        json.dumps
    ),
    st.fixed_dictionaries({"type": st.text(max_size=12), "at": st.floats()}).map(json.dumps),
)


@given(st.lists(st.one_of(st.integers(0, 10**6), junk_lines), max_size=30))
def test_a_journal_with_junk_lines_keeps_every_good_event_in_order(
    lines: list[int | str],
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "events.jsonl"
        text = "".join(
            (valid_event(line) if isinstance(line, int) else line) + "\n" for line in lines
        )
        path.write_text(text, encoding="utf-8")
        contents = read_events(path)
    good = [line for line in lines if isinstance(line, int)]
    # Blank as the reader sees it: ASCII whitespace of the bytes (str.strip also drops \x1f...).
    junk = [line for line in lines if isinstance(line, str) and line.encode().strip()]
    assert [e.message for e in contents.events if isinstance(e, ev.ErrorRecorded)] == [
        f"line {n}" for n in good
    ]
    assert len(contents.events) == len(good)
    assert len(contents.skipped) == len(junk)
    assert all(skip.reason for skip in contents.skipped)


@given(st.binary(max_size=400))
def test_a_journal_of_arbitrary_bytes_is_read_without_crashing(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "events.jsonl"
        path.write_bytes(data)
        contents = read_events(path)
    assert all(skip.reason for skip in contents.skipped)


scenario_value = st.recursive(
    toml_scalar,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(["path", "tool", "count", "size", "kind"]), children)
    ),
    max_leaves=8,
)


@given(
    st.dictionaries(
        st.sampled_from(
            ["name", "task", "goal", "final_answer", "steps", "workspace", "faults", "other"]
        ),
        scenario_value,
        max_size=6,
    )
)
def test_any_scenario_file_loads_or_is_refused_naming_the_file(data: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzzed.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        try:
            load_scenario(path)
        except ScenarioError as exc:
            assert str(path) in str(exc)


@given(st.text(max_size=300))
def test_any_text_as_a_scenario_file_is_refused_naming_the_file(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzzed.toml"
        path.write_text(text, encoding="utf-8")
        try:
            load_scenario(path)
        except ScenarioError as exc:
            assert str(path) in str(exc)


# -- journal lines of JSON of every shape, read by everything that reads a journal ------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
#: Objects shaped like events: a known or odd `type`, the usual fields with any JSON in them.
event_shaped = st.fixed_dictionaries(
    {"type": st.sampled_from(sorted(ev.EVENT_TYPES)) | json_values},
    optional={
        key: json_values
        for key in ("at", "session", "run_id", "sessions", "mode", "status", "ok", "tokens")
    },
)


def json_line(value: Any) -> str:
    return json.dumps(value, allow_nan=True)


@given(
    st.lists(
        st.integers(0, 10**6) | json_values.map(json_line) | event_shaped.map(json_line),
        max_size=25,
    )
)
def test_journal_lines_of_any_json_shape_are_read_listed_and_shown(lines: list[int | str]) -> None:
    import io
    from argparse import Namespace

    from mala_tui.commands.runs_cmd import run_as_json, runs
    from mala_tui.config import Settings
    from mala_tui.config_loading import LoadedSettings
    from mala_tui.core.run_view import RunState
    from mala_tui.runtime.journal.writer import list_runs

    with tempfile.TemporaryDirectory() as folder:
        run = Path(folder) / "runs" / "20261123-000000-fuzz"
        run.mkdir(parents=True)
        text = "".join(
            (valid_event(line) if isinstance(line, int) else line) + "\n" for line in lines
        )
        (run / "events.jsonl").write_text(text, encoding="utf-8")
        contents = read_events(run / "events.jsonl")
        state = RunState(run_id=run.name).apply_all(contents.events)
        json.dumps(run_as_json(run, state, [s.reason for s in contents.skipped]))
        assert [r.run_id for r in list_runs(Path(folder))] == [run.name]
        loaded = LoadedSettings(Settings(), {}, Path(folder) / "none.toml", False)
        out = io.StringIO()
        assert runs(Namespace(data_dir=Path(folder)), loaded, out) == 0
        assert "\x1b" not in out.getvalue()
    # Every line is either an event or a skip with a reason; the good ones all survive.
    assert len(contents.events) + len(contents.skipped) == len(lines)
    # (The fuzzed objects never carry an error event's `where` and `message`.)
    good = [f"line {n}" for n in lines if isinstance(n, int)]
    assert [e.message for e in contents.events if isinstance(e, ev.ErrorRecorded)] == good


# -- tasks files as bytes -----------------------------------------------------------------------


@given(st.binary(max_size=300), st.sampled_from(["tasks.toml", "tasks.json", "tasks"]))
def test_any_bytes_as_a_tasks_file_are_tasks_or_one_clear_error(data: bytes, name: str) -> None:
    from mala_tui.runtime.run.task_plans import TaskFileError, plan_tasks

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        try:
            plans = plan_tasks([], path, Path(folder))
        except TaskFileError as exc:
            message = str(exc)
            assert message.strip() and "\n" not in message.strip(), message
            assert str(path) in message or message.startswith("no task given"), message
            return
    assert plans and all(plan.task.strip() and plan.name for plan in plans)


tasks_entry = st.dictionaries(
    st.sampled_from(
        ["task", "name", "cwd", "other", "profile", "model", "env", "soft_threshold", "mcp_config"]
    ),
    json_values | st.sampled_from([".", "..", "/", "a\u0000b", "\x1b]0;x\x07", "x" * 5000]),
    max_size=4,
)


with_profiles = st.fixed_dictionaries(
    {
        "profile": st.dictionaries(st.sampled_from(["p", "q"]), tasks_entry | json_values),
        "task": st.lists(tasks_entry, max_size=3),
    }
)


@given(st.lists(tasks_entry, max_size=4) | with_profiles | json_values)
def test_any_json_as_a_tasks_file_is_tasks_or_one_clear_error(value: Any) -> None:
    from mala_tui.runtime.run.task_plans import TaskFileError, plan_tasks

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "tasks.json"
        path.write_text(json.dumps(value, allow_nan=True), encoding="utf-8")
        try:
            plans = plan_tasks([], path, Path(folder))
        except TaskFileError as exc:
            assert str(path) in str(exc) or str(exc).startswith(("no task given", "two tasks"))
            assert "\n" not in str(exc).strip(), str(exc)
            return
    assert all(plan.cwd.is_absolute() for plan in plans)
