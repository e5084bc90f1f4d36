"""The permission book, the policy's answer, and the events as the view and the log show them."""

from __future__ import annotations

import pytest

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.describe import summary
from mala_tui.core.permissions import (
    INPUT_CHARS,
    SUMMARY_CHARS,
    AnsweredBy,
    PermissionAnswer,
    PermissionBook,
    PermissionPolicy,
    input_text,
    policy_verdict,
    summarize_input,
)
from mala_tui.core.questions import PermissionQuestion
from mala_tui.core.run_view import RunState

NONE: frozenset[str] = frozenset()


@pytest.mark.parametrize(
    ("policy", "tool", "session_tools", "expected"),
    [
        (PermissionPolicy.ASK, "Bash", NONE, None),
        (PermissionPolicy.ALLOW, "Bash", NONE, (PermissionAnswer.ALLOW_ONCE, AnsweredBy.POLICY)),
        (PermissionPolicy.DENY, "Bash", NONE, (PermissionAnswer.DENY, AnsweredBy.POLICY)),
        (
            PermissionPolicy.ASK,
            "Bash",
            frozenset({"Bash"}),
            (PermissionAnswer.ALLOW_ONCE, AnsweredBy.SESSION_RULE),
        ),
        # A session rule is the operator's own word: it holds even under deny.
        (
            PermissionPolicy.DENY,
            "Bash",
            frozenset({"Bash"}),
            (PermissionAnswer.ALLOW_ONCE, AnsweredBy.SESSION_RULE),
        ),
        (PermissionPolicy.ASK, "Write", frozenset({"Bash"}), None),
    ],
)
def test_the_policy_answers_or_leaves_it_to_the_operator(
    policy: PermissionPolicy,
    tool: str,
    session_tools: frozenset[str],
    expected: tuple[PermissionAnswer, AnsweredBy] | None,
) -> None:
    verdict = policy_verdict(policy, tool, session_tools)
    assert (None if verdict is None else (verdict.answer, verdict.by)) == expected


def test_a_deny_by_policy_tells_the_agent_why() -> None:
    verdict = policy_verdict(PermissionPolicy.DENY, "WebFetch", NONE)
    assert verdict is not None
    assert "WebFetch is not among this agent's allowed tools" in verdict.reason


def test_requests_wait_in_order_and_leave_the_queue_when_settled() -> None:
    book = PermissionBook("s1")
    first = book.open("Bash", {"command": "ls"}, at=1.0)
    second = book.open("Write", {"file_path": "a.txt", "content": "x"}, at=2.0)
    book.wait(first)
    book.wait(second)
    assert [r.request_id for r in book.pending] == ["1", "2"]
    assert book.settle("2", PermissionAnswer.DENY) == second
    assert book.pending == [first]
    with pytest.raises(KeyError, match="no permission request '2' is waiting in 's1'"):
        book.settle("2", PermissionAnswer.ALLOW_ONCE)


def test_allow_for_this_session_remembers_the_tool_and_allow_once_does_not() -> None:
    book = PermissionBook("s1")
    once = book.open("Write", {"file_path": "a"}, at=1.0)
    book.wait(once)
    book.settle(once.request_id, PermissionAnswer.ALLOW_ONCE)
    assert book.session_tools == NONE
    always = book.open("Bash", {"command": "make"}, at=2.0)
    book.wait(always)
    book.settle(always.request_id, PermissionAnswer.ALLOW_SESSION)
    assert book.session_tools == {"Bash"}
    later = policy_verdict(PermissionPolicy.ASK, "Bash", book.session_tools)
    assert later is not None and later.by is AnsweredBy.SESSION_RULE


def test_ids_keep_counting_so_they_stay_unique_in_the_session() -> None:
    book = PermissionBook("s1")
    ids = [book.open("Bash", {"command": str(i)}, at=float(i)).request_id for i in range(3)]
    assert ids == ["1", "2", "3"]


