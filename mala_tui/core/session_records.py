"""What the view keeps of a session: the records its histories hold, and its snapshot."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.checkpoint import CheckpointOrigin
from mala_tui.core.permissions import AnsweredBy
from mala_tui.core.phases import Cause, ManageMode, Phase
from mala_tui.core.pricing import Spend
from mala_tui.core.subagents import SubagentGauge
from mala_tui.core.text import plural
from mala_tui.core.usage import UsageSource, Zone, zone_of
from mala_tui.core.window import WindowSource


@dataclass(frozen=True, slots=True)
class UsagePoint:
    at: float
    tokens: int
    window: int


@dataclass(frozen=True, slots=True)
class CostPoint:
    """The session's spend so far, as of one usage report."""

    at: float
    cost_usd: float | None
    cache_hit_rate: float | None


@dataclass(frozen=True, slots=True)
class MaskRecord:
    at: float
    count: int
    tokens_before: int
    estimated_tokens: int
    placeholders: tuple[str, ...]
    reclaimed: int | None = None
    trigger: Cause = Cause.SOFT_THRESHOLD
    """operator, soft_threshold or projection."""
    folded_steps: int = 0
    """Steps its fold took out of the transcript into the digest (core.fold); 0: none."""
    folded_tokens: int = 0
    """What the fold took out, estimated (characters / 4), the digest's lines deducted."""
    digest_lines: int = 0
    """Lines of the digest after its fold: every step folded so far."""
    digest_tokens: int = 0
    """The whole digest after its fold, estimated (characters / 4)."""


@dataclass(frozen=True, slots=True)
class RestartRecord:
    at: float
    continuation: int
    reason: str
    tokens_before: int
    approved_by: AnsweredBy
    checkpoint_number: int
    tokens_after: int | None = None
    trigger: Cause | None = None
    """Why it restarted (None: the journal did not say)."""

    @classmethod
    def of(cls, event: ev.Restarted) -> RestartRecord:
        return cls(
            event.at,
            event.continuation,
            event.reason,
            event.tokens_before,
            event.approved_by,
            event.checkpoint_number,
            trigger=event.trigger,
        )


@dataclass(frozen=True, slots=True)
class CheckpointRecord:
    at: float
    number: int
    origin: CheckpointOrigin
    text: str
    path: str


@dataclass(frozen=True, slots=True)
class BranchStatus:
    """Where a worktree session's work stands against the branch the run started from."""

    ahead: int
    """Commits on the session's branch that are not in the base branch."""
    uncommitted: bool
    """The worktree holds edits never committed: work not landed either."""
    merged: bool = False
    """Work was done and all of it is in the base branch."""
    discarded: bool = False
    """The worktree and its branch were removed."""

    @property
    def to_land(self) -> bool:
        return not self.discarded and (self.ahead > 0 or self.uncommitted)

    @property
    def label(self) -> str:
        """What a card says: "merged", "2 commits to land", "uncommitted edits to land"..."""
        if self.discarded:
            return "discarded"
        if not self.to_land:
            return "merged" if self.merged else "nothing to land"
        parts = []
        if self.ahead:
            parts.append(plural(self.ahead, "commit"))
        if self.uncommitted:
            parts.append("uncommitted edits")
        return " + ".join(parts) + " to land"


@dataclass(frozen=True, slots=True)
class WorktreeRecord:
    """The session's own git worktree, what it changed there (once measured), and what
    became of its work (landed, pushed, discarded)."""

    path: str
    branch: str
    base_commit: str
    repository: str
    files: tuple[ev.ChangedFile, ...] | None = None
    error: str = ""
    base_branch: str = ""
    """The branch the run started from, which landing merges into ("" for a detached HEAD)."""
    base: str = ""
    """The branch named as the session's base (`--base`): its diff is against the merge-base
    with it; "" when none was (the diff is then against `base_commit`)."""
    status: BranchStatus | None = None
    """Commits to land and whether merged: as measured when the session ended, as the
    landing events left it, or as read from git since (None: not known)."""
    landed: ev.WorktreeLanded | None = None
    """The latest landing of its branch."""
    pushed: ev.WorktreePushed | None = None
    """The latest push of its branch for a pull request."""

    @classmethod
    def created(cls, event: ev.WorktreeCreated) -> WorktreeRecord:
        return cls(
            event.path,
            event.branch,
            event.base_commit,
            event.repository,
            base_branch=event.base_branch,
            base=event.base,
        )

    def after(
        self, event: ev.WorktreeChanged | ev.WorktreeLanded | ev.WorktreePushed
    ) -> WorktreeRecord:
        """The record once its changes were measured, or its branch landed or pushed."""
        match event:
            case ev.WorktreeChanged():
                record = replace(self, files=event.files, error=event.error)
                if event.commits_ahead is None:
                    return record
                status = BranchStatus(event.commits_ahead, bool(event.uncommitted))
                return replace(record, status=status)
            case ev.WorktreeLanded():
                return replace(self, landed=event, status=BranchStatus(0, False, merged=True))
            case ev.WorktreePushed():
                before = self.status or BranchStatus(0, False)
                ahead = before.ahead + (1 if event.committed else 0)
                return replace(self, pushed=event, status=BranchStatus(ahead, False))

    @property
    def lines_added(self) -> int:
        return sum(f.added or 0 for f in self.files or ())

    @property
    def lines_deleted(self) -> int:
        return sum(f.deleted or 0 for f in self.files or ())


