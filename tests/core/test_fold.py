"""The fold: masked steps become one digest line each, placed after the task, append-only."""

from __future__ import annotations

from mala_tui.core.checkpoint import harness_checkpoint
from mala_tui.core.fold import (
    DIGEST_HEADER,
    KEPT_FILE_TOKENS,
    KEPT_FILES,
    apply_fold,
    digest_line,
    digest_lines,
    extend_digest,
    is_digest,
    plan_fold,
    task_and_digest,
)
from mala_tui.core.masking import placeholder
from mala_tui.core.transcript import Message, Role, TextBlock, ToolCall, ToolResult, Transcript

TASK = "Fix the shop's pricing."
NOTE = "Some older tool output was masked. Continue the task."


def step(call: ToolCall, output: str, *, words: str = "", error: bool = False) -> list[Message]:
    """One step: the agent's words and its call, then the result."""
    blocks: tuple[TextBlock | ToolCall, ...] = (TextBlock(words), call) if words else (call,)
    return [
        Message(Role.ASSISTANT, blocks),
        Message(Role.USER, (ToolResult(call.id, output, error),)),
    ]


def read(tool_id: str, path: str) -> ToolCall:
    return ToolCall(tool_id, "Read", {"file_path": path})


def bash(tool_id: str, command: str) -> ToolCall:
    return ToolCall(tool_id, "Bash", {"command": command})


def masked(messages: list[Message], *ids: str) -> list[Message]:
    """The conversation after a mask of these results (their placeholders in)."""
    transcript = Transcript(messages)
    chosen = {
        obs.call.id: placeholder(obs.call, obs.result)
        for obs in transcript.exchanges()
        if obs.call.id in ids and obs.result is not None
    }
    transcript.replace_results(chosen)
    return list(transcript.messages)


def session() -> list[Message]:
    return [
        Message.harness_prompt(TASK),
        *step(read("r1", "src/a.py"), "x\n" * 300, words="Reading a.py: rate = 0.2"),
        *step(bash("b1", "pytest -q"), "1 failed\nexit code 1" + "y" * 4000, error=True),
        *step(ToolCall("g1", "Grep", {"pattern": "TODO"}), "Found 3 files\na\nb\nc"),
        *step(read("r2", "src/b.py"), "z\n" * 400),
        *step(ToolCall("e2", "Edit", {"file_path": "src/b.py"}), "The file was updated."),
        *step(bash("b2", "ls"), "a.py\nb.py"),
    ]


def test_a_line_names_the_tool_the_target_the_size_or_status_and_masked() -> None:
    call = bash("b1", "pytest -q")
    text = placeholder(call, ToolResult("b1", "oops\nexit code 2", is_error=True))
    assert digest_line(call, text) == "- Bash `pytest -q`, exit 2, 16 B, masked"
    call = read("r1", "src/a.py")
    text = placeholder(call, ToolResult("r1", "1\n2\n3\n"))
    assert digest_line(call, text) == "- Read src/a.py, 3 lines, masked"
    edit = ToolCall("e1", "Edit", {"file_path": "src/a.py"})
    assert digest_line(edit, placeholder(edit, ToolResult("e1", "ok"))) == "- Edit src/a.py, masked"


def test_a_long_command_is_named_in_full_not_by_the_placeholders_head() -> None:
    command = "python -m pytest tests/unit/test_pricing.py -k rounding --maxfail=1 -q"
    call = bash("b1", command)
    line = digest_line(call, placeholder(call, ToolResult("b1", "ok")))
    assert f"`{command}`" in line and line.endswith(", exit 0, 2 B, masked")


def test_masked_steps_fold_but_file_state_the_newest_and_unmasked_steps_stay() -> None:
    messages = masked(session(), "r1", "b1", "g1", "r2", "e2")
    plan = plan_fold(messages)
    # r1 is the latest read of a.py (the CLI rebuilds its read-file state from it); e2 is
    # the latest step on b.py, so the read r2 before it folds; b2 is the newest step.
    assert plan.folded == ("b1", "g1", "r2")
    assert digest_lines(plan.digest) == plan.new_lines
    assert plan.new_lines == (
        "- Bash `pytest -q`, exit 1, 3.9 KB, masked",
        "- Grep TODO, 3 matches, masked",
        "- Read src/b.py, 400 lines, masked",
    )


