"""Theme files: validated, turned into Textual themes, broken ones reported together."""

from __future__ import annotations

from pathlib import Path

import pytest

from mala_tui.config_loading import user_config_dir
from mala_tui.resources import shipped_folder
from mala_tui.ui.themes import OWN_VARIABLES, load_theme_file, load_themes
from mala_tui.ui.widgets.session_card import SessionCard

from .helpers import make_app, notifications

GOOD = 'name = "{name}"\nprimary = "#336699"\n[variables]\ngauge-soft = "#aa8800"\n'


def test_the_shipped_themes_load_and_set_every_own_token() -> None:
    loaded = load_themes([shipped_folder("themes")])
    assert loaded.errors == []
    assert set(loaded.themes) >= {"mala-dark", "mala-light", "mala-contrast"}
    for theme in loaded.themes.values():
        assert set(OWN_VARIABLES) <= set(theme.variables), theme.name


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        (
            "name = 'x'\nprimary = 'not a colour'\n",
            "primary: Value error, 'not a colour' is not a colour",
        ),
        ("primary = '#fff'\n", "name: Field required"),
        (
            "name = 'x'\nprimary = '#fff'\nsparkle = true\n",
            "sparkle: Extra inputs are not permitted",
        ),
        ("name = 'Bad Name'\nprimary = '#fff'\n", "name: String should match pattern"),
        (
            "name = 'x'\nprimary = '#fff'\n[variables]\ngauge-soft = 'nope'\n",
            "variables.gauge-soft",
        ),
        ("name = 'x\nprimary", "not valid TOML"),
    ],
)
def test_a_broken_theme_says_which_field_and_why(text: str, complaint: str) -> None:
    with pytest.raises(ValueError) as caught:
        load_theme_file(text)
    assert complaint in str(caught.value)


def test_user_themes_load_and_override_shipped_ones(tmp_path: Path) -> None:
    user = tmp_path / "themes"
    user.mkdir()
    (user / "mine.toml").write_text(GOOD.format(name="mine"))
    (user / "dark.toml").write_text(GOOD.format(name="mala-dark"))
    loaded = load_themes([shipped_folder("themes"), user])
    assert loaded.errors == []
    assert loaded.themes["mine"].primary == "#336699"
    assert loaded.themes["mala-dark"].primary == "#336699"


async def test_every_broken_file_is_named_in_one_notification_and_the_app_runs() -> None:
    folder = user_config_dir() / "themes"
    folder.mkdir(parents=True)
    (folder / "one.toml").write_text("name = 'one'\nprimary = 'purple-ish'\n")
    (folder / "two.toml").write_text("this is not toml")
    (folder / "fine.toml").write_text(GOOD.format(name="fine"))
    app = make_app(theme="fine")
    async with app.run_test(notifications=True) as pilot:
        await pilot.pause()
        theme_notes = [n for n in notifications(app) if n.startswith("Themes:")]
        assert len(theme_notes) == 1
        assert "2 theme files could not be loaded" in theme_notes[0]
        assert "one.toml" in theme_notes[0] and "two.toml" in theme_notes[0]
        assert app.theme == "fine"
        assert app.screen.query(SessionCard)


async def test_an_unknown_theme_falls_back_with_a_warning() -> None:
    app = make_app(theme="no-such-theme")
    async with app.run_test(notifications=True) as pilot:
        await pilot.pause()
        assert app.theme == "mala-dark"
        assert any("no-such-theme" in note for note in notifications(app))


async def test_switching_theme_at_run_time_recolours_the_cards() -> None:
    app = make_app(theme="mala-dark")
    async with app.run_test() as pilot:
        await pilot.pause()
        card = next(iter(app.screen.query(SessionCard)))
        dark = card._styles()["fill"]
        app.theme = "mala-light"
        await pilot.pause()
        assert card._styles()["fill"] != dark
        # Textual's own themes lack mala-tui's tokens: the app derives them, the CSS still parses.
        app.theme = "nord"
        await pilot.pause()
        assert card._styles()["fill"].color is not None
