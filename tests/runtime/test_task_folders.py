"""Where each task's agent works: its own `cwd` (relative to the tasks file), else `--cwd`,
else the tasks file's folder; tasks on the command line work in `--cwd`, else here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mala_tui.runtime.run.task_plans import TaskFileError, TaskPlan, plan_tasks

TASKS = """
[[task]]
name = "own"
task = "works in its own folder"
cwd = "own-folder"

[[task]]
name = "plain"
task = "names no folder"
"""


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """A tasks file in tasks/ (with tasks/own-folder), and a project folder elsewhere."""
    (tmp_path / "tasks" / "own-folder").mkdir(parents=True)
    (tmp_path / "project").mkdir()
    tasks = tmp_path / "tasks" / "tasks.toml"
    tasks.write_text(TASKS)
    return tasks, tmp_path / "project"


def folders(plans: list[TaskPlan]) -> dict[str, Path]:
    return {plan.name: plan.cwd for plan in plans}


def test_a_task_without_a_folder_works_in_cwd_when_given(layout: tuple[Path, Path]) -> None:
    tasks, project = layout
    assert folders(plan_tasks([], tasks, project)) == {
        "own": tasks.parent / "own-folder",
        "plain": project,
    }


def test_without_cwd_a_task_works_in_its_files_folder(layout: tuple[Path, Path]) -> None:
    tasks, _ = layout
    assert folders(plan_tasks([], tasks, None)) == {
        "own": tasks.parent / "own-folder",
        "plain": tasks.parent,
    }


def test_a_relative_cwd_is_the_callers_not_the_files(
    layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks, project = layout
    monkeypatch.chdir(project.parent)
    assert folders(plan_tasks([], tasks, Path("project")))["plain"] == project


def test_command_line_tasks_work_in_cwd_else_here(
    layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks, project = layout
    monkeypatch.chdir(tasks.parent)
    assert folders(plan_tasks(["a task"], None, project)) == {"task-1": project}
    assert folders(plan_tasks(["a task"], None, None)) == {"task-1": Path(os.getcwd())}
    both = folders(plan_tasks(["a task"], tasks, project))
    assert both == {"task-1": project, "own": tasks.parent / "own-folder", "plain": project}


def test_a_cwd_that_is_not_a_folder_is_refused_with_a_tasks_file_too(
    layout: tuple[Path, Path],
) -> None:
    tasks, project = layout
    with pytest.raises(TaskFileError, match=r"--cwd: .* is not a folder"):
        plan_tasks([], tasks, project / "missing")
