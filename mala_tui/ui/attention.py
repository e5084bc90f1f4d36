"""Getting a person's attention: a bell, and a desktop notification where the terminal has one.

Some moments need the operator: a restart waiting for approval, a tool waiting for
permission, a question that has kept its session waiting past half the prompt cache's
lifetime (the cache is about to go cold), a session that failed. The app and the
headless output both ring the terminal's bell then and, where the terminal can, raise
a desktop notification with an OSC escape: OSC 9 (iTerm2, WezTerm, Ghostty, kitty,
Windows Terminal) or OSC 777 (VTE terminals such as GNOME Terminal, foot, urxvt).
Inside tmux the escape is wrapped in tmux's passthrough (it needs `allow-passthrough on`).
Which one a terminal understands is guessed from its environment, as terminals
do not answer for it; `ui.desktop_notifications` sets it outright.

Agent text in a notification (a session's name, a failure's reason) is cleaned
of every control character first: an escape in it must not end ours early and
speak to the terminal itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Final

from mala_tui.core import events as ev
from mala_tui.core.notices import APP, event_notice
from mala_tui.runtime.private.redaction import redact

BEL: Final = "\a"
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f]")
#: A notification is a glance, not a report.
BODY_CHARS: Final = 160


class Desktop(StrEnum):
    """How a desktop notification is asked of the terminal (`ui.desktop_notifications`)."""

    AUTO = "auto"
    OSC9 = "osc9"
    OSC777 = "osc777"
    OFF = "off"


def desktop_protocol(setting: Desktop, environ: Mapping[str, str]) -> Desktop:
    """The escape to use in this terminal: OSC9, OSC777, or OFF when none is known."""
    if setting is not Desktop.AUTO:
        return setting
    program = environ.get("TERM_PROGRAM", "").lower()
    term = environ.get("TERM", "").lower()
    if (
        program in {"iterm.app", "wezterm", "ghostty"}
        or "kitty" in term
        or "ghostty" in term
        or environ.get("WT_SESSION")
        or environ.get("KITTY_WINDOW_ID")
    ):
        return Desktop.OSC9
    if environ.get("VTE_VERSION") or term.startswith(("foot", "rxvt")):
        return Desktop.OSC777
    return Desktop.OFF


def _safe(text: str, limit: int = BODY_CHARS) -> str:
    cleaned = " ".join(_CONTROL.sub(" ", text).split())
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 1] + "\u2026"


def notification(protocol: Desktop, title: str, body: str, *, in_tmux: bool = False) -> str:
    """The escape sequence that asks the terminal for a desktop notification ("" for OFF)."""
    title, body = _safe(title, 60), _safe(body)
    if protocol is Desktop.OSC9:
        sequence = f"\x1b]9;{title}: {body}{BEL}"
    elif protocol is Desktop.OSC777:
        # OSC 777 separates its fields with ';': one in the title would end it early.
        sequence = f"\x1b]777;notify;{title.replace(';', ',')};{body}{BEL}"
    else:
        return ""
    if in_tmux:
        # tmux passes a DCS-wrapped sequence through to the outer terminal, its ESCs doubled.
        sequence = "\x1bPtmux;" + sequence.replace("\x1b", "\x1b\x1b") + "\x1b\\"
    return sequence


def needs_attention(event: ev.Event, run_id: str = "") -> tuple[str, str] | None:
    """(title, body) when this event needs the operator, else None: the body names the
    session, what waits and the run, in the words a web console's title uses
    (core.notices), redacted as every line mala-tui prints is."""
    notice = event_notice(event, run_id)
    if notice is None:
        return None
    return APP, redact(notice.text)


class Attention:
    """An event listener that rings and notifies when an event needs the operator.

    `write` puts text on the terminal (the app's driver, or the headless output).
    """

    def __init__(
        self,
        write: Callable[[str], object],
        *,
        bell: bool,
        desktop: Desktop,
        in_tmux: bool = False,
        run_id: str = "",
    ) -> None:
        self._write = write
        self._run_id = run_id
        self._bell = bell
        self._desktop = desktop
        self._in_tmux = in_tmux
        self.raised: list[tuple[str, str]] = []
        """Every (title, body) raised, in order: what a test or the app can read back."""

    def __call__(self, event: ev.Event) -> None:
        wanted = needs_attention(event, self._run_id)
        if wanted is not None:
            self.raise_(*wanted)

    def raise_(self, title: str, body: str) -> None:
        self.raised.append((title, body))
        text = notification(self._desktop, title, body, in_tmux=self._in_tmux)
        if self._bell:
            text += BEL
        if text:
            self._write(text)
