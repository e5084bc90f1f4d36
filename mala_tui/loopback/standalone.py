"""Serving one scenario in the foreground: what ``mala-tui loopback serve`` runs.

Starts the server, prints the base URL and the environment that points a ``claude`` CLI at
it, serves until SIGINT/SIGTERM, then prints the request totals and writes the log.
"""

from __future__ import annotations

import asyncio
import shlex
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from mala_tui.loopback.cache import DEFAULT_TTL_S
from mala_tui.loopback.compaction import ServerCompaction
from mala_tui.loopback.env import offline_cli_env
from mala_tui.loopback.request_log import summarize
from mala_tui.loopback.scenario import Scenario
from mala_tui.loopback.server import MODEL_IDS, LoopbackServer
from mala_tui.loopback.workspace import materialize_workspace


@dataclass(frozen=True)
class ServeOptions:
    """What the command line asked for."""

    port: int
    window: int
    home: Path
    """Where the printed env puts the CLI's config and temp dirs."""
    log: Path | None = None
    delay_s: float | None = None
    workspace: Path | None = None
    """Generate the scenario's files here; also the fallback working directory."""
    token_ratio: float | None = None
    """Token density for every count; None: the scenario's own ``token_ratio``."""
    cache_ttl_s: float = DEFAULT_TTL_S
    """The prompt cache's lifetime, in simulated seconds."""
    time_scale: float | None = None
    """Simulated seconds per second; None: the scenario's own ``time_scale``."""
    compact_at: int | None = None
    """Apply the API's server-side compaction past this many input tokens."""


def serve_forever(scenario: Scenario, options: ServeOptions, out: TextIO) -> None:
    """Run the server until SIGINT/SIGTERM. Raises OSError if the port cannot be bound."""
    workspace = options.workspace.resolve() if options.workspace else None
    if workspace is not None:
        materialize_workspace(scenario, workspace)
    server = LoopbackServer(
        scenario,
        window=options.window,
        port=options.port,
        response_delay_s=options.delay_s,
        workspace=workspace,
        token_ratio=options.token_ratio,
        cache_ttl_s=options.cache_ttl_s,
        time_scale=options.time_scale,
        server_compaction=(
            ServerCompaction(options.compact_at) if options.compact_at is not None else None
        ),
    )
    asyncio.run(_serve(server, scenario, options, workspace, out))


async def _serve(
    server: LoopbackServer,
    scenario: Scenario,
    options: ServeOptions,
    workspace: Path | None,
    out: TextIO,
) -> None:
    base_url = await server.start()
    try:
        ratio = scenario.token_ratio if options.token_ratio is None else options.token_ratio
        _print_banner(out, base_url, options.home.resolve(), scenario, workspace, ratio=ratio)
        out.write(_cache_line(server))
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        await stop.wait()
    finally:
        await server.stop()
    totals = summarize(server.request_log)
    out.write(
        f"\n{totals.requests} requests ({server.count_tokens_requests} count_tokens); "
        f"prompt tokens {totals.prompt_tokens}: cache read {totals.cache_read_input_tokens}, "
        f"cache write {totals.cache_creation_input_tokens}, input {totals.input_tokens}; "
        f"output {totals.output_tokens}; peak prompt {totals.peak_prompt_tokens}; "
        f"cost {totals.cost_units} input-token units; {totals.redone_steps} steps redone; "
        f"{totals.rereads} re-reads ({totals.reread_tokens} tokens)\n"
    )
    if options.log is not None:
        server.write_log(options.log)
        out.write(f"request log: {options.log}\n")
    out.flush()


def _cache_line(server: LoopbackServer) -> str:
    """What the banner says of the prompt cache and of the server-side compaction."""
    scale = f", time x{server.time_scale:g}" if server.time_scale != 1 else ""
    line = f"prompt cache: {server.cache_ttl_s:g} s{scale}"
    if server.server_compaction is not None:
        trigger = server.server_compaction.trigger_input_tokens
        line += f"; server-side compaction past {trigger} input tokens"
    return line + "\n"


def _print_banner(
    out: TextIO,
    base_url: str,
    home: Path,
    scenario: Scenario,
    workspace: Path | None,
    *,
    ratio: float,
) -> None:
    out.write(f"loopback model server: {base_url}  (model {MODEL_IDS[0]}; Ctrl-C stops)\n")
    out.write(f"token density: {ratio:g}x chars/4\n\n")
    out.write("# point a claude CLI at it:\n")
    for name, value in offline_cli_env(base_url, home).items():
        out.write(f"export {name}={shlex.quote(value)}\n" if value else f"unset {name}\n")
    tools = ",".join(scenario.tools)
    where = f"cd {shlex.quote(str(workspace))} && " if workspace else ""
    out.write(
        f"\n{where}claude -p {shlex.quote(scenario.task)} --model {MODEL_IDS[0]} "
        f"--tools {tools} --allowedTools {tools}\n"
    )
    out.flush()
