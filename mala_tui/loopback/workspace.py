"""Generate a scenario's workspace: the files its steps read, grep and edit."""

from __future__ import annotations

from pathlib import Path

from mala_tui.loopback.scenario import Scenario


def materialize_workspace(scenario: Scenario, dest: Path) -> list[Path]:
    """Write the scenario's workspace files under ``dest`` (created if needed).

    Content is deterministic (same scenario, same bytes) and of the sizes the scenario
    gives, so tool outputs and token counts repeat from run to run. Existing files with
    the same names are overwritten; other files are left alone. Returns the paths written.
    """
    dest.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for relative, content in scenario.workspace_files():
        path = dest / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        written.append(path)
    return written
