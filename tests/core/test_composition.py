"""Behaviour is composed, not inherited across modules: in `mala_tui.core` and
`mala_tui.runtime` no class takes behaviour from a project class of another module.
Protocols, enums, exceptions and pydantic models are kinds, not behaviour, and are allowed.
A class spread over files by inheritance cannot be read or tested one file at a time."""

from __future__ import annotations

import enum
import importlib
import inspect
import pkgutil

import pydantic
import pytest

PACKAGES = ("mala_tui.core", "mala_tui.runtime")


def project_classes() -> list[type]:
    found = []
    for name in PACKAGES:
        package = importlib.import_module(name)
        for info in pkgutil.walk_packages(package.__path__, f"{name}."):
            module = importlib.import_module(info.name)
            found += [
                value
                for value in vars(module).values()
                if inspect.isclass(value) and value.__module__ == module.__name__
            ]
    return found


def is_a_kind(base: type) -> bool:
    return issubclass(base, enum.Enum | BaseException | pydantic.BaseModel) or bool(
        getattr(base, "_is_protocol", False)
    )


def test_the_packages_have_classes_to_check() -> None:
    modules = {cls.__module__ for cls in project_classes()}
    assert "mala_tui.core.manager" in modules and "mala_tui.runtime.run.supervisor" in modules


@pytest.mark.parametrize("package", PACKAGES)
def test_no_class_inherits_behaviour_from_another_modules_class(package: str) -> None:
    inherited = sorted(
        f"{cls.__module__}.{cls.__qualname__} <- {base.__module__}.{base.__qualname__}"
        for cls in project_classes()
        if cls.__module__.startswith(package)
        for base in cls.__mro__[1:]
        if base.__module__.startswith("mala_tui.")
        and base.__module__ != cls.__module__
        and not is_a_kind(base)
    )
    assert inherited == []
