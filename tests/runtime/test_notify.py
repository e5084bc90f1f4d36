"""ui.notify_command: run for what needs a person while no console is attached, told what in
its environment only, and journaled as a warning when it fails."""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path

from mala_tui.core import events as ev
from mala_tui.core.actions import EndStatus
from mala_tui.runtime.consoles.notify import NotifyCommand
from tests.integration.harness import alive
from tests.support.polling import eventually

ASKED = ev.PermissionRequested(
    at=1.0, session="fix; rm -rf /", request_id="1", tool="Bash", summary="ls", input_text="ls"
)


def notifier(command: str, consoles: list[int], recorded: list[ev.Event]) -> NotifyCommand:
    return NotifyCommand(
        command,
        run_id="20250101-000000-abcd",
        consoles=lambda: consoles[0],
        record=recorded.append,
        attach="mala-tui attach 20250101-000000-abcd",
    )


async def test_run_only_while_no_console_is_attached_and_told_in_its_environment(
    tmp_path: Path,
) -> None:
    told = tmp_path / "told"
    command = (
        'printf "%s|%s|%s|%s|%s\\n" "$MALA_NOTICE" "$MALA_RUN" "$MALA_SESSION" '
        f'"$MALA_WAITS" "$MALA_ATTACH" >> {shlex.quote(str(told))}'
    )
    consoles = [1]
    recorded: list[ev.Event] = []
    notify = notifier(command, consoles, recorded)
    notify(ASKED)  # a console is attached: it sees the question itself
    consoles[0] = 0
    notify(ev.UsageRecorded(at=2.0, session="a", tokens=1, window=10, source="per_call"))
    notify(ASKED)
    notify(ev.SessionEnded(at=3.0, session="b", status=EndStatus.FAILED, reason="crashed"))
    await notify.close()
    lines = told.read_text().splitlines()
    assert sorted(lines) == sorted(
        [
            "fix; rm -rf / asks to use Bash \u00b7 run 20250101-000000-abcd|20250101-000000-abcd|"
            "fix; rm -rf /|permission for Bash|mala-tui attach 20250101-000000-abcd",
            "b failed: crashed \u00b7 run 20250101-000000-abcd|20250101-000000-abcd|b|failure|"
            "mala-tui attach 20250101-000000-abcd",
        ]
    )
    assert recorded == []  # both ran, and succeeded


async def test_a_failing_command_is_journaled_as_a_warning_and_the_run_goes_on() -> None:
    recorded: list[ev.Event] = []
    notify = notifier("exit 3", [0], recorded)
    notify(ASKED)
    await notify.close()
    (warning,) = recorded
    assert isinstance(warning, ev.WarningRecorded)
    assert (warning.where, warning.session) == ("notify", "fix; rm -rf /")
    assert warning.message == "ui.notify_command ended with status 3"
    notify(warning)  # its own warning never sets it off again
    await asyncio.sleep(0)
    assert len(recorded) == 1


async def test_a_command_that_overruns_is_killed_with_what_its_shell_started(
    tmp_path: Path,
) -> None:
    spawned = tmp_path / "spawned"
    # The shell starts a child and waits for it: killing the shell alone would leave it.
    command = f"sleep 300 & echo $! > {shlex.quote(str(spawned))}; wait"
    recorded: list[ev.Event] = []
    notify = NotifyCommand(
        command,
        run_id="20250101-000000-abcd",
        consoles=lambda: 0,
        record=recorded.append,
        attach="mala-tui attach 20250101-000000-abcd",
        timeout=0.5,
    )
    notify(ASKED)
    await eventually(lambda: spawned.is_file() and spawned.read_text().strip(), what="the child")
    child = int(spawned.read_text())
    await notify.close()
    (warning,) = recorded
    assert isinstance(warning, ev.WarningRecorded)
    assert warning.message == "ui.notify_command took longer than 0.5 s and was stopped"
    await eventually(lambda: not alive(child), what="the shell's child to be killed too")
