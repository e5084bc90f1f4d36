"""The core imports nothing of textual, asyncio, the SDK or the rest of mala_tui.

Each module is imported in a fresh interpreter, so a forbidden import anywhere
in its import graph shows up in sys.modules.
"""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import pytest

import mala_tui.core

CORE_MODULES = sorted(
    info.name for info in pkgutil.walk_packages(mala_tui.core.__path__, "mala_tui.core.")
)
FORBIDDEN_ROOTS = {"textual", "asyncio", "claude_agent_sdk", "rich", "aiohttp", "anyio", "mcp"}

PROBE = """
import importlib, json, sys
importlib.import_module(sys.argv[1])
print(json.dumps(sorted(sys.modules)))
"""


def test_core_has_modules() -> None:
    assert {"mala_tui.core.usage", "mala_tui.core.manager", "mala_tui.core.masking"} <= set(
        CORE_MODULES
    )


@pytest.mark.parametrize("module", CORE_MODULES)
def test_core_module_imports_nothing_forbidden(module: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, module], capture_output=True, text=True, check=True
    ).stdout
    loaded = json.loads(out)
    forbidden = [name for name in loaded if name.split(".")[0] in FORBIDDEN_ROOTS]
    outside = [
        name
        for name in loaded
        if name.startswith("mala_tui.") and not name.startswith("mala_tui.core")
    ]
    assert forbidden == [], f"{module} pulls in {forbidden}"
    assert outside == [], f"{module} imports the rest of the package: {outside}"
