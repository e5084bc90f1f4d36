"""Checkpoint extraction (tags, fences, nesting, repeats, none, empty, huge), sections, harness."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mala_tui.core.checkpoint import (
    SECTION_TITLES,
    Checkpoint,
    CheckpointError,
    CheckpointOrigin,
    checkpoint_for_prompt,
    extract_checkpoint,
    harness_checkpoint,
    section_changes,
    split_sections,
)
from mala_tui.core.transcript import Message, Transcript
from tests.support.factories import call, result, say

WELL_FORMED = """## Goal
Fix the parser.

## Completed Work
- Edit src/parser.py: handle empty input

## Remaining Tasks
1. Run the tests

## Do Not Redo
- Read src/parser.py

## Key Decisions
- Keep the public API."""


def test_tagged_block() -> None:
    checkpoint = extract_checkpoint(f"Sure.\n<checkpoint>\n{WELL_FORMED}\n</checkpoint>\nDone.")
    assert checkpoint == Checkpoint(WELL_FORMED, CheckpointOrigin.TAGGED)
    assert list(checkpoint.sections) == list(SECTION_TITLES)
    assert checkpoint.sections["Remaining Tasks"] == "1. Run the tests"


def test_block_inside_a_code_fence() -> None:
    checkpoint = extract_checkpoint(f"```xml\n<checkpoint>\n{WELL_FORMED}\n</checkpoint>\n```")
    assert checkpoint.text == WELL_FORMED
    assert checkpoint.origin is CheckpointOrigin.FENCED


def test_fence_inside_the_block_is_unwrapped() -> None:
    checkpoint = extract_checkpoint(f"<checkpoint>\n```markdown\n{WELL_FORMED}\n```\n</checkpoint>")
    assert checkpoint.text == WELL_FORMED
    assert checkpoint.origin is CheckpointOrigin.TAGGED


def test_inner_code_fences_are_kept() -> None:
    body = "## Goal\nX\n```python\nprint(1)\n```\n## Key Decisions\nY"
    assert extract_checkpoint(f"<checkpoint>{body}</checkpoint>").text == body


def test_repeated_blocks_take_the_last() -> None:
    text = "<checkpoint>draft one</checkpoint> then <checkpoint>final two</checkpoint>"
    assert extract_checkpoint(text).text == "final two"


def test_nested_tags_take_the_outer_block_without_inner_tags() -> None:
    text = "<checkpoint>outer <checkpoint>inner</checkpoint> tail</checkpoint>"
    assert extract_checkpoint(text).text == "outer inner tail"


def test_unclosed_block_runs_to_the_end() -> None:
    assert (
        extract_checkpoint("intro <checkpoint>## Goal\ncut off mid-way").text
        == "## Goal\ncut off mid-way"
    )


def test_closing_tag_alone_takes_what_precedes_it() -> None:
    assert extract_checkpoint("## Goal\nG\n</checkpoint>").text == "## Goal\nG"


def test_tags_with_attributes_and_any_case() -> None:
    assert extract_checkpoint('<Checkpoint version="2">body</CHECKPOINT>').text == "body"


def test_no_tags_falls_back_to_the_whole_answer() -> None:
    checkpoint = extract_checkpoint(f"\n{WELL_FORMED}\n")
    assert checkpoint == Checkpoint(WELL_FORMED, CheckpointOrigin.UNTAGGED)


def test_no_tags_but_fenced_unwraps_the_fence() -> None:
    assert extract_checkpoint(f"```\n{WELL_FORMED}\n```").text == WELL_FORMED


@pytest.mark.parametrize(
    "answer", ["", "   \n", "<checkpoint></checkpoint>", "<checkpoint>\n```\n```\n</checkpoint>"]
)
def test_empty_is_an_error(answer: str) -> None:
    with pytest.raises(CheckpointError, match="empty"):
        extract_checkpoint(answer)


def test_megabytes_are_handled_in_linear_time() -> None:
    filler = "word " * 400_000  # 2 MB
    started = time.perf_counter()
    checkpoint = extract_checkpoint(f"{filler}<checkpoint>{filler}## Goal\nG</checkpoint>{filler}")
    elapsed = time.perf_counter() - started
    assert checkpoint.text.endswith("## Goal\nG")
    # Generous bound: a quadratic scan of 6 MB would take minutes, not seconds.
    assert elapsed < 5


def test_many_unclosed_tags_do_not_go_quadratic() -> None:
    text = "<checkpoint>" * 50_000 + "end"
    assert extract_checkpoint(text).text == "end"


def test_sections_accept_other_heading_styles() -> None:
    text = "Preface\n**Goal**\nG\nCompleted work:\nC\n### do not redo\nD\nKey Decisions\nK"
    assert split_sections(text) == {
        "Preamble": "Preface",
        "Goal": "G",
        "Completed Work": "C",
        "Do Not Redo": "D",
        "Key Decisions": "K",
    }


def test_a_repeated_section_keeps_both_parts() -> None:
    assert split_sections("## Goal\nA\n## Goal\nB")["Goal"] == "A\n\nB"


def test_section_changes() -> None:
    before = split_sections("## Goal\nG\n## Completed Work\nA")
    after = split_sections("## Goal\nG\n## Completed Work\nA, B\n## Key Decisions\nK")
    assert section_changes(before, after) == {
        "Goal": "same",
        "Completed Work": "changed",
        "Key Decisions": "added",
    }


def test_checkpoint_for_prompt_is_bounded_and_says_so() -> None:
    checkpoint = Checkpoint("a" * 1000, CheckpointOrigin.TAGGED)
    assert checkpoint_for_prompt(checkpoint, 2000) == "a" * 1000
    shortened = checkpoint_for_prompt(checkpoint, 100)
    assert shortened.startswith("a" * 100)
    assert shortened.endswith("[checkpoint shortened: 900 characters left out]")


def test_harness_checkpoint_from_a_transcript() -> None:
    transcript = Transcript(
        [
            Message.user_text("Add a --verbose flag to cli.py"),
            call("r1", "Read", file_path="/ws/cli.py"),
            result("r1", "def main(): ..."),
            call("e1", "Edit", file_path="/ws/cli.py", old_string="a", new_string="b"),
            result("e1", "updated"),
            call("b1", "Bash", command="pytest -q"),
            result("b1", "Exit code 1\nFAILED", is_error=True),
            say("The test fails on the flag name; renaming it."),
            call("w1", "Write", file_path="/ws/NOTES.md", content="x"),
        ]
    )
    checkpoint = harness_checkpoint(transcript, reason="the prompt is too long", carryover_turns=2)
    assert checkpoint.harness_made
    sections = checkpoint.sections
    assert (
        sections["Preamble"] == "(Written by mala-tui, not by the agent: the prompt is too long.)"
    )
    assert sections["Goal"] == "Add a --verbose flag to cli.py"
    assert sections["Completed Work"].splitlines()[:3] == [
        "- Read /ws/cli.py",
        "- Edit /ws/cli.py",
        "- Bash pytest -q (failed)",
    ]
    assert "Write" not in sections["Completed Work"]  # no result yet: not done
    assert sections["Do Not Redo"] == "- /ws/cli.py"
    assert "renaming it" in sections["Key Decisions"]


def test_harness_checkpoint_keeps_the_task_and_what_earlier_checkpoints_listed() -> None:
    previous = Checkpoint(
        "## Goal\nG\n## Completed Work\n- Read /ws/a.py\n## Do Not Redo\n- /ws/b.py",
        CheckpointOrigin.TAGGED,
    )
    transcript = Transcript(
        [
            Message.user_text("CONTINUING FROM A PREVIOUS SESSION ..."),
            call("e", "Edit", file_path="/ws/c.py"),
            result("e", "ok"),
        ]
    )
    sections = harness_checkpoint(
        transcript, reason="r", carryover_turns=1, goal="The task.", previous=previous
    ).sections
    assert sections["Goal"] == "The task."
    assert sections["Completed Work"].splitlines() == ["- Read /ws/a.py", "- Edit /ws/c.py"]
    assert sections["Do Not Redo"].splitlines() == ["- /ws/b.py", "- /ws/c.py"]


@given(st.text(max_size=400))
def test_extraction_never_crashes_and_never_returns_tags(answer: str) -> None:
    try:
        checkpoint = extract_checkpoint(answer)
    except CheckpointError:
        return
    assert checkpoint.text.strip()
    assert "<checkpoint>" not in checkpoint.text.lower()
    assert "</checkpoint>" not in checkpoint.text.lower()


@given(
    st.text(alphabet=st.characters(blacklist_characters="<>`"), min_size=1, max_size=200).filter(
        str.strip
    )
)
def test_a_wrapped_body_comes_back_unchanged(body: str) -> None:
    for wrapped in (
        f"<checkpoint>{body}</checkpoint>",
        f"```\n<checkpoint>\n{body}\n</checkpoint>\n```",
    ):
        assert extract_checkpoint(wrapped).text == body.strip()
