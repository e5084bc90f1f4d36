"""The README and docs/ stay true: every relative link reaches a file (and its anchor a
heading there), and every command they show names a real subcommand and real flags, read
off the package's own argparse parsers. `mkdocs build --strict` checks the site's links
too, but not the README's, nor the commands."""

from __future__ import annotations

import argparse
import importlib
import re
import shlex
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from mala_tui.bench.__main__ import BENCHMARKS
from mala_tui.cli import build_parser

REPOSITORY = Path(__file__).resolve().parents[2]
DOCUMENTS = [REPOSITORY / "README.md", *sorted((REPOSITORY / "docs").glob("*.md"))]
FENCE = re.compile(r"^(```+|~~~+)(.*)$")
#: `[text](target)` and `![alt](target)`; a title after the target is allowed.
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
INLINE_CODE = re.compile(r"(`+)(.+?)\1", re.DOTALL)
#: Where a command starts: the console script, `python -m mala_tui...`, or the venv's copy,
#: then a word or an option (a tab's title, `mala-tui — fix-tests asks...`, is no command).
COMMAND_START = re.compile(
    r"^(?:\.venv/bin/)?(mala-tui|python3? -m mala_tui[\w.]*)(?=\s+[\w\[\"'-]|$)"
)
#: Placeholders the docs use for values: RUN, SESSION, TASK..., HEAD_IP:6379, `...`.
PLACEHOLDER = re.compile(r"^(?:[A-Z][A-Z_]*(?:\.\.\.)?(?::\S*)?|\.\.\.|…)$")


@dataclass(frozen=True)
class Command:
    where: str
    text: str


def relative(path: Path) -> str:
    return str(path.relative_to(REPOSITORY)) if path.is_relative_to(REPOSITORY) else str(path)


def prose_and_code(text: str) -> tuple[str, list[tuple[str, str]]]:
    """The text with fenced blocks blanked out, and each block's (language, body)."""
    prose: list[str] = []
    blocks: list[tuple[str, str]] = []
    fence: str | None = None
    language = ""
    body: list[str] = []
    for line in text.splitlines():
        opened = FENCE.match(line.strip())
        if fence is None and opened:
            fence, language, body = opened.group(1), opened.group(2).strip(), []
            prose.append("")
        elif fence is not None and line.strip() == fence:
            blocks.append((language, "\n".join(body)))
            fence = None
            prose.append("")
        elif fence is not None:
            body.append(line)
            prose.append("")
        else:
            prose.append(line)
    return "\n".join(prose), blocks


