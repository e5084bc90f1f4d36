"""The loopback model server: a scripted Anthropic Messages API so the real CLI runs offline.

Public API:
- ``load_scenario(path_or_name)``, ``shipped_scenarios()``, ``Scenario``, ``ScenarioError``
- ``LoopbackServer`` (``start``/``stop``/``async with``, ``base_url``, ``url_for``,
  ``request_log``, ``write_log``, ``add_fault``, ``wait_for``)
- ``offline_cli_env(base_url, home)``: the CLI's environment for running against it
- ``materialize_workspace(scenario, dest)``: the scenario's files, deterministic
- ``RequestRecord``, ``LogSummary``, ``summarize``, ``read_jsonl``: the request log
- ``FaultSpec``; ``prompt_tokens`` (the estimator count_tokens answers with)
- ``ClearToolUses``: the API's tool-result clearing, applied by the server when given
- ``ServerCompaction``: the API's server-side compaction, applied by the server when given
"""

from mala_tui.loopback.clearing import ClearToolUses
from mala_tui.loopback.compaction import ServerCompaction
from mala_tui.loopback.env import offline_cli_env
from mala_tui.loopback.faults import FaultSpec
from mala_tui.loopback.request_log import LogSummary, RequestRecord, read_jsonl, summarize
from mala_tui.loopback.scenario import Scenario, ScenarioError, load_scenario, shipped_scenarios
from mala_tui.loopback.scenario_steps import PlannedStep
from mala_tui.loopback.server import DEFAULT_WINDOW, MODEL_IDS, LoopbackServer
from mala_tui.loopback.tokens import prompt_tokens
from mala_tui.loopback.workspace import materialize_workspace

MODEL = MODEL_IDS[0]

__all__ = [
    "DEFAULT_WINDOW",
    "MODEL",
    "ClearToolUses",
    "FaultSpec",
    "LogSummary",
    "LoopbackServer",
    "PlannedStep",
    "RequestRecord",
    "Scenario",
    "ScenarioError",
    "ServerCompaction",
    "load_scenario",
    "materialize_workspace",
    "offline_cli_env",
    "prompt_tokens",
    "read_jsonl",
    "shipped_scenarios",
    "summarize",
]
