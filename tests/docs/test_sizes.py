"""Sizes a reader can hold: every module, function and class of mala_tui within its bound.

- A module has at most 450 lines, unless it is a pure data table that says so: its
  docstring holds the marker ``DATA_TABLE_MARKER`` followed by why it is longer
  (``A data table, longer than 450 lines: one row a model's price, ...``).
- A function (or method) has at most 80 lines, from its ``def`` to its last line, unless
  its body (after its docstring) is one flat ``match`` statement: a table of cases reads
  as one, however many rows it has.
- A class has at most 320 lines ("about 300": a class a little over is not split for the
  sake of a number, one far over is).

Each bound is checked over the source as it is read (``ast``), so a file that is not valid
Python fails here too. The checks are also run on made-up sources, so a rule that could
no longer fail would be seen.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "mala_tui"

MODULE_LINES = 450
FUNCTION_LINES = 80
CLASS_LINES = 320
DATA_TABLE_MARKER = "A data table, longer than 450 lines:"
"""What a module's docstring says when the module is a pure data table, followed by why."""


@dataclass(frozen=True)
class Offence:
    where: str
    what: str
    lines: int
    bound: int

    def __str__(self) -> str:
        return f"{self.where}: {self.what} has {self.lines} lines (at most {self.bound})"


def says_it_is_a_data_table(tree: ast.Module) -> bool:
    """The module's docstring holds the marker, and a reason after it."""
    docstring = ast.get_docstring(tree) or ""
    _, marker, reason = docstring.partition(DATA_TABLE_MARKER)
    return bool(marker) and bool(reason.strip())


def is_flat_match(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Its body, a docstring aside, is one `match` statement."""
    body = function.body
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        body = body[1:]
    return len(body) == 1 and isinstance(body[0], ast.Match)


def offences(source: str, name: str) -> list[Offence]:
    """Every bound the module `name` (its text: `source`) goes over."""
    tree = ast.parse(source, filename=name)
    found = []
    length = len(source.splitlines())
    if length > MODULE_LINES and not says_it_is_a_data_table(tree):
        found.append(Offence(name, "the module", length, MODULE_LINES))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > FUNCTION_LINES and not is_flat_match(node):
                where = f"{name}:{node.lineno}"
                found.append(Offence(where, f"function {node.name}", lines, FUNCTION_LINES))
        elif isinstance(node, ast.ClassDef):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > CLASS_LINES:
                where = f"{name}:{node.lineno}"
                found.append(Offence(where, f"class {node.name}", lines, CLASS_LINES))
    return found


def test_every_module_function_and_class_of_the_package_is_within_its_bound() -> None:
    found = [
        str(offence)
        for path in sorted(PACKAGE.rglob("*.py"))
        for offence in offences(
            path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE.parent))
        )
    ]
    assert found == [], "too long to hold in one reading:\n" + "\n".join(found)


def _lines(count: int, indent: str = "") -> str:
    return "".join(f"{indent}x_{n} = {n}\n" for n in range(count))


def test_a_module_over_its_bound_is_found_unless_it_says_why_it_is_a_data_table() -> None:
    body = _lines(MODULE_LINES)  # with its docstring: one line over
    assert [o.what for o in offences('"""Rows."""\n' + body, "m.py")] == ["the module"]
    table = f'"""Prices.\n\n{DATA_TABLE_MARKER} one row a model, as the provider lists them.\n"""\n'
    assert offences(table + body, "m.py") == []
    # The marker alone, with no reason after it, is not enough.
    assert offences(f'"""{DATA_TABLE_MARKER}\n"""\n' + body, "m.py") != []


def test_a_long_function_is_found_unless_it_is_one_flat_match() -> None:
    long_function = "def f() -> None:\n" + _lines(FUNCTION_LINES, "    ")
    (offence,) = offences(long_function, "m.py")
    assert (offence.what, offence.lines) == ("function f", FUNCTION_LINES + 1)
    cases = "".join(f"        case {n}:\n            return {n}\n" for n in range(FUNCTION_LINES))
    table = f'def g(x: int) -> int:\n    """A table."""\n    match x:\n{cases}'
    assert offences(table, "m.py") == []
    # A match with anything else beside it is a long function like any other.
    mixed = f"def h(x: int) -> int:\n    y = x\n    match y:\n{cases}"
    assert [o.what for o in offences(mixed, "m.py")] == ["function h"]


def test_a_long_class_is_found() -> None:
    methods = "".join(
        f"    def m{n}(self) -> int:\n        return {n}\n\n" for n in range(CLASS_LINES // 3 + 1)
    )
    (offence,) = offences(f"class C:\n{methods}", "m.py")
    assert offence.what == "class C" and offence.lines > CLASS_LINES
