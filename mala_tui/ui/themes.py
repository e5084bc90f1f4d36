"""Themes as data: TOML files validated with pydantic and turned into Textual themes.

Shipped themes come from the package's `themes/` folder, users' own from
`<config dir>/themes/`; a user file with a shipped theme's name replaces it. A
file that cannot be read or does not validate is reported, with every other
broken file, in one message, and the app runs on with the themes that loaded
(Posting does the same).

Besides Textual's colours a theme may set mala-tui's own tokens in `variables`
(`gauge-normal`, `gauge-soft`, `gauge-hard`, `gauge-mark`); the app derives any it
leaves out from the theme's success, warning, error and foreground colours.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Annotated, Final

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError
from textual.color import Color, ColorParseError
from textual.theme import Theme

from mala_tui.config_loading import user_config_dir
from mala_tui.resources import shipped_folder
from mala_tui.text_files import read_text

OWN_VARIABLES: Final = ("gauge-normal", "gauge-soft", "gauge-hard", "gauge-mark")
"""mala-tui's theme tokens, used by the gauge, the trend line and the context chart."""


def _colour(value: str) -> str:
    try:
        Color.parse(value)
    except ColorParseError as exc:
        raise ValueError(f"{value!r} is not a colour") from exc
    return value


ColourText = Annotated[str, AfterValidator(_colour)]


class ThemeFile(BaseModel):
    """One theme file: Textual's theme fields, each colour checked, own tokens in `variables`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$", max_length=40)
    """How the theme is chosen: in settings (`ui.theme`) and in the command palette."""
    dark: bool = True
    primary: ColourText
    secondary: ColourText | None = None
    accent: ColourText | None = None
    warning: ColourText | None = None
    error: ColourText | None = None
    success: ColourText | None = None
    foreground: ColourText | None = None
    background: ColourText | None = None
    surface: ColourText | None = None
    panel: ColourText | None = None
    boost: ColourText | None = None
    variables: dict[str, ColourText] = Field(default_factory=dict)
    """Textual or mala-tui variables (see OWN_VARIABLES), e.g. `gauge-soft = "#e6b450"`."""

    def to_theme(self) -> Theme:
        return Theme(**self.model_dump(exclude={"variables"}), variables=dict(self.variables))


@dataclass
class ThemeLoad:
    """Themes that loaded, and a line for each file that did not."""

    themes: dict[str, Theme] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def message(self) -> str:
        """One notification's text naming every broken file."""
        count = len(self.errors)
        head = (
            "1 theme file could not be loaded"
            if count == 1
            else f"{count} theme files could not be loaded"
        )
        return head + ":\n" + "\n".join(f"- {error}" for error in self.errors)


def load_theme_file(text: str) -> Theme:
    """Parse and validate one theme file's text.

    Raises:
        ValueError: not TOML, or not a valid theme; the message says which field and why.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"not valid TOML: {exc}") from None
    try:
        return ThemeFile.model_validate(data).to_theme()
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False):
            where = ".".join(str(part) for part in error["loc"]) or "(file)"
            problems.append(f"{where}: {error['msg']}")
        raise ValueError("; ".join(problems)) from None


def _theme_files(folder: Traversable | Path) -> list[Traversable | Path]:
    if not folder.is_dir():
        return []
    return sorted(
        (entry for entry in folder.iterdir() if entry.name.endswith(".toml")),
        key=lambda entry: entry.name,
    )


def load_themes(folders: Iterable[Traversable | Path]) -> ThemeLoad:
    """Every theme in these folders, later folders overriding earlier ones by name."""
    loaded = ThemeLoad()
    for folder in folders:
        for entry in _theme_files(folder):
            try:
                text = read_text(entry) if isinstance(entry, Path) else entry.read_text("utf-8")
                theme = load_theme_file(text)
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                loaded.errors.append(f"{entry}: {exc}")
                continue
            loaded.themes[theme.name] = theme
    return loaded


def theme_folders() -> list[Traversable | Path]:
    """The shipped themes, then the user's own."""
    return [shipped_folder("themes"), user_config_dir() / "themes"]


def own_variable_defaults(colours: dict[str, str]) -> dict[str, str]:
    """mala-tui's tokens for a theme that does not set them (Textual's own themes, say)."""
    return {
        "gauge-normal": colours.get("success", "green"),
        "gauge-soft": colours.get("warning", "yellow"),
        "gauge-hard": colours.get("error", "red"),
        "gauge-mark": colours.get("foreground", "white"),
    }
