"""The app's own keys, and where the footer shows them.

Textual's footer lists the focused widget's keys, then the screen's, then the app's, and
cuts what does not fit at its right edge. The keys that matter on every screen (the
questions waiting, help, resuming and leaving) are the app's, so they came last and were
the first cut: at 160 columns the footer ended in "D De". The main screens therefore
list them too, right after their first key, so that they stay in view from 80 columns
up; the app keeps them for the screens that do not. A key means one thing everywhere:
each is one `app.` action, whichever node lists it.
"""

from __future__ import annotations

from typing import Final

from textual.binding import Binding

QUIT_HELP: Final = (
    "leave; while sessions run, stop them first (an attached console asks: detach or stop)"
)


def app_keys() -> list[Binding]:
    """The app's keys that every main screen shows first (each hidden where it does
    nothing: the app's `check_action`).

    `a` and `P` are shown only while a question of their kind waits (the badge and the
    cards say so too), which leaves room for the rest from 80 columns up. Pressed when
    none waits they still say so: the app's hidden `review_approvals` and
    `review_permissions` take the key then.
    """
    return [
        Binding("a", "app.review('approval')", "Approvals"),
        Binding("P", "app.review('permission')", "Permissions"),
        Binding("question_mark,f1", "app.help", "Help", key_display="?"),
        Binding("R", "app.resume_run", "Resume run"),
        Binding("D", "app.detach", "Detach", tooltip="close this console; the run goes on"),
        Binding("q", "app.quit", "Quit", tooltip=QUIT_HELP),
    ]