def test_a_failed_file_step_folds_and_does_not_stand_for_the_files_state() -> None:
    messages = masked(
        [
            Message.harness_prompt(TASK),
            *step(read("r1", "src/a.py"), "a\n" * 200),
            *step(read("r2", "src/a.py"), "File does not exist." * 20, error=True),
            *step(bash("b1", "ls"), "a.py"),
        ],
        "r1",
        "r2",
    )
    assert plan_fold(messages).folded == ("r2",)


def reads_of(count: int) -> list[Message]:
    """A reader: one Read of a new file a step, each result long enough to be masked."""
    return [
        message
        for index in range(count)
        for message in step(read(f"r{index}", f"src/m{index:02}.py"), "line\n" * 200)
    ]


def test_only_the_newest_files_keep_their_step_the_older_ones_fold_named() -> None:
    files = KEPT_FILES + 3
    ids = [f"r{index}" for index in range(files)]
    messages = masked(
        [Message.harness_prompt(TASK), *reads_of(files), *step(bash("b1", "ls"), "x")], *ids
    )
    plan = plan_fold(messages)
    # The oldest three files fold; the KEPT_FILES newest keep their Read for the CLI.
    assert plan.folded == ("r0", "r1", "r2")
    assert plan.new_lines == tuple(f"- Read src/m{i:02}.py, 200 lines, masked" for i in range(3))
    kept = {obs.call.id for obs in Transcript(apply_fold(messages, plan)).exchanges()}
    assert kept == {*ids[3:], "b1"}


def test_a_file_is_as_new_as_its_newest_step() -> None:
    # m00 was read first but edited last: it is the newest file, and its Edit stays.
    files = KEPT_FILES + 1
    edit = ToolCall("e0", "Edit", {"file_path": "src/m00.py", "old_string": "a"})
    messages = masked(
        [
            Message.harness_prompt(TASK),
            *reads_of(files),
            *step(edit, "The file src/m00.py has been updated successfully."),
            *step(bash("b1", "ls"), "x"),
        ],
        *[f"r{index}" for index in range(files)],
        "e0",
    )
    plan = plan_fold(messages)
    assert plan.folded == ("r0", "r1")  # m00's older Read, and m01, now the oldest file


def test_steps_kept_anyway_take_a_files_place() -> None:
    # The newest files' Reads are not masked (recent): they stay, and fill the places.
    messages = masked(
        [Message.harness_prompt(TASK), *reads_of(KEPT_FILES + 2), *step(bash("b1", "ls"), "x")],
        "r0",
        "r1",
    )
    assert plan_fold(messages).folded == ("r0", "r1")


def test_a_masked_step_too_big_for_the_budget_folds_and_an_older_one_stays() -> None:
    big = ToolCall(
        "w1", "Write", {"file_path": "src/big.py", "content": "x" * 4 * KEPT_FILE_TOKENS}
    )
    messages = masked(
        [
            Message.harness_prompt(TASK),
            *reads_of(1),
            *step(big, "File created successfully at: src/big.py"),
            *step(bash("b1", "ls"), "x"),
        ],
        "r0",
        "w1",
    )
    # The Write holds the whole file: keeping it would cost more than the budget.
    plan = plan_fold(messages)
    assert plan.folded == ("w1",)
    assert plan.new_lines == ("- Write src/big.py, masked",)


def test_only_read_write_and_edit_stand_for_a_files_state() -> None:
    # The CLI rebuilds nothing from NotebookEdit (nor a MultiEdit, no tool of it).
    notebook = ToolCall("n1", "NotebookEdit", {"notebook_path": "a.ipynb", "new_source": "x"})
    messages = masked(
        [
            Message.harness_prompt(TASK),
            *step(notebook, "Updated cell 1" * 40),
            *step(bash("b1", "ls"), "x"),
        ],
        "n1",
    )
    assert plan_fold(messages).folded == ("n1",)