def slugify(heading: str) -> str:
    """A heading's anchor as Python-Markdown's toc (mkdocs) makes it; GitHub's agrees for
    the headings these documents use (words, spaces, commas, parentheses)."""
    text = re.sub(r"[`*_]{1,2}(?=\S)|(?<=\S)[`*_]{1,2}", "", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(path: Path) -> set[str]:
    prose, _ = prose_and_code(path.read_text(encoding="utf-8"))
    seen: set[str] = set()
    for line in prose.splitlines():
        heading = re.match(r"^#{1,6}\s+(.+?)\s*#*\s*$", line)
        if heading is None:
            continue
        slug = base = slugify(heading.group(1))
        number = 0
        while slug in seen:  # a repeated heading gets _1, _2... as toc numbers them
            number += 1
            slug = f"{base}_{number}"
        seen.add(slug)
    return seen


def links(path: Path) -> Iterator[str]:
    prose, _ = prose_and_code(path.read_text(encoding="utf-8"))
    prose = INLINE_CODE.sub("", prose)
    for match in LINK.finditer(prose):
        yield match.group(1)


def broken_links(path: Path) -> list[str]:
    broken = []
    for target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not ours to check
            continue
        file_part, _, anchor = target.partition("#")
        reached = (path.parent / file_part).resolve() if file_part else path
        if not reached.exists():
            broken.append(f"{target}: no such file")
        elif anchor and reached.suffix == ".md" and anchor not in anchors(reached):
            broken.append(f"{target}: no heading #{anchor} in {relative(reached)}")
    return broken


def commands(path: Path) -> Iterator[Command]:
    """Every command shown in a code block or an inline code span: each line of a shell
    block (a `#` comment and the parts of a `&&` or `;` chain apart), each inline span."""
    prose, blocks = prose_and_code(path.read_text(encoding="utf-8"))
    pieces: list[str] = []
    for language, body in blocks:
        if language in ("", "sh", "bash", "console", "shell"):
            pieces += body.splitlines()
    pieces += [" ".join(span.group(2).split()) for span in INLINE_CODE.finditer(prose)]
    for piece in pieces:
        for part in re.split(r"&&|;|\|\|", piece):
            said = part.strip().removeprefix("$ ")
            if COMMAND_START.match(said):
                yield Command(relative(path), said)


def words(command: str) -> list[str]:
    """The command's words, options' brackets dropped (`[--json]` is `--json`)."""
    said = shlex.split(command, comments=True)
    return [word.strip("[]") for word in said if word.strip("[]")]


class _Captured(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


def module_parser(module: str, argv: list[str]) -> argparse.ArgumentParser:
    """The parser a `python -m MODULE ARGV` builds, caught as it starts parsing (nothing
    of the module runs past that)."""

    def capture(
        self: argparse.ArgumentParser, *args: object, **kwargs: object
    ) -> tuple[argparse.Namespace, list[str]]:
        raise _Captured(self)

    main_module = importlib.import_module(module)
    if hasattr(main_module, "__path__"):  # a package: `python -m` runs its __main__
        main_module = importlib.import_module(f"{module}.__main__")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(argparse.ArgumentParser, "parse_known_args", capture)
        try:
            main_module.main(argv)
        except _Captured as caught:
            return caught.parser
    raise AssertionError(f"python -m {module} parsed no arguments")


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def is_placeholder(word: str) -> bool:
    return bool(PLACEHOLDER.match(word)) or "|" in word


def wrong_words(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """What in `argv` the parser would not take: an unknown subcommand or flag, or a flag's
    concrete value outside its choices. Placeholders for values (RUN, `ask|auto|deny`) pass."""
    wrong: list[str] = []
    index = 0
    while index < len(argv):
        word = argv[index]
        index += 1
        if word.startswith("-") and word != "-":
            flag, equals, value = word.partition("=")
            action = parser._option_string_actions.get(flag)
            if action is None:
                wrong.append(f"{flag} is not an option of `{parser.prog}`")
                continue
            if action.nargs == 0 or equals:
                said = value if equals else None
            elif index < len(argv) and not argv[index].startswith("-"):
                said = argv[index]
                index += 1
            else:
                said = None
            if said and action.choices and not is_placeholder(said) and said not in action.choices:
                wrong.append(f"{flag} {said}: not one of {sorted(action.choices)}")
            continue
        inner = subcommands(parser)
        if inner and not is_placeholder(word):
            if word not in inner:
                wrong.append(f"`{parser.prog} {word}`: no such command")
                return wrong
            parser = inner[word]
    return wrong


def check_command(command: str) -> list[str]:
    said = words(command)
    program = said[0].removeprefix(".venv/bin/")
    if program == "mala-tui":
        return wrong_words(build_parser(), said[1:])
    module = said[2]
    if module == "mala_tui":  # `python -m mala_tui` is the console script
        return wrong_words(build_parser(), said[3:])
    argv = said[3:]
    if module == "mala_tui.bench":
        if not argv or is_placeholder(argv[0]):
            return []
        if argv[0] not in BENCHMARKS:
            return [f"`python -m mala_tui.bench {argv[0]}`: no such benchmark"]
    try:
        importlib.import_module(module)
    except ImportError:
        return [f"`python -m {module}`: no such module"]
    parser = module_parser(module, argv)
    return wrong_words(parser, argv[1:] if module == "mala_tui.bench" else argv)


def every_command() -> list[Command]:
    return [command for document in DOCUMENTS for command in commands(document)]


@pytest.mark.parametrize("document", DOCUMENTS, ids=relative)
def test_every_relative_link_and_anchor_reaches_something(document: Path) -> None:
    assert broken_links(document) == []


@pytest.mark.parametrize("command", every_command(), ids=lambda c: f"{c.where}: {c.text}")
def test_every_command_shown_is_one_the_parsers_take(command: Command) -> None:
    assert check_command(command.text) == []


def test_the_documents_show_commands_to_check() -> None:
    """The extraction finds the commands it is meant to: a regex gone wrong would pass every
    document by checking nothing."""
    shown = {command.text for command in every_command()}
    assert "mala-tui run --tasks tasks.toml --approve ask" in shown
    assert "mala-tui demo" in shown  # from the README's demo command's chain
    assert any(text.startswith("python -m mala_tui.bench economy") for text in shown)
    assert len(shown) > 40


def test_commands_md_lists_every_command_the_parser_has() -> None:
    table = (REPOSITORY / "docs" / "commands.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `mala-tui (\w+)", table, re.MULTILINE))
    assert listed == set(subcommands(build_parser()))


def test_the_checks_catch_what_drifted(tmp_path: Path) -> None:
    """A command or a link that no longer holds is caught, each with what is wrong."""
    assert check_command("mala-tui run --tasks x.toml --no-such-flag") == [
        "--no-such-flag is not an option of `mala-tui run`"
    ]
    assert check_command("mala-tui rnu RUN") == ["`mala-tui rnu`: no such command"]
    assert check_command("mala-tui run --approve sometimes") == [
        "--approve sometimes: not one of ['ask', 'auto', 'deny']"
    ]
    assert check_command("mala-tui resume RUN [--approve ask|auto|deny] [--data-dir DIR]") == []
    assert check_command("mala-tui config show --json") == []
    assert check_command("mala-tui config shwo") == ["`mala-tui config shwo`: no such command"]
    assert check_command("python -m mala_tui.bench permissions --runs 20") == []
    assert check_command("python -m mala_tui.bench permissions --rounds 20") == [
        "--rounds is not an option of `python -m mala_tui.bench permissions`"
    ]
    assert check_command("python -m mala_tui.bench speed") == [
        "`python -m mala_tui.bench speed`: no such benchmark"
    ]
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other\n\n## A part\n", encoding="utf-8")
    page.write_text(
        "# Page\n\n[ok](other.md#a-part) [gone](gone.md) [no anchor](other.md#b-part)\n"
        "[here](#page) `[not a link](gone.md)`\n\n```\n[nor this](gone.md)\n```\n",
        encoding="utf-8",
    )
    assert broken_links(page) == [
        "gone.md: no such file",
        f"other.md#b-part: no heading #b-part in {(tmp_path / 'other.md').resolve()}",
    ]
