"""The settings: every section and key, its default, its bounds and what it means.

One frozen model a section (``[context]``, ``[idle]``, ``[agent]``, ...), gathered in
``Settings``. Where each value comes from (defaults < TOML file < environment < command
line), and how a bad one is reported, is ``mala_tui.config_loading``.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, PositiveInt, field_validator, model_validator

from mala_tui.core.budget import BudgetLimits
from mala_tui.core.observations import Decision
from mala_tui.core.permissions import PermissionPolicy
from mala_tui.core.phases import ManageMode
from mala_tui.core.pricing import PriceTable

APP_NAME = "mala-tui"

_STRICT = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


#: Default wall-clock bound on one session (idle.session_timeout_seconds): four hours.
DEFAULT_SESSION_TIMEOUT_S = 4 * 3600.0


def max_concurrent_for(cores: int) -> int:
    """Twice the cores, at most 8: each agent is a CLI process of a few hundred MB."""
    return max(1, min(8, cores * 2))


def default_max_concurrent() -> int:
    return max_concurrent_for(os.cpu_count() or 1)


class SubagentSettings(BaseModel):
    """How a session's subagents are kept inside their own windows (`[context.subagents]`).

    Claude Code compacts a subagent itself only once the API refuses its prompt; mala-tui acts
    before that, through the hook that fires inside the subagent after each of its tools."""

    model_config = _STRICT

    soft_threshold: float = Field(default=0.85, gt=0, le=1)
    """Fraction of the subagent's window from which it is told, once, to return its findings
    now (estimated: its latest call's prompt plus the new result at chars/4)."""

    hard_threshold: float = Field(default=0.95, gt=0, le=1)
    """A tool result that would take the subagent's window past this fraction is withheld
    from it (replaced by a note telling it to return its findings)."""

    @model_validator(mode="after")
    def _soft_below_hard(self) -> SubagentSettings:
        if self.soft_threshold >= self.hard_threshold:
            raise ValueError("soft_threshold must be below hard_threshold")
        return self


class ContextSettings(BaseModel):
    """How each session's context window is managed."""

    model_config = _STRICT

    soft_threshold: float = Field(default=0.15, gt=0, le=1)
    """Fraction of the window from which old tool results are masked: at once when a mask
    pays for the prompt-cache rewrite it causes, else once it does (at the latest halfway
    to hard). Early on purpose: with the cache breakpoint each mask keeps, a mask rewrites
    only what came since the last one, so a small window is cheapest; below 0.15 nothing
    changed on the benchmark set (docs/BENCHMARKS.md measures it)."""

    mask_target_threshold: float = Field(default=0.0, ge=0, le=1)
    """Masking goes on down to this fraction of the window. 0 masks every result but the
    most recent few at once: one cache miss, then room for many steps."""

    hard_threshold: float = Field(default=0.80, gt=0, le=1)
    """Fraction of the window at which the agent is wound down, checkpointed and restarted.
    Claude Code with its own compaction off refuses, without sending it, any request past
    about 177,000 tokens of a 200,000 window (0.885): keep this low enough that one large
    tool result cannot jump over that limit before the wind-down."""

    context_limit: int = Field(default=200_000, gt=0)
    """Window size in tokens for a model that neither its name (`[1m]`), the betas nor
    `model_windows` places; the CLI's own report replaces it once a turn ends. Set, it is
    also the window of a session with no model named (else Claude Code's default model's)."""

    model_windows: dict[str, PositiveInt] = Field(default_factory=dict)
    """Windows by model name prefix, e.g. {"claude-sonnet-4-5" = 1000000}; added to (and
    overriding) the built-in table for current Claude models (1M for the 5.x models, Opus
    4.7/4.8 and the aliases; 200,000 for older ones unless the 1M window is asked for)."""

    manage: ManageMode = ManageMode.FULL
    """full: mask, wind down, checkpoint and restart. mask: mask only, never restart.
    off: watch only (gauges and the journal), and leave Claude Code's own compaction on."""

    never_mask_tools: tuple[str, ...] = ()
    """Tools whose results are never masked, e.g. ["TodoWrite"] (as `exclude_tools` does for
    the API's own tool-result clearing)."""

    keep_recent_observations: int = Field(default=1, ge=0)
    """The most recent tool results that are never masked. Each one kept is rewritten at
    the cache-write price after every mask; fewer is cheaper, more lets the agent see
    more of its latest work. What the agent fetches again after a mask is kept too."""

    cache_ttl_seconds: float = Field(default=300.0, gt=0)
    """The prompt cache's lifetime: 300 s (the API's default), 3600 for the 1-hour cache.
    A session in the soft zone that waited longer (an approval, a permission request, a
    pause) finds its cache cold: it applies the mask that was waiting before its next
    request, free, since that request writes the whole prompt anyway."""

    mask_min_batch_tokens: int = Field(default=10_000, ge=0)
    """Mask only when at least this many tokens (estimated, calibrated to the session's
    measured density) can go at once. Each mask closes and resumes Claude Code (about a
    second) and rewrites what follows its breakpoint; above this floor the mask economics
    decide when a mask pays. At most 15% of the window is asked for, so that a small
    window can still be masked."""

    carryover_turns: int = Field(default=5, ge=0)
    """Complete interaction cycles carried into the fresh session after a restart."""

    max_restarts: int = Field(default=5, ge=0)
    """Restarts allowed per session; at the limit the session stops with its checkpoint kept."""

    require_approval: bool = False
    """Ask a person to approve, deny or edit each checkpoint before restarting."""

    approval_timeout_seconds: float | None = Field(default=None, gt=0)
    """Give up waiting for a person after this long (none: wait forever)."""

    approval_timeout_decision: Literal[Decision.APPROVE, Decision.DENY] = Decision.DENY
    """What an approval that timed out counts as."""

    subagents: SubagentSettings = Field(default_factory=SubagentSettings)
    """Thresholds for the session's subagents' own windows (`[context.subagents]`)."""

    @model_validator(mode="after")
    def _soft_below_hard(self) -> ContextSettings:
        if self.soft_threshold >= self.hard_threshold:
            raise ValueError("soft_threshold must be below hard_threshold")
        if self.mask_target_threshold > self.soft_threshold:
            raise ValueError("mask_target_threshold must not be above soft_threshold")
        return self


class IdleSettings(BaseModel):
    """What happens when an agent's stream goes silent."""

    model_config = _STRICT

    idle_timeout_seconds: float = Field(default=180.0, gt=0)
    """Seconds without a message from the agent before it counts as hung."""

    max_idle_retries: int = Field(default=2, ge=0)
    """Retries after an idle timeout before the session fails."""

    idle_retry_backoff: tuple[float, ...] = Field(default=(0.0, 5.0, 15.0), min_length=1)
    """Seconds to wait before retry 1, 2, 3...; the last value repeats."""

    disconnect_timeout_seconds: float = Field(default=10.0, gt=0)
    """Bound on disconnecting a hung agent process; past it the process is killed."""

    api_failure_seconds: float | None = Field(default=60.0, gt=0)
    """How long a session's API calls may all fail in a row (a dead endpoint: no answer,
    5xx, overloaded), Claude Code's retries and mala-tui's included, before it fails with
    what Claude Code said; Claude Code's own retries are fitted to it. None: no bound but
    the retry counts. An authentication error, or a request the API refuses, fails at once."""

    session_timeout_seconds: float | None = Field(default=DEFAULT_SESSION_TIMEOUT_S, gt=0)
    """Wall-clock bound on one session including every retry; past it the session fails.
    Without one, a session whose model has gone away would keep retrying."""

    @field_validator("idle_retry_backoff")
    @classmethod
    def _backoff_not_negative(cls, value: tuple[float, ...]) -> tuple[float, ...]:
        if any(delay < 0 for delay in value):
            raise ValueError("every backoff delay must be 0 or more seconds")
        return value


class AgentSettings(BaseModel):
    """How agent sessions are started."""

    model_config = _STRICT

    model: str | None = None
    """Model name passed to Claude Code (none: Claude Code's own default)."""

    allowed_tools: tuple[str, ...] = ("Read", "Write", "Edit", "Bash", "Grep", "Glob")
    """Tools the agent may use without asking."""

    permission_mode: Literal["default", "acceptEdits", "plan", "bypassPermissions"] = "acceptEdits"
    """Claude Code permission mode for file edits and commands."""

    max_concurrent: int = Field(default_factory=default_max_concurrent, ge=1)
    """Sessions running at once; the rest wait in a queue, shown as queued. Default: twice
    the machine's cores, at most 8."""

    worktree: bool = False
    """Give each agent of `mala-tui run` its own git worktree and branch of the repository
    its folder is in, kept after the run (as --worktree)."""

    permissions: PermissionPolicy = PermissionPolicy.ASK
    """A tool use outside allowed_tools: ask the operator (in the app, or on the terminal
    headless), allow it, or deny it (as --permissions)."""

    permission_timeout: float = Field(default=300.0, gt=0)
    """Seconds a permission request waits for the operator before the timeout's answer."""

    permission_timeout_answer: Literal[PermissionPolicy.ALLOW, PermissionPolicy.DENY] = (
        PermissionPolicy.DENY
    )
    """The answer when nobody answers in time, or nobody can be asked (headless, no terminal)."""


class StorageSettings(BaseModel):
    """Where runs are kept."""

    model_config = _STRICT

    data_dir: Path | None = None
    """Folder for journaled runs (none: the user data dir platformdirs gives)."""

    @field_validator("data_dir")
    @classmethod
    def _absolute(cls, value: Path | None) -> Path | None:
        # Made absolute when read, against the folder mala-tui was started from: a run's
        # worktrees live under it, and git, run in the repository, would put a relative
        # one inside the repository.
        return None if value is None else absolute_path(value)


class UiSettings(BaseModel):
    """The terminal app."""

    model_config = _STRICT

    theme: str = "mala-dark"
    """Theme used at start; shipped themes and files in the config dir's themes/ folder."""
    bell: bool = True
    """Ring the terminal's bell when a restart approval waits or a session fails."""
    desktop_notifications: Literal["auto", "osc9", "osc777", "off"] = "auto"
    """A desktop notification then too: auto guesses the terminal's escape (OSC 9 or 777)."""
    notify_headless: bool = False
    """Bell and notifications in headless runs too (`--notify`); off, headless output is a log."""
    notify_command: str = ""
    """A command a detached run's host runs (by /bin/sh) when it needs a person and no console
    is attached, told what in MALA_NOTICE, MALA_RUN, MALA_SESSION, MALA_WAITS, MALA_ATTACH,
    MALA_URL: e.g. notify-send "$MALA_NOTICE"."""
    notify_url: str = ""
    """A URL a detached run's host POSTs each notice to when no console is attached, e.g.
    https://ntfy.sh/your-secret-topic (push to a phone through ntfy)."""
    notify_format: Literal["auto", "ntfy", "json"] = "auto"
    """What notify_url is sent: ntfy's form (plain text, Title, Priority and Click headers),
    or JSON; auto: ntfy's to ntfy.sh, JSON to any other host."""

    @field_validator("notify_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        value = value.strip()
        if value and not re.fullmatch(r"https?://[^\s/?#]+[^\s]*", value):
            raise ValueError("must be an http:// or https:// URL (or empty: none)")
        return value


class ModelPriceSetting(BaseModel):
    """One model's list prices, US dollars per million tokens; unset fields keep the default."""

    model_config = _STRICT

    input: float | None = Field(default=None, ge=0)
    """Uncached input tokens."""
    cache_write: float | None = Field(default=None, ge=0)
    """5-minute cache writes (default for a new model: 1.25x input)."""
    cache_read: float | None = Field(default=None, ge=0)
    """Cache hits (default for a new model: 0.1x input)."""
    output: float | None = Field(default=None, ge=0)
    """Output tokens."""
    long_context_threshold: int | None = Field(default=None, gt=0)
    """Prompt tokens past which a request pays the long-context premium."""
    long_context_input_factor: float | None = Field(default=None, ge=1)
    """Premium on the prompt prices of such a request (2 for Sonnet 4.5's 1M window)."""
    long_context_output_factor: float | None = Field(default=None, ge=1)
    """Premium on the output price of such a request (1.5 for Sonnet 4.5's 1M window)."""


class PricingSettings(BaseModel):
    """List prices by model-name prefix, for the cost estimates: one table per model,
    e.g. [pricing."claude-sonnet-4-5"] input = 3.0. Overrides or adds to the defaults
    (current Claude models at Anthropic's published list prices)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    __pydantic_extra__: dict[str, ModelPriceSetting] = Field(init=False)

    @model_validator(mode="after")
    def _complete(self) -> PricingSettings:
        self.table()  # a new model without input and output prices is an error now
        return self

    def overrides(self) -> dict[str, ModelPriceSetting]:
        return dict(self.model_extra or {})

    def table(self) -> PriceTable:
        """The default prices with these entries applied."""
        return PriceTable().with_overrides(
            {name: entry.model_dump() for name, entry in self.overrides().items()}
        )


class BudgetSettings(BaseModel):
    """Spending limits per session and per run (none set: no limit). Near a limit the
    session winds down and writes its checkpoint; at it, it stops with the checkpoint kept."""

    model_config = _STRICT

    max_cost_usd: float | None = Field(default=None, gt=0)
    """Per session: estimated cost in US dollars at list prices (see [pricing])."""
    max_turns: int | None = Field(default=None, gt=0)
    """Per session: model turns (API calls of the main conversation)."""
    max_minutes: float | None = Field(default=None, gt=0)
    """Per session: wall-clock minutes since it started."""
    run_max_cost_usd: float | None = Field(default=None, gt=0)
    """For the whole run: estimated cost of every session added up."""
    run_max_turns: int | None = Field(default=None, gt=0)
    """For the whole run: model turns of every session added up."""
    run_max_minutes: float | None = Field(default=None, gt=0)
    """For the whole run: wall-clock minutes since it started."""
    near_fraction: float = Field(default=0.9, gt=0, le=1)
    """Share of a limit at which the session winds down and checkpoints."""

    def session_limits(self) -> BudgetLimits:
        return BudgetLimits(self.max_cost_usd, self.max_turns, self.max_minutes, self.near_fraction)

    def run_limits(self) -> BudgetLimits:
        return BudgetLimits(
            self.run_max_cost_usd, self.run_max_turns, self.run_max_minutes, self.near_fraction
        )


class ClusterSettings(BaseModel):
    """Sessions on a Ray cluster (`run --engine ray`)."""

    model_config = _STRICT

    orphan_minutes: float = Field(default=30.0, gt=0)
    """A session host whose driver has been gone this long winds its session down to a
    checkpoint and stops."""
    session_memory_mb: int = Field(default=1024, ge=0)
    """Memory reserved on a host for each session (Claude Code takes about 1 GiB); 0: none."""


class Settings(BaseModel):
    """All of mala-tui's settings."""

    model_config = _STRICT

    context: ContextSettings = ContextSettings()
    idle: IdleSettings = IdleSettings()
    agent: AgentSettings = AgentSettings()
    storage: StorageSettings = StorageSettings()
    ui: UiSettings = UiSettings()
    pricing: PricingSettings = PricingSettings()
    budget: BudgetSettings = BudgetSettings()
    cluster: ClusterSettings = ClusterSettings()

    def resolved_data_dir(self) -> Path:
        """The folder runs are journaled under, absolute."""
        if self.storage.data_dir is not None:
            return absolute_path(self.storage.data_dir)
        return default_data_dir()

    def command(self, *words: str) -> str:
        """A `mala-tui` command to print for the user to paste: `words` quoted for the
        shell, then `--data-dir` when runs are not kept in the default folder (the shell
        it is pasted in may not have the environment or the folder this one had)."""
        line = shlex.join(["mala-tui", *words])
        data_dir = self.resolved_data_dir()
        if data_dir != default_data_dir():
            line += f" --data-dir {shlex.quote(str(data_dir))}"
        return line


def default_data_dir() -> Path:
    """Where runs are kept when no data dir is set: the user data dir platformdirs gives."""
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)).absolute()


def absolute_path(path: Path) -> Path:
    """`path` with `~` expanded, against the process's working folder when relative."""
    return path.expanduser().absolute()


SECTIONS: dict[str, type[BaseModel]] = {
    "context": ContextSettings,
    "idle": IdleSettings,
    "agent": AgentSettings,
    "storage": StorageSettings,
    "ui": UiSettings,
    "pricing": PricingSettings,
    "budget": BudgetSettings,
    "cluster": ClusterSettings,
}
