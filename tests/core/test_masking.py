"""Masking: oldest first, recent ones kept, batch minimum, never twice, placeholders per tool."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mala_tui.core.masking import (
    PLACEHOLDER_PATTERN,
    human_size,
    is_masked,
    maskable,
    placeholder,
    plan_masking,
)
from mala_tui.core.transcript import Message, ToolCall, ToolResult, Transcript
from tests.support.factories import call, reads, result


def test_masks_oldest_first_and_keeps_the_recent_ones() -> None:
    transcript = reads(10, size=4000)
    plan = plan_masking(
        transcript.exchanges(), tokens_to_free=2500, keep_recent=4, min_batch_tokens=0
    )
    assert plan.ids == ("t0000", "t0001", "t0002")  # ~990 tokens each until 2500 is reached
    everything = plan_masking(
        transcript.exchanges(), tokens_to_free=10**9, keep_recent=4, min_batch_tokens=0
    )
    assert everything.ids == tuple(f"t{i:04d}" for i in range(6))


def test_batch_minimum_grows_the_batch() -> None:
    transcript = reads(10, size=4000)
    plan = plan_masking(
        transcript.exchanges(), tokens_to_free=100, keep_recent=0, min_batch_tokens=3000
    )
    assert len(plan.ids) == 4
    assert plan.estimated_tokens >= 3000


def test_nothing_is_masked_below_the_batch_minimum() -> None:
    transcript = reads(3, size=4000)
    plan = plan_masking(
        transcript.exchanges(), tokens_to_free=100, keep_recent=1, min_batch_tokens=8000
    )
    assert not plan
    assert plan.skipped_reason is not None and "8000-token batch minimum" in plan.skipped_reason


def test_never_masks_twice() -> None:
    transcript = reads(6, size=4000)
    first = plan_masking(
        transcript.exchanges(), tokens_to_free=1500, keep_recent=2, min_batch_tokens=0
    )
    transcript.replace_results(dict(first.placeholders))
    second = plan_masking(
        transcript.exchanges(), tokens_to_free=1500, keep_recent=2, min_batch_tokens=0
    )
    assert set(first.ids).isdisjoint(second.ids)
    assert second.ids[0] == f"t{len(first.ids):04d}"


def test_tiny_results_are_not_worth_masking() -> None:
    transcript = reads(6, size=80)
    plan = plan_masking(
        transcript.exchanges(), tokens_to_free=10**6, keep_recent=0, min_batch_tokens=0
    )
    assert not plan


def test_unanswered_calls_are_never_masked() -> None:
    transcript = reads(3, size=4000)
    from tests.support.factories import call

    transcript.append(call("open"))
    plan = plan_masking(
        transcript.exchanges(), tokens_to_free=10**6, keep_recent=0, min_batch_tokens=0
    )
    assert "open" not in plan.ids


def _placeholder(
    name: str, tool_input: dict[str, object], content: str, *, error: bool = False
) -> str:
    return placeholder(ToolCall("x", name, tool_input), ToolResult("x", content, error))


@pytest.mark.parametrize(
    ("name", "tool_input", "content", "error", "expected"),
    [
        (
            "Read",
            {"file_path": "src/app.py"},
            "line\n" * 142,
            False,
            "[Read result masked -- src/app.py, 142 lines]",
        ),
        (
            "Bash",
            {"command": "pytest -q"},
            "." * 3174,
            False,
            "[Bash result masked -- `pytest -q`, exit 0, 3.1 KB]",
        ),
        (
            "Bash",
            {"command": "make"},
            "Exit code 2\nboom",
            True,
            "[Bash result masked -- `make`, exit 2, 16 B]",
        ),
        (
            "Bash",
            {"command": "make"},
            "killed",
            True,
            "[Bash result masked -- `make`, failed, 6 B]",
        ),
        (
            "Grep",
            {"pattern": "TODO"},
            "Found 12 files\na\nb",
            False,
            "[Grep result masked -- 'TODO', 12 matches]",
        ),
        (
            "Grep",
            {"pattern": "x"},
            "a:1:x\nb:2:x\n",
            False,
            "[Grep result masked -- 'x', 2 matches]",
        ),
        (
            "Glob",
            {"pattern": "**/*.py"},
            "a.py\nb.py\nc.py",
            False,
            "[Glob result masked -- '**/*.py', 3 files]",
        ),
        (
            "Glob",
            {"pattern": "*.rs"},
            "No files found",
            False,
            "[Glob result masked -- '*.rs', 0 files]",
        ),
        (
            "Edit",
            {"file_path": "src/app.py"},
            "The file has been updated",
            False,
            "[Edit result masked -- src/app.py]",
        ),
        (
            "Write",
            {"file_path": "notes.md"},
            "File created",
            False,
            "[Write result masked -- notes.md]",
        ),
        ("WebFetch", {"url": "u"}, "z" * 2_500_000, False, "[WebFetch result masked -- 2.4 MB]"),
        (
            "Read",
            {"file_path": "gone.py"},
            "File does not exist.",
            True,
            "[Read result masked -- gone.py, 1 lines, error]",
        ),
    ],
)
def test_placeholders_are_specific_per_tool(
    name: str, tool_input: dict[str, object], content: str, error: bool, expected: str
) -> None:
    text = _placeholder(name, tool_input, content, error=error)
    assert text == expected
    assert is_masked(text)


def test_long_commands_are_cut_in_the_placeholder() -> None:
    text = _placeholder(
        "Bash", {"command": "python -c 'print(1)' " + "x" * 200 + "\nsecond line"}, "ok"
    )
    assert len(text) < 110
    assert "second line" not in text


def test_human_size() -> None:
    assert [human_size(n) for n in (0, 1023, 1024, 3174, 1024 * 1024 * 3)] == [
        "0 B",
        "1023 B",
        "1.0 KB",
        "3.1 KB",
        "3.0 MB",
    ]


@given(
    st.text(max_size=300),
    st.text(max_size=80),
    st.sampled_from(["Read", "Bash", "Grep", "Glob", "Edit", "Other"]),
)
def test_every_placeholder_is_recognised_as_masked(content: str, argument: str, name: str) -> None:
    key = {"Read": "file_path", "Edit": "file_path", "Bash": "command"}.get(name, "pattern")
    text = _placeholder(name, {key: argument}, content)
    assert PLACEHOLDER_PATTERN.match(text)
    assert "\n" not in text


def test_what_was_fetched_again_is_kept_newest_first_within_its_share() -> None:
    transcript = Transcript([Message.user_text("Fix it.")])
    for tool_id, path in (("a", "a.py"), ("b", "b.py"), ("c", "c.py"), ("d", "d.py")):
        transcript.append(call(tool_id, "Read", file_path=path))
        transcript.append(result(tool_id, "x" * 10_000))
    needed = frozenset({("Read", "a.py"), ("Read", "b.py"), ("Read", "c.py")})
    unbounded = {obs.call.id for obs in maskable(transcript.exchanges(), 1, needed=needed)}
    assert unbounded == set()
    # Room for two of them: the newest two stay, the oldest may go.
    bounded = maskable(transcript.exchanges(), 1, needed=needed, needed_chars=25_000)
    assert {obs.call.id for obs in bounded} == {"a"}
