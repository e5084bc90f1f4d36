"""Benchmarks: `python -m mala_tui.bench <name>`. They print figures; they are not tests."""
