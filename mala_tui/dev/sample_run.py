"""The sample run: seven made-up sessions, one in each state worth showing.

Screenshots, snapshot tests and the UI tests watch it (through
`dev.fake_source.FakeLiveSource`, or read back as `mala-tui show` would:
`sample_state`). Its times are offsets from `dev.sample_session.T0`, so its screens
are the same on every machine.
"""

from __future__ import annotations

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.checkpoint import CheckpointOrigin
from mala_tui.core.observations import Decision
from mala_tui.core.permissions import AnsweredBy
from mala_tui.core.phases import Phase, Trigger
from mala_tui.core.retry import RetryDecision
from mala_tui.core.run_view import RunState
from mala_tui.core.usage import UsageSource
from mala_tui.dev.sample_session import T0, WINDOW, SampleSession

CHECKPOINT_1 = """\
## Goal
Move the settings screen to the new form widgets without changing what is saved.

## Completed Work
- Read src/settings/form.py and src/settings/store.py
- Replaced the three text inputs with `FormField` (tests pass)

## Remaining Tasks
- Port the colour picker
- Port the keyboard shortcuts table

## Key Decisions
- Keep the store's JSON format: older versions read it.
"""

CHECKPOINT_2 = """\
## Goal
Move the settings screen to the new form widgets without changing what is saved.

## Completed Work
- Read src/settings/form.py and src/settings/store.py
- Replaced the three text inputs with `FormField` (tests pass)
- Ported the colour picker; see [link=https://example.com]docs[/link] for the palette

## Remaining Tasks
- Port the keyboard shortcuts table

## Do Not Redo
- The colour picker port (commit 4f2a9c1)

## Key Decisions
- Keep the store's JSON format: older versions read it.
"""


def _normal() -> SampleSession:
    s = SampleSession(
        "parser-fix", "Fix the off-by-one in the tokenizer's line counting (issue 42)."
    )
    s.start(0)
    s.message(5, "tool_call", "Read", "src/tokenizer.py")
    s.message(6, "tool_result", "Read", "def count_lines(text): ...")
    s.climb(10, 600, 0.05, 0.33, steps=24)
    s.message(610, "tool_call", "Bash", "pytest tests/test_tokenizer.py -q")
    s.message(640, "tool_result", "Bash", "1 failed, 41 passed", error=True)
    return s


def _soft() -> SampleSession:
    s = SampleSession("api-docs", "Write reference docs for every public endpoint in api/routes.")
    s.start(0)
    s.climb(10, 300, 0.08, 0.43, steps=16, source=UsageSource.CUMULATIVE)
    s.phase_to(305, Phase.MASKING, Trigger.SOFT_PRESSURE)
    s.mask(310, 9, 0.43, 9, 54_000)
    s.phase_to(316, Phase.RUNNING, Trigger.MASK_APPLIED)
    s.climb(320, 640, 0.16, 0.46, steps=14, source=UsageSource.CUMULATIVE)
    # It delegates: one subagent mapped the routes and is done, two document them still,
    # the second compacted once by Claude Code.
    s.subagent(20, "a3f9e01c", "Explore", "Map the routes under api/routes", background=False)
    s.subagent_calls(24, 110, "a3f9e01c", 0.02, 0.17, steps=6)
    s.add(
        ev.SubagentEnded(
            at=T0 + 115, session=s.name, agent_id="a3f9e01c", how=ev.SubagentEnd.COMPLETED
        )
    )
    s.subagent(330, "b71c2d4e", "general-purpose", "Document the orders endpoints")
    s.subagent_calls(334, 630, "b71c2d4e", 0.03, 0.31, steps=10)
    s.subagent(332, "c0d5e6f7", "general-purpose", "Document the users and auth endpoints")
    s.subagent_calls(336, 470, "c0d5e6f7", 0.04, 0.88, steps=8)
    s.add(
        ev.SubagentCompacted(
            at=T0 + 480,
            session=s.name,
            agent_id="c0d5e6f7",
            pre_tokens=176_000,
            post_tokens=31_000,
        )
    )
    s.subagent_calls(490, 636, "c0d5e6f7", 0.17, 0.44, steps=6)
    return s


def _hard() -> SampleSession:
    s = SampleSession(
        "migrate-db", "Migrate the orders tables to the new schema and backfill them."
    )
    s.start(0)
    s.climb(10, 300, 0.1, 0.42, steps=14)
    s.phase_to(305, Phase.MASKING, Trigger.SOFT_PRESSURE)
    s.mask(306, 4, 0.42, 4, 6_000)
    s.phase_to(312, Phase.RUNNING, Trigger.MASK_APPLIED)
    s.climb(320, 630, 0.39, 0.82, steps=12)
    s.phase_to(632, Phase.WINDING_DOWN, Trigger.HARD_PRESSURE)
    s.add(ev.WindDownSent(at=T0 + 632, session=s.name, tokens=164_000, window=WINDOW))
    return s


