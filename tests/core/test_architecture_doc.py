"""docs/ARCHITECTURE.md cites only what exists: every module path, every dotted module name,
and every class or function it names, in the module it says (or somewhere in the package).

A rename or a move that forgets the page fails here, instead of leaving a newcomer to
look for a file that is gone.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
PACKAGE = REPOSITORY / "mala_tui"
DOC = REPOSITORY / "docs" / "ARCHITECTURE.md"
LAYERS = ("core", "runtime", "ui", "bench", "commands", "loopback", "web", "dev")

CITED = re.compile(r"`([^`\n]+)`")
PATH = re.compile(r"(?:[\w-]+/)*[\w-]+\.py")
DOTTED = re.compile(rf"(?:{'|'.join(LAYERS)})(?:\.\w+)+")
NAME = re.compile(r"[A-Z][A-Za-z0-9]+(?:\.[A-Za-z_]\w*)?")
NAME_THEN_PATH = re.compile(r"`([A-Z]\w*(?:\.\w+)?)` \(`((?:[\w-]+/)*[\w-]+\.py)`")
PATH_THEN_NAME = re.compile(r"`((?:[\w-]+/)*[\w-]+\.py)` \(`([A-Z]\w*(?:\.\w+)?)`\)")

#: Names the page cites that are not the package's: the SDK's messages and hooks, the
#: CLI's tools, the environment, textual-serve's server. Each is what the CLI or a library calls it.
OUTSIDE = {
    "AssistantMessage",
    "ResultMessage",
    "StreamEvent",
    "PostToolUse",
    "PreCompact",
    "PreToolUse",
    "Agent",
    "Task",
    "ScheduleWakeup",
    "CronCreate",
    "TMPDIR",
    "Server",
}


def citations() -> list[str]:
    return CITED.findall(DOC.read_text(encoding="utf-8"))


def module_file(path: str) -> Path | None:
    """A cited module path: under the package, or from the repository's top (tests/...)."""
    for base in (PACKAGE, REPOSITORY):
        if (base / path).is_file():
            return base / path
    return None


@cache
def defined_in(file: Path) -> frozenset[str]:
    """Classes, functions, module and class attributes a module defines (dotted for members)."""
    names: set[str] = set()

    def targets(node: ast.AST) -> list[str]:
        if isinstance(node, ast.Assign):
            return [t.id for t in node.targets if isinstance(t, ast.Name)]
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            return [node.target.id]
        return []

    def set_on_self(method: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
        return [
            target.attr
            for node in ast.walk(method)
            if isinstance(node, ast.Assign | ast.AnnAssign)
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
        ]

    for node in ast.parse(file.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
            if isinstance(node, ast.ClassDef):
                for member in node.body:
                    if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef):
                        names.add(f"{node.name}.{member.name}")
                        names.update(f"{node.name}.{attr}" for attr in set_on_self(member))
                    for target in targets(member):
                        names.add(f"{node.name}.{target}")
        names.update(targets(node))
    return frozenset(names)


@cache
def defined_anywhere() -> frozenset[str]:
    return frozenset().union(*(defined_in(file) for file in PACKAGE.rglob("*.py")))


def test_every_module_path_it_cites_exists() -> None:
    paths = [c for c in citations() if PATH.fullmatch(c)]
    assert len(paths) > 50  # the page is read: a broken pattern would check nothing
    assert [p for p in paths if module_file(p) is None] == []


def test_every_dotted_module_name_it_cites_exists() -> None:
    dotted = [c for c in citations() if DOTTED.fullmatch(c)]
    assert dotted
    missing = []
    for name in dotted:
        parts = name.split(".")
        # The longest prefix that is a module; the rest must be defined in it.
        for cut in range(len(parts), 0, -1):
            file = PACKAGE.joinpath(*parts[:cut]).with_suffix(".py")
            if file.is_file():
                rest = ".".join(parts[cut:])
                if rest and rest not in defined_in(file):
                    missing.append(name)
                break
        else:
            missing.append(name)
    assert missing == []


def test_every_class_or_function_it_names_is_defined() -> None:
    names = {c for c in citations() if NAME.fullmatch(c) and c.split(".")[0] not in OUTSIDE}
    assert len(names) > 40
    assert sorted(n for n in names if n not in defined_anywhere()) == []


def test_a_name_cited_with_its_module_is_defined_there() -> None:
    text = DOC.read_text(encoding="utf-8")
    pairs = NAME_THEN_PATH.findall(text) + [(n, p) for p, n in PATH_THEN_NAME.findall(text)]
    assert len(pairs) > 5
    wrong = []
    for name, path in pairs:
        file = module_file(path)
        if file is None or name not in defined_in(file):
            wrong.append(f"{name} ({path})")
    assert wrong == []