@dataclass(frozen=True, slots=True)
class SessionSnapshot:
    """One session as a dashboard card shows it."""

    name: str
    task: str
    phase: Phase
    tokens: int
    window: int
    source: UsageSource
    soft_threshold: float
    hard_threshold: float
    masked_session: int
    masked_total: int
    restarts: int
    max_restarts: int
    idle_retries: int
    require_approval: bool
    pending_approval: int | None
    trend: tuple[float, ...]
    status: EndStatus | None
    end_reason: str
    last_error: str
    updated_at: float
    window_source: WindowSource = WindowSource.DEFAULT
    """Where the window figure came from: model name, beta, model table, default, CLI report."""
    density: float = 1.0
    """Tokens per chars/4 token: what calibrates the manager's per-block estimates."""
    density_measured: bool = False
    manage: ManageMode = ManageMode.FULL
    spend: Spend = field(default_factory=Spend)
    """API calls, tokens by kind and their cost at list prices (an estimate)."""
    model: str | None = None
    messages_waiting: int = 0
    """Messages from the operator that have not reached the agent yet."""
    pending_permissions: int = 0
    """Tool uses waiting for the operator's permission: the session waits, it is not stalled."""
    mask_failures: int = 0
    """Masks in a row that could not be applied; the manager stops trying after a few."""
    mask_problem: str = ""
    """Why the latest of them could not be applied."""
    worktree_status: BranchStatus | None = None
    """With --worktree: its commits to land, or merged (None: no worktree, or not known)."""
    forked_from: str = ""
    """The session whose conversation it was forked from ("" for none)."""
    by_hand: bool = False
    """A person has it in the interactive Claude Code (taken over, not handed back yet)."""
    host: str = ""
    """With `--engine ray`: the address of the node its host runs on ("" when local)."""
    hosts_lost: int = 0
    """With `--engine ray`: its hosts lost with their node."""
    host_lost: str = ""
    """How the latest was lost."""
    cache_warm_until: float | None = None
    """When the session's prompt cache goes cold unless a request comes first (wall-clock
    seconds; None: not known)."""
    subagents: tuple[SubagentGauge, ...] = ()
    """Its subagents, live and finished, in the order they started."""
    subagent_thresholds: tuple[float, float] | None = None
    """(soft, hard) marks of its subagents' gauges (None: its own marks are drawn)."""
    waiting_for: str = ""
    """Its turn is over and it waits for its background work ("2 subagents"): the CLI
    hands the agent their reports in turns of its own ("" when not waiting)."""

    @property
    def waiting(self) -> bool:
        """Held for a person (an approval, a permission) or paused: it sends no request,
        so its prompt cache cools."""
        return self.status is None and (
            self.phase in (Phase.PAUSED, Phase.AWAITING_APPROVAL) or self.pending_permissions > 0
        )

    def cache_warm_for(self, now: float) -> float | None:
        """Seconds the prompt cache stays warm from `now` (0: cold; None: not known)."""
        if self.cache_warm_until is None:
            return None
        return max(0.0, self.cache_warm_until - now)

    @property
    def pressure(self) -> float:
        if self.window <= 0 or self.source == UsageSource.DISABLED:
            return 0.0
        return self.tokens / self.window

    @property
    def zone(self) -> Zone:
        return zone_of(self.pressure, self.soft_threshold, self.hard_threshold)

    @property
    def exact(self) -> bool:
        return self.source == UsageSource.PER_CALL

    @property
    def state(self) -> Phase | EndStatus:
        """What the session is doing: its end status once it has ended, else its phase."""
        return self.phase if self.status is None else self.status
