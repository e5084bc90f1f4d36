"""Each subagent's window as the stream shows it, and the hook's answer inside it.

The stream carries each subagent's (not nested) API call as an `AssistantMessage` with
`parent_tool_use_id` (its `Agent` call) and the call's usage as of `message_start`: the
prompt's input and cache fields exact, the output count a placeholder. Inside a subagent,
the PostToolUse hook's input names it (`agent_id`) and the tool call (`tool_use_id`),
which the call that made it listed: so a result is judged against the prompt of the very
call that asked for it. The hook may run before the stream's consumer has read that call;
then the subagent's latest call known stands in (one call behind), and with none known,
the result alone is judged. Nested subagents never reach the stream: only their results
count. What to do is `core.subagent_window`'s decision.

Observed with the bundled CLI 2.1.330 (docs/ARCHITECTURE.md): a PostToolUse answer's
`additionalContext` reaches the subagent's model, appended to the result as a
`<system-reminder>`; `updatedToolOutput` replaces the result only in the tool's own
output shape (Read: `{"type": "text", "file": {..., "content"}}`; Bash: `{"stdout",
"stderr", "interrupted", ...}`), any other shape being ignored silently. So a result is
withheld only from the tools whose shape was checked; from another tool the subagent is
told to wind down instead.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from claude_agent_sdk import AssistantMessage, TaskStartedMessage
from claude_agent_sdk import ToolUseBlock as SdkToolUseBlock

from mala_tui.core import events as ev
from mala_tui.core.subagent_window import (
    SubagentAct,
    SubagentLimits,
    SubagentVerdict,
    judge,
    wind_down_text,
    withheld_text,
)
from mala_tui.core.usage import CallUsage, UsageFieldError
from mala_tui.runtime.backends.claude_stream import result_size


def replaced_output(tool: str, response: object, text: str) -> object | None:
    """`response` with its content replaced by `text`, in the tool's own shape; None for a
    shape not known to be taken (the CLI would ignore it and pass the result on whole)."""
    if not isinstance(response, Mapping):
        return None
    file = response.get("file")
    if tool == "Read" and response.get("type") == "text" and isinstance(file, Mapping):
        replaced = copy.deepcopy(dict(response))
        replaced["file"]["content"] = text
        return replaced
    if tool == "Bash" and isinstance(response.get("stdout"), str):
        replaced = copy.deepcopy(dict(response))
        replaced["stdout"], replaced["stderr"] = text, ""
        return replaced
    return None


class SubagentWindows:
    """One agent process's subagents: their latest prompt per `Agent` call, and what the
    hook answers after each of their tools (with the events that journal it)."""

    def __init__(self, session: str, limits: SubagentLimits, clock: Callable[[], float]) -> None:
        self._session = session
        self.limits = limits
        self._clock = clock
        self._prompt: dict[str, int] = {}
        """The latest call's prompt, by the subagent's `Agent` call (its parent tool use)."""
        self._asked_by: dict[str, tuple[str, int]] = {}
        """Tool use id -> (its subagent's Agent call, the prompt of the call that asked)."""
        self._agent_call: dict[str, str] = {}
        """Agent id -> its Agent call, once known (a task's start, a judged result)."""
        self._wound: set[str] = set()

    def seen(self, message: object) -> None:
        """A message of the stream (every one passes here; a subagent's call is kept)."""
        if isinstance(message, TaskStartedMessage) and message.tool_use_id:
            self._agent_call[message.task_id] = message.tool_use_id
            return
        if not isinstance(message, AssistantMessage) or not message.parent_tool_use_id:
            return
        if message.error is not None or message.usage is None:
            return  # a refused call's zero usage says nothing of the window
        try:
            call, _ = CallUsage.parse(message.usage)
        except UsageFieldError:
            return
        prompt = call.prompt_tokens
        self._prompt[message.parent_tool_use_id] = prompt
        for block in message.content:
            if isinstance(block, SdkToolUseBlock):
                self._asked_by[block.id] = (message.parent_tool_use_id, prompt)

    def window_of(self, agent_id: str, tool_use_id: str) -> int:
        """The subagent's window before this result: the asking call's prompt, else its
        latest call's, else 0 (not known: a nested subagent, or nothing read yet)."""
        asked = self._asked_by.pop(tool_use_id, None)
        if asked is not None:
            self._agent_call[agent_id] = asked[0]
            return asked[1]
        call = self._agent_call.get(agent_id)
        return self._prompt.get(call, 0) if call is not None else 0

    def after_tool(self, hook_input: Mapping[str, Any]) -> tuple[dict[str, Any], list[ev.Event]]:
        """The hook's answer to one of a subagent's tool results, and its events."""
        agent_id = str(hook_input.get("agent_id") or "")
        tool = str(hook_input.get("tool_name") or "")
        hook = str(hook_input.get("hook_event_name") or "PostToolUse")
        failed = hook != "PostToolUse"
        response = hook_input.get("error") if failed else hook_input.get("tool_response")
        tokens = self.window_of(agent_id, str(hook_input.get("tool_use_id") or ""))
        wound = agent_id in self._wound
        verdict = judge(self.limits, tokens, result_size(response), wound_down=wound)
        window = self.limits.window
        if verdict.act is SubagentAct.WITHHOLD and not failed:
            replaced = replaced_output(tool, response, withheld_text(tool, verdict, window))
            if replaced is not None:
                self._wound.add(agent_id)
                output = {"hookEventName": hook, "updatedToolOutput": replaced}
                return {"hookSpecificOutput": output}, [self._withheld(agent_id, tool, verdict)]
        if verdict.act is SubagentAct.CARRY_ON or agent_id in self._wound:
            return {}, []
        # Near full, or a result too big that could not be replaced: wind down, once.
        self._wound.add(agent_id)
        output = {"hookEventName": hook, "additionalContext": wind_down_text(verdict, window)}
        return {"hookSpecificOutput": output}, [self._wound_down(agent_id, tool, verdict)]

    def _withheld(self, agent_id: str, tool: str, verdict: SubagentVerdict) -> ev.Event:
        return ev.SubagentResultWithheld(
            at=self._clock(),
            session=self._session,
            agent_id=agent_id,
            tool=tool,
            tokens=verdict.tokens,
            result_tokens=verdict.result_tokens,
            window=self.limits.window,
        )

    def _wound_down(self, agent_id: str, tool: str, verdict: SubagentVerdict) -> ev.Event:
        return ev.SubagentWoundDown(
            at=self._clock(),
            session=self._session,
            agent_id=agent_id,
            tool=tool,
            tokens=verdict.tokens,
            estimate=verdict.estimate,
            window=self.limits.window,
        )
