"""A session's life: its start and settings, its phases and management mode, its agent
processes and their session id, what it learned of its model and window, the trouble it
met (a hang, an API error; errors and warnings, a run's own too), and its end."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from mala_tui.core.actions import EndStatus
from mala_tui.core.background import BackgroundTask
from mala_tui.core.events.base import EventBase
from mala_tui.core.phases import ManageMode, Phase, Trigger
from mala_tui.core.retry import RetryDecision
from mala_tui.core.usage import CallUsage
from mala_tui.core.window import WindowSource


class SessionStarted(EventBase):
    type: Literal["session_started"] = "session_started"
    task: str
    cwd: str
    model: str | None = None
    window: int
    soft_threshold: float
    hard_threshold: float
    max_restarts: int
    require_approval: bool
    window_source: WindowSource = WindowSource.DEFAULT
    """Where the window came from (see core.window.WindowSource)."""
    manage: ManageMode = ManageMode.FULL
    cache_ttl_seconds: float | None = None
    """The prompt cache's lifetime the session is judged by (context.cache_ttl_seconds)."""
    subagent_soft_threshold: float | None = None
    """Where its subagents are told to wind down (`[context.subagents]`; None: not managed)."""
    subagent_hard_threshold: float | None = None
    """Past where a result is withheld from a subagent."""


class PhaseChanged(EventBase):
    type: Literal["phase_changed"] = "phase_changed"
    before: Phase
    after: Phase
    trigger: Trigger


class ManageModeSet(EventBase):
    type: Literal["manage_mode"] = "manage_mode"
    mode: ManageMode


class AgentSessionNamed(EventBase):
    """The agent named its session (Claude Code's session id): what a resume picks up."""

    type: Literal["agent_session"] = "agent_session"
    session_id: str


class ProcessStarted(EventBase):
    type: Literal["process_started"] = "process_started"
    pid: int | None
    purpose: str
    resume: bool = False


class ProcessEnded(EventBase):
    type: Literal["process_ended"] = "process_ended"
    pid: int | None
    how: str
    seconds: float


class WindowLearned(EventBase):
    """The API refused a prompt smaller than the window believed: the window estimated
    from that refusal (core.window.RefusalBounds), which decisions use from now on."""

    type: Literal["window_learned"] = "window_learned"
    window: int
    accepted: int
    """The largest context the API accepted (measured)."""
    refused: int
    """The prompt it refused (estimated: the last measured call plus what joined since)."""
    believed: int
    believed_source: WindowSource


class ModelLearned(EventBase):
    """The API answered as this model: the session's model from now on, and its price.
    A session started without one (Claude Code's own default) learns it from its first
    answer, as does one whose answers name another (a dated name, a gateway's own)."""

    type: Literal["model_learned"] = "model_learned"
    model: str
    was: str | None = None
    """The model the session knew before: the one it was started with, or None."""


class IdleTimeoutSeen(EventBase):
    type: Literal["idle_timeout"] = "idle_timeout"
    idle_seconds: float
    retry: int
    decision: RetryDecision
    delay: float = 0.0
    reason: str = ""


class ApiErrorSeen(EventBase):
    type: Literal["api_error"] = "api_error"
    terminal_reason: str
    status: int | None = None
    retry: int = 0
    decision: RetryDecision | Literal[""] = ""
    """What was decided ("none": the turn was not retried); "" in journals written
    before it was recorded."""


class Where(StrEnum):
    """The part of mala-tui an error or a warning was recorded from (`where` of `error` and
    `warning`). Every value a version wrote is a member, so old journals read back."""

    AGENT = "agent"
    """The agent's process ended mid-turn."""
    API = "api"
    """The API answered with an error (the CLI retries it)."""
    CLAUDE_STDERR = "claude stderr"
    """What Claude Code printed on its stderr."""
    HOOK = "hook"
    """A hook mala-tui gives Claude Code failed (the tool gate, a subagent's result)."""
    HOST = "host"
    """A session's host on a cluster node (`--engine ray`)."""
    MASKING = "masking"
    """A mask the manager decided on could not be applied."""
    NOTIFY = "notify"
    """A notification command or address failed."""
    OPERATOR = "operator"
    """The manager refused an operator's command."""
    PERMISSION = "permission"
    """The permission gate failed."""
    QUEUE = "queue"
    """A session waits for a slot (`run.max_concurrent`)."""
    RUNTIME = "runtime"
    """mala-tui's own runtime failed at something for the session."""
    SNAPSHOT = "snapshot"
    """The work in progress could not be kept aside (or made into a worktree)."""
    USAGE = "usage"
    """The agent's usage could not be read, or is only an estimate."""
    WINDOW = "window"
    """The context window (a fresh session that starts past the hard threshold, say)."""


class ErrorRecorded(EventBase):
    type: Literal["error"] = "error"
    where: Where
    message: str

    @property
    def mask_not_applied(self) -> bool:
        """A mask the manager decided on could not be applied to the stored transcript."""
        return self.where is Where.MASKING


class WarningRecorded(EventBase):
    """Something the operator should know that is not an error: e.g. decisions that rest
    on an estimate because the agent reports no per-call usage."""

    type: Literal["warning"] = "warning"
    where: Where
    message: str


class SessionEnded(EventBase):
    type: Literal["session_ended"] = "session_ended"
    status: EndStatus
    reason: str = ""
    restarts: int = 0
    masked_total: int = 0


class BackgroundListed(EventBase):
    """The agent's background work changed (a subagent or shell started or ended): what
    runs now, as the CLI lists it. What a resume after a kill knows was lost."""

    type: Literal["background_listed"] = "background_listed"
    tasks: tuple[BackgroundTask, ...] = ()


class BackgroundWaiting(EventBase):
    """The main thread's turn ended while the agent's background work goes on (subagents,
    shells): the session waits for the CLI to hand it their reports, in turns of its own."""

    type: Literal["background_waiting"] = "background_waiting"
    tasks: tuple[BackgroundTask, ...] = ()
    reports: int = 0
    """Reports already in, which the CLI hands the agent in its next turn."""


class BackgroundStopped(EventBase):
    """Background work still running when its session's agent process closed: the CLI
    ended it with the process (a stop, a budget, a failure, a restart, a hang)."""

    type: Literal["background_stopped"] = "background_stopped"
    tasks: tuple[BackgroundTask, ...]
    reason: str = ""


class CliCostReported(EventBase):
    """Claude Code's own figure of what an agent session has cost so far (its result's
    `total_cost_usd`: every call, subagents' included, at its own prices; cumulative over
    that agent session, resumes included): what mala-tui's estimate is checked against."""

    type: Literal["cli_cost"] = "cli_cost"
    session_id: str
    cost_usd: float
    input_tokens: int | None = None
    """Its `modelUsage` summed over models: every call's tokens by kind, subagents' and
    their compactions' included (None in journals written before it was recorded)."""
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    output_tokens: int | None = None

    @property
    def usage(self) -> CallUsage | None:
        counts = (
            self.input_tokens,
            self.cache_creation_input_tokens,
            self.cache_read_input_tokens,
            self.output_tokens,
        )
        if any(count is None for count in counts):
            return None
        return CallUsage(*(count or 0 for count in counts))
