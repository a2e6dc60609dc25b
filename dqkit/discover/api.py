"""``discover``: the minimal FDs (exact, or approximate by g3) and, on request, the two-tuple DCs of a
table, ranked; the route (driver or Spark) chosen by the measured size."""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from dqkit.discover.lattice import DiscoveredFD, Search, search_fds
from dqkit.discover.result import DiscoverResult
from dqkit.errors import ParameterError, UnknownColumnError

#: the most cells (rows x searched columns) the driver route takes; above it the search runs on Spark
#: (``DQKIT_DISCOVER_DRIVER_CELLS`` overrides). 20 million cells are ~160 MB of int64 codes.
DRIVER_CELLS = 20_000_000
ROUTES = ("auto", "driver", "spark")


def driver_cells() -> int:
    text = os.environ.get("DQKIT_DISCOVER_DRIVER_CELLS", "").strip()
    return int(text) if text.isdigit() else DRIVER_CELLS


def rank(rules: Sequence[Any]) -> list[Any]:
    """Best first: by score, then the shorter left-hand side, the smaller error, the rule text."""
    return sorted(rules, key=lambda r: (-round(r.score, 12), len(getattr(r, "lhs", ())), r.g3, r.kind, r.text))


def discover(table: Any, *, key: str | None = None, columns: Sequence[str] | None = None, error: float = 0.0,
             max_lhs: int | None = None, dc: bool = False, dc_predicates: int = 2, top: int | None = None,
             route: str = "auto", spark: Any = None, progress: Callable[..., None] | None = None,
             name: str | None = None) -> DiscoverResult:
    """The minimal non-trivial FDs ``X -> A`` of ``table`` with g3 <= ``error`` and ``|X| <= max_lhs``
    (and with ``dc`` the minimal two-tuple DCs of at most ``dc_predicates`` predicates violated by at
    most ``error`` of the ordered tuple pairs), ranked by score, the first ``top`` kept.

    ``columns`` bounds the search (default: every column but ``key``); ``route``: ``driver`` (Arrow and
    NumPy on the driver), ``spark`` (one aggregation job per lattice level) or ``auto`` (the driver when
    rows x columns <= ``DRIVER_CELLS``). NULL equals NULL.
    """
    from dqkit.io.sources import read_table
    from dqkit.runtime.session import get_spark

    if route not in ROUTES:
        raise ParameterError(f"route must be one of {', '.join(ROUTES)}, not {route!r}")
    started = time.monotonic()
    spark = spark or (None if _is_frame(table) else get_spark())
    df = read_table(table, spark)
    names = list(df.columns)
    if columns:
        for c in columns:
            if c not in names:
                raise UnknownColumnError(f"--columns: unknown column {c!r}", hint=f"columns: {', '.join(names)}")
        cols = list(dict.fromkeys(columns))
    else:
        cols = [c for c in names if c != key]
    if len(cols) < 2:
        raise ParameterError(f"discover needs at least two columns to relate; the search has {len(cols)}"
                             + (f" ({cols[0]!r})" if cols else ""),
                             hint="give a table of two columns or more (or more names in --columns)")
    frame = df.select(*[f"`{c.replace('`', '``')}`" for c in cols])
    n = int(frame.count())
    if n == 0:
        raise ParameterError(f"the table {name or table} has no rows: there is nothing to discover rules from",
                             hint="give a table with rows")
    chosen = route if route != "auto" else ("driver" if n * len(cols) <= driver_cells() else "spark")
    arrow = None
    facts: dict[str, Any] = {}
    if chosen == "driver":
        from dqkit.discover.driver import DriverMeasure, encode

        arrow = frame.toArrow()
        codes = encode(arrow, cols)
        search = search_fds(cols, n, DriverMeasure(codes), error=error, max_lhs=max_lhs,
                            progress=_levels(progress))
    else:
        from dqkit.discover.spark import SparkMeasure

        cached = frame.cache()
        try:
            measure = SparkMeasure(cached, cols)
            search = search_fds(cols, n, measure, error=error, max_lhs=max_lhs, progress=_levels(progress))
            facts["spark jobs"] = measure.jobs
        finally:
            cached.unpersist()
    notes = list(search.notes) + _column_notes(search, cols, n)
    rules: list[Any] = list(search.fds)
    complete = search.complete
    if dc:
        from dqkit.discover.dc import discover_dcs

        found = discover_dcs(frame if arrow is None else arrow, cols, rows=n, error=error,
                             max_predicates=dc_predicates)
        rules += found.dcs
        notes += found.notes
        complete = complete and found.complete
        facts["dc pairs checked"] = found.pairs
        facts["denial constraints searched"] = True
    ranked = rank(rules)
    kept = ranked if top is None else ranked[:top]
    facts = {"seconds": round(time.monotonic() - started, 3), "lattice levels": search.levels,
             "candidates measured": search.candidates, **facts}
    shown_name = name or (str(table) if isinstance(table, (str, os.PathLike)) else "DataFrame")
    inputs = (os.fspath(table),) if isinstance(table, (str, os.PathLike)) else ()
    return DiscoverResult(shown_name, n, tuple(cols), float(error), chosen, tuple(kept), len(ranked), complete,
                          tuple(notes), facts, inputs)


def _is_frame(obj: Any) -> bool:
    return hasattr(obj, "sparkSession") and hasattr(obj, "columns")


def _levels(progress: Callable[..., None] | None) -> Callable[[int, int], None] | None:
    if progress is None:
        return None
    return lambda level, cands: progress("fds", f"level {level}: {cands} candidates", level + 1, level + 1)


def _column_notes(search: Search, cols: Sequence[str], rows: int) -> list[str]:
    """Constant columns said plainly: a column of one value (or only NULL) is determined by nothing."""
    out = []
    for fd in search.fds:
        if not fd.lhs and fd.violations == 0 and rows > 1:
            out.append(f"column {fd.rhs!r} holds one value on every row (NULL counts as a value): it is constant, "
                       f"reported as {fd.text}, and no other FD with it on the right is minimal")
    return out


__all__ = ["discover", "rank", "DRIVER_CELLS", "ROUTES", "DiscoveredFD"]
