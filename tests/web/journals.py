"""Journals written as a run writes them, for the web console's tests."""

from __future__ import annotations

from pathlib import Path

from mala_tui.core import events as ev
from tests.support.usage_events import started

RUN = "20261101-120000-aaaa"


def lines(events: list[ev.Event]) -> bytes:
    return "".join(ev.event_json(event) + "\n" for event in events).encode()


def run_events(run_id: str, sessions: tuple[str, ...]) -> list[ev.Event]:
    return [
        ev.RunStarted(at=1_790_000_000.0, run_id=run_id, sessions=sessions, mode=ev.RunMode.RUN),
        *(started(name, "claude-sonnet-4-5", at=1_790_000_001.0) for name in sessions),
    ]


def permission(session: str, request_id: str, tool: str, at: float) -> ev.PermissionRequested:
    return ev.PermissionRequested(
        at=at, session=session, request_id=request_id, tool=tool, summary=f"{tool} it"
    )


def write_finished(data: Path, run_id: str = RUN, sessions: tuple[str, ...] = ("a",)) -> Path:
    folder = data / "runs" / run_id
    folder.mkdir(parents=True)
    events = [
        *run_events(run_id, sessions),
        ev.RunEnded(at=1_790_000_009.0, run_id=run_id, ok=True),
    ]
    (folder / "events.jsonl").write_bytes(lines(events))
    return folder
