"""Checkpoint folders: where a run's reliable checkpoints go, and removing what a run created.

Kept free of Spark imports so the CLI can set them up before any check runs. The checkpoints themselves
are taken by ``dqkit.runtime.sparkutil.checkpoint``; this module holds the folder choice it reads:
``DQKIT_CHECKPOINT_DIR`` (the CLI's ``--checkpoint-dir``, inherited by a report kernel), the fallback
beside ``--out`` (or a temporary folder) for a run on a cluster, and the clean-up at the end.
"""
from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from urllib.parse import urlparse

from dqkit.errors import ParameterError
from dqkit.runtime.atomic import temp_name

#: the checkpoint folder of every session this process (and a report kernel it starts) creates
CHECKPOINT_ENV = "DQKIT_CHECKPOINT_DIR"
#: the folders this process created and removes at the end (a fallback folder, or the application's
#: subfolder that Spark made under a given folder)
created: list[str] = []
#: every checkpoint folder this process created, in order (kept after removal: what a run did)
history: list[str] = []
_near: list[str] = []  # the fallback beside --out of the command that runs now, if any


def local_path(folder: str) -> str | None:
    """``folder`` as a path on this machine's file system, or None for another scheme (hdfs:, s3a:)."""
    m = re.match(r"^([A-Za-z][A-Za-z0-9+.-]+):", folder)
    if m is None:
        return folder
    return urlparse(folder).path if m.group(1).lower() == "file" else None


def fallback_folder() -> str:
    """Create the folder a cluster run checkpoints into when none was given (beside ``--out``, else a
    temporary folder); it is removed at the end of the command, or when Python exits."""
    if _near:
        folder = _near[-1]
        os.makedirs(folder, exist_ok=True)
    else:
        folder = tempfile.mkdtemp(prefix="dqkit-checkpoint-")
    created.append(folder)
    history.append(folder)
    return folder


def _remove(folder: str) -> None:
    local = local_path(folder)
    if local is not None:
        shutil.rmtree(local, ignore_errors=True)
        return
    try:  # another file system: through the JVM's Hadoop client, while a classic session is alive
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()
        if spark is not None and not type(spark).__module__.startswith("pyspark.sql.connect"):
            jvm, sc = spark.sparkContext._jvm, spark.sparkContext._jsc.sc()  # type: ignore[union-attr]
            path = jvm.org.apache.hadoop.fs.Path(folder)
            path.getFileSystem(sc.hadoopConfiguration()).delete(path, True)
    except Exception:  # noqa: BLE001 - best effort: the run's answer does not depend on it
        pass


def remove_checkpoints() -> None:
    """Remove the checkpoint folders this process created; a folder the user gave stays."""
    while created:
        _remove(created.pop())


atexit.register(remove_checkpoints)  # a notebook or library run on a cluster: gone when Python ends


@contextlib.contextmanager
def checkpoint_scope(folder: str | None, out: str | None) -> Iterator[None]:
    """For one CLI command: ``folder`` (``--checkpoint-dir``) becomes ``DQKIT_CHECKPOINT_DIR`` for the
    session and any report kernel; without it, a run on a cluster checkpoints beside ``out`` (a hidden
    ``.NAME.checkpoint-*`` sibling, on the storage the output goes to) or in a temporary folder. What
    the run created is removed when the block ends, whether it succeeded or not. Refuses, before any
    work, a ``folder`` that is a file."""
    if folder:
        local = local_path(folder)
        if local is not None and os.path.exists(local) and not os.path.isdir(local):
            raise ParameterError(f"--checkpoint-dir {folder} is a file, not a folder",
                                 hint="give a folder (created if missing) on storage every node sees")
    before = os.environ.get(CHECKPOINT_ENV)
    if folder:
        os.environ[CHECKPOINT_ENV] = folder
    pushed = False
    if out and not out.startswith("catalog:") and local_path(out) is not None:
        target = os.path.abspath(local_path(out) or out)
        _near.append(str(temp_name(target, "ckpt")))  # named for this run: a killed run's is swept
        pushed = True
    try:
        yield
    finally:
        if pushed:
            _near.pop()
        remove_checkpoints()
        # the folder was this command's: a later command in the same process (a notebook, a test) must
        # not keep checkpointing into it
        if before is None:
            os.environ.pop(CHECKPOINT_ENV, None)
        else:
            os.environ[CHECKPOINT_ENV] = before
