"""The wheel carries prompts/ and themes/, and an installed copy finds them inside itself."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_wheel_ships_prompts_and_themes_and_finds_them(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("mala_tui-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped_prompts = {p.name for p in (ROOT / "prompts").glob("*.md")}
    shipped_themes = {p.name for p in (ROOT / "themes").glob("*.toml")}
    assert {f"mala_tui/prompts/{n}" for n in shipped_prompts} <= names
    assert {f"mala_tui/themes/{n}" for n in shipped_themes} <= names
    assert "mala_tui/core/manager.py" in names
    # The web console's page templates ship beside its code.
    assert "mala_tui/web/templates/app_index.html" in names
    assert "mala_tui/web/templates/picker.html" in names
    assert not any(name.startswith(("tests/", "prompts/", "themes/")) for name in names)

    unpacked = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(unpacked)
    probe = (
        "import mala_tui, mala_tui.resources as r, mala_tui.prompt_files as p;"
        "print(mala_tui.__file__); print(r.shipped_folder('prompts')); print(r.shipped_folder('themes'));"
        "p.load_prompts()"
    )
    env = dict(os.environ, PYTHONPATH=str(unpacked))
    out = subprocess.run(
        [sys.executable, "-c", probe],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    package_file, prompts_dir, themes_dir = out.stdout.split()
    assert Path(package_file).is_relative_to(unpacked)
    assert Path(prompts_dir) == unpacked / "mala_tui" / "prompts"
    assert Path(themes_dir) == unpacked / "mala_tui" / "themes"


def test_checkout_finds_the_top_level_folders() -> None:
    from mala_tui.resources import shipped_folder

    assert Path(str(shipped_folder("prompts"))) == ROOT / "prompts"
    assert Path(str(shipped_folder("themes"))) == ROOT / "themes"
