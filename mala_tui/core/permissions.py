"""The permission book of one session: tool uses the agent asked for, and what was answered.

Claude Code asks before a tool use outside its allowed tools. mala-tui answers
by a policy (`ask`, `allow`, `deny`) or, under `ask`, by putting the request in
front of the operator. The book keeps the requests still waiting, in the order
they were asked, and the tools the operator allowed "for this session": a
session keeps those across its restarts, so it is not asked the same thing
again. Pure: times are passed in, and nothing here waits.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from mala_tui.core.text import clean, shorten

SUMMARY_CHARS: Final = 160
"""A request's one-line summary is cut here; the input is kept beside it."""
INPUT_CHARS: Final = 1_000_000
"""The input is kept whole up to here: past any tool input a model writes (its output is
bounded), yet a bound. Past it the input is cut, says so, and allow is not offered: a
person must see everything they approve."""

CUT_INPUT_NOTE: Final = (
    "its input is too long to be shown whole, so allow is not offered (to allow such a "
    "tool, add it to agent.allowed_tools or run with --permissions allow)"
)
"""What every console says of a request whose input was cut (`PermissionRequest.input_cut`)."""


class PermissionPolicy(StrEnum):
    """How tool uses outside the allowed tools are answered."""

    ASK = "ask"
    ALLOW = "allow"
    DENY = "deny"


class PermissionAnswer(StrEnum):
    ALLOW_ONCE = "allow_once"
    ALLOW_SESSION = "allow_session"
    """Allow, and allow this tool without asking for the rest of the session."""
    DENY = "deny"

    @property
    def allows(self) -> bool:
        return self is not PermissionAnswer.DENY


class AnsweredBy(StrEnum):
    """Who answered a question (a permission request, a restart approval), as the journal
    says it: `decided_by` of `permission_decided` and `approval_decided`, `approved_by` of
    `restart`."""

    OPERATOR = "operator"
    POLICY = "policy"
    TIMEOUT = "timeout"
    SESSION_RULE = "session-rule"
    """The operator allowed this tool for the session earlier."""
    AUTO = "auto"
    """A restart nobody had to approve (approval was not required)."""
    RESUME = "resume"
    """A restart from the checkpoint when `mala-tui resume` picked an interrupted run up."""


@dataclass(frozen=True, slots=True)
class PermissionRequest:
    """One tool use waiting for an answer."""

    session: str
    request_id: str
    tool: str
    summary: str
    """The input in one line, control characters made visible, cut to SUMMARY_CHARS."""
    input_text: str
    """The input as indented JSON, as the agent sent it (shown literally; see INPUT_CHARS)."""
    asked_at: float
    input_cut: bool = False
    """The input was longer than INPUT_CHARS: `input_text` holds only its start."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """An answer given without asking anyone (a policy, a session rule)."""

    answer: PermissionAnswer
    by: AnsweredBy
    reason: str


def input_text(tool_input: Mapping[str, Any]) -> str:
    """A tool's input as indented JSON (what does not serialise is shown by its str()),
    cut at INPUT_CHARS with a note of how much more there was."""
    return _shown(_whole(tool_input))


def _whole(tool_input: Mapping[str, Any]) -> str:
    try:
        return json.dumps(dict(tool_input), indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        return str(dict(tool_input))


def _shown(text: str) -> str:
    if len(text) <= INPUT_CHARS:
        return text
    return f"{text[:INPUT_CHARS]}\n[... {len(text) - INPUT_CHARS:,} more characters]"


#: The input field that says most about a call of each well-known tool.
_MAIN_FIELD: Final = {
    "Bash": "command",
    "Read": "file_path",
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
    "WebFetch": "url",
    "WebSearch": "query",
    "Grep": "pattern",
    "Glob": "pattern",
    "Task": "description",
}


def summarize_input(tool: str, tool_input: Mapping[str, Any]) -> str:
    """The input in one line: the tool's main field when it has one, else compact JSON."""
    main = _MAIN_FIELD.get(tool)
    value = tool_input.get(main) if main else None
    if isinstance(value, str) and value.strip():
        text = value
    else:
        try:
            text = json.dumps(dict(tool_input), ensure_ascii=False, default=str)
        except (TypeError, ValueError, RecursionError):
            text = str(dict(tool_input))
    return shorten(clean(text, one_line=True), SUMMARY_CHARS)


def policy_verdict(
    policy: PermissionPolicy, tool: str, session_tools: frozenset[str]
) -> Verdict | None:
    """The answer given without asking; None when the operator must be asked."""
    if tool in session_tools:
        return Verdict(
            PermissionAnswer.ALLOW_ONCE,
            AnsweredBy.SESSION_RULE,
            f"{tool} was allowed for this session",
        )
    if policy is PermissionPolicy.ALLOW:
        return Verdict(PermissionAnswer.ALLOW_ONCE, AnsweredBy.POLICY, "permissions = allow")
    if policy is PermissionPolicy.DENY:
        return Verdict(
            PermissionAnswer.DENY,
            AnsweredBy.POLICY,
            f"{tool} is not among this agent's allowed tools (permissions = deny)",
        )
    return None


@dataclass
class PermissionBook:
    """One session's waiting requests and its tools allowed for the session."""

    session: str
    pending: list[PermissionRequest] = field(default_factory=list)
    session_tools: frozenset[str] = frozenset()
    asked: int = 0
    """Requests ever made in this session: numbers each one (ids stay unique across restarts)."""

    def open(self, tool: str, tool_input: Mapping[str, Any], at: float) -> PermissionRequest:
        """A new request, numbered; not yet waiting (`wait` puts it in the queue)."""
        self.asked += 1
        whole = _whole(tool_input)
        return PermissionRequest(
            session=self.session,
            request_id=str(self.asked),
            tool=tool,
            summary=summarize_input(tool, tool_input),
            input_text=_shown(whole),
            asked_at=at,
            input_cut=len(whole) > INPUT_CHARS,
        )

    def wait(self, request: PermissionRequest) -> None:
        self.pending.append(request)

    def find(self, request_id: str) -> PermissionRequest | None:
        return next((r for r in self.pending if r.request_id == request_id), None)

    def settle(self, request_id: str, answer: PermissionAnswer) -> PermissionRequest:
        """Take a waiting request out of the queue; "allow for this session" remembers its tool.

        Raises:
            KeyError: no request with this id is waiting (answered already, or never asked).
        """
        request = self.find(request_id)
        if request is None:
            raise KeyError(f"no permission request {request_id!r} is waiting in {self.session!r}")
        self.pending.remove(request)
        if answer is PermissionAnswer.ALLOW_SESSION:
            self.session_tools = self.session_tools | {request.tool}
        return request
