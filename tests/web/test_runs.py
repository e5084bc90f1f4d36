"""A tab's run, read from its journal as it grows: only the new bytes, a torn line waits."""

from __future__ import annotations

import os
from pathlib import Path

from mala_tui.core import events as ev
from mala_tui.core.questions import PermissionQuestion
from mala_tui.runtime.consoles.sockets import HostRecord, bind_socket, write_host_file
from mala_tui.web.runs import RunBook, RunWatch
from tests.web.journals import RUN, lines, permission, run_events, write_finished


def test_a_watch_reads_what_the_journal_gained_and_waits_for_a_line_to_end(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "runs" / RUN
    folder.mkdir(parents=True)
    journal = folder / "events.jsonl"
    journal.write_bytes(lines(run_events(RUN, ("a", "b"))))
    watch = RunWatch(folder)
    watch.update()
    assert list(watch.state.sessions) == ["a", "b"] and watch.state.questions() == []

    asked = lines([permission("b", "1", "Bash", 1_790_000_002.0)])
    with journal.open("ab") as file:  # half a line: being written
        file.write(asked[:20])
    watch.update()
    assert watch.state.questions() == []
    with journal.open("ab") as file:
        file.write(asked[20:] + b"not json\n")  # the rest, and a damaged line skipped
    watch.update()
    (question,) = watch.state.questions()
    assert isinstance(question, PermissionQuestion)
    assert (question.session, question.tool) == ("b", "Bash")

    with journal.open("ab") as file:
        file.write(lines([ev.RunEnded(at=1_790_000_003.0, run_id=RUN, ok=False)]))
    assert watch.title() == f"mala-tui \u2014 run {RUN} (ended)"


def test_a_run_is_live_while_its_host_answers_on_its_socket(tmp_path: Path) -> None:
    folder = tmp_path / "runs" / RUN
    folder.mkdir(parents=True)
    events = [*run_events(RUN, ("a",)), permission("a", "1", "Bash", 1_790_000_002.0)]
    (folder / "events.jsonl").write_bytes(lines(events))
    watch = RunWatch(folder)
    assert not watch.live()  # no host recorded: a run that was never served, or has ended
    listening = bind_socket(tmp_path / "host.sock")
    try:
        write_host_file(folder, HostRecord(tmp_path / "host.sock", os.getpid(), RUN))
        assert watch.live()
        assert watch.title() == f"mala-tui \u2014 a asks to use Bash \u00b7 run {RUN}"
    finally:
        listening.close()
    assert not watch.live()  # recorded, but nobody answers: a crashed host
    assert watch.title() == f"mala-tui \u2014 run {RUN} (ended)"


def test_the_book_finds_runs_by_id_prefix_or_latest_and_never_outside_runs(
    tmp_path: Path,
) -> None:
    write_finished(tmp_path, "20261101-120000-aaaa")
    write_finished(tmp_path, "20261102-120000-bbbb")
    book = RunBook(tmp_path)
    assert [choice.run_id for choice in book.choices()] == [
        "20261102-120000-bbbb",
        "20261101-120000-aaaa",
    ]
    latest, by_prefix = book.find("latest"), book.find("20261101")
    assert latest is not None and latest.run_id == "20261102-120000-bbbb"
    assert by_prefix is not None and by_prefix.run_id == "20261101-120000-aaaa"
    assert book.find("2026110") is None  # ambiguous
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "events.jsonl").write_bytes(b"")
    assert book.find("../elsewhere") is None
    assert book.find("..") is None
    assert book.find("") is None
    assert RunBook(tmp_path / "none").choices() == []
