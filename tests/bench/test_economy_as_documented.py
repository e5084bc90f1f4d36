"""The economy benchmark run as docs/BENCHMARKS.md writes it, from a checkout's root, masks.

Its default output folder (`economy-results`) is relative: the managed arm's Claude Code
files then live under a relative private home, which the CLI, running in the
scenario's workspace, must still be pointed at absolutely or masking finds nothing.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPOSITORY = Path(__file__).resolve().parents[2]


def documented_command() -> list[str]:
    """The economy command of the docs' Reproduce section, as words."""
    docs = (REPOSITORY / "docs" / "BENCHMARKS.md").read_text(encoding="utf-8")
    found = re.search(r"^python -m mala_tui\.bench economy[^#\n]*", docs, re.MULTILINE)
    assert found, "docs/BENCHMARKS.md no longer gives the economy command"
    return found.group().split()


def copy_of_checkout(target: Path) -> Path:
    """The repository's tracked files, as they are now, as a fresh clone would have them."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPOSITORY, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPOSITORY / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def test_the_documented_economy_command_masks_with_its_relative_default_folder(
    tmp_path: Path,
) -> None:
    checkout = copy_of_checkout(tmp_path / "mala-tui")
    python, *words = documented_command()
    assert "--out" not in words  # the relative default folder is what is exercised
    assert python == "python"
    done = subprocess.run(
        [sys.executable, *words, "--scenario", "code-change", "--arms", "managed"],
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((checkout / "economy-results" / "results.json").read_text())
    for density in ("1x", "2x"):
        managed = results["densities"][density]["code-change"]["arms"]["managed"]
        assert managed["masks"] > 0, managed
    assert results["missed"] == []
