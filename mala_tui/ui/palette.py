"""The command palette's session commands: every action of `session_action_table`, for every
session."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Matcher, Provider
from textual.content import Content

from mala_tui.ui.services import Services
from mala_tui.ui.session_action_table import SESSION_ACTIONS


def literal_highlight(matcher: Matcher, text: str) -> Content:
    """The matched letters highlighted, the rest literal.

    `Matcher.highlight` parses its candidate as markup; a session's name is not
    markup, so the match is re-applied to plain content here.
    """
    content = Content(text)
    _score, offsets = matcher.fuzzy_search.match(matcher.query, text)
    for offset in offsets:
        if not text[offset].isspace():
            content = content.stylize(matcher.match_style, offset, offset + 1)
    return content


class SessionCommands(Provider):
    """ "Stop: parser-fix", "Mask now: api-docs", ... for the sessions where they apply.

    With nothing typed, the palette offers the actions on the session the
    screen is about (the focused card, or the detail screen's session). The
    screen it was opened on lends its services; a screen without any (a
    dialog, say) gets no session commands.
    """

    def _session_commands(
        self, only: str | None = None
    ) -> Iterator[tuple[str, str, Callable[[], None]]]:
        services = getattr(self.screen, "services", None)
        if not isinstance(services, Services):
            return
        actions = services.actions
        names = [only] if only is not None else list(services.controller.state.sessions)
        for name in names:
            for action in SESSION_ACTIONS:
                if actions.available(action.id, name):
                    yield (
                        f"{action.label}: {name}",
                        action.help,
                        partial(actions.run, action.id, name),
                    )

    def _current_session(self) -> str | None:
        screen = self.screen
        name = getattr(screen, "session_name", None)
        if isinstance(name, str):
            return name
        focused = getattr(screen, "focused_session", None)
        return focused() if callable(focused) else None

    async def discover(self) -> Hits:
        current = self._current_session()
        if current is None:
            return
        for text, help_text, callback in self._session_commands(current):
            yield DiscoveryHit(Content(text), callback, text=text, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, help_text, callback in self._session_commands():
            score = matcher.match(text)
            if score > 0:
                yield Hit(
                    score, literal_highlight(matcher, text), callback, text=text, help=help_text
                )
