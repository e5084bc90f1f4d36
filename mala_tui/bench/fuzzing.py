"""The fault suite's fuzzing: the property tests of every parser of outside input, run long.

Run from a checkout (the tests are not installed) at 5,000 examples each, through
hypothesis' "long" profile; its statistics are summed into a table.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

#: The property tests that fuzz every parser of outside input (run from a checkout).
FUZZ_TESTS = (
    "tests/faults/test_fuzz.py",
    "tests/core/test_checkpoint.py",
    "tests/core/test_usage.py",
    "tests/core/test_masking.py",
    "tests/core/test_transcript.py",
    "tests/loopback/test_tokens.py",
)
_TEST_HEADER = re.compile(r"^tests/\S+::(\S+):$", re.MULTILINE)
_PHASE_COUNTS = re.compile(r"- (\d+) passing, (\d+) failing")


def fuzz_counts(statistics: str) -> list[tuple[str, int, int]]:
    """(test, passing, failing) summed over the phases of hypothesis' statistics output."""
    headers = list(_TEST_HEADER.finditer(statistics))
    counts = []
    for index, header in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(statistics)
        phases = _PHASE_COUNTS.findall(statistics[header.end() : end])
        counts.append(
            (header.group(1), sum(int(p) for p, _ in phases), sum(int(f) for _, f in phases))
        )
    return counts


def run_fuzz(checkout: Path) -> tuple[str, bool]:
    """The fuzz tests at 5,000 examples each (hypothesis profile "long"); a table, and ok."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--hypothesis-show-statistics",
            *FUZZ_TESTS,
        ],
        cwd=checkout,
        env=dict(os.environ, HYPOTHESIS_PROFILE="long"),
        capture_output=True,
        text=True,
        check=False,
    )
    rows = ["| fuzzed | examples | crashes or losses |", "| --- | ---: | ---: |"]
    for test, passing, failing in fuzz_counts(done.stdout):
        rows.append(f"| {test} | {passing} | {failing} |")
    if done.returncode != 0:
        rows.append(f"\n{done.stdout[-3000:]}")
    return "\n".join(rows), done.returncode == 0
