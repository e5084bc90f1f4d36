"""How a session is opened by hand, and what is read back from its transcript afterwards."""

from __future__ import annotations

import json
from pathlib import Path

from mala_tui.core.usage import CallUsage
from mala_tui.runtime.backends.base import SessionSpec
from mala_tui.runtime.session.by_hand import (
    Interactive,
    console_problem,
    interactive,
    last_usage,
    read_back,
    size_of,
)


def test_the_interactive_cli_gets_the_session_as_it_ran_supervised(tmp_path: Path) -> None:
    mcp = tmp_path / "mcp.json"
    mcp.write_text("{}")
    spec = SessionSpec(
        name="s",
        task="t",
        cwd=tmp_path / "work",
        model="claude-sonnet-4-5",
        allowed_tools=("Read", "Bash"),
        disallowed_tools=("WebFetch",),
        permission_mode="acceptEdits",
        mcp_config=mcp,
        env={
            "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
            "ANTHROPIC_API_KEY": "sk-ant-0123456789abcdefghijkl",
        },
        private_home=tmp_path / "home",
    )
    how = interactive(spec, "sess-1")
    assert how.argv[1:] == (
        "--resume",
        "sess-1",
        "--model",
        "claude-sonnet-4-5",
        "--permission-mode",
        "acceptEdits",
        "--allowedTools",
        "Read,Bash",
        "--disallowedTools",
        "WebFetch",
        "--mcp-config",
        str(mcp),
        "--setting-sources=",
    )
    assert how.cwd == tmp_path / "work"
    # The environment it ran in: the model's URL, compaction off, its own config dir.
    assert how.env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9"
    assert how.env["DISABLE_AUTO_COMPACT"] == "1"
    assert how.env["CLAUDE_CONFIG_DIR"] == str(tmp_path / "home" / "claude-config")
    # A config dir mala-tui made has its first-run questions answered, as a person would.
    config = json.loads((tmp_path / "home" / "claude-config" / ".claude.json").read_text())
    assert config["hasCompletedOnboarding"] is True
    assert config["projects"][str(tmp_path / "work")]["hasTrustDialogAccepted"] is True
    assert config["customApiKeyResponses"]["approved"] == ["0123456789abcdefghijkl"[-20:]]
    assert Interactive.from_json(json.loads(json.dumps(how.to_json()))) == how


def test_a_users_own_config_is_left_as_it_is(tmp_path: Path) -> None:
    spec = SessionSpec(
        name="s", task="t", cwd=tmp_path, env={"CLAUDE_CONFIG_DIR": str(tmp_path / "mine")}
    )
    how = interactive(spec, "sess-1")
    assert "--setting-sources=" not in how.argv
    assert not (tmp_path / "mine" / ".claude.json").exists()


def test_a_browser_tab_is_no_terminal_to_open_a_session_in() -> None:
    assert console_problem({"TEXTUAL_DRIVER": "textual.drivers.web_driver:WebDriver"})
    assert console_problem({"TERM": "xterm"}) is None


def entry(kind: str, content: object, **extra: object) -> str:
    message: dict[str, object] = {"role": kind, "content": content}
    if "usage" in extra:
        message["usage"] = extra.pop("usage")
    return json.dumps({"type": kind, "message": message, **extra}) + "\n"


def test_what_the_person_did_is_read_back_from_the_transcript(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    usage = {
        "input_tokens": 3,
        "cache_creation_input_tokens": 400,
        "cache_read_input_tokens": 25_000,
        "output_tokens": 20,
    }
    path.write_text(
        entry("user", "The task.")
        + entry(
            "assistant", [{"type": "text", "text": "Done."}], usage={**usage, "output_tokens": 9}
        )
    )
    since = size_of(path)
    with path.open("a") as handle:
        handle.write(entry("user", "[Request interrupted by user]"))  # not typed by anyone
        handle.write(entry("user", "Say hello."))
        handle.write(entry("user", [{"type": "text", "text": "And then?"}]))
        handle.write(entry("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]))
        handle.write(entry("user", "a subagent's", isSidechain=True))
        handle.write(entry("assistant", [{"type": "text", "text": "Hello."}], usage=usage))
        handle.write(
            entry(
                "assistant",
                [{"type": "text", "text": "side"}],
                usage={"input_tokens": 9},
                isSidechain=True,
            )
        )
        handle.write("not json\n")
    back = read_back(path, since)
    assert back.prompts == 2
    assert back.call == CallUsage(3, 400, 25_000, 20)
    assert back.history[-1].text == "Hello."
    assert last_usage(tmp_path / "missing.jsonl") is None
    assert read_back(None) == read_back(None, 0)


def test_a_usage_that_is_not_counts_is_passed_over_for_the_call_before(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(
        entry("assistant", [{"type": "text", "text": "a"}], usage={"input_tokens": 7})
        + entry("assistant", [{"type": "text", "text": "b"}], usage={"input_tokens": "many"})
        + entry("assistant", [{"type": "text", "text": "c"}], usage={"output_tokens": 2.5})
    )
    assert last_usage(path) == CallUsage(input_tokens=7)
    path.write_text(
        entry("assistant", [{"type": "text", "text": "d"}], usage={"input_tokens": "12"})
    )
    assert last_usage(path) == CallUsage(input_tokens=12)
