"""What a manager knows of its session, and the few moves every part of it makes.

`ManagerState` is one plain object: every field the manager keeps is declared
here or in one of its parts (core.state_parts, core.window_belief,
core.background). The ContextManager (core.manager) owns it and hands it to its
parts (the turn flow, the projection, masking decisions, the restart flow, the
background flow, recovery, operator handling, the session's start); each part
reads and changes it, and none keeps state of its own. Its methods are the moves
every part shares: the legal-move check against the phase table, the phase
change, a turn begun, a resumed or forked conversation picked up, a fresh session
started, the session ended. The figures decisions read off it (the zone, the
projected request) are core.decision_figures'.

Each field has one owner: the one part that writes it, or a named transition here
or on the part of the state it belongs to; tests/core/test_state_owners.py holds
the core to it.

Every handler follows one rule: check that the move is legal (`check`, or
`move` before anything else changes) before changing anything, so an
observation refused with IllegalTransition leaves the state exactly as it was.

(Not to be confused with core.view's SessionState: what the UI and `show` know of
a session, rebuilt from its events.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from mala_tui.core import events as ev
from mala_tui.core.actions import Action, EndSession, EndStatus
from mala_tui.core.background import BackgroundWork
from mala_tui.core.calibration import Calibration, Density
from mala_tui.core.checkpoint import Checkpoint
from mala_tui.core.limits import Limits
from mala_tui.core.mask_economics import GrowthRate
from mala_tui.core.operator_messages import Delivery, MessageQueue, messages_block
from mala_tui.core.phases import TRANSITIONS, IllegalTransition, ManageMode, Phase, Trigger
from mala_tui.core.prompts import PromptKind, PromptSet
from mala_tui.core.resume_plan import ResumeFrom, SessionResume
from mala_tui.core.rewrite_state import RewriteState
from mala_tui.core.state_parts import Counters, Fork, Pending, TurnState
from mala_tui.core.transcript import Message, Transcript
from mala_tui.core.usage import (
    CHARS_PER_TOKEN,
    CallUsage,
    ContextUsage,
    UsageTracker,
    estimate_tokens,
)
from mala_tui.core.window import RefusalBounds, WindowSource
from mala_tui.core.window_belief import WindowBelief


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one observation decided: actions to carry out in order, events to record."""

    actions: tuple[Action, ...] = ()
    events: tuple[ev.Event, ...] = ()


