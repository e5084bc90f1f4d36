"""The operator's console through the real SDK and CLI on the loopback model.

A message changes what the agent does next; a task joins a live run; a cancelled
session writes its checkpoint and stops.

The loopback's scripted agent obeys a message as a model would: a `Bash: ...` line
is a step it plays next, a `Skip: <step>` line a step it leaves out. The message is
sent once the agent is at work; it must reach the model at the next clean point
(after the tool running then, before the next request), not at the end of the task.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.core.observations import Command
from mala_tui.core.operator_actions import AddSession, SayToAgent, SessionCommand
from mala_tui.core.operator_messages import Delivery
from mala_tui.loopback import LoopbackServer, load_scenario, materialize_workspace
from mala_tui.runtime.backends.base import SessionSpec
from mala_tui.runtime.backends.claude import ClaudeBackend
from mala_tui.runtime.journal.writer import RunJournal, read_events
from mala_tui.runtime.run.launch import like
from mala_tui.runtime.run.new_sessions import Joining
from tests.integration.harness import Recorded, runner, session_spec
from tests.support.factories import default_limits
from tests.support.supervisors import build_supervisor

pytestmark = pytest.mark.integration

MESSAGE = "Before you go on:\n- Bash: echo operator-was-here > operator.txt\nSkip: s005"


async def test_a_message_mid_task_changes_the_agents_next_step(tmp_path: Path) -> None:
    scenario = load_scenario("quickstart")
    async with LoopbackServer(scenario, response_delay_s=0) as server:
        spec = session_spec("q", scenario, server, tmp_path)
        recorded = Recorded()
        said: list[int] = []

        def sink(event: ev.Event) -> ev.Event:
            recorded(event)
            if not said and isinstance(event, ev.MessageRecorded) and event.kind == "tool_result":
                said.append(len(recorded.events))
                session.apply(
                    SayToAgent(session="q", text=MESSAGE)
                )  # after the first step's result: the agent is at work
            return event

        session, _ = runner(spec, default_limits(), sink=sink)
        status = await session.run()

    assert status is EndStatus.DONE, session.end_reason
    (queued,) = recorded.of(ev.MessageQueued)
    (delivered,) = recorded.of(ev.MessageDelivered)
    assert delivered.numbers == (queued.number,)
    assert delivered.how is Delivery.CLEAN_POINT
    played = [r for r in server.request_log if r.step_id]
    # The operator's step comes right after the step in flight when the message came,
    # and the skipped one (the wc -l step) is never played.
    operator = [index for index, r in enumerate(played) if r.operator_step]
    assert len(operator) == 1 and operator[0] <= 2, [r.step_id for r in played]
    assert "s005" not in {r.step_id for r in played}
    assert (spec.cwd / "operator.txt").read_text().strip() == "operator-was-here"
    final = session.manager.transcript.messages[-1]
    assert "Skipped at the Operator's Request" in final.text


async def test_a_task_added_to_a_live_run_runs_and_a_cancelled_session_keeps_its_checkpoint(
    tmp_path: Path,
) -> None:
    scenario = load_scenario("quickstart")
    async with LoopbackServer(scenario, response_delay_s=0.2) as server:
        first = session_spec("first", scenario, server, tmp_path)
        journal = RunJournal.create(tmp_path / "data", "run-1", {"mode": "test"})
        sup = build_supervisor(ClaudeBackend(), journal=journal, joining=Joining(like(first)))
        sup.add_session(first, limits=default_limits())
        second_folder = tmp_path / "second" / "workspace"
        second_folder.mkdir(parents=True)
        materialize_workspace(scenario, second_folder)

        def on_event(event: ev.Event) -> None:
            # Once the first agent is at work: a new task joins, and the first is cancelled.
            if (
                event.session == "first"
                and isinstance(event, ev.MessageRecorded)
                and event.kind == "tool_result"
                and "second" not in sup.runners
            ):
                sup.act(AddSession(name="second", task=scenario.task, cwd=second_folder))
                sup.act(SessionCommand(session="first", command=Command.CANCEL))

        sup.listeners.events.append(on_event)
        try:
            result = await sup.run()
        finally:
            journal.close()

    assert result.statuses == {"first": EndStatus.STOPPED, "second": EndStatus.DONE}
    assert result.reasons["first"] == "cancelled by the operator; checkpoint kept"
    events = read_events(journal.events_path).events
    (added,) = [e for e in events if isinstance(e, ev.SessionAdded)]
    assert added.session == "second" and added.cwd == str(second_folder)
    saved = [e for e in events if isinstance(e, ev.CheckpointSaved) and e.session == "first"]
    assert saved and Path(saved[-1].path).read_text(encoding="utf-8").strip() == saved[-1].text
    assert not [e for e in events if isinstance(e, ev.Restarted)]
    assert (second_folder / "REPORT.md").exists()


REVIEW = """
name = "review"
task = "Review README.md and say what it is for."
final_answer = "Reviewed: README.md describes the project."
[[steps]]
tool = "Read"
path = "README.md"
[[steps]]
tool = "Grep"
pattern = "project"
path = "."
"""


async def test_a_session_added_with_a_named_profile_reaches_the_model_with_it(
    tmp_path: Path,
) -> None:
    """The new-session dialog's profile: its model and permission mode, seen by the model."""
    from dataclasses import replace

    from mala_tui.loopback import offline_cli_env
    from mala_tui.runtime.run.profiles import Profile

    quick = load_scenario("quickstart")
    (tmp_path / "review.toml").write_text(f"response_delay_s = 0\n{REVIEW}")
    review = load_scenario(tmp_path / "review.toml")
    routes = {"first": quick, "second": review}
    async with LoopbackServer(routes, response_delay_s=0.2, keep_bodies=True) as server:
        first = session_spec("first", quick, server, tmp_path, route="first")
        journal = RunJournal.create(tmp_path / "data", "run-1", {"mode": "test"})
        home = tmp_path / "second" / "home"

        def new_spec(name: str, task: str, cwd: Path) -> SessionSpec:
            # Like the run's first session, on a route of its own to tell its requests apart.
            return replace(
                first,
                name=name,
                task=task,
                cwd=cwd,
                env=offline_cli_env(server.url_for("second"), home),
                private_home=home,
            )

        review_profile = Profile("review", {"model": "claude-haiku-4-5", "permission_mode": "plan"})
        joining = Joining(spec_for_new=new_spec, profiles={"review": review_profile})
        sup = build_supervisor(ClaudeBackend(), journal=journal, joining=joining)
        sup.add_session(first, limits=default_limits())
        folder = tmp_path / "second" / "workspace"
        folder.mkdir(parents=True)
        (folder / "README.md").write_text("# A project\nThis project is small.\n")

        def on_event(event: ev.Event) -> None:
            if (
                event.session == "first"
                and isinstance(event, ev.MessageRecorded)
                and event.kind == "tool_result"
                and "second" not in sup.runners
            ):
                sup.act(AddSession(name="second", task=review.task, cwd=folder, profile="review"))

        sup.listeners.events.append(on_event)
        try:
            result = await sup.run()
        finally:
            journal.close()
        requests = server.request_log

    assert result.statuses == {"first": EndStatus.DONE, "second": EndStatus.DONE}, result.reasons
    events = read_events(journal.events_path).events
    (added,) = [e for e in events if isinstance(e, ev.SessionAdded)]
    assert added.profile == "review"
    started = {e.session: e.model for e in events if isinstance(e, ev.SessionStarted)}
    assert started["second"] == "claude-haiku-4-5"

    def bodies(route: str) -> list[str]:
        return [json.dumps(r.body) for r in requests if r.route == route and r.body]

    assert bodies("second") and bodies("first")
    assert all('"model": "claude-haiku-4-5"' in body for body in bodies("second"))
    assert all("Plan mode is active" in body for body in bodies("second"))
    assert not any("Plan mode is active" in body for body in bodies("first"))
    assert not any('"model": "claude-haiku-4-5"' in body for body in bodies("first"))
