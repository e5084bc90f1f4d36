"""The window a session starts with, before the CLI has reported one."""

from __future__ import annotations

import pytest

from mala_tui.core.window import DEFAULT_MODEL_WINDOWS, WindowSource, resolve_window


@pytest.mark.parametrize(
    ("model", "betas", "tokens", "source"),
    [
        ("claude-sonnet-4-5[1m]", (), 1_000_000, WindowSource.MODEL_NAME),
        ("Claude-Sonnet-4-5[1M]", (), 1_000_000, WindowSource.MODEL_NAME),
        ("claude-sonnet-4-5", ("context-1m-2025-08-07",), 1_000_000, WindowSource.BETA),
        ("claude-sonnet-4-5", (), 200_000, WindowSource.TABLE),
        ("claude-opus-4-1-20250805", (), 200_000, WindowSource.TABLE),
        # As Claude Code 2.1.330 reports them: the 5.x models, Opus 4.7/4.8 and the
        # aliases (mapped to the 5.5 models) have 1M without asking.
        ("sonnet", (), 1_000_000, WindowSource.TABLE),
        ("claude-opus-5-5", (), 1_000_000, WindowSource.TABLE),
        ("claude-opus-5-5-20260101", (), 1_000_000, WindowSource.TABLE),
        ("claude-haiku-5", (), 1_000_000, WindowSource.TABLE),
        ("claude-opus-4-8", (), 1_000_000, WindowSource.TABLE),
        ("claude-opus-4-6", (), 200_000, WindowSource.TABLE),
        ("claude-opus-4-5", (), 200_000, WindowSource.TABLE),
        ("my-local-model", (), 123_000, WindowSource.DEFAULT),
        (None, (), 123_000, WindowSource.DEFAULT),
        ("", ("context-1m-2025-08-07",), 1_000_000, WindowSource.BETA),
    ],
)
def test_the_window_comes_from_the_most_specific_source(
    model: str | None, betas: tuple[str, ...], tokens: int, source: WindowSource
) -> None:
    window = resolve_window(model, betas, DEFAULT_MODEL_WINDOWS, default=123_000)
    assert (window.tokens, window.source) == (tokens, source)


def test_the_longest_prefix_of_the_table_wins() -> None:
    table = {"claude-sonnet-4": 200_000, "claude-sonnet-4-5-big": 500_000}
    assert resolve_window("claude-sonnet-4-5-big-0101", (), table).tokens == 500_000
    assert resolve_window("claude-sonnet-4-0", (), table).tokens == 200_000
