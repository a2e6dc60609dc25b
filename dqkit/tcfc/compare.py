"""TCFC's job orders (T2) and the comparison of two sides' aggregated rows (Algorithm 1, C3, C4).

``classify`` turns the rows of one job into MISSING, EXCESS and DIFF fragments (null-safe matching,
floats within a tolerance); ``sorted_values`` orders fragment values of any type deterministically.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from dqkit.tcfc.engines import BoundPair, Unrepresentable, normalise
from dqkit.tcfc.model import DIFF, EXCESS, MISSING, ORDERS, Difference, Job, _GROUP
from dqkit.tcfc.spec import Aggregate


def default_order(job: Job) -> tuple:
    """§2.13's comparator: roots, reuse checks, error pursuit, healthy; then level, priority, insertion."""
    return (_GROUP[job.kind], job.level, -job.priority, job.seq)


def breadth_first(job: Job) -> tuple:
    """Pure breadth-first across all pairs: level, then priority, then insertion order."""
    return (job.level, -job.priority, job.seq)


#: each job order (``dqkit.tcfc.model.ORDERS``) with its sort key
ORDER_FUNCTIONS: dict[str, Callable[[Job], tuple]] = dict(zip(ORDERS, (default_order, breadth_first), strict=True))


def sort_key(v: Any) -> tuple:
    """A total order over normalised values of mixed types (NULL first, unrepresentable last)."""
    if v is None:
        return (0,)
    if isinstance(v, Unrepresentable):
        return (3, v.engine, v.text)
    if isinstance(v, bool):
        return (1, 0, int(v))
    if isinstance(v, (int, float, Decimal)):
        return (1, 0, v)
    return (2, type(v).__name__, v)


def values_key(t: Sequence[Any]) -> tuple:
    return tuple(sort_key(v) for v in t)


def sorted_values(keys: Any) -> list[tuple]:
    """``keys`` in ``values_key`` order. Python's own tuple order is the same order whenever it can compare
    the values at all (one type, or numbers, per position, no NULL reached), and is far cheaper; a
    TypeError (NULL, mixed types, unrepresentable values) falls back to ``values_key``."""
    keys = list(keys)
    try:
        return sorted(keys)
    except TypeError:
        return sorted(keys, key=values_key)


# --------------------------------------------------------------------------------------- comparison
def _agg_value(v: Any, a: Aggregate, types: Mapping[str, str], engine: str) -> Any:
    if v is None:
        return None
    if a.function == "count":
        return int(v)
    if a.function == "avg":
        return float(v)
    if a.function == "hash":
        return tuple(v.values()) if isinstance(v, dict) else tuple(v) if isinstance(v, (list, tuple)) else v
    if a.function in ("min", "max"):
        return normalise(v, types.get(a.attribute, "any"), engine)
    if isinstance(v, Decimal) and not v.is_finite():
        return Unrepresentable(engine, str(v))
    return v


def _equal(a: Any, b: Any, agg: Aggregate, abs_tol: float, rel_tol: float) -> bool:
    if a is None or b is None:
        return a is None and b is None
    floaty = agg.function == "avg" or isinstance(a, float) or isinstance(b, float)
    if floaty and isinstance(a, (int, float, Decimal)) and isinstance(b, (int, float, Decimal)):
        fa, fb = float(a), float(b)
        return abs(fa - fb) <= abs_tol + rel_tol * max(abs(fa), abs(fb))
    return a == b


def error_count(level_aggs: Sequence[Aggregate], src: tuple | None, tgt: tuple | None) -> int | None:
    """|count_r - count_s| of the first count aggregate: a lower bound on the rows that differ (E1)."""
    for i, a in enumerate(level_aggs):
        if a.function == "count":
            cs = src[i] if src is not None else 0
            ct = tgt[i] if tgt is not None else 0
            return abs(int(cs or 0) - int(ct or 0))
    return None


EQUAL_SAMPLE = 6


#: Python types already in ``normalise``'s canonical form, per logical type (checked per column: a column
#: holding only these and NULL is used as fetched)
_CANONICAL = {"int": (int,), "string": (str,), "float": (float,), "bool": (bool,), "date": (dt.date,),
              "any": (int, str, float)}
_AGG_CANONICAL = {"count": (int,), "avg": (float,), "sum": (int, float)}


def _column(values: Sequence[Any], convert: Callable[[Any], Any], plain: tuple | None) -> Sequence[Any]:
    """One fetched column in canonical form: as it is when every value already is, else converted."""
    if plain is not None and all(v is None or type(v) in plain for v in values):
        return values
    return [convert(v) for v in values]


def classify(bp: BoundPair, level: int, src_rows: Sequence[tuple], tgt_rows: Sequence[tuple], job: Job,
             equal: list | None = None) -> list[Difference]:
    """MISSING / EXCESS / DIFF between the aggregated rows of the two sides (Algorithm 1 lines 20-25).
    Values are normalised column by column (a column already canonical is used as fetched), so the
    key level of a large difference stays cheap."""
    lv = bp.spec.levels[level - 1]
    n = len(lv.X)

    def index(rows: Sequence[tuple], engine: str) -> dict[tuple, tuple]:
        if not rows:
            return {}
        cols = list(zip(*rows))
        keys = [_column(cols[i], lambda v, t=bp.types.get(c, "any"): normalise(v, t, engine),
                        _CANONICAL.get(bp.types.get(c, "any"))) for i, c in enumerate(lv.X)]
        vals = [_column(cols[n + i], lambda v, a=a: _agg_value(v, a, bp.types, engine),
                        _CANONICAL.get(bp.types.get(a.attribute, "any")) if a.function in ("min", "max")
                        else _AGG_CANONICAL.get(a.function)) for i, a in enumerate(lv.A)]
        key_rows = list(zip(*keys)) if n else [()] * len(rows)
        val_rows = list(zip(*vals)) if lv.A else [()] * len(rows)
        out = dict(zip(key_rows, val_rows))
        if len(out) == len(rows):
            return out
        out = {}
        for r, key, v in zip(rows, key_rows, val_rows):
            if key in out:  # two engine values normalised to one: keep both visible, never merge
                key = key + (Unrepresentable(engine, f"duplicate fragment {r[:n]!r}"),)
            out[key] = v
        return out

    q_r = index(src_rows, bp.source.engine.kind)
    q_s = index(tgt_rows, bp.target.engine.kind)
    ci = next((i for i, a in enumerate(lv.A) if a.function == "count"), None)  # error_count's aggregate
    diffs: list[Difference] = []
    for key in sorted_values(set(q_r) | set(q_s)):
        a, b = q_r.get(key), q_s.get(key)
        if b is None:
            kind = MISSING
        elif a is None:
            kind = EXCESS
        elif all(_equal(x, y, g, bp.spec.abs_tol, bp.spec.rel_tol) for x, y, g in zip(a, b, lv.A)):
            if equal is not None:
                equal.append((key, a))
            continue
        else:
            kind = DIFF
        errors = None if ci is None else abs(int((a[ci] if a is not None else 0) or 0)
                                             - int((b[ci] if b is not None else 0) or 0))
        diffs.append(Difference(bp.spec.name, level, lv.X, key, kind, a, b, job.job_id, job.parent_job, errors))
    return diffs