@dataclass(eq=False)
class ManagerState:
    """Everything one manager knows of its session; the parts are handed this object."""

    name: str
    task: str
    limits: Limits
    prompts: PromptSet

    # -- the session's settings, as the limits started them and the operator changed them
    require_approval: bool = field(init=False)
    manage: ManageMode = field(init=False)

    # -- where the session is ------------------------------------------------------------
    phase: Phase = Phase.RUNNING
    started: bool = False
    resume: tuple[SessionResume, float, tuple[Message, ...]] | None = None
    """Where `start` picks the session up instead of its task (`mala-tui resume`)."""
    fork: Fork | None = None
    """The conversation `start` forks from instead of starting afresh on the task."""
    session_id: str | None = None
    by_hand: bool = False
    """A person has the session in the interactive Claude Code: nothing goes to it now."""
    checkpoint: Checkpoint | None = None
    end_status: EndStatus | None = None
    budget_stop: str | None = None
    """Why the session stops at its next checkpoint, not restarting (a budget, a cancel)."""
    turn: TurnState = field(default_factory=TurnState)
    pending: Pending = field(default_factory=Pending)
    counters: Counters = field(default_factory=Counters)
    background: BackgroundWork = field(default_factory=BackgroundWork)
    """What the agent runs in the background: the session is not done while it does."""
    messages: MessageQueue = field(default_factory=MessageQueue)
    """What the operator said that has not reached the agent yet."""

    # -- the conversation and its measures -----------------------------------------------
    transcript: Transcript = field(default_factory=Transcript)
    tracker: UsageTracker = field(default_factory=UsageTracker)
    calibration: Calibration = field(default_factory=Calibration)
    growth: GrowthRate = field(default_factory=GrowthRate)
    rewrites: RewriteState = field(default_factory=RewriteState)
    chars_at_call: int | None = None
    """Transcript characters when the latest per-call usage arrived."""
    cache_refreshed_at: float | None = None
    """When the latest API call began: its request read the prompt cache and so kept it
    warm for `limits.cache_ttl_seconds` more."""
    usage_missing: bool = False
    """An answer came without per-call usage: decide on the estimate."""
    masked_keys: set[tuple[str, str]] = field(default_factory=set)
    """What masked results had fetched (see masking.call_key)."""
    needed: set[tuple[str, str]] = field(default_factory=set)
    """Fetched again after a mask: the agent needs it; its latest fetch stays unmasked."""

    # -- the window: as told, and as the API's answers bound it --------------------------
    belief: WindowBelief = field(init=False)
    restart_floor: int | None = None
    """The first request of the fresh session after the latest restart: where one
    more restart would start again."""
    awaiting_floor: bool = False

    # -- a failing model endpoint --------------------------------------------------------
    api_failing_since: float | None = None
    """When the API calls began to fail, none taken since; None while they succeed."""
    api_said: str = ""
    """What Claude Code said last of the failing calls (cleaned, one line)."""

    def __post_init__(self) -> None:
        self.require_approval = self.limits.require_approval
        self.manage = self.limits.manage
        self.belief = WindowBelief((self.limits.context_limit, self.limits.window_source))

    @property
    def window(self) -> int:
        """The window decisions use (see `WindowBelief`)."""
        return self.belief.window

    @property
    def window_source(self) -> WindowSource:
        return self.belief.source

    # -- figures -------------------------------------------------------------------------

    @property
    def usage(self) -> ContextUsage:
        return self.tracker.current(self.window)

    @property
    def density(self) -> Density:
        """Tokens per chars/4 token, measured on this session's calls (see core.calibration)."""
        return self.calibration.density

    def calibrated(self, characters: int) -> int:
        """Characters of conversation as the API's tokens, by this session's density."""
        return self.density.scale(estimate_tokens(characters))

    def tokens_as_chars(self, tokens: int) -> int:
        """A token budget as characters of this session's text (its measured density)."""
        return max(1, round(tokens * CHARS_PER_TOKEN / self.density.ratio))

    def restart_makes_room(self) -> bool:
        """A fresh session after a restart starts at its system prompt and checkpoint.
        When the latest one started past the hard threshold, winding down for another
        restart frees nothing: the session masks what it can instead, and only a
        refused window restarts it."""
        floor = self.restart_floor
        return floor is None or floor < self.hard_tokens()

    def hard_tokens(self) -> int:
        return int(self.limits.hard_threshold * self.window)

    # -- what the API accepts and refuses ------------------------------------------------

    def note_accepted(self, at: float, call: CallUsage) -> tuple[ev.Event, ...]:
        """A call the API took: it bounds the window from below, and the first of a fresh
        session says where a restart starts."""
        self.belief.accepted(call.context_tokens)
        if not self.awaiting_floor:
            return ()
        self.awaiting_floor = False
        if any(message.tool_results for message in self.transcript.messages):
            return ()  # not its first request: the session has worked since
        self.restart_floor = call.prompt_tokens
        if self.restart_makes_room():
            return ()
        message = (
            f"this fresh session starts at {call.prompt_tokens:,} tokens, past the hard "
            f"threshold ({self.hard_tokens():,} of {self.window:,}): another restart "
            "would start there too, so it is not wound down at the threshold; it masks "
            "what it can, and restarts only if the API refuses the window"
        )
        return (
            ev.WarningRecorded(at=at, session=self.name, where=ev.Where.WINDOW, message=message),
        )

    def learn_from_refusal(self, at: float, refused: int) -> tuple[ev.Event, ...]:
        """The API refused a prompt of about `refused` tokens (projected before the
        turn's end changed anything): when the session's own thresholds let that
        prompt through, the window is smaller than believed (core.window)."""
        told, source = self.belief.told
        learned = self.belief.refused(refused, news_below=int(self.limits.hard_threshold * told))
        if learned is None:
            return ()
        return (
            ev.WindowLearned(
                at=at,
                session=self.name,
                window=self.window,
                accepted=learned.accepted,
                refused=learned.refused,
                believed=told,
                believed_source=source,
            ),
        )

    # -- the table -----------------------------------------------------------------------

    def check(self, trigger: Trigger) -> Phase:
        """The phase `trigger` leads to from here; IllegalTransition, changing nothing,
        when the table has no such move."""
        target = TRANSITIONS[self.phase].get(trigger)
        if target is None:
            raise IllegalTransition(
                f"{self.name}: {trigger.value} is not allowed while {self.phase.value}"
            )
        return target

    def move(self, at: float, trigger: Trigger) -> ev.PhaseChanged:
        """Take the table's move for `trigger` (checked first), and say so."""
        target = self.check(trigger)
        before, self.phase = self.phase, target
        return ev.PhaseChanged(
            at=at, session=self.name, before=before, after=target, trigger=trigger
        )

    # -- turns ---------------------------------------------------------------------------

    def begin_turn(self, prompt: str) -> None:
        """A prompt goes to the agent: a new turn, streaming, its prompt in the transcript."""
        self.turn = TurnState(prompt=prompt, streaming=True)
        self.transcript.append(Message.harness_prompt(prompt))
        self.tracker.observe_transcript_size(self.transcript.characters)

    def turn_to_come(self, prompt: str) -> None:
        """`prompt` is the next turn's, sent once a fresh agent session is up."""
        self.turn = TurnState(prompt=prompt)

    def cli_turn_begins(self) -> None:
        """The CLI started a turn of its own (to hand the agent its background work's
        reports): the session streams, with no prompt of mala-tui's."""
        self.turn = TurnState(streaming=True)

    def new_transcript(self, history: Sequence[Message] = ()) -> None:
        """The agent's conversation is now `history` (a fresh agent session: nothing)."""
        self.transcript = Transcript(history)

    # -- a person at the session -------------------------------------------------------

    def taken_over(self) -> None:
        """A person has the session in the interactive Claude Code: nothing is sent to
        the agent until it is handed back."""
        self.by_hand = True

    def handed_back(self, history: Sequence[Message]) -> None:
        """The person is done by hand: the conversation is what they left."""
        self.by_hand = False
        self.new_transcript(history)
        self.tracker.observe_transcript_size(self.transcript.characters)

    # -- how a session starts ------------------------------------------------------------

    def plan_resume(
        self, plan: SessionResume, gap_seconds: float, history: Sequence[Message]
    ) -> None:
        """`start` continues where an interrupted run left the session (`mala-tui resume`),
        under the management mode it last ran under, which its first event says."""
        self.resume = (plan, gap_seconds, tuple(history))
        if plan.carried.manage is not None:
            self.manage = plan.carried.manage

    def carry_over(self, plan: SessionResume) -> None:
        """A resumed session's counts, density, learnt window and waiting messages go on
        from the journal, and the checkpoint it restarts from, if it does."""
        carried = plan.carried
        if plan.how is ResumeFrom.CHECKPOINT and plan.checkpoint is not None:
            self.checkpoint = plan.checkpoint
        self.counters.continuation = carried.restarts
        self.counters.checkpoints = carried.checkpoints
        self.counters.masked_total = carried.masked_total
        if carried.density is not None:
            self.calibration = Calibration(prior=carried.density)
        if carried.refusal is not None:
            self.belief.carried(RefusalBounds(*carried.refusal))
        self.messages.restore(carried.messages, carried.messages_said)

    def go_on_in(
        self, session_id: str, history: Sequence[Message], density: float | None = None
    ) -> None:
        """The agent goes on in an existing conversation (resumed by its id, or forked):
        what it holds is the transcript, and its text measured `density`, if known."""
        self.session_id = session_id
        for message in history:
            self.transcript.append(message)
        if density is not None:
            self.calibration = Calibration(prior=density)

    def start_fresh_session(self, session_id: str | None) -> None:
        """A restart's fresh agent session is up: its counts and measures start again, its
        conversation holds only the first prompt (the one `turn_to_come` kept)."""
        self.counters.fresh_session()
        self.tracker.reset()
        self.calibration.restart()
        self.growth.restart()
        self.chars_at_call = None
        self.masked_keys.clear()
        self.needed.clear()
        self.session_id = session_id
        self.pending = Pending()
        self.awaiting_floor = True
        prompt = self.turn.prompt
        self.new_transcript()
        self.begin_turn(prompt)

    def messages_prompt(self, at: float, how: Delivery) -> tuple[str, tuple[ev.Event, ...]]:
        """The waiting messages as a prompt, taken off the queue; ("", ()) when none wait."""
        if not self.messages:
            return "", ()
        taken = self.messages.take()
        text = self.prompts.render(
            PromptKind.OPERATOR_MESSAGE, messages=messages_block(taken), session_name=self.name
        )
        numbers = tuple(message.number for message in taken)
        return text, (ev.MessageDelivered(at=at, session=self.name, numbers=numbers, how=how),)

    def back_to_work(
        self, at: float, kind: PromptKind, how: Delivery, **fields: object
    ) -> tuple[PromptKind, str, tuple[ev.Event, ...]]:
        """The prompt that sends the agent back to its task (its turn begun): the waiting
        messages when there are any, since they say to carry on too, else `kind`'s."""
        text, delivered = self.messages_prompt(at, how)
        if text:
            kind = PromptKind.OPERATOR_MESSAGE
        else:
            text = self.prompts.render(kind, **fields)
        self.begin_turn(text)
        return kind, text, delivered

    # -- endings -------------------------------------------------------------------------

    def background_stopped(self, at: float, reason: str) -> tuple[ev.Event, ...]:
        """The background work the agent process takes with it as it closes, said once."""
        tasks = self.background.stop_all()
        if not tasks:
            return ()
        return (ev.BackgroundStopped(at=at, session=self.name, tasks=tasks, reason=reason),)

    def reopen(self, at: float) -> ev.PhaseChanged:
        """The operator restarts an ended session by hand: it has not ended any more."""
        moved = self.move(at, Trigger.RESTART_BY_HAND)
        self.end_status = None
        return moved

    def end(self, at: float, trigger: Trigger, status: EndStatus, reason: str) -> Outcome:
        """The session ends (the move checked first): the runtime ends it, the journal says why."""
        moved = self.move(at, trigger)
        self.end_status = status
        self.turn.ended()
        return Outcome(
            (EndSession(status, reason),),
            (
                moved,
                *self.background_stopped(at, reason),
                ev.SessionEnded(
                    at=at,
                    session=self.name,
                    status=status,
                    reason=reason,
                    restarts=self.counters.continuation,
                    masked_total=self.counters.masked_total,
                ),
            ),
        )
