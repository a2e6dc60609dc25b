"""Atomic outputs, written once: a file or a folder is written beside its target under a hidden
temporary name and renamed onto it (``os.replace``), so a failed or cancelled run leaves the target as it
was (absent, or the previous complete output) and nothing half-written is ever visible under its name.
"""
from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path


def _sibling(target: Path, kind: str) -> Path:
    return target.with_name(f".{target.name}.{kind}-{uuid.uuid4().hex[:8]}")


def atomic_file(target: str | os.PathLike, write: Callable[[Path], None]) -> Path:
    """Run ``write(tmp)`` to make a sibling temporary file, then rename it onto ``target``."""
    target = Path(target)
    tmp = _sibling(target, "tmp")
    try:
        write(tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


#: temporary folders of writes cancelled by Ctrl-C / SIGTERM (see ``remove_abandoned``)
ABANDONED: set[Path] = set()


def remove_abandoned() -> None:
    """Remove the temporary folders of cancelled writes; call it once their Spark jobs can no longer run."""
    while ABANDONED:
        shutil.rmtree(ABANDONED.pop(), ignore_errors=True)


def atomic_folder(target: str | os.PathLike, write: Callable[[Path], None]) -> Path:
    """Run ``write(tmp)`` into a fresh sibling folder, then rename it onto ``target``.

    A failure leaves ``target`` as it was (absent or the previous complete output) and removes the
    temporary folder, so no half-written output is ever visible under ``target``.
    """
    target = Path(target).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = _sibling(target, "tmp")
    try:
        tmp.mkdir()
        write(tmp)
        if target.exists():
            old = _sibling(target, "old")
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, KeyboardInterrupt):
            # a cancelled Spark write can still create folders under tmp; remove_abandoned() ends that
            ABANDONED.add(tmp)
        raise
    return target
