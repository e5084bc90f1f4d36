"""The real agent: Claude Code through claude-agent-sdk and the CLI bundled in its wheel.

What this backend does with the SDK, and why (what was observed of the SDK and its
CLI is written up in docs/ARCHITECTURE.md):
- `include_partial_messages=True`: the raw `message_start` carries each API call's
  input and cache fields, `message_delta` its final output count. That per-call
  figure is the context: the whole prompt the model read for that call. The
  ResultMessage's usage is a per-turn sum (every call's prompt counted again) and
  only feeds the cumulative fallback.
- Messages with a `parent_tool_use_id` belong to subagents, not to the main
  window: signs of life only. The background work the CLI lists is followed
  (`claude_background`): the session is done when the CLI is, not when a turn ends.
- A wakeup the agent schedules (`ScheduleWakeup`, `CronCreate`) is refused to it with
  the reason: the session ends when its work does, so nothing would wake it. That hook
  and the CLI's options are `claude_options`'.
- A PreCompact hook blocks the main thread's compaction and reports it: mala-tui is
  in charge of that window. A subagent's (the hook's input has `agent_id`) goes
  through: mala-tui does not manage a subagent's window, and `DISABLE_AUTO_COMPACT`
  is left unset because it would stop the subagents' compaction too (`cli_env`).
- Masking rewrites old tool results in the session's JSONL transcript, then the
  session is resumed by id in a new process, which reads the rewritten file.
- The PostToolUse hook is the clean point inside a turn: the CLI waits for its
  answer before the next model request, so a stop there throws nothing away. Inside a
  subagent (`agent_id`) it winds the subagent down or withholds a result that would
  overflow its window (`subagent_windows`).
- With a permission gate, a tool use outside the allowed tools goes to `can_use_tool`
  (the SDK then asks over the control protocol, which needs streaming input): the
  CLI waits for the answer before running the tool, so the stream is silent meanwhile.
- Reading the SDK's messages into stream items is `claude_stream`'s.
- The CLI's stderr is piped (`stderr=`), never inherited: what it prints can come from the
  endpoint, escapes and keys included; `cli_stderr` cleans, redacts and keeps it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import warnings
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from claude_agent_sdk import (
    CanUseToolShadowedWarning,
    ClaudeSDKClient,
    HookContext,
    HookInput,
    HookJSONOutput,
    HookMatcher,
    PermissionResult,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    TaskNotificationMessage,
    TaskStartedMessage,
    ToolPermissionContext,
)

from mala_tui.core import events as ev
from mala_tui.core.fold import FoldReport
from mala_tui.core.observations import (
    BackgroundChanged,
    CompactionObserved,
    SessionIdentified,
    TurnEnded,
)
from mala_tui.runtime.backends.base import (
    ActivityItem,
    MaskError,
    PermissionAsk,
    PermissionGate,
    ProblemItem,
    RecordItem,
    SessionSpec,
    StreamItem,
    ToolGate,
)
from mala_tui.runtime.backends.claude_fold import fold_transcript
from mala_tui.runtime.backends.claude_markers import keep_breakpoint
from mala_tui.runtime.backends.claude_options import WAKEUP_TOOLS, build_options, refuse_wakeup
from mala_tui.runtime.backends.claude_stream import StreamConverter, model_usage_totals, result_size
from mala_tui.runtime.backends.claude_transcripts import (
    copy_for_fork,
    find_transcript,
    project_folder,
    rewrite_transcript,
)
from mala_tui.runtime.backends.cli_env import absolute, config_dir
from mala_tui.runtime.backends.cli_stderr import SDK_LOG, STDERR_DIR, StderrLog, keep_sdk_log
from mala_tui.runtime.backends.subagent_transcripts import SubagentTranscripts
from mala_tui.runtime.backends.subagent_windows import SubagentWindows
from mala_tui.runtime.journal.writer import safe_file_name

SUBAGENT_READ_EVERY = 0.5
"""Seconds between two reads of the subagents' transcripts while they work."""


