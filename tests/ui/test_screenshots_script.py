"""The screenshot script renders the real app's screens to SVG files."""

from __future__ import annotations

from pathlib import Path

from mala_tui.dev.screenshots import render


async def test_a_screenshot_is_an_svg_of_the_screen(tmp_path: Path) -> None:
    path = await render("approval", "mala-light", tmp_path)
    assert path == tmp_path / "approval-mala-light.svg"
    svg = path.read_text(encoding="utf-8")
    assert svg.startswith("<svg")
    assert "Restart&#160;settings-form&#160;from&#160;checkpoint&#160;#2?" in svg


async def test_the_permission_screenshot_shows_the_request(tmp_path: Path) -> None:
    svg = (await render("permission", "mala-dark", tmp_path)).read_text(encoding="utf-8")
    assert "parser-fix&#160;asks&#160;to&#160;use&#160;Bash" in svg
    assert "Allow&#160;for&#160;this&#160;session" in svg


async def test_the_subagents_screenshot_lists_a_sessions_subagents(tmp_path: Path) -> None:
    path = await render("subagents", "mala-dark", tmp_path)
    assert path == tmp_path / "subagents-mala-dark.svg"
    svg = path.read_text(encoding="utf-8")
    assert "api-docs&#160;·&#160;running" in svg
    assert "Document&#160;the&#160;orders&#160;endpoints" in svg
    assert "cost&#160;(est.)" in svg
