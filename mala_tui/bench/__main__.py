"""`python -m mala_tui.bench NAME [options]`: run one benchmark and print its figures."""

from __future__ import annotations

import argparse
import importlib
import sys

BENCHMARKS = {
    "attach": "mala_tui.bench.attach_bench",
    "cluster": "mala_tui.bench.cluster_bench",
    "core": "mala_tui.bench.core_bench",
    "economy": "mala_tui.bench.economy",
    "faults": "mala_tui.bench.faults",
    "growth": "mala_tui.bench.growth",
    "latency": "mala_tui.bench.latency_bench",
    "markers": "mala_tui.bench.marker_replay",
    "ui": "mala_tui.bench.ui_bench",
    "permissions": "mala_tui.bench.permission_bench",
    "subagents": "mala_tui.bench.subagents_bench",
    "window": "mala_tui.bench.window_bench",
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in BENCHMARKS:  # its own options, --help included, go to it
        module = importlib.import_module(BENCHMARKS[argv[0]])
        chosen: int = module.main(argv[1:])
        return chosen
    parser = argparse.ArgumentParser(prog="python -m mala_tui.bench")
    parser.add_argument("name", choices=sorted(BENCHMARKS), help="which benchmark to run")
    args, rest = parser.parse_known_args(argv)
    module = importlib.import_module(BENCHMARKS[args.name])
    result: int = module.main(rest)
    return result


if __name__ == "__main__":
    sys.exit(main())