class ClaudeClient:
    """One Claude Code CLI process."""

    def __init__(
        self,
        spec: SessionSpec,
        *,
        resume: str | None,
        clock: Callable[[], float],
        stderr: StderrLog | None = None,
    ) -> None:
        self.spec = spec
        self._clock = clock
        self.resume = resume
        self._stderr = stderr if stderr is not None else StderrLog(None)
        self._stderr_said = False
        """This turn's first stderr line was said (the rest is only kept)."""
        self._side: asyncio.Queue[StreamItem] = asyncio.Queue()
        hooks: dict[Any, list[HookMatcher]] = {
            "PostToolUse": [HookMatcher(hooks=[self._after_tool])],
            "PostToolUseFailure": [HookMatcher(hooks=[self._after_tool])],
        }
        if not spec.own_compaction:
            hooks["PreCompact"] = [HookMatcher(hooks=[self._block_compaction])]
        hooks["PreToolUse"] = [HookMatcher(matcher=WAKEUP_TOOLS, hooks=[refuse_wakeup])]
        self._stop_requested = False
        self._gate: ToolGate | None = None
        self._permission_gate: PermissionGate | None = None
        self._client = ClaudeSDKClient(
            build_options(spec, resume=resume, hooks=hooks, stderr=self._on_stderr)
        )
        self._converter = StreamConverter(clock)
        self._subagents = SubagentTranscripts(spec.name, clock)
        self._subagents_of: str | None = None
        self._subagents_read_at = 0.0
        limits = spec.subagent_limits
        self._windows = SubagentWindows(spec.name, limits, clock) if limits is not None else None

    def _process(self) -> Any:
        # The SDK does not expose the process; its transport holds it. Looked up
        # defensively so an SDK change degrades to "unknown", never a crash.
        transport = getattr(self._client, "_transport", None)
        return getattr(transport, "_process", None)

    @property
    def pid(self) -> int | None:
        pid = getattr(self._process(), "pid", None)
        return pid if isinstance(pid, int) else None

    async def connect(self) -> None:
        if self._permission_gate is not None:
            # Only with a gate: without one, a tool outside the allowed set is refused
            # by the CLI itself. The gate is given after the options were made.
            self._client.options = replace(self._client.options, can_use_tool=self._can_use_tool)
        with warnings.catch_warnings():
            # The SDK warns that the allowed tools never reach the callback: that is the
            # point, only the tools outside them are to be asked about.
            warnings.simplefilter("ignore", CanUseToolShadowedWarning)
            await self._client.connect()

    async def query(self, prompt: str) -> None:
        # A stop asked for as the previous turn was ending belongs to that turn.
        self._stop_requested = False
        await self._client.query(prompt)

    async def interrupt(self) -> None:
        await self._client.interrupt()

    async def disconnect(self) -> None:
        process = self._process()
        try:
            await self._client.disconnect()
        finally:
            # The SDK waits for the process but leaves its stdout pipe to close at EOF,
            # which never comes when reading stopped on a full buffer (a disconnect in
            # the middle of a stream): the pipe then outlives the event loop. Close it.
            aclose = getattr(process, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()

    def last_records(self) -> list[ev.Event]:
        """What the subagents' transcripts hold that was not read yet, read once the process
        has closed (a subagent's last answer is written after its end is reported)."""
        return self._subagents.final()

    async def context_usage(self) -> Mapping[str, Any]:
        """The CLI's own /context figures: ground truth for tests, too costly per message."""
        return dict(await self._client.get_context_usage())

    def stop_after_tools(self) -> bool:
        self._stop_requested = True
        return True

    def set_tool_gate(self, gate: ToolGate | None) -> None:
        self._gate = gate

    def set_permission_gate(self, gate: PermissionGate | None) -> None:
        self._permission_gate = gate

    async def _can_use_tool(
        self, tool: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResult:
        # The CLI waits for this answer before running the tool. A cancellation (the
        # CLI withdrew the request, the process is closing) passes through to the gate.
        gate = self._permission_gate
        if gate is None:
            return PermissionResultDeny(message="no one is there to allow this tool")
        ask = PermissionAsk(context.tool_use_id or "", tool, dict(tool_input))
        try:
            verdict = await gate(ask)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the CLI must get an answer, whatever the gate does
            self._side.put_nowait(
                ProblemItem(ev.Where.PERMISSION, f"the permission gate failed: {exc!r}")
            )
            return PermissionResultDeny(message="mala-tui could not ask for this permission")
        if verdict.allow:
            return PermissionResultAllow()
        return PermissionResultDeny(message=verdict.message)

    async def _after_tool(
        self, hook_input: HookInput, tool_use_id: str | None, context: HookContext
    ) -> HookJSONOutput:
        # The CLI waits for this answer before its next model request: the one clean
        # point inside a turn. A stop here ends the turn with terminal_reason
        # "hook_stopped" and nothing thrown away. Subagents' tools are not that point.
        if hook_input.get("agent_id"):
            return self._subagent_tool(hook_input)
        gate_says_stop = self._ask_gate(hook_input, tool_use_id)
        if not (self._stop_requested or gate_says_stop):
            return {}
        self._stop_requested = False
        return {"continue_": False, "stopReason": "mala-tui is managing the context window"}

    def _subagent_tool(self, hook_input: HookInput) -> HookJSONOutput:
        """A subagent's result: its window near full, it is told to wind down, or the result
        is withheld (subagent_windows); what was done is journaled beside the stream."""
        if self._windows is None:
            return {}
        try:
            output, records = self._windows.after_tool(hook_input)
        except Exception as exc:  # the hook answers the CLI whatever happens here
            self._side.put_nowait(ProblemItem(ev.Where.HOOK, f"a subagent's result: {exc!r}"))
            return {}
        for event in records:
            self._side.put_nowait(RecordItem(event))
        return cast("HookJSONOutput", output)

    def _ask_gate(self, hook_input: HookInput, tool_use_id: str | None) -> bool:
        """The gate's answer for this result; False if it has none or fails."""
        if self._gate is None:
            return False
        data: Mapping[str, Any] = hook_input
        try:
            return self._gate(
                str(tool_use_id or data.get("tool_use_id") or ""),
                str(data.get("tool_name") or ""),
                # A failed tool has no response; its error is what the model reads.
                result_size(data.get("tool_response", data.get("error"))),
            )
        except Exception as exc:  # the hook answers the CLI whatever the gate does
            self._side.put_nowait(ProblemItem(ev.Where.HOOK, f"the tool gate failed: {exc!r}"))
            return False

    async def _block_compaction(
        self, hook_input: HookInput, tool_use_id: str | None, context: HookContext
    ) -> HookJSONOutput:
        if hook_input.get("agent_id"):
            # A subagent's own window, which mala-tui does not manage: blocked, the
            # subagent could only die "Prompt is too long", its report lost.
            return {}
        trigger = str(hook_input.get("trigger", "auto"))
        self._side.put_nowait(CompactionObserved(self._clock(), trigger, blocked=True))
        return {"decision": "block", "reason": "mala-tui manages this session's context window"}

    async def stream(self) -> AsyncIterator[StreamItem]:
        try:
            async for message in self._client.receive_messages():
                while not self._side.empty():
                    yield self._side.get_nowait()
                for item in self._convert(message):
                    yield item
        except Exception as exc:
            last = self._stderr.last
            if last is None:
                raise
            # Why the CLI ended is often only on its stderr: said with the failure.
            raise AgentStreamError(f"{exc}; Claude Code said: {self._stderr.said(last)}") from exc
        while not self._side.empty():
            yield self._side.get_nowait()

    def _convert(self, message: object) -> list[StreamItem]:
        """The stream items of one SDK message (claude_stream does the reading), and what
        the subagents' transcripts added meanwhile."""
        if isinstance(message, ResultMessage):
            self._stop_requested = False  # a stop asked for belongs to the turn that ended
            self._stderr_said = False
        if self._windows is not None:
            self._windows.seen(message)
        items = self._converter.convert(message)
        records = self._subagent_news(message, items)
        if isinstance(message, ResultMessage) and isinstance(message.total_cost_usd, int | float):
            records.append(
                ev.CliCostReported(
                    at=self._clock(),
                    session=self.spec.name,
                    session_id=message.session_id,
                    cost_usd=float(message.total_cost_usd),
                    **model_usage_totals(message.model_usage),
                )
            )
        # Records first: after a turn's end that ends the session, nothing more is read.
        return [RecordItem(event) for event in records] + items

    def _subagent_news(self, message: object, items: list[StreamItem]) -> list[ev.Event]:
        """Read the subagents' transcripts when the stream says they moved: a subagent's
        message, a task's start or end, a turn's end (at most twice a second otherwise)."""
        for item in items:
            if isinstance(item, SessionIdentified) and self._subagents_of != item.session_id:
                self._subagents_of = item.session_id
                project = project_folder(config_dir(self.spec), absolute(self.spec.cwd).resolve())
                self._subagents.follow(project / item.session_id / "subagents")
        if isinstance(message, TaskStartedMessage) and message.task_type == "local_agent":
            self._subagents.in_stream(message.task_id)
        if isinstance(message, TaskNotificationMessage):
            return self._subagents.ended(message.task_id, message.status, message.summary)
        now = time.monotonic()
        due = any(isinstance(item, TurnEnded) for item in items) or (
            now - self._subagents_read_at >= SUBAGENT_READ_EVERY
            and any(isinstance(item, ActivityItem | BackgroundChanged) for item in items)
        )
        if not due:
            return []
        self._subagents_read_at = now
        return self._subagents.read()

    def _on_stderr(self, raw: str) -> None:
        """A line the CLI printed on stderr: kept safe; the first of a turn said in short."""
        line = self._stderr.add(raw)
        if not self._stderr_said:
            self._stderr_said = True
            self._side.put_nowait(ProblemItem(ev.Where.CLAUDE_STDERR, self._stderr.said(line)))


class AgentStreamError(Exception):
    """The agent's stream broke; the message says how, and what the CLI last printed."""


class ClaudeBackend:
    """Makes Claude Code clients; masks by rewriting the session's transcript file."""

    def __init__(self, *, backup_dir: Path | None = None, stderr_dir: Path | None = None) -> None:
        self.backup_dir = backup_dir
        """Where the lines a mask or a fold changes are kept as they were (nothing is lost)."""
        self.stderr_dir = stderr_dir
        """Where what the CLIs print on stderr is kept, one file a session (else not kept)."""
        self._stderr: dict[str, StderrLog] = {}
        keep_sdk_log(stderr_dir / SDK_LOG if stderr_dir is not None else None)

    @classmethod
    def for_run(cls, folder: Path) -> ClaudeBackend:
        """A backend keeping its files in a run's folder."""
        return cls(backup_dir=folder / "transcripts", stderr_dir=folder / STDERR_DIR)

    def create(
        self, spec: SessionSpec, *, resume: str | None, clock: Callable[[], float]
    ) -> ClaudeClient:
        if resume is not None and resume == spec.fork_of:
            # The CLI looks for the session it resumes in the project folder of its own
            # working folder: a fork working elsewhere (a worktree of its own) needs the
            # forked transcript there. What the CLI then writes is the fork's own file.
            copy_for_fork(config_dir(spec), resume, absolute(spec.cwd).resolve())
        log = self._stderr.get(spec.name)
        if log is None:
            path = None
            if self.stderr_dir is not None:
                path = self.stderr_dir / f"{safe_file_name(spec.name)}.log"
            log = self._stderr[spec.name] = StderrLog(path)
        return ClaudeClient(spec, resume=resume, clock=clock, stderr=log)

    def transcript_path(self, spec: SessionSpec, session_id: str) -> Path | None:
        try:
            return find_transcript(config_dir(spec), session_id)
        except MaskError:
            return None

    async def mask_transcript(
        self, spec: SessionSpec, session_id: str, placeholders: Mapping[str, str]
    ) -> int:
        path = find_transcript(config_dir(spec), session_id)
        return await asyncio.to_thread(rewrite_transcript, path, placeholders, self.backup_dir)

    async def fold_transcript(
        self, spec: SessionSpec, session_id: str, notes: Sequence[str]
    ) -> FoldReport | None:
        path = find_transcript(config_dir(spec), session_id)
        return await asyncio.to_thread(fold_transcript, path, notes, self.backup_dir)

    async def keep_breakpoint(self, spec: SessionSpec, session_id: str) -> str | None:
        path = find_transcript(config_dir(spec), session_id)
        return await asyncio.to_thread(keep_breakpoint, path)
