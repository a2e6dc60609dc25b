"""``profile(table)``: a table's column profile in one aggregation job (plus one small top-k job)."""
from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

from dqkit.profile._result import ProfileResult
from dqkit.profile.kernel import aggregate_exprs, read_profiles, top_values

__all__ = ["profile", "ProfileResult"]


def profile(table: Any, columns: Sequence[str] | None = None, *, top_k: int = 10, top_max_distinct: int = 1000,
            accuracy: int = 10000, rsd: float = 0.02, spark: Any = None, progress: Any = None) -> ProfileResult:
    """Profile ``table`` (a path, ``catalog:DB.TABLE`` or a DataFrame): every column of ``columns``
    (default: all) in one aggregation, the top ``top_k`` values of columns with at most
    ``top_max_distinct`` distinct values in a second job. ``accuracy``: ``percentile_approx``'s (rank
    error at most 1/accuracy); ``rsd``: the distinct-count sketch's relative standard deviation."""
    from dqkit.errors import UnknownColumnError
    from dqkit.io.sources import read_table

    started = time.monotonic()
    df = read_table(table, spark)
    names = list(columns) if columns else list(df.columns)
    missing = [c for c in names if c not in df.columns]
    if missing:
        raise UnknownColumnError(f"no column {missing[0]!r} in the table", hint=f"columns: {', '.join(df.columns)}")
    exprs, plan = aggregate_exprs(df, names, rsd=rsd, accuracy=accuracy)
    if progress:
        progress("profile", "aggregate", 0, 2)
    rows, dups, profiles = read_profiles(df.agg(*exprs).first(), plan)
    if progress:
        progress("profile", "aggregate", 1, 2)
    top_values(df, profiles, top_k, top_max_distinct)
    if progress:
        progress("profile", "top values", 2, 2)
    label = table if isinstance(table, str) else (os.fspath(table) if isinstance(table, os.PathLike) else "DataFrame")
    return ProfileResult(label, rows, dups, profiles, top_k=top_k, top_max_distinct=top_max_distinct,
                         accuracy=accuracy, rsd=rsd, seconds=time.monotonic() - started)
