"""Named numbers of a result (``Result.metrics()``): flat ``{name: float}`` mappings that a history
records and the anomaly gates judge, one series per name.

Names are dotted paths (``rule.phiF.violations``, ``users.rows_new``); a column's metric is
``COLUMN.STAT`` in a profile. Timings are never metrics: they measure the machine, not the data.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

#: keys whose values measure time or the run itself, never the data (left out of every metric mapping)
TIMED_KEYS = frozenset({"seconds", "scan_seconds", "budget_s", "grace_s", "seconds_per_row", "fixed_seconds",
                        "exit_code", "job_id", "parent_job"})


def number(value: Any) -> float | None:
    """``value`` as a finite float (bools as 0/1), or None when it is not a number."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        v = float(value)
        return v if math.isfinite(v) else None
    try:  # numpy scalars
        import numpy as np

        if isinstance(value, np.generic) and np.issubdtype(type(value), np.number):
            v = float(value)
            return v if math.isfinite(v) else None
    except ImportError:  # pragma: no cover
        pass
    return None


def flatten(mapping: Mapping[str, Any], prefix: str = "", skip: Iterable[str] = TIMED_KEYS) -> dict[str, float]:
    """Every finite number under ``mapping`` (nested mappings joined with dots; lists and text left out)."""
    skip = frozenset(skip)
    out: dict[str, float] = {}
    for key, value in mapping.items():
        if str(key) in skip:
            continue
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, name + ".", skip))
            continue
        v = number(value)
        if v is not None:
            out[name] = v
    return out


def pick(mapping: Mapping[str, Any], keys: Iterable[str], prefix: str = "") -> dict[str, float]:
    """The finite numbers of ``mapping`` under ``keys`` (absent or non-numeric keys left out)."""
    out: dict[str, float] = {}
    for key in keys:
        v = number(mapping.get(key))
        if v is not None:
            out[f"{prefix}{key}"] = v
    return out
