"""What a command reads, sized before Spark starts: a tiny input gets a JVM tuned for a short life.

Spark-free (the CLI calls ``expect_inputs`` once its checks passed, also for commands that may never
start Spark); ``dqkit.runtime.session.get_spark`` asks ``short_lived_jvm`` when it starts the embedded JVM.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

#: a command whose inputs add up to at most this many bytes starts its embedded JVM for a short life:
#: C1-only JIT and the serial GC (on a 6-row repair they halve the JVM's CPU, 19.0 s -> 9.3 s, see the
#: Makefile's TEST_JVM), where C2 compiling Spark's hot paths never pays back; DQKIT_SMALL_INPUT_JVM=0 turns it off
SMALL_INPUT_BYTES = 64 * 1024 * 1024
SMALL_INPUT_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
_input_bytes: list[int | None] = []  # the size of the running command's inputs (None: unknown), set by the CLI


def input_bytes(paths: list[Any], limit: int = SMALL_INPUT_BYTES) -> int | None:
    """The total size of the local files and folders in ``paths``, counted up to just past ``limit``; None
    when one is not a local path (a catalog table, a URL) or cannot be read."""
    total = 0
    for item in paths:
        text = str(item)
        if re.match(r"^[A-Za-z][A-Za-z0-9+.-]+:", text):
            return None
        path = Path(text)
        try:
            files = [path] if path.is_file() else path.rglob("*") if path.is_dir() else None
            if files is None:
                return None
            for f in files:
                if f.is_file():
                    total += f.stat().st_size
                    if total > limit:
                        return total
        except OSError:
            return None
    return total


def expect_inputs(paths: list[Any]) -> None:
    """Tell the session about to start what the command reads (``Params.inputs()``), so a tiny input gets
    a JVM tuned for a short life (``SMALL_INPUT_JVM_OPTIONS``). Reads only file sizes; no Spark."""
    _input_bytes[:] = [input_bytes(paths)]


def short_lived_jvm(master: str) -> bool:
    """Whether the embedded driver JVM about to start should use ``SMALL_INPUT_JVM_OPTIONS``: a local
    master, inputs known to be at most ``SMALL_INPUT_BYTES``, and not turned off.

    ``DQKIT_SMALL_INPUT_JVM``: ``0`` never, ``small`` (the default) when the inputs are known to be tiny,
    ``always`` for every local session, also one started before its inputs are known (a notebook's
    ``dqkit.get_spark()`` on a few rows; the test suite's tutorials and subprocesses run this way)."""
    mode = os.environ.get("DQKIT_SMALL_INPUT_JVM", "small")
    if mode == "0" or not master.startswith("local"):
        return False
    if mode == "always":
        return True
    return bool(_input_bytes) and _input_bytes[0] is not None and _input_bytes[0] <= SMALL_INPUT_BYTES
