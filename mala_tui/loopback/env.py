"""The environment that points the Claude Code CLI at a loopback server, offline."""

from __future__ import annotations

from pathlib import Path

# Set empty so a developer's own environment cannot send the CLI elsewhere: any of these,
# inherited, would make it use OAuth, Bedrock or Vertex instead of the loopback server.
_NEUTRALISED = (
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CODE_USE_FOUNDRY",
)
DUMMY_API_KEY = "sk-ant-loopback-offline"


def offline_cli_env(
    base_url: str,
    home: Path,
    *,
    auto_compact: bool = True,
    auto_compact_window: int | None = None,
) -> dict[str, str]:
    """Env for the CLI (``ClaudeAgentOptions(env=...)``) to run against ``base_url``.

    ``home`` holds the CLI's config dir (sessions, transcripts) and its TMPDIR (task dirs
    and sockets), created here, so nothing touches the user's ``~/.claude``. Telemetry and
    other network traffic are off. The CLI's own compaction is left on, as mala-tui leaves
    it for the sessions it manages (its PreCompact hook blocks the main thread's; a
    subagent's goes through, its only protection): ``DISABLE_AUTO_COMPACT=1`` turns it
    off for the whole process, subagents included, so it is set only with
    ``auto_compact=False``. ``auto_compact_window`` sets ``CLAUDE_CODE_AUTO_COMPACT_WINDOW``
    (the CLI then compacts at that window minus ~33,000 tokens).
    """
    config_dir = home / "claude-config"
    tmp_dir = home / "tmp"
    config_dir.mkdir(parents=True, exist_ok=True)
    tmp_dir.mkdir(parents=True, exist_ok=True)
    env = {name: "" for name in _NEUTRALISED}
    env.update(
        {
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": DUMMY_API_KEY,
            "CLAUDE_CONFIG_DIR": str(config_dir),
            "TMPDIR": str(tmp_dir),
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
    )
    if not auto_compact:
        env["DISABLE_AUTO_COMPACT"] = "1"
    if auto_compact_window is not None:
        env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] = str(auto_compact_window)
    return env
