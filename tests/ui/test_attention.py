"""The bell and desktop notifications: which escape for which terminal, and when."""

from __future__ import annotations

import pytest

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.usage import UsageSource
from mala_tui.ui.attention import (
    BEL,
    Attention,
    Desktop,
    desktop_protocol,
    needs_attention,
    notification,
)


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"TERM_PROGRAM": "iTerm.app"}, Desktop.OSC9),
        ({"TERM_PROGRAM": "WezTerm"}, Desktop.OSC9),
        ({"TERM": "xterm-kitty"}, Desktop.OSC9),
        ({"WT_SESSION": "1"}, Desktop.OSC9),
        ({"VTE_VERSION": "7600", "TERM": "xterm-256color"}, Desktop.OSC777),
        ({"TERM": "foot"}, Desktop.OSC777),
        ({"TERM": "xterm-256color"}, Desktop.OFF),
        ({}, Desktop.OFF),
    ],
)
def test_auto_guesses_the_escape_from_the_terminals_environment(
    environ: dict[str, str], expected: Desktop
) -> None:
    assert desktop_protocol(Desktop.AUTO, environ) is expected


def test_a_setting_other_than_auto_is_used_as_it_is() -> None:
    assert desktop_protocol(Desktop.OSC777, {"TERM_PROGRAM": "iTerm.app"}) is Desktop.OSC777
    assert desktop_protocol(Desktop.OFF, {"TERM_PROGRAM": "iTerm.app"}) is Desktop.OFF


def test_the_sequences_and_the_tmux_passthrough() -> None:
    assert notification(Desktop.OSC9, "mala-tui", "a waits") == "\x1b]9;mala-tui: a waits\a"
    assert (
        notification(Desktop.OSC777, "mala;tui", "a waits") == "\x1b]777;notify;mala,tui;a waits\a"
    )
    assert notification(Desktop.OFF, "t", "b") == ""
    wrapped = notification(Desktop.OSC9, "t", "b", in_tmux=True)
    assert wrapped == "\x1bPtmux;\x1b\x1b]9;t: b\a\x1b\\"


def test_agent_text_cannot_end_the_escape_or_speak_to_the_terminal() -> None:
    body = "bad\x1b]0;owned\x07 reason\x1b[2J" + "x" * 500
    sequence = notification(Desktop.OSC9, "t", body)
    inner = sequence.removeprefix("\x1b]9;").removesuffix(BEL)
    assert "\x1b" not in inner and BEL not in inner
    assert len(inner) < 200


def events() -> list[ev.Event]:
    return [
        ev.ApprovalRequested(at=1.0, session="a", checkpoint_number=2, reason="hard"),
        ev.SessionEnded(at=2.0, session="b", status=EndStatus.DONE, reason="finished"),
        ev.SessionEnded(at=3.0, session="c", status=EndStatus.FAILED, reason="crashed"),
        ev.UsageRecorded(at=4.0, session="a", tokens=1, window=10, source=UsageSource.PER_CALL),
    ]


def test_only_a_waiting_approval_and_a_failure_need_the_operator() -> None:
    """Each notice names the session, what waits, and the run."""
    wanted = [needs_attention(event, "r1") for event in events()]
    assert wanted[0] == ("mala-tui", "a waits for restart approval \u00b7 run r1")
    assert wanted[1] is None and wanted[3] is None
    assert wanted[2] == ("mala-tui", "c failed: crashed \u00b7 run r1")
    asked = ev.PermissionRequested(
        at=5.0, session="d", request_id="1", tool="Bash", summary="ls", input_text="ls"
    )
    assert needs_attention(asked, "r1") == ("mala-tui", "d asks to use Bash \u00b7 run r1")


def test_a_notice_says_what_the_web_console_title_says() -> None:
    """The bell's notification and a browser tab's title read the same words."""
    from mala_tui.core.notices import page_title
    from mala_tui.core.questions import approval_asked

    asked = events()[0]
    assert isinstance(asked, ev.ApprovalRequested)
    question = approval_asked(asked, "## Goal\nG")
    title, body = needs_attention(asked, "r1") or ("", "")
    assert page_title("r1", [question]) == f"{title} \u2014 {body}"


def test_the_listener_rings_and_notifies_as_configured() -> None:
    written: list[str] = []
    attention = Attention(written.append, bell=True, desktop=Desktop.OSC9, run_id="r1")
    for event in events():
        attention(event)
    assert len(written) == 2
    assert written[0] == "\x1b]9;mala-tui: a waits for restart approval \u00b7 run r1\a\a"
    quiet: list[str] = []
    silent = Attention(quiet.append, bell=False, desktop=Desktop.OFF)
    for event in events():
        silent(event)
    assert quiet == [] and len(silent.raised) == 2
