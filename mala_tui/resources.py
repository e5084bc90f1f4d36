"""Where the shipped prompts/ and themes/ folders are, installed or not."""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Literal

ResourceFolder = Literal["prompts", "themes"]


def shipped_folder(name: ResourceFolder) -> Traversable:
    """The folder as shipped with the package.

    A wheel carries `prompts/` and `themes/` inside `mala_tui/` (pyproject's
    force-include). An editable install or a plain checkout keeps them at the
    top of the repository, one level above the package, where the layout puts them.
    """
    inside = resources.files("mala_tui").joinpath(name)
    if inside.is_dir():
        return inside
    checkout = Path(__file__).resolve().parent.parent / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(
        f"mala-tui's {name}/ folder is missing: looked in {inside} and {checkout}; "
        "reinstall the package"
    )
