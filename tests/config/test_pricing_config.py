"""The `[pricing]` table: users correct or add list prices; bad entries are named exactly."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mala_tui.config_loading import ConfigError, load_settings


def write_config(text: str) -> Path:
    path = Path(os.environ["MALA_TUI_CONFIG_FILE"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_defaults_price_current_models() -> None:
    table = load_settings().settings.pricing.table()
    price = table.lookup("claude-sonnet-4-5")
    assert price is not None and price.input == 3.0


def test_file_overrides_one_field_and_adds_a_model() -> None:
    path = write_config(
        '[pricing."claude-sonnet-4-5"]\ninput = 2.5\n\n'
        '[pricing."my-gateway-model"]\ninput = 1.0\noutput = 4.0\n'
    )
    loaded = load_settings()
    table = loaded.settings.pricing.table()
    sonnet, mine = table.lookup("claude-sonnet-4-5-20250929"), table.lookup("my-gateway-model")
    assert sonnet is not None and (sonnet.input, sonnet.output) == (2.5, 15.0)
    assert mine is not None and mine.input == 1.0 and mine.cache_read == pytest.approx(0.1)
    rows = {key: (value, source) for key, value, source, _ in loaded.rows()}
    assert rows["pricing.claude-sonnet-4-5"] == ({"input": 2.5}, f"file {path}")


def test_command_line_adds_a_model() -> None:
    loaded = load_settings(
        overrides=[("pricing.other", {"input": 2, "output": 3}, "command line --set")]
    )
    price = loaded.settings.pricing.table().lookup("other")
    assert price is not None and price.output == 3


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[pricing."claude-sonnet-4-5"]\ninput = -1\n',
            "pricing.claude-sonnet-4-5.input = -1 (file ",
        ),
        ('[pricing."claude-sonnet-4-5"]\ninptu = 1\n', "unknown key (did you mean 'input'?)"),
        ('[pricing]\n"claude-sonnet-4-5" = 3\n', "must be a table of prices"),
        (
            '[pricing."new-model"]\ninput = 1\n',
            "'new-model' has no default price, so it needs output",
        ),
        ('[pricing."x"]\ninput = 1\noutput = 1\nlong_context_input_factor = 0.5\n', ">= 1"),
    ],
)
def test_bad_prices_name_model_field_and_file(text: str, message: str) -> None:
    path = write_config(text)
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert message in str(caught.value)
    assert str(path) in str(caught.value)


def test_budget_limits_from_the_file_and_bad_ones_named() -> None:
    path = write_config("[budget]\nmax_cost_usd = 2.5\nrun_max_turns = 400\n")
    budget = load_settings().settings.budget
    session, run = budget.session_limits(), budget.run_limits()
    assert (session.max_cost_usd, session.max_turns, session.near_fraction) == (2.5, None, 0.9)
    assert (run.max_turns, run.max_cost_usd) == (400, None)
    write_config("[budget]\nmax_turns = 0\n")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert f"budget.max_turns = 0 (file {path}): Input should be greater than 0" in str(
        caught.value
    )
