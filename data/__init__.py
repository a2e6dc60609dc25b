"""Bundled sample datasets and their seeded generators (installed as ``dqkit.data``)."""
from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent


def bundled(name: str) -> Path:
    """Path of a bundled sample dataset, e.g. ``bundled("users")`` (the Diftong running example)."""
    path = _HERE / name
    if not path.exists():
        from dqkit.errors import SourceError

        known = sorted(p.name for p in _HERE.iterdir() if p.is_dir() and not p.name.startswith("_"))
        raise SourceError(f"no bundled dataset named {name!r}", hint=f"bundled datasets: {', '.join(known)}")
    return path
