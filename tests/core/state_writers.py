"""Who writes each field of the manager's state: read off the core's source.

A write is an assignment (plain, augmented, to a subscript, or a name in a tuple
of targets) whose target lies in the `ManagerState`, or a call that changes one
of its plain collections in place (`.add`, `.clear`, ...). Paths are followed
through `self._state`, a parameter or local annotated `ManagerState`, and locals
bound to a path (`work = self._state.background`). Replacing a part
(`state.turn = TurnState()`) writes every field of it.

Run it to print the map: `python -m tests.core.state_writers`.
"""

from __future__ import annotations

import ast
import dataclasses
import typing
from collections import defaultdict
from pathlib import Path
from types import UnionType

import mala_tui.core
from mala_tui.core.manager_state import ManagerState

CORE = Path(mala_tui.core.__file__).parent
#: Methods of the builtin collections that change them in place.
MUTATORS = frozenset(
    {"add", "append", "clear", "discard", "extend", "insert", "pop", "remove", "setdefault"}
    | {"update", "popitem", "difference_update", "intersection_update"}
)
Path_ = tuple[str, ...]


def _unwrap(hint: object) -> object:
    """`X | None` as X."""
    if isinstance(hint, UnionType) or typing.get_origin(hint) is typing.Union:
        kinds = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return kinds[0] if len(kinds) == 1 else hint
    return hint


def _is_part(kind: object) -> bool:
    """A dataclass of the state's own (not a value such as Fork): its fields are followed."""
    return (
        isinstance(kind, type)
        and dataclasses.is_dataclass(kind)
        and not kind.__dataclass_params__.frozen  # type: ignore[attr-defined]
    )


def _fields(kind: type) -> dict[str, object]:
    hints = typing.get_type_hints(kind)
    return {item.name: _unwrap(hints[item.name]) for item in dataclasses.fields(kind)}


def state_fields(kind: type = ManagerState, prefix: Path_ = ()) -> dict[Path_, object]:
    """Every leaf field of the state, by path, with its type."""
    leaves: dict[Path_, object] = {}
    for name, hint in _fields(kind).items():
        path = (*prefix, name)
        if _is_part(hint):
            assert isinstance(hint, type)
            leaves.update(state_fields(hint, path))
        else:
            leaves[path] = hint
    return leaves


def part_classes(kind: type = ManagerState, prefix: Path_ = ()) -> dict[str, Path_]:
    """The state's part classes by name, with where each sits in the state."""
    found = {kind.__name__: prefix}
    for name, hint in _fields(kind).items():
        if _is_part(hint):
            assert isinstance(hint, type)
            found.update(part_classes(hint, (*prefix, name)))
    return found


LEAVES = state_fields()
PARTS = part_classes()
STATE_ANNOTATIONS = {"ManagerState"}


def _leaves_under(path: Path_) -> list[Path_]:
    """The leaf fields a write to `path` changes (the field itself, or every field of a part)."""
    for length in range(len(path), 0, -1):
        if path[:length] in LEAVES:
            return [path[:length]]
    return [leaf for leaf in LEAVES if leaf[: len(path)] == path] if path else []


def _is_collection(path: Path_) -> bool:
    kind = typing.get_origin(LEAVES.get(path)) or LEAVES.get(path)
    return kind in (set, dict, list)


