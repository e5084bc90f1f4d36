"""Agent backends: how a session's prompts reach an agent and its stream comes back.

`claude` drives the real Claude Code CLI through claude-agent-sdk; `scripted`
plays canned streams for fast tests, the way httpx ships a mock transport.
"""
