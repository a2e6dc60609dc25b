"""Papermill template notebooks, installed as package data and found by name."""
from __future__ import annotations

from pathlib import Path

TEMPLATE_DIR = Path(__file__).parent


def template_path(name: str) -> Path:
    """The path of the template notebook ``name`` (with or without ``.ipynb``)."""
    from dqkit.errors import ParameterError

    stem = name[:-6] if name.endswith(".ipynb") else name
    for candidate in (TEMPLATE_DIR / f"{stem}.ipynb", TEMPLATE_DIR / f"{stem}_report.ipynb"):
        if candidate.exists():
            return candidate
    known = sorted(p.stem for p in TEMPLATE_DIR.glob("*.ipynb"))
    raise ParameterError(f"no report template named {name!r}", hint=f"known templates: {', '.join(known) or 'none'}")
