"""The run's one desk: each question settled once, by whoever answers first; a late answer refused."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.observations import Decision
from mala_tui.core.permissions import AnsweredBy, PermissionAnswer
from mala_tui.runtime.questions.desk import Desk, QuestionClosed, Reply

PERSON = Reply(Decision.APPROVE, AnsweredBy.OPERATOR)


def ask_approval(
    desk: Desk,
    *,
    rule: Reply | None = None,
    timeout: float | None = None,
    on_timeout: Reply | None = None,
    on_settled: Callable[[Reply], None] | None = None,
) -> asyncio.Future[Reply]:
    """Checkpoint #1 of session "a", asked at `desk`."""
    return desk.ask(
        "a/approval/1",
        session="a",
        label="checkpoint #1 of a",
        withdrawn=Decision.DENY,
        rule=rule,
        timeout=timeout,
        on_timeout=on_timeout,
        on_settled=on_settled,
    )


async def test_a_persons_answer_settles_the_question_and_a_second_is_refused() -> None:
    desk = Desk()
    settled: list[Reply] = []
    answer = ask_approval(desk, on_settled=settled.append)
    assert desk.waits("a/approval/1") and not answer.done()
    desk.answer("a/approval/1", PERSON)
    assert settled == [PERSON]  # told before the future resolves
    assert await answer == PERSON
    with pytest.raises(QuestionClosed) as refused:
        desk.answer("a/approval/1", Reply(Decision.DENY, AnsweredBy.OPERATOR))
    assert refused.value.reply == PERSON
    assert str(refused.value) == (
        "checkpoint #1 of a was answered already: approved by the operator"
    )
    assert settled == [PERSON]  # nothing applied twice


async def test_a_rule_answers_at_once_and_says_so_to_a_late_answer() -> None:
    desk = Desk()
    rule = Reply(Decision.DENY, AnsweredBy.POLICY, "--approve deny")
    answer = ask_approval(desk, rule=rule)
    assert answer.done() and answer.result() == rule
    with pytest.raises(QuestionClosed, match=r"denied by the policy \(--approve deny\)"):
        desk.answer("a/approval/1", PERSON, context="no approval is pending for 'a'")


async def test_the_timeout_answers_when_no_one_has() -> None:
    desk = Desk()
    on_timeout = Reply(PermissionAnswer.DENY, AnsweredBy.TIMEOUT, "no answer within 0.01 s")
    answer = desk.ask(
        "a/permission/1",
        session="a",
        label="request #1 of a (Bash)",
        withdrawn=PermissionAnswer.DENY,
        timeout=0.01,
        on_timeout=on_timeout,
    )
    assert await asyncio.wait_for(answer, 5) == on_timeout
    with pytest.raises(QuestionClosed, match=r"denied by its timeout \(no answer within 0.01 s\)"):
        desk.answer("a/permission/1", Reply(PermissionAnswer.ALLOW_ONCE, AnsweredBy.OPERATOR))


async def test_an_answer_first_stops_the_timeout() -> None:
    desk = Desk()
    settled: list[Reply] = []
    answer = ask_approval(
        desk,
        timeout=0.0,  # due at the loop's next turn
        on_timeout=Reply(Decision.DENY, AnsweredBy.TIMEOUT),
        on_settled=settled.append,
    )
    desk.answer("a/approval/1", PERSON)
    for _ in range(3):  # turns of the loop, past the one the timeout was due at
        await asyncio.sleep(0)
    assert answer.result() == PERSON
    assert settled == [PERSON]


async def test_a_session_that_ends_withdraws_its_questions_only() -> None:
    desk = Desk()
    mine = desk.ask("a/permission/1", session="a", label="a's", withdrawn=PermissionAnswer.DENY)
    other = desk.ask("b/permission/1", session="b", label="b's", withdrawn=PermissionAnswer.DENY)
    desk.observe(ev.SessionEnded(at=1, session="a", status=EndStatus.STOPPED))
    assert mine.result() == Reply(
        PermissionAnswer.DENY, AnsweredBy.POLICY, "the session ended (stopped)"
    )
    assert not other.done() and desk.waits("b/permission/1")


async def test_an_asker_that_stops_waiting_withdraws_its_question() -> None:
    desk = Desk()
    settled: list[Reply] = []
    answer = desk.ask(
        "a/permission/1",
        session="a",
        label="request #1 of a",
        withdrawn=PermissionAnswer.DENY,
        on_settled=settled.append,
    )
    answer.cancel()
    desk.withdraw("a/permission/1", "the agent stopped waiting")
    assert settled == [Reply(PermissionAnswer.DENY, AnsweredBy.POLICY, "the agent stopped waiting")]
    assert not desk.waits("a/permission/1")


async def test_a_question_never_asked_is_a_plain_key_error() -> None:
    desk = Desk()
    with pytest.raises(KeyError) as missing:
        desk.answer("a/approval/9", PERSON, context="no approval is pending for 'a'")
    assert not isinstance(missing.value, QuestionClosed)
    assert missing.value.args == ("no approval is pending for 'a'",)


async def test_a_question_is_not_asked_twice_while_it_waits() -> None:
    desk = Desk()
    ask_approval(desk)
    with pytest.raises(RuntimeError, match="asked while it waits already"):
        ask_approval(desk)


@pytest.mark.parametrize("by", list(AnsweredBy))
def test_whoever_answered_is_named_in_words(by: AnsweredBy) -> None:
    said = Reply(Decision.APPROVE, by).describe()  # every answerer has its words
    assert said.startswith("approved by ") and said != f"approved by {by}"
