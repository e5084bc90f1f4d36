"""The pure domain of mala-tui: accounting, transcript, masking, checkpoints, the manager.

Nothing in here performs I/O, awaits, or imports textual, asyncio, the Claude
Agent SDK, or any other part of mala_tui. Observations go in, decisions come
out; the runtime carries them out. tests/core/test_purity.py enforces it.
"""
