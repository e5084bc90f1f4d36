"""The journal: one event a line, private files, no secrets, a reader that survives damage."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.run_view import RunState
from mala_tui.core.transcript import Role
from mala_tui.core.usage import UsageSource
from mala_tui.runtime.journal.writer import (
    JournalError,
    RunJournal,
    find_run,
    list_runs,
    read_events,
)
from mala_tui.runtime.private.redaction import redact, redact_json_line


def journal(data_dir: Path, run_id: str = "20261123-101010-abcd") -> RunJournal:
    return RunJournal.create(data_dir, run_id, {"mode": "test", "tasks": ["t"]})


def numbered(events: list[ev.Event]) -> list[ev.Event]:
    """The events as a journal writes them: numbered from 1."""
    return [e.model_copy(update={"seq": n}) for n, e in enumerate(events, start=1)]


def some_events() -> list[ev.Event]:
    return [
        ev.RunStarted(at=1.0, run_id="r", sessions=("s1",), mode=ev.RunMode.RUN),
        ev.SessionStarted(
            at=1.1,
            session="s1",
            task="t",
            cwd="/ws",
            window=1000,
            soft_threshold=0.7,
            hard_threshold=0.9,
            max_restarts=2,
            require_approval=False,
        ),
        ev.UsageRecorded(
            at=2.0, session="s1", tokens=750, window=1000, source=UsageSource.PER_CALL
        ),
        ev.MaskApplied(
            at=2.5,
            session="s1",
            count=2,
            tool_use_ids=("a", "b"),
            placeholders=("[x]", "[y]"),
            estimated_tokens=200,
            tokens_before=750,
            total_masked=2,
        ),
        ev.UsageRecorded(
            at=3.0, session="s1", tokens=560, window=1000, source=UsageSource.PER_CALL
        ),
        ev.MaskMeasured(at=3.0, session="s1", tokens_before=750, tokens_after=560, reclaimed=190),
        ev.SessionEnded(
            at=4.0, session="s1", status=EndStatus.DONE, reason="finished", masked_total=2
        ),
        ev.RunEnded(at=4.1, run_id="r", ok=True),
    ]


def test_round_trip_and_private_files(tmp_path: Path) -> None:
    j = journal(tmp_path)
    for event in some_events():
        j.write(event)
    path = j.save_checkpoint("s1/../x", 1, "## Goal\nG")
    j.close()
    contents = read_events(j.events_path)
    # Numbered as they are written (a recorder numbers its own; these came straight).
    assert contents.events == numbered(some_events())
    assert contents.skipped == []
    assert path.name.startswith("s1-..-x-") and path.name.endswith("-1.md")  # hashed: renamed
    assert path.parent == j.directory / "checkpoints"
    for file in (j.events_path, j.directory / "run.json", path):
        assert stat.S_IMODE(file.stat().st_mode) == 0o600, file
    for folder in (j.directory, j.directory / "checkpoints", tmp_path / "runs"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


def test_each_event_is_on_disk_as_soon_as_it_is_written(tmp_path: Path) -> None:
    with journal(tmp_path) as j:
        for count, event in enumerate(some_events(), start=1):
            j.write(event)
            assert len(j.events_path.read_text().splitlines()) == count


def test_torn_last_line_is_skipped_and_named(tmp_path: Path) -> None:
    j = journal(tmp_path)
    for event in some_events()[:4]:
        j.write(event)
    j.close()
    full = ev.event_json(some_events()[4])
    with j.events_path.open("a") as handle:
        handle.write(full[: len(full) // 2])
    contents = read_events(j.events_path)
    assert len(contents.events) == 4
    (skipped,) = contents.skipped
    assert skipped.line == 5 and skipped.reason.startswith("torn last line (")


def test_unknown_types_and_bad_lines_are_skipped_with_reasons(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    lines = [
        ev.event_json(some_events()[0]),
        json.dumps({"type": "from_the_future", "at": 1.0}),
        "not json at all",
        json.dumps(
            {
                "type": "usage",
                "at": 2.0,
                "session": "s1",
                "tokens": "many",
                "window": 1,
                "source": "x",
            }
        ),
        json.dumps(["a", "list"]),
        ev.event_json(some_events()[2]),
    ]
    path.write_text("\n".join(lines) + "\n")
    contents = read_events(path)
    assert [type(e) for e in contents.events] == [ev.RunStarted, ev.UsageRecorded]
    assert [(s.line, s.reason.split(":")[0]) for s in contents.skipped] == [
        (2, "unknown event type 'from_the_future'"),
        (3, "not JSON"),
        (4, "usage event"),
        (5, "expected a JSON object, got list"),
    ]
    assert "field tokens" in contents.skipped[2].reason


def test_missing_journal_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(JournalError, match="cannot be read"):
        read_events(tmp_path / "nope.jsonl")


def test_secrets_never_reach_the_files(tmp_path: Path) -> None:
    j = RunJournal.create(
        tmp_path, "r1", {"env": {"ANTHROPIC_API_KEY": "sk-ant-api03-SECRETSECRETSECRET"}}
    )
    j.write(
        ev.MessageRecorded(
            at=1,
            session="s",
            role=Role.USER,
            kind="tool_result",
            excerpt="ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijkl Authorization: Bearer tok123",
        )
    )
    j.save_checkpoint("s", 1, "x-api-key: abc123secret")
    j.close()
    text = "".join(p.read_text() for p in j.directory.rglob("*") if p.is_file())
    for secret in ("SECRETSECRET", "abcdefghijkl", "tok123", "abc123secret"):
        assert secret not in text
    assert "[redacted]" in text


def test_redact_leaves_ordinary_text_alone() -> None:
    assert (
        redact("pytest -q: 3 passed; the key idea is caching")
        == "pytest -q: 3 passed; the key idea is caching"
    )


def test_runs_are_listed_newest_first_and_found_by_prefix(tmp_path: Path) -> None:
    for run_id in ("20261101-000000-aaaa", "20261102-000000-bbbb"):
        j = journal(tmp_path, run_id)
        j.write(ev.RunStarted(at=1.0, run_id=run_id, sessions=("s1", "s2"), mode=ev.RunMode.DEMO))
        j.close()
    runs = list_runs(tmp_path)
    assert [r.run_id for r in runs] == ["20261102-000000-bbbb", "20261101-000000-aaaa"]
    assert runs[0].sessions == ("s1", "s2") and not runs[0].ended
    assert find_run(tmp_path, "latest").name == "20261102-000000-bbbb"
    assert find_run(tmp_path, "20261101").name == "20261101-000000-aaaa"
    with pytest.raises(JournalError, match="matches 2 runs"):
        find_run(tmp_path, "2026110")
    with pytest.raises(JournalError, match="no run 'zzz'"):
        find_run(tmp_path, "zzz")


def test_the_view_rebuilt_from_a_journal_matches_the_live_one(tmp_path: Path) -> None:
    live = RunState()
    j = journal(tmp_path)
    for event in some_events():
        live.apply(event)
        j.write(event)
    j.close()
    replayed = RunState().apply_all(read_events(j.events_path).events)
    assert replayed.sessions["s1"].snapshot() == live.sessions["s1"].snapshot()
    session = replayed.sessions["s1"]
    assert session.masks[0].reclaimed == 190
    assert session.status == "done" and session.masked_total == 2
    assert session.snapshot().zone == "normal" and session.snapshot().tokens == 560


GHP = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
GITHUB_PAT = "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"


def test_github_tokens_are_redacted() -> None:
    text = f"token {GHP} and {GITHUB_PAT}, then ghp_short stays"
    assert redact(text) == "token [redacted] and [redacted], then ghp_short stays"


def test_a_redacted_journal_line_is_still_json() -> None:
    # Text redaction would eat the backslash before the quote and break the line.
    line = json.dumps({"excerpt": 'curl -H "Authorization: Bearer tok\\"x" ' + GHP})
    cleaned = redact_json_line(line)
    assert json.loads(cleaned) == {"excerpt": 'curl -H "Authorization: [redacted]\\"x" [redacted]'}
    assert redact_json_line('{"a": "nothing secret"}') == '{"a": "nothing secret"}'


@pytest.mark.parametrize("names", [("h/1", "h-1"), ("a b", "a-b", "a?b"), ("..", "session")])
def test_names_that_clean_to_the_same_file_keep_separate_checkpoints(
    tmp_path: Path, names: tuple[str, ...]
) -> None:
    with journal(tmp_path) as j:
        paths = [j.save_checkpoint(name, 1, f"checkpoint of {name}") for name in names]
    assert len(set(paths)) == len(names)
    assert [p.read_text() for p in paths] == [f"checkpoint of {name}\n" for name in names]


@pytest.mark.parametrize("kind", [["x"], {}, None, 1, 2.5, True])
def test_a_type_that_is_not_a_string_is_skipped_not_a_crash(tmp_path: Path, kind: object) -> None:
    j = journal(tmp_path)
    for event in some_events():
        j.write(event)
    j.close()
    with j.events_path.open("a") as raw:
        raw.write(json.dumps({"type": kind, "at": 1.0}) + "\n")
    contents = read_events(j.events_path)
    assert contents.events == numbered(some_events())
    assert [s.reason for s in contents.skipped] == [f"`type` is not a string: {json.dumps(kind)}"]
    (listed,) = list_runs(tmp_path)
    assert listed.ended and listed.ok


def test_a_line_nested_too_deeply_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text("[" * 100_000 + "]" * 100_000 + "\n" + ev.event_json(some_events()[0]) + "\n")
    contents = read_events(path)
    assert contents.events == some_events()[:1]
    assert contents.skipped[0].reason == "not JSON this reader accepts: nested too deeply"


def test_events_are_numbered_in_order_and_a_reopened_journal_numbers_on(tmp_path: Path) -> None:
    from mala_tui.runtime.run.recorder import RunRecorder

    written = journal(tmp_path)
    recorder = RunRecorder(journal=written, state=RunState(), on_storage_failure=print)
    for event in some_events():
        recorder.record(event)
    written.close()
    path = written.events_path
    assert [e.seq for e in read_events(path).events] == list(range(1, len(some_events()) + 1))
    # A torn last line (a kill -9 mid-write) holds no number anyone relies on.
    with path.open("a") as file:
        file.write('{"at": 9.0, "seq": 99, "type": "run_en')
    again = RunJournal.reopen(written.directory)
    assert again.last_seq == len(some_events())
    recorder = RunRecorder(journal=again, state=RunState(), on_storage_failure=print)
    recorder.record(ev.RunEnded(at=3.0, run_id="r", ok=True))
    again.close()
    assert read_events(path).events[-1].seq == len(some_events()) + 1


def test_a_journal_from_before_numbering_numbers_on_after_its_events(tmp_path: Path) -> None:
    written = journal(tmp_path)
    with written.events_path.open("a") as file:  # as a version before numbering wrote them
        for event in some_events():
            file.write(ev.event_json(event).replace('"seq":0,', "") + "\n")
    written.close()
    assert {e.seq for e in read_events(written.events_path).events} == {0}
    with RunJournal.reopen(written.directory) as again:
        assert again.last_seq == len(some_events())
        again.write(ev.RunEnded(at=3.0, run_id="r", ok=True))  # straight, as `land` does
    assert read_events(written.events_path).events[-1].seq == len(some_events()) + 1


def test_a_value_outside_an_events_enum_skips_that_line_and_says_why(tmp_path: Path) -> None:
    j = journal(tmp_path)
    for event in some_events()[:2]:
        j.write(event)
    j.close()
    with j.events_path.open("a") as raw:  # e.g. a newer version's answerer
        decided = {"type": "approval_decided", "at": 3.0, "session": "s1", "decision": "deny"}
        raw.write(json.dumps({**decided, "decided_by": "a robot"}) + "\n")
        raw.write(json.dumps({**decided, "decided_by": "timeout"}) + "\n")
    contents = read_events(j.events_path)
    assert [type(e) for e in contents.events] == [
        ev.RunStarted,
        ev.SessionStarted,
        ev.ApprovalDecided,
    ]
    (skipped,) = contents.skipped
    assert skipped.line == 3
    assert skipped.reason.startswith("approval_decided event: field decided_by: Input should be")