def test_results_fetched_again_stay_whole() -> None:
    # The first fetch is masked and folds; the fetch again was never masked.
    messages = masked(
        [
            Message.harness_prompt(TASK),
            *step(bash("b1", "cat log"), "L" * 4000),
            *step(bash("b2", "cat log"), "L" * 4000),
            *step(bash("b3", "ls"), "x"),
        ],
        "b1",
    )
    plan = plan_fold(messages)
    assert plan.folded == ("b1",)
    after = Transcript(apply_fold(messages, plan))
    kept = {obs.call.id: obs.result for obs in after.exchanges()}
    assert set(kept) == {"b2", "b3"}
    assert kept["b2"] is not None and kept["b2"].content == "L" * 4000


def test_the_fold_keeps_the_agents_words_and_places_the_digest_after_the_task() -> None:
    messages = masked(session(), "r1", "b1", "g1", "r2", "e2")
    plan = plan_fold(messages)
    after = apply_fold(messages, plan)
    assert after[0].role is Role.USER
    assert [b.text for b in after[0].blocks if isinstance(b, TextBlock)] == [TASK, plan.digest]
    assert any("rate = 0.2" in m.text for m in after if m.role is Role.ASSISTANT)
    # No call without its result, no result without its call.
    after_transcript = Transcript(after)
    assert not after_transcript.open_calls
    ids = {obs.call.id for obs in after_transcript.exchanges()}
    assert ids == {"r1", "e2", "b2"}


def test_earlier_resume_notes_fold_by_their_exact_text() -> None:
    messages = masked(
        [
            Message.harness_prompt(TASK),
            *step(bash("b1", "cat log"), "L" * 4000),
            Message.harness_prompt(NOTE),
            *step(bash("b2", "ls"), "x"),
        ],
        "b1",
    )
    plan = plan_fold(messages, notes=frozenset({NOTE}))
    assert plan.notes == (3,)
    assert all(m.text != NOTE for m in apply_fold(messages, plan))
    assert plan_fold(messages).notes == ()  # an unknown prompt is the task's, and stays


def test_the_digest_is_append_only_across_folds() -> None:
    messages = masked(session(), "b1", "g1")
    first = plan_fold(messages)
    folded_once = apply_fold(messages, first)
    more = [
        *folded_once,
        *step(bash("b3", "make"), "M" * 3000),
        *step(bash("b4", "ls"), "x"),
    ]
    second = plan_fold(masked(more, "b2", "b3"), digest=first.digest)
    assert second.digest.startswith(first.digest + "\n")
    assert digest_lines(second.digest) == (*first.new_lines, *second.new_lines)
    assert second.new_lines == (
        "- Bash `ls`, exit 0, 9 B, masked",
        "- Bash `make`, exit 0, 2.9 KB, masked",
    )
    twice = apply_fold(masked(more, "b2", "b3"), second)
    digests = [
        b.text for m in twice for b in m.blocks if isinstance(b, TextBlock) and is_digest(b.text)
    ]
    assert digests == [second.digest]


def test_nothing_to_fold_leaves_the_digest_as_it_was() -> None:
    messages = session()  # nothing masked
    plan = plan_fold(messages, digest=extend_digest("", ["- Bash `x`, masked"]))
    assert not plan
    assert plan.digest.startswith(DIGEST_HEADER)
    assert apply_fold(messages, plan)[0].blocks[-1] == TextBlock(plan.digest)
    assert not plan_fold([])


def test_extend_digest_starts_with_the_header_and_adds_nothing_for_no_lines() -> None:
    assert extend_digest("", []) == ""
    digest = extend_digest("", ["- a"])
    assert digest == f"{DIGEST_HEADER}\n- a"
    assert extend_digest(digest, ["- b"]) == f"{DIGEST_HEADER}\n- a\n- b"
    assert not is_digest("Fix the shop.")


def test_a_harness_checkpoint_lists_the_folded_steps_as_done_and_the_task_as_goal() -> None:
    messages = masked(session(), "b1", "g1")
    plan = plan_fold(messages)
    folded = Transcript(apply_fold(messages, plan))
    assert task_and_digest(folded.messages) == (TASK, plan.new_lines)
    checkpoint = harness_checkpoint(folded, reason="the window is full", carryover_turns=1)
    sections = checkpoint.sections
    assert sections["Goal"] == TASK
    done = sections["Completed Work"].splitlines()
    assert done[: len(plan.new_lines)] == list(plan.new_lines)
    assert "- Bash ls" in done  # and this session's steps after them
