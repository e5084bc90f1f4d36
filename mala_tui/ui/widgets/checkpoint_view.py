"""A checkpoint shown section by section, each marked with how it changed from the previous one."""

from __future__ import annotations

import difflib

from textual.app import ComposeResult
from textual.containers import VerticalGroup
from textual.reactive import reactive
from textual.widgets import Static

from mala_tui.core.checkpoint import SECTION_TITLES, section_changes, split_sections
from mala_tui.ui.text import literal

CHANGE_LABELS = {
    "added": "new",
    "removed": "removed",
    "changed": "changed",
    "same": "unchanged",
}


class CheckpointView(VerticalGroup):
    """The five sections (and any preamble) as headed blocks of literal text.

    The checkpoint is the agent's own text, so bodies are never rendered as
    markdown or markup: `[link=...]` or an escape sequence in it shows as the
    characters it is. With a previous checkpoint, each heading says whether the
    section is new, changed or unchanged, and removed sections are listed.
    """

    DEFAULT_CSS = """
    CheckpointView {
        height: auto;
        & > .section-title {
            margin-top: 1;
            text-style: bold;
            color: $primary;
        }
        & > .section-title.-changed, & > .section-title.-added { color: $accent; }
        & > .section-title.-removed { color: $error; text-style: bold strike; }
        & > .section-body { padding-left: 2; }
        & > .section-line { padding-left: 0; }
        & > .section-line.-added { color: $text-success; background: $success-muted; }
        & > .section-line.-removed { color: $text-error; background: $error-muted; }
        & > .section-body.-removed { color: $foreground-muted; }
        & > .section-empty { margin-top: 1; color: $foreground-muted; text-style: italic; }
    }
    """

    checkpoint: reactive[tuple[str, str | None]] = reactive(("", None), recompose=True)
    """The checkpoint's text, and the previous one's (None: the first, nothing to compare)."""

    def __init__(
        self,
        text: str = "",
        previous: str | None = None,
        *,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.set_reactive(CheckpointView.checkpoint, (text, previous))

    def compose(self) -> ComposeResult:
        text, previous = self.checkpoint
        sections = split_sections(text)
        before = split_sections(previous) if previous is not None else None
        changes = section_changes(before, sections) if before is not None else {}
        if not sections:
            yield Static("(empty checkpoint)", classes="section-empty")
            return
        order = ["Preamble", *SECTION_TITLES]
        for title in order:
            change = changes.get(title)
            if title in sections:
                label = title if change is None else f"{title}  \u00b7 {CHANGE_LABELS[change]}"
                yield Static(literal(label), classes=f"section-title -{change or 'first'}")
                if change == "changed" and before is not None:
                    yield from _diff(before[title], sections[title])
                else:
                    yield Static(literal(sections[title]), classes="section-body")
            elif change == "removed" and before is not None:
                yield Static(literal(f"{title}  \u00b7 removed"), classes="section-title -removed")
                yield Static(literal(before[title]), classes="section-body -removed")
        missing = [title for title in SECTION_TITLES if title not in sections]
        if missing:
            yield Static(
                literal("Missing sections: " + ", ".join(missing)), classes="section-empty"
            )


def _diff(before: str, after: str) -> ComposeResult:
    """The section's lines, those added and removed since the previous checkpoint marked."""
    for line in difflib.ndiff(before.splitlines(), after.splitlines()):
        mark, text = line[:1], line[2:]
        if mark == "?":
            continue  # ndiff's intraline hints: the +/- lines already say it
        kind = {"+": " -added", "-": " -removed"}.get(mark, "")
        prefix = {"+": "+ ", "-": "- "}.get(mark, "  ")
        yield Static(literal(prefix + text), classes=f"section-line{kind}")
