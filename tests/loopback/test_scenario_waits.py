"""Scenario files: facts from a template, and the operator's waits in simulated time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mala_tui.loopback import Scenario, ScenarioError, load_scenario


def scenario(**extra: Any) -> Scenario:
    data: dict[str, Any] = {
        "name": "waits-test",
        "task": "Read a spec and the modules, ask to run a command.",
        "final_answer": "Done.",
        "time_scale": 60,
        "workspace": {
            "files": [
                {"path": "SPEC.md", "size": 4000},
                {"path": "m{i}.py", "count": 3, "size": 2000, "kind": "python"},
            ]
        },
        "facts": [{"id": "rule-{i}", "path": "SPEC.md", "text": "RULE {i}: keep module {i} pure"}],
        "steps": [
            {"tool": "Read", "path": "SPEC.md"},
            {"tool": "Read", "path": "m{i}.py", "count": 3, "needs": ["rule-{i}"]},
            {"tool": "Bash", "command": "sh -c 'wc -l m1.py'", "id": "count"},
            {"tool": "Bash", "command": "cat m2.py", "id": "show"},
        ],
    }
    data["facts"][0]["count"] = 3
    data.update(extra)
    return Scenario.model_validate(data)


def test_a_fact_template_makes_one_fact_a_number_each_in_its_file() -> None:
    made = scenario()
    assert [fact.id for fact in made.fact_list] == ["rule-1", "rule-2", "rule-3"]
    assert all(fact.source.id == "s001" for fact in made.fact_list)
    spec = dict(made.workspace_files())["SPEC.md"]
    for number in (1, 2, 3):
        assert f"RULE {number}: keep module {number} pure\n" in spec
    assert [step.needs for step in made.plan()[1:4]] == [("rule-1",), ("rule-2",), ("rule-3",)]


def test_a_permission_wait_takes_bash_out_of_the_allowed_tools_and_is_found_by_command() -> None:
    waits = [
        {"kind": "permission", "step": "count", "minutes": 6},
        {"kind": "pause", "step": "s002", "minutes": 7.5},
    ]
    made = scenario(waits=waits)
    assert made.tools == ["Read", "Bash"]
    assert made.allowed_tools == ["Read"]
    wait = made.permission_wait("Bash", {"command": "sh -c 'wc -l m1.py'"})
    assert wait is not None and wait.seconds == 360
    assert made.permission_wait("Bash", {"command": "cat m2.py"}) is None
    assert made.permission_wait("Read", {"file_path": "m1.py"}) is None
    pause = made.wait_at("s002")
    assert pause is not None and pause.kind == "pause" and pause.seconds == 450
    assert scenario().allowed_tools == ["Read", "Bash"]


@pytest.mark.parametrize(
    ("waits", "message"),
    [
        ([{"kind": "pause", "step": "nope", "minutes": 1}], "waits.0.step: no step has id 'nope'"),
        (
            [{"kind": "permission", "step": "s001", "minutes": 1}],
            "a permission wait needs a Bash step, not a Read one",
        ),
        ([{"kind": "pause", "step": "s001", "minutes": 0}], "greater than 0"),
        ([{"kind": "nap", "step": "s001", "minutes": 1}], "waits.0.kind"),
        (
            [
                {"kind": "pause", "step": "s001", "minutes": 1},
                {"kind": "pause", "step": "s001", "minutes": 2},
            ],
            "one wait a step",
        ),
    ],
)
def test_bad_waits_are_refused_naming_what_is_wrong(
    waits: list[dict[str, Any]], message: str, tmp_path: Path
) -> None:
    path = tmp_path / "bad.json"
    data = scenario().model_dump(exclude_unset=True)
    data["waits"] = waits
    path.write_text(json.dumps(data))
    with pytest.raises(ScenarioError, match=r"bad\.json") as raised:
        load_scenario(path)
    assert message in str(raised.value)


def test_a_bad_fact_template_is_refused() -> None:
    with pytest.raises(ValueError, match="a fact id is letters"):
        scenario(facts=[{"id": "rule {i}", "path": "SPEC.md", "text": "RULE {i}: a rule"}])
    with pytest.raises(ValueError, match=r"only \{i\} is available"):
        scenario(facts=[{"id": "rule-{n}", "path": "SPEC.md", "text": "RULE: a rule here"}])