class _Writes(ast.NodeVisitor):
    """Collects (leaf path, line) for every write in one module."""

    def __init__(self) -> None:
        self.found: list[tuple[Path_, int]] = []
        self._self_path: Path_ | None = None
        self._aliases: list[dict[str, Path_]] = [{}]

    # -- scopes ----------------------------------------------------------------------------

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        outer, self._self_path = self._self_path, PARTS.get(node.name)
        self.generic_visit(node)
        self._self_path = outer

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        scope: dict[str, Path_] = {}
        arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        for index, arg in enumerate(arguments):
            if index == 0 and arg.arg == "self" and self._self_path is not None:
                scope["self"] = self._self_path
            elif _annotation_name(arg.annotation) in STATE_ANNOTATIONS:
                scope[arg.arg] = ()
        self._aliases.append(scope)
        self.generic_visit(node)
        self._aliases.pop()

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function

    # -- paths -----------------------------------------------------------------------------

    def path_of(self, node: ast.expr) -> Path_ | None:
        """The state path an expression names, or None when it names none."""
        if isinstance(node, ast.Name):
            for scope in reversed(self._aliases):
                if node.id in scope:
                    return scope[node.id]
            return None
        if isinstance(node, ast.Attribute):
            if (
                node.attr == "_state"
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
            ):
                return ()
            base = self.path_of(node.value)
            return None if base is None else (*base, node.attr)
        return None

    def _record(self, path: Path_, line: int) -> None:
        for leaf in _leaves_under(path):
            self.found.append((leaf, line))

    def _target(self, target: ast.expr) -> None:
        if isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:
                self._target(element)
        elif isinstance(target, ast.Starred):
            self._target(target.value)
        elif isinstance(target, ast.Attribute | ast.Subscript):
            path = self.path_of(target.value)
            if path is not None:
                self._record(
                    (*path, target.attr) if isinstance(target, ast.Attribute) else path,
                    target.lineno,
                )

    # -- statements ------------------------------------------------------------------------

    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)
        for target in node.targets:
            self._target(target)
        bound = self.path_of(node.value)
        for target in node.targets:
            if isinstance(target, ast.Name):
                if bound is not None:
                    self._aliases[-1][target.id] = bound
                else:
                    self._aliases[-1].pop(target.id, None)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.generic_visit(node)
        if node.value is not None:
            self._target(node.target)
        if isinstance(node.target, ast.Name):
            bound = None if node.value is None else self.path_of(node.value)
            if _annotation_name(node.annotation) in STATE_ANNOTATIONS:
                bound = ()
            if bound is not None:
                self._aliases[-1][node.target.id] = bound

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.generic_visit(node)
        self._target(node.target)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.generic_visit(node)
        bound = self.path_of(node.value)
        if bound is not None:
            self._aliases[-1][node.target.id] = bound

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        if isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
            path = self.path_of(node.func.value)
            if path is not None and _is_collection(path):
                self._record(path, node.lineno)


def _annotation_name(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def writes_in(source: str) -> list[tuple[Path_, int]]:
    """The state's leaf fields one module's source writes, with the line of each write."""
    visitor = _Writes()
    visitor.visit(ast.parse(source))
    return visitor.found


def writers(root: Path = CORE) -> dict[Path_, dict[str, list[int]]]:
    """Each written leaf field of the state: the core modules writing it, and where."""
    found: dict[Path_, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for path in sorted(root.glob("*.py")):
        for leaf, line in writes_in(path.read_text()):
            found[leaf][path.stem].append(line)
    return {leaf: dict(modules) for leaf, modules in found.items()}


def own_modules(leaf: Path_) -> set[str]:
    """The modules whose writes of `leaf` are the state's own transitions: the state's
    module, and the module of the part the field belongs to."""
    kind: type = ManagerState
    for name in leaf[:-1]:
        hint = _fields(kind)[name]
        assert isinstance(hint, type)
        kind = hint
    return {_stem(ManagerState), _stem(kind)}


def _stem(kind: type) -> str:
    return kind.__module__.rsplit(".", 1)[-1]


def main() -> None:
    table = writers()
    for leaf in sorted(LEAVES):
        modules = table.get(leaf, {})
        where = ", ".join(
            f"{module}:{','.join(map(str, lines))}" for module, lines in sorted(modules.items())
        )
        parts = len(set(modules) - own_modules(leaf))
        print(f"{len(modules)} ({parts} part)  {'.'.join(leaf):32} {where or '-'}")
    many = [leaf for leaf, modules in table.items() if len(modules) > 1]
    shared = [leaf for leaf, modules in table.items() if len(set(modules) - own_modules(leaf)) > 1]
    print(
        f"{len(table)} written fields of {len(LEAVES)}; {len(many)} from two or more modules, "
        f"{len(shared)} from two or more parts"
    )


if __name__ == "__main__":
    main()
