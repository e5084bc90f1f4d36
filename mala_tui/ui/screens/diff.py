"""A session's worktree diff against the commit it started from (with a base branch, the
merge-base with it), shown literally."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Footer, RichLog, Static

from mala_tui.core.session_records import WorktreeRecord
from mala_tui.core.text import clean
from mala_tui.ui.text import literal

MAX_LINES = 20_000
"""Lines of diff shown; a longer diff says where to read the rest (git diff in the worktree)."""


def diff_line(line: str, styles: dict[str, Style]) -> Text:
    """One diff line, literally, styled by what it is (added, removed, hunk, file header)."""
    text = Text(clean(line), no_wrap=True, end="")
    if line.startswith(("+++", "---", "diff --git", "index ", "new file", "deleted file")):
        text.stylize(styles["header"])
    elif line.startswith("+"):
        text.stylize(styles["added"])
    elif line.startswith("-"):
        text.stylize(styles["removed"])
    elif line.startswith("@@"):
        text.stylize(styles["hunk"])
    return text


class DiffScreen(Screen[None]):
    """What the session changed in its own worktree: `git diff` against its starting commit,
    or with a base branch (`--base`), against the merge-base with that branch."""

    CSS_PATH = str(Path(__file__).with_name("diff.tcss"))
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "app.pop_screen", "Back")]

    def __init__(self, session: str, worktree: WorktreeRecord) -> None:
        super().__init__()
        self.session_name = session
        self.worktree = worktree

    def compose(self) -> ComposeResult:
        tree = self.worktree
        against = f"the merge-base with {tree.base}" if tree.base else tree.base_commit[:10]
        yield Static(
            literal(
                # What it is compared with first: a long worktree path is what gets cut.
                f"{self.session_name} \u00b7 diff against {against} \u00b7 branch "
                f"{tree.branch} \u00b7 {tree.path}",
                one_line=True,
            ),
            id="title",
        )
        yield RichLog(id="diff", wrap=False, markup=False, highlight=False, max_lines=MAX_LINES + 1)
        yield Footer()

    def on_mount(self) -> None:
        self._load()

    @work(group="diff", exclusive=True, exit_on_error=False)
    async def _load(self) -> None:
        from mala_tui.runtime.git.worktree import WorktreeError
        from mala_tui.runtime.git.worktree_diffs import compared_with, diff_text

        log = self.query_one(RichLog)
        tree = self.worktree
        try:
            since = await asyncio.to_thread(
                compared_with, Path(tree.path), tree.base_commit, tree.base
            )
            text = await asyncio.to_thread(diff_text, Path(tree.path), since)
        except WorktreeError as exc:
            log.write(literal(f"cannot read the diff: {exc}"))
            return
        lines = text.splitlines()
        if not lines:
            where = f"the merge-base with {tree.base}" if tree.base else "the starting commit"
            log.write(literal(f"no changes since {where}"))
            return
        theme = self.app.current_theme
        styles = {  # theme colours only, so the diff reads in every theme
            "header": Style(bold=True),
            "added": Style(color=theme.success),
            "removed": Style(color=theme.error),
            "hunk": Style(color=theme.accent),
        }
        for line in lines[:MAX_LINES]:
            log.write(diff_line(line, styles))
        if len(lines) > MAX_LINES:
            log.write(
                literal(
                    f"... {len(lines) - MAX_LINES} more lines: run `git diff {since}` "
                    f"in {tree.path}"
                )
            )