def _awaiting() -> SampleSession:
    s = SampleSession(
        "settings-form", "Move the settings screen to the new form widgets.", require_approval=True
    )
    s.start(0)
    s.climb(10, 200, 0.05, 0.41, steps=10)
    s.phase_to(201, Phase.MASKING, Trigger.SOFT_PRESSURE)
    s.mask(202, 5, 0.41, 5, 12_000)
    s.phase_to(208, Phase.RUNNING, Trigger.MASK_APPLIED)
    s.climb(210, 300, 0.35, 0.81, steps=6)
    s.phase_to(301, Phase.WINDING_DOWN, Trigger.HARD_PRESSURE)
    s.phase_to(320, Phase.CHECKPOINTING, Trigger.WIND_DOWN_DONE)
    s.add(
        ev.CheckpointSaved(
            at=T0 + 330,
            session=s.name,
            number=1,
            origin=CheckpointOrigin.TAGGED,
            text=CHECKPOINT_1,
            path="/runs/sample/settings-form-1.md",
        )
    )
    s.phase_to(331, Phase.AWAITING_APPROVAL, Trigger.CHECKPOINT_FOR_APPROVAL)
    s.add(
        ev.ApprovalRequested(
            at=T0 + 331, session=s.name, checkpoint_number=1, reason="hard threshold reached (81%)"
        )
    )
    s.add(
        ev.ApprovalDecided(
            at=T0 + 350, session=s.name, decision=Decision.APPROVE, decided_by=AnsweredBy.OPERATOR
        )
    )
    s.phase_to(350, Phase.RESTARTING, Trigger.APPROVED)
    s.add(
        ev.Restarted(
            at=T0 + 352,
            session=s.name,
            continuation=1,
            reason="hard threshold reached (81%)",
            tokens_before=162_000,
            checkpoint_number=1,
            approved_by=AnsweredBy.OPERATOR,
        )
    )
    s.phase_to(353, Phase.RUNNING, Trigger.RESTARTED)
    s.climb(360, 600, 0.12, 0.82, steps=12)
    s.phase_to(601, Phase.WINDING_DOWN, Trigger.HARD_PRESSURE)
    s.phase_to(615, Phase.CHECKPOINTING, Trigger.WIND_DOWN_DONE)
    s.add(
        ev.CheckpointSaved(
            at=T0 + 625,
            session=s.name,
            number=2,
            origin=CheckpointOrigin.TAGGED,
            text=CHECKPOINT_2,
            path="/runs/sample/settings-form-2.md",
        )
    )
    s.phase_to(626, Phase.AWAITING_APPROVAL, Trigger.CHECKPOINT_FOR_APPROVAL)
    s.add(
        ev.ApprovalRequested(
            at=T0 + 626, session=s.name, checkpoint_number=2, reason="hard threshold reached (82%)"
        )
    )
    return s


def _done() -> SampleSession:
    s = SampleSession("flaky-tests", "Find why test_upload is flaky and fix it.")
    s.start(0)
    s.climb(10, 250, 0.04, 0.31, steps=12)
    s.phase_to(260, Phase.DONE, Trigger.TASK_DONE)
    s.add(
        ev.SessionEnded(at=T0 + 260, session=s.name, status=EndStatus.DONE, reason="task finished")
    )
    return s


def _failed() -> SampleSession:
    s = SampleSession(
        "release-notes", "Draft the release notes from the merged pull requests.", max_restarts=2
    )
    s.start(0)
    s.climb(10, 120, 0.03, 0.22, steps=6, source=UsageSource.ESTIMATE)
    s.add(
        ev.IdleTimeoutSeen(
            at=T0 + 180,
            session=s.name,
            idle_seconds=120,
            retry=1,
            decision=RetryDecision.RESUME,
            delay=0,
        )
    )
    s.add(
        ev.IdleTimeoutSeen(
            at=T0 + 320,
            session=s.name,
            idle_seconds=120,
            retry=2,
            decision=RetryDecision.RESUME,
            delay=5,
        )
    )
    s.add(
        ev.ErrorRecorded(
            at=T0 + 330,
            session=s.name,
            where=ev.Where.AGENT,
            message="FileNotFoundError: [Errno 2] No such file or directory: 'CHANGES.md'",
        )
    )
    s.phase_to(331, Phase.FAILED, Trigger.FAIL)
    s.add(
        ev.SessionEnded(
            at=T0 + 331,
            session=s.name,
            status=EndStatus.FAILED,
            reason="idle timeout: max retries (2) exceeded",
        )
    )
    return s


def _starting() -> SampleSession:
    s = SampleSession("new-endpoint", "Add a /health endpoint with a test.")
    s.start(630)
    return s


def sample_events() -> list[ev.Event]:
    """The sample run's events, in time order: seven sessions, one in each state worth showing."""
    sessions = [_normal(), _soft(), _hard(), _awaiting(), _done(), _failed(), _starting()]
    events: list[ev.Event] = [
        ev.RunStarted(
            at=T0,
            run_id="20250615-sample",
            sessions=tuple(s.name for s in sessions),
            mode=ev.RunMode.SAMPLE,
        )
    ]
    merged = sorted((e for s in sessions for e in s.events), key=lambda e: e.at)
    return events + merged


def sample_permission_request() -> ev.PermissionRequested:
    """parser-fix asking to run a command outside its allowed tools (not in the sample run:
    the screenshot and the tests of the permission screen add it)."""
    command = "uv run pytest -q tests/tokenizer --snapshot-update && git diff --stat"
    return ev.PermissionRequested(
        at=T0 + 700,
        session="parser-fix",
        request_id="1",
        tool="Bash",
        summary=command,
        input_text=(
            "{\n"
            f'  "command": "{command}",\n'
            '  "description": "Regenerate the tokenizer snapshots and show what changed"\n'
            "}"
        ),
    )


def sample_state() -> RunState:
    """The sample run as `mala-tui show` would read it back."""
    return RunState().apply_all(sample_events())
