"""Each subcommand's help page says what it does, and `--set` goes before or after it."""

from __future__ import annotations

import argparse

from mala_tui.cli import build_parser
from tests.cli.test_cli import run


def subcommands(
    parser: argparse.ArgumentParser, path: str = ""
) -> dict[str, argparse.ArgumentParser]:
    """Every subcommand, subcommands' own too (`config show`), by its command line."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[f"{path}{name}"] = sub
                found |= subcommands(sub, f"{path}{name} ")
    return found


def test_every_subcommand_help_page_opens_with_a_description() -> None:
    pages = subcommands(build_parser())
    assert {"run", "resume", "land", "open", "runs", "config show"} <= set(pages)
    for name, parser in pages.items():
        said = parser.description
        assert said and said.strip() and said.strip()[0].isupper(), name
        opening = " ".join(said.split()[:4])  # on the page, after the usage
        assert opening in " ".join(parser.format_help().split()), name


def test_run_help_mentions_set() -> None:
    done = run("run", "--help")
    assert done.returncode == 0
    assert done.stdout.splitlines()[done.stdout.splitlines().index("") + 1] == (
        "Supervise real Claude Code agents on your tasks."
    )
    assert "--set SECTION.KEY=VALUE" in done.stdout and "override one setting" in done.stdout


def test_set_after_the_subcommand_overrides_a_setting_and_the_later_one_wins() -> None:
    done = run("config", "show", "--set", "context.max_restarts=7")
    assert done.returncode == 0, done.stderr
    assert "max_restarts = 7    # from command line --set context.max_restarts" in done.stdout
    done = run(
        *("--set", "context.max_restarts=3", "config", "--set", "context.max_restarts=4"),
        *("show", "--set", "context.max_restarts=6"),
    )
    assert done.returncode == 0, done.stderr
    assert "max_restarts = 6    # from command line --set context.max_restarts" in done.stdout
    bad = run("runs", "--set", "context.max_restarts=-1")
    assert bad.returncode == 2 and bad.stderr.startswith("mala-tui: config error:")
