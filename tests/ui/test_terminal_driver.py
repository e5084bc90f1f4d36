"""Writes to a terminal that has gone away are dropped, not raised."""

from __future__ import annotations

import contextlib
import io
import os

from mala_tui.ui.terminal_driver import GoneProof


def test_a_terminal_that_fails_is_written_to_no_more() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody reads: the next write fails with EPIPE, as on a closed pty
    file = os.fdopen(write_end, "w", buffering=1)
    proof = GoneProof(file)
    assert proof.write("\x1b[?1003l\n") == len("\x1b[?1003l\n")  # dropped, not raised
    proof.flush()
    assert proof.gone and not proof.isatty()
    assert proof.write("more") == 4
    with contextlib.suppress(OSError):  # what is still buffered cannot be written either
        file.close()


def test_a_working_file_is_written_through() -> None:
    buffer = io.StringIO()
    proof = GoneProof(buffer)
    proof.write("hello")
    proof.flush()
    assert buffer.getvalue() == "hello" and not proof.gone
