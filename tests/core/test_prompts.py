"""Prompt templates: checked at load, the user's copies win, errors name the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from mala_tui.core.prompts import PromptKind, PromptSet, PromptTemplateError, template_fields
from mala_tui.prompt_files import load_prompts


def test_shipped_prompts_load_and_render() -> None:
    prompts = load_prompts()
    text = prompts.render(
        PromptKind.CONTINUATION, checkpoint="CP {x}", carryover="C", continuation_number=2
    )
    assert "CP {x}" in text and "continuation 2" in text
    assert "<checkpoint>" in prompts.render(
        PromptKind.CHECKPOINT_REQUEST, percent=91, tokens_used=1, window=2
    )
    assert (
        "wrap up"
        in prompts.render(
            PromptKind.WIND_DOWN, percent=90, tokens_left=5, tokens_used=1, window=2
        ).lower()
    )


def test_users_copy_overrides_the_shipped_one(tmp_path: Path) -> None:
    (tmp_path / "idle_resume.md").write_text("Keep going on {session_name}!")
    prompts = load_prompts(tmp_path)
    assert prompts.render(PromptKind.IDLE_RESUME, session_name="s1") == "Keep going on s1!"


def test_missing_placeholder_is_an_error_at_load(tmp_path: Path) -> None:
    broken = tmp_path / "continuation.md"
    broken.write_text("Continue please. {carryover}")
    with pytest.raises(PromptTemplateError) as caught:
        load_prompts(tmp_path)
    assert str(caught.value).startswith(f"{broken}: placeholder {{checkpoint}} is missing")


def test_unknown_placeholder_is_an_error_at_load(tmp_path: Path) -> None:
    (tmp_path / "wind_down.md").write_text("Wrap up, {agent_name}.")
    with pytest.raises(
        PromptTemplateError, match=r"unknown placeholder \{agent_name\}; allowed here"
    ):
        load_prompts(tmp_path)


@pytest.mark.parametrize(
    "template", ["{checkpoint", "}", "{checkpoint.x}", "{0}", "{checkpoint!r}", "{checkpoint:>9}"]
)
def test_malformed_placeholders_are_errors(template: str) -> None:
    with pytest.raises(PromptTemplateError, match=r"^t\.md: "):
        template_fields("t.md", template)


def test_literal_braces_are_allowed() -> None:
    assert template_fields("t", 'json like {{"a": 1}} and {checkpoint}') == {"checkpoint"}


def test_a_missing_template_is_named() -> None:
    with pytest.raises(PromptTemplateError, match=r"continuation\.md is missing"):
        PromptSet.checked({PromptKind.CHECKPOINT_REQUEST: ("x", "")})
