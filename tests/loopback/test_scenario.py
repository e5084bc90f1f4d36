"""Scenario files: loading, generators, errors that name the file and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mala_tui.loopback import (
    ScenarioError,
    load_scenario,
    materialize_workspace,
    shipped_scenarios,
)
from mala_tui.loopback.content import generate_content

MINIMAL = """
name = "mini"
task = "Do it."
final_answer = "Done."
[[steps]]
tool = "Read"
path = "a.txt"
"""


def write(tmp_path: Path, text: str, name: str = "scenario.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_shipped_scenarios_all_load_and_include_the_demo_and_benchmark_ones() -> None:
    shipped = shipped_scenarios()
    assert {
        "normal-zone",
        "soft-zone-reader",
        "hard-zone-long-task",
        "stall-once",
        "economy-long",
        "quickstart",
    } <= set(shipped)
    for name, path in shipped.items():
        scenario = load_scenario(name)
        assert scenario.name == path.stem
        assert scenario.plan()


def test_the_economy_scenario_has_over_a_hundred_large_steps() -> None:
    scenario = load_scenario("economy-long")
    assert len(scenario.plan()) >= 100
    sizes = dict(scenario.workspace_files())
    big = [
        step
        for step in scenario.plan()
        if step.tool == "Read" and len(sizes[step.primary]) >= 20_000
    ]
    assert len(big) >= 90


def test_generators_expand_with_formatted_index() -> None:
    scenario = load_scenario("economy-long")
    plan = scenario.plan()
    assert [step.id for step in plan[:3]] == ["s001", "s002", "s003"]
    assert plan[0].done_line == "Read src/pkg_001.py"
    assert plan[48].done_line == "Bash: cat data/batch_01.log"
    assert plan[60].primary == "src/pkg_049.py"


def test_load_by_path_json_too(tmp_path: Path) -> None:
    data = {
        "name": "j",
        "task": "t",
        "final_answer": "f",
        "steps": [{"tool": "Bash", "command": "ls", "id": "list", "label": "list files"}],
    }
    scenario = load_scenario(write(tmp_path, json.dumps(data), "s.json"))
    assert scenario.plan()[0].id == "list"
    assert scenario.plan()[0].label == "list files"


@pytest.mark.parametrize(
    ("text", "field", "detail"),
    [
        (MINIMAL + "colour = 'red'\n", "colour", "Extra inputs are not permitted"),
        (
            MINIMAL.replace('path = "a.txt"', 'path = "a.txt"\nsize = 3'),
            "steps.0.Read.size",
            "Extra inputs",
        ),
        (MINIMAL.replace('tool = "Read"', 'tool = "Delete"'), "steps.0", "tool"),
        (MINIMAL.replace('"a.txt"', '"/etc/passwd"'), "steps.0.Read.path", "relative path"),
        (MINIMAL.replace('"a.txt"', '"../up.txt"'), "steps.0.Read.path", "relative path"),
        (MINIMAL.replace('"a.txt"', '"f_{j}.txt"'), "steps.0.Read.path", "only {i}"),
        (MINIMAL + '[[steps]]\ntool = "Read"\npath = "a.txt"\n', "steps.1", "repeats step 1"),
        (
            MINIMAL + '[[steps]]\ntool = "Bash"\ncommand = "a\\nb"\n',
            "steps.1.Bash.command",
            "one non-empty line",
        ),
        (
            MINIMAL + '[[steps]]\ntool = "Write"\npath = "b"\n',
            "steps.1.Write",
            "exactly one of content or size",
        ),
        (
            MINIMAL + '[[faults]]\nkind = "overloaded"\nat_step = "nope"\n',
            "faults.0.at_step",
            "no step has id 'nope'",
        ),
        (MINIMAL + '[[faults]]\nkind = "slow_stream"\n', "faults.0", "tokens_per_second"),
        (MINIMAL.replace('name = "mini"', 'name = "Bad Name"'), "name", "pattern"),
        (MINIMAL.replace('final_answer = "Done."', ""), "final_answer", "Field required"),
    ],
)
def test_a_bad_file_names_the_file_and_the_field(
    tmp_path: Path, text: str, field: str, detail: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ScenarioError) as raised:
        load_scenario(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: ")
    assert f"{field}:" in message or f"{field} " in message
    assert detail in message


def test_unparseable_toml_names_the_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "name = \n")
    with pytest.raises(ScenarioError, match=rf"^{path}: not valid TOML: .*line 1"):
        load_scenario(path)


def test_an_unknown_name_lists_the_shipped_scenarios() -> None:
    with pytest.raises(ScenarioError, match=r"no shipped scenario by that name.*quickstart"):
        load_scenario("no-such-scenario")


def test_generated_content_is_exact_and_deterministic() -> None:
    for kind in ("python", "text", "log"):
        first = generate_content("src/a.py", 5000, kind)
        assert len(first.encode()) == 5000
        assert first.endswith("\n")
        assert first == generate_content("src/a.py", 5000, kind)
        assert max(len(line) for line in first.splitlines()) < 100
    assert generate_content("a", 5000) != generate_content("b", 5000)
    assert "VERSION = 1" in generate_content("src/a.py", 500, "python")


def test_materialize_workspace_writes_every_file_at_its_size(tmp_path: Path) -> None:
    scenario = load_scenario("soft-zone-reader")
    written = materialize_workspace(scenario, tmp_path / "ws")
    assert len(written) == 12
    assert all(path.stat().st_size == 72_000 for path in written)
    assert (tmp_path / "ws/src/big/module_07.py").read_text().startswith('"""src/big/module_07.py')


