"""The window a session's decisions use: as told, and as the API's answers bound it.

Claude Code tells the window (the model table, the session's start, its own report);
a refusal of the API's may show it smaller (core.window), and every call the API
takes bounds it from below. `WindowBelief` is that part of the manager's state
(core.manager_state), changed only by its own transitions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mala_tui.core.window import RefusalBounds, WindowSource, learn_from_refusal


@dataclass
class WindowBelief:
    """The window believed now, and what it is believed on."""

    told: tuple[int, WindowSource]
    """The window as the session was started with it or the CLI reported it."""
    window: int = field(init=False)
    source: WindowSource = field(init=False)
    refusal: RefusalBounds | None = None
    """What the API's refusals said of a window smaller than the one told."""
    largest_accepted: int = 0
    """The largest context the API took in this session's life, restarts included."""

    def __post_init__(self) -> None:
        self._settle()

    def tell(self, tokens: int, source: WindowSource) -> None:
        """A window figure from the session's start or the CLI's report: what the CLI
        believes, which a refusal of the API's may have shown to be too large."""
        self.told = (tokens, source)
        self._settle()

    def accepted(self, tokens: int) -> None:
        """The API took a request of `tokens`: the window is at least that."""
        self.largest_accepted = max(self.largest_accepted, tokens)
        if self.refusal is not None:
            self.refusal = self.refusal.accepting(tokens)  # None: dropped
            self._settle()

    def refused(self, tokens: int, news_below: int) -> RefusalBounds | None:
        """The API refused a request of about `tokens`: the bounds learnt, when they are
        news (a refusal the thresholds would not have let through is not); None else."""
        learned = learn_from_refusal(
            self.refusal, accepted=self.largest_accepted, refused=tokens, news_below=news_below
        )
        if learned == self.refusal:
            return None
        self.refusal = learned
        self._settle()
        return learned

    def carried(self, refusal: RefusalBounds) -> None:
        """A resumed session goes on from the bounds it had learnt."""
        self.refusal = refusal
        self.largest_accepted = refusal.accepted
        self._settle()

    def _settle(self) -> None:
        """The one told, unless a refusal showed it smaller."""
        told, source = self.told
        if self.refusal is not None and self.refusal.window < told:
            self.window, self.source = self.refusal.window, WindowSource.REFUSAL
        else:
            self.window, self.source = told, source