def test_the_summary_is_the_main_field_in_one_safe_line_and_the_input_is_kept_whole() -> None:
    assert summarize_input("Bash", {"command": "rm -rf build\necho \x1b[2Jdone"}) == (
        "rm -rf build \u23ce echo \u241b[2Jdone"
    )
    assert summarize_input("Write", {"file_path": "out/a.txt", "content": "hi"}) == "out/a.txt"
    assert summarize_input("mcp__x__y", {"q": 1}) == '{"q": 1}'
    long = summarize_input("Bash", {"command": "x" * 1000})
    assert len(long) <= SUMMARY_CHARS
    request = PermissionBook("s").open("Write", {"file_path": "a", "content": "[b]x[/b]"}, 1.0)
    assert '"content": "[b]x[/b]"' in request.input_text


def test_a_huge_input_is_cut_and_says_how_much_was_left_out() -> None:
    text = input_text({"content": "x" * (INPUT_CHARS + 5000)})
    assert len(text) < INPUT_CHARS + 100
    # The JSON around the content adds 19 characters: {\n  "content": "...."\n}
    assert text.endswith("[... 5,019 more characters]")


def test_the_view_counts_waiting_requests_until_answered_or_the_session_ends() -> None:
    state = RunState()
    for rid in ("1", "2"):
        state.apply(
            ev.PermissionRequested(at=1.0, session="s", request_id=rid, tool="Bash", summary="ls")
        )
    assert state.sessions["s"].snapshot().pending_permissions == 2
    state.apply(
        ev.PermissionDecided(
            at=2.0,
            session="s",
            request_id="1",
            tool="Bash",
            answer=PermissionAnswer.ALLOW_ONCE,
            decided_by=AnsweredBy.OPERATOR,
        )
    )
    assert state.sessions["s"].snapshot().pending_permissions == 1
    state.apply(ev.SessionEnded(at=3.0, session="s", status=EndStatus.STOPPED))
    assert state.sessions["s"].snapshot().pending_permissions == 0


def test_the_events_read_back_from_a_journal_line_and_describe_themselves() -> None:
    decided = ev.parse_event(
        {
            "type": "permission_decided",
            "at": 1.0,
            "session": "s",
            "request_id": "3",
            "tool": "Bash",
            "answer": "deny",
            "decided_by": "timeout",
            "reason": "nobody answered in 300 s",
        }
    )
    assert isinstance(decided, ev.PermissionDecided)
    assert decided.answer is PermissionAnswer.DENY and decided.decided_by is AnsweredBy.TIMEOUT
    assert summary(decided) == "#3 Bash: deny by timeout: nobody answered in 300 s"
    with pytest.raises(ev.BadEventError, match="answer"):
        ev.parse_event({**decided.model_dump(), "answer": "maybe"})
    requested = ev.PermissionRequested(
        at=1.0, session="s", request_id="3", tool="Bash", summary="make test"
    )
    assert summary(requested) == "#3 Bash: make test"


def test_a_request_answered_at_once_never_counts_as_waiting() -> None:
    state = RunState()
    state.apply(
        ev.PermissionRequested(
            at=1.0, session="s", request_id="1", tool="Bash", summary="ls", waiting=False
        )
    )
    assert state.sessions["s"].snapshot().pending_permissions == 0


def test_an_input_longer_than_any_old_cut_is_kept_whole_and_allow_stays_offered() -> None:
    # 30,000 characters: a Write of a middling file. It used to be cut at 20,000 while
    # "allow" was still offered for the part nobody saw.
    content = "y" * 30_000 + "HIDDEN-TAIL"
    request = PermissionBook("s").open("Write", {"file_path": "a", "content": content}, 1.0)
    assert "HIDDEN-TAIL" in request.input_text
    assert not request.input_cut


def test_an_input_past_what_can_be_shown_is_marked_cut_so_allow_is_not_offered() -> None:
    request = PermissionBook("s").open("Write", {"content": "z" * (INPUT_CHARS + 10)}, 1.0)
    assert request.input_cut
    asked = ev.PermissionRequested(
        at=1.0,
        session="s",
        request_id=request.request_id,
        tool="Write",
        summary=request.summary,
        input_text=request.input_text,
        input_cut=request.input_cut,
    )
    (question,) = RunState().apply_all([asked]).questions()
    assert isinstance(question, PermissionQuestion)
    assert question.input_cut and not question.allow_offered
