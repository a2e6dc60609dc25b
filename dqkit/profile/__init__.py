"""Column profiles in one scan (``profile(table)``): per column rows, NULLs, distinct values, min, max,
mean, stddev, quantiles, top values, string lengths and the share of values parsing as the column's
apparent type; per table rows and exact duplicate rows. ``ProfileResult.metrics()`` names every number
for ``--history``. Importing this package needs no pyspark: the names load on first use."""
from __future__ import annotations

import importlib
from typing import Any

__all__ = ["profile", "ProfileResult", "ColumnProfile"]
_WHERE = {"profile": "api", "ProfileResult": "_result", "ColumnProfile": "kernel"}


def __getattr__(name: str) -> Any:
    """Load the kernel on first use."""
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