def test_tools_lists_what_the_cli_must_offer() -> None:
    assert load_scenario("quickstart").tools == ["Read", "Bash", "Grep", "Glob", "Edit", "Write"]
    assert load_scenario("soft-zone-reader").tools == ["Read", "Glob", "Write"]


BRACES = """
name = "braces"
task = "Fix config.py"
goal = "Fix config.py"
final_answer = "Done."

[[workspace.files]]
path = "config.py"
content = "SETTINGS = {\\"a\\": 1}\\ndef f():\\n    return {k: v for k, v in SETTINGS.items()}\\n"

[[steps]]
tool = "Read"
path = "config.py"

[[steps]]
tool = "Edit"
path = "config.py"
old = "{\\"a\\": 1}"
new = "{\\"a\\": 2, \\"b\\": {}}"

[[steps]]
tool = "Write"
path = "out_{i}.json"
content = "{\\"n\\": {i}, \\"padded\\": \\"{i:03d}\\", \\"x\\": {}}\\n"
count = 2
"""


def test_braces_in_file_content_are_literal_and_only_i_is_filled_in(tmp_path: Path) -> None:
    path = tmp_path / "braces.toml"
    path.write_text(BRACES)
    scenario = load_scenario(path)
    materialize_workspace(scenario, tmp_path / "ws")
    assert (tmp_path / "ws" / "config.py").read_text() == (
        'SETTINGS = {"a": 1}\ndef f():\n    return {k: v for k, v in SETTINGS.items()}\n'
    )
    edit, first, second = [step for step in scenario.plan() if step.tool != "Read"]
    assert dict(edit.params) == {"old": '{"a": 1}', "new": '{"a": 2, "b": {}}'}
    assert dict(first.params)["content"] == '{"n": 1, "padded": "001", "x": {}}\n'
    assert dict(second.params)["content"] == '{"n": 2, "padded": "002", "x": {}}\n'


def test_a_bad_i_format_in_content_is_a_scenario_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(BRACES.replace("{i:03d}", "{i:zz}"))
    with pytest.raises(ScenarioError, match=r"steps\.2\.Write\.content: .*\{i:zz\}"):
        load_scenario(path)
