"""What fills the window: parts from the transcript, calibrated, adding up to the gauge."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mala_tui.core.breakdown import (
    KnownDigest,
    Share,
    breakdown,
    digest_since_restart,
    masked_since_restart,
)
from mala_tui.core.calibration import Calibration
from mala_tui.core.fold import extend_digest
from mala_tui.core.transcript import Message, Role, TextBlock, ToolCall, Transcript
from mala_tui.core.usage import estimate_tokens
from tests.support.factories import result, sample_session

ROOT = "/ws"


def test_parts_are_calibrated_characters_and_add_up_to_the_gauge() -> None:
    transcript = sample_session()
    measured = 3_000 + round(transcript.characters / 4 * 1.5)
    parts = breakdown(
        transcript,
        measured=measured,
        window=200_000,
        density=1.5,
        overhead=3_000,
        masked_would_cost=9_900,
        root=ROOT,
    )
    assert parts.system_and_tools == 3_000
    assert parts.results_shown == round((8_000 + 2 + 2_000) / 4 * 1.5)
    assert parts.masked_count == 1
    assert 0 < parts.results_masked < 40  # a placeholder, not the 40,000 characters
    assert parts.masked_would_cost == 9_900 + parts.results_masked
    assert abs(parts.unattributed) <= 2  # rounding of four parts
    assert parts.free == 200_000 - measured
    assert sum(p.tokens for p in parts.parts()) == parts.attributed + parts.free


def test_by_tool_and_by_file_largest_first() -> None:
    parts = breakdown(
        sample_session(), measured=10_000, window=200_000, density=1.0, overhead=0, root=ROOT
    )
    tools = {share.label: share for share in parts.by_tool}
    assert parts.by_tool[0].label == "Read"
    assert tools["Read"].count == 2 and tools["Bash"].count == 1
    # A file counts its calls (a Write carries the file's content) and its results.
    files = {share.label: share for share in parts.by_file}
    assert set(files) == {"src/app.py", "NOTES.md", "src/old.py"}
    assert files["NOTES.md"].tokens == round((5 + len("/ws/NOTES.md") + 4_000 + 2) / 4)
    assert files["src/app.py"].tokens > files["NOTES.md"].tokens
    tokens = [share.tokens for share in parts.by_file]
    assert tokens == sorted(tokens, reverse=True)


def test_paths_outside_the_root_stay_whole() -> None:
    transcript = Transcript(
        [Message(Role.ASSISTANT, (ToolCall("r", "Read", {"file_path": "/etc/hosts"}),))]
    )
    parts = breakdown(transcript, measured=10, window=100, density=1.0, overhead=0, root=ROOT)
    assert parts.by_file[0].label == "/etc/hosts"


def test_an_empty_session_is_all_overhead_and_free() -> None:
    parts = breakdown(Transcript(), measured=5_000, window=200_000, density=1.0, overhead=5_000)
    assert (parts.conversation, parts.results_shown, parts.unattributed) == (0, 0, 0)
    assert parts.error_fraction == 0.0 and parts.free == 195_000


DIGEST = extend_digest("", ["- Bash `pytest -q`, exit 1, 3.1 KB, masked"] * 3)


def folded_session() -> Transcript:
    """sample_session with a fold's digest after the task, in the first prompt."""
    messages = list(sample_session().messages)
    messages[0] = Message(Role.USER, (TextBlock("p" * 400), TextBlock(DIGEST)))
    return Transcript(messages)


def test_the_digest_after_the_task_is_its_own_part_not_the_conversations() -> None:
    transcript = folded_session()
    measured = 3_000 + round(transcript.characters / 4 * 1.5)
    parts = breakdown(transcript, measured=measured, window=200_000, density=1.5, overhead=3_000)
    plain = breakdown(
        sample_session(), measured=measured, window=200_000, density=1.5, overhead=3_000
    )
    assert parts.digest == round(len(DIGEST) / 4 * 1.5) and parts.digest_lines == 3
    assert parts.conversation == plain.conversation  # the task alone, as before the fold
    assert abs(parts.unattributed) <= 2
    assert parts.parts()[2] == Share("digest of folded steps", parts.digest, 3)
    assert sum(p.tokens for p in parts.parts()) == parts.attributed + parts.free


def test_a_known_digest_stands_in_only_for_a_transcript_without_one() -> None:
    known = KnownDigest(lines=24, estimate=350)
    without = breakdown(
        sample_session(),
        measured=20_000,
        window=200_000,
        density=1.5,
        overhead=0,
        known_digest=known,
    )
    plain = breakdown(sample_session(), measured=20_000, window=200_000, density=1.5, overhead=0)
    assert (without.digest, without.digest_lines) == (525, 24)  # 350 chars/4 at 1.5x
    assert without.conversation == plain.conversation
    assert without.attributed == plain.attributed + 525
    # The transcript's own digest wins: it is what the calibration measured.
    held = breakdown(
        folded_session(),
        measured=20_000,
        window=200_000,
        density=1.5,
        overhead=0,
        known_digest=known,
    )
    assert (held.digest, held.digest_lines) == (round(len(DIGEST) / 4 * 1.5), 3)
    assert plain.digest == 0 and plain.digest_lines == 0


def test_the_digest_known_is_the_newest_folds_since_the_restart() -> None:
    folds = [(1.0, 4, 60), (2.0, 0, 0), (5.0, 9, 130), (6.0, 0, 0)]
    assert digest_since_restart(folds, restarted_at=None) == KnownDigest(9, 130)
    assert digest_since_restart(folds, restarted_at=3.0) == KnownDigest(9, 130)
    # A restart starts a session without a digest until its first fold.
    assert digest_since_restart(folds, restarted_at=5.5) is None


def test_masked_since_restart_counts_only_the_current_fresh_session() -> None:
    assert masked_since_restart([(1.0, 100), (5.0, 200)], restarted_at=3.0) == 200
    assert masked_since_restart([(1.0, 100), (5.0, 200)], restarted_at=None) == 300


@given(
    density=st.floats(0.5, 3.0),
    overhead=st.integers(2_000, 30_000),
    sizes=st.lists(st.integers(3_000, 30_000), min_size=4, max_size=30),
)
def test_with_the_sessions_own_calibration_the_parts_add_up_within_2_percent(
    density: float, overhead: int, sizes: list[int]
) -> None:
    # The API's count of each call: a fixed overhead plus the transcript at `density`
    # tokens per chars/4 token, as the calibration assumes. Fit it call by call, then
    # break the last call's window down with the fitted line.
    transcript = Transcript([Message.user_text("Fix the bug.")])
    calibration = Calibration()
    measured = 0
    for index, size in enumerate(sizes):
        tool_id = f"t{index}"
        transcript.append(Message(Role.ASSISTANT, (ToolCall(tool_id, "Bash", {"command": "ls"}),)))
        transcript.append(result(tool_id, "y" * size))
        measured = overhead + round(estimate_tokens(transcript.characters) * density)
        calibration.observe(estimate_tokens(transcript.characters), measured)
    fitted = calibration.density
    parts = breakdown(
        transcript,
        measured=measured,
        window=1_000_000,
        density=fitted.ratio,
        overhead=fitted.overhead,
        density_measured=fitted.measured,
    )
    assert fitted.measured  # four calls 750+ tokens apart: enough spread to fit a slope
    assert parts.error_fraction <= 0.02
    assert parts.system_and_tools == fitted.overhead
