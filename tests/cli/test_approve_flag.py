"""`--approve`: parsed at the command line into an `ApprovalMode`, a bad value refused."""

from __future__ import annotations

import argparse

import pytest

from mala_tui.commands import resume_cmd, run_cmd
from mala_tui.runtime.questions.approvals import ApprovalMode


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command")
    run_cmd.register(commands)
    resume_cmd.register(commands)
    return parser.parse_args(list(argv))


@pytest.mark.parametrize("mode", list(ApprovalMode))
@pytest.mark.parametrize("command", [("run", "task"), ("demo",), ("resume", "latest")])
def test_the_flag_gives_the_enum(command: tuple[str, ...], mode: ApprovalMode) -> None:
    assert parse(*command, "--approve", mode.value).approve is mode


def test_without_the_flag_the_setting_decides() -> None:
    assert parse("run", "task").approve is None


def test_a_bad_value_is_one_line_with_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse("run", "task", "--approve", "sometimes")
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--approve: invalid choice: 'sometimes' (choose from ask, auto, deny)" in err
    assert "Traceback" not in err
