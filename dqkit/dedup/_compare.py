"""Comparisons: each candidate pair gets one level (gamma) per comparison, on the executors.

Levels follow the Fellegi–Sunter agreement pattern, Splink's convention: ``-1`` NULL (a side is
missing: no evidence either way), ``0`` else (far), ``1..T`` the close levels (``T`` the closest),
``T + 1`` exact. Spark built-ins do the work where one exists and is exact (equality, ``levenshtein``,
Jaccard on word arrays, numeric and date differences); Jaro-Winkler and token-set ratios come from
``dqkit.primitives.similarity`` (rapidfuzz's vectorised ``process.cpdist``: one C++ call per Arrow batch, never
a Python loop per pair) in one pandas UDF per comparison that returns the level itself, so Python
sees each pair once per comparison whatever the number of thresholds. A NULL side gives the NULL level whatever the method, as ``dqkit.primitives.similarity`` treats NULLs.
"""
from __future__ import annotations

import math

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.dedup.config import Comparison
from dqkit.errors import UnsupportedTypeError

STRING_METHODS = {"levenshtein", "jaro_winkler", "jaccard", "token_set"}
PYTHON_METHODS = {"jaro_winkler", "token_set"}  # scored by dqkit.primitives.similarity (rapidfuzz), not a Spark built-in


def value_col(k: int) -> str:
    """Internal name of the k-th compared column (both sides: ``_dq_c{k}_l`` / ``_dq_c{k}_r``)."""
    return f"_dq_c{k}"


def gamma_col(i: int) -> str:
    return f"_dq_g{i}"


# ------------------------------------------------------------------------------------ types
def check_types(schema: T.StructType, comparisons: Sequence[Comparison]) -> None:
    """Refuse a method on a column type it cannot handle (before any Spark job). String methods read
    text, and integral and date columns as text; numeric reads numbers; date reads dates, or text
    with a ``date_format``; exact compares anything but maps."""
    for c in comparisons:
        t = schema[c.column].dataType
        m = c.method
        if m in STRING_METHODS:
            if isinstance(t, T.StringType):
                continue
            if isinstance(t, (T.IntegralType, T.DateType)):
                continue
            raise UnsupportedTypeError(f"comparison {c.label!r}: method {m} compares text, but column "
                                       f"{c.column!r} is {t.simpleString()}",
                                       hint="use method numeric (or exact) for numbers, date for dates, "
                                            "or read the column as text: types: {%s: string}" % c.column)
        elif m == "exact":
            if isinstance(t, T.MapType):
                raise UnsupportedTypeError(f"comparison {c.label!r}: column {c.column!r} is "
                                           f"{t.simpleString()}, which cannot be compared for equality",
                                           hint="compare a field of it, or drop it from the comparisons")
        elif m == "numeric":
            if not isinstance(t, T.NumericType):
                raise UnsupportedTypeError(f"comparison {c.label!r}: method numeric needs a numeric column, "
                                           f"but {c.column!r} is {t.simpleString()}",
                                           hint="columns are read as text; say types: {%s: double} in the "
                                                "config, or use levenshtein / exact" % c.column)
        elif m == "date":
            if isinstance(t, (T.DateType, T.TimestampType, T.TimestampNTZType)):
                continue
            if isinstance(t, T.StringType) and c.date_format:
                continue
            raise UnsupportedTypeError(f"comparison {c.label!r}: method date needs a date column"
                                       + (" or date_format for text" if isinstance(t, T.StringType) else "")
                                       + f", but {c.column!r} is {t.simpleString()}",
                                       hint="add date_format: yyyyMMdd (a Spark date pattern) to the comparison, "
                                            "or types: {%s: date}" % c.column)


def prepared(c: Comparison, column: Column, dtype: T.DataType) -> Column:
    """The column as the method reads it: text for string methods, a date for ``date``."""
    if c.method in STRING_METHODS and not isinstance(dtype, T.StringType):
        return column.cast("string")
    if c.method == "date" and isinstance(dtype, T.StringType):
        return F.to_date(F.try_to_timestamp(column, F.lit(c.date_format)))
    if c.method == "date":
        return F.to_date(column)
    if c.method == "numeric":
        return column.cast("double")
    return column


# ------------------------------------------------------------------------ vectorised scorers
def _scorer(method: str) -> Callable[[Any, Any], np.ndarray]:
    from dqkit.primitives import similarity as S

    return {"jaro_winkler": S.jaro_winkler, "token_set": S.token_set}[method]


def python_levels(method: str, thresholds: Sequence[float], a: Any, b: Any) -> np.ndarray:
    """The gamma of each pair ``(a[i], b[i])`` for a method scored in Python (``dqkit.primitives.similarity``,
    one rapidfuzz call per batch): -1 a NULL side, T+1 equal, T..1 the close levels (similarity >=
    the thresholds in turn), 0 else. The same levels ``level`` gives for a Spark-scored method."""
    a = a if hasattr(a, "is_valid") else pd.Series(a).reset_index(drop=True)
    b = b if hasattr(b, "is_valid") else pd.Series(b).reset_index(drop=True)
    if hasattr(a, "is_valid"):
        import pyarrow.compute as pc

        null = (~(pc.and_(a.is_valid(), b.is_valid())).to_numpy(zero_copy_only=False).astype(bool))
        equal = pc.fill_null(pc.equal(a, b), False).to_numpy(zero_copy_only=False).astype(bool)
    else:
        null = (a.isna() | b.isna()).to_numpy(dtype=bool)
        equal = (a == b).to_numpy(dtype=bool) & ~null
    t = len(thresholds)
    out = np.zeros(len(null), dtype=np.int32)
    todo = ~(null | equal)
    if t and todo.any():
        idx = np.flatnonzero(todo)
        if hasattr(a, "is_valid"):
            import pyarrow as pa

            take = pa.array(idx)
            s = _scorer(method)(a.take(take), b.take(take))
        else:
            s = _scorer(method)(a.iloc[idx], b.iloc[idx])
        got = np.zeros(len(idx), dtype=np.int32)
        for n, th in reversed(list(enumerate(thresholds))):  # the closest level wins
            got[s >= th] = t - n
        out[idx] = got
    out[equal] = t + 1
    out[null] = -1
    return out


def _udf(method: str, thresholds: tuple[float, ...]) -> Any:
    """A pandas UDF giving the gamma directly (so the plan calls Python once per pair and comparison,
    whatever the number of thresholds)."""
    def levels(a: pd.Series, b: pd.Series) -> pd.Series:
        return pd.Series(python_levels(method, thresholds, a, b))

    return F.pandas_udf(levels, T.IntegerType())  # type: ignore[call-overload]


# ----------------------------------------------------------------------------------- levels
def similarity(c: Comparison, l: Column, r: Column) -> Column:
    """The raw score of a Spark-scored method (a distance for levenshtein/numeric/date, a similarity
    for jaccard); ``PYTHON_METHODS`` are levelled by ``python_levels`` instead."""
    if c.method == "levenshtein":
        return F.levenshtein(l, r)
    if c.method == "jaccard":
        la = F.array_distinct(F.split(F.trim(l), r"\s+"))
        ra = F.array_distinct(F.split(F.trim(r), r"\s+"))
        union = F.size(F.array_union(la, ra))
        return F.when(union == 0, F.lit(1.0)).otherwise(F.size(F.array_intersect(la, ra)) / union)
    if c.method == "numeric":
        return F.abs(l - r)
    if c.method == "date":
        return F.abs(F.datediff(l, r))
    return F.lit(None)


def level(c: Comparison, l: Column, r: Column, score: Column | None = None) -> Column:
    """The gamma of comparison ``c`` for the pair (l, r): -1 NULL, 0 else, 1..T close, T+1 exact.
    ``score``: the pair's ``similarity`` already computed (a column), so it is read once per
    threshold instead of computed once per threshold."""
    if c.method in PYTHON_METHODS:  # the UDF gives the level itself, NULL and exact included
        return _udf(c.method, tuple(c.thresholds))(l, r)
    t = len(c.thresholds)
    g = F.when(l.isNull() | r.isNull(), F.lit(-1)).when(l == r, F.lit(t + 1))
    if t:
        s = similarity(c, l, r) if score is None else score
        ascending = c.method in ("levenshtein", "numeric", "date")
        for n, th in enumerate(c.thresholds):  # a distance is never negative: -1 is a bounded "beyond"
            g = g.when(((s >= 0) & (s <= th)) if ascending else s >= th, F.lit(t - n))
    return g.otherwise(F.lit(0)).cast("int")


def _bounded_score(c: Comparison, l: Column, r: Column) -> Column:
    """``similarity`` for a Spark-scored method with thresholds, computed once per pair; an edit
    distance beyond the largest threshold stops early and is -1 (``level`` reads it as "else")."""
    if c.method == "levenshtein" and min(c.thresholds) >= 0:
        return F.levenshtein(l, r, int(math.floor(max(c.thresholds))))  # -1: farther than the bound
    return similarity(c, l, r)


def add_levels(pairs: DataFrame, comparisons: Sequence[Comparison], columns: list[str],
               dtypes: dict[str, T.DataType]) -> DataFrame:
    """``pairs`` (with ``_dq_c{k}_l`` / ``_dq_c{k}_r``) plus one gamma column ``_dq_g{i}`` per comparison.

    The scores of Spark-scored comparisons with thresholds are columns of a first projection, which
    Spark keeps apart (an expensive expression used more than once is not inlined), so each is
    computed once per pair instead of once per threshold."""
    scores, gammas = [], []
    for i, c in enumerate(comparisons):
        k = columns.index(c.column)
        dtype = dtypes[c.column]
        lcol = prepared(c, F.col(value_col(k) + "_l"), dtype)
        rcol = prepared(c, F.col(value_col(k) + "_r"), dtype)
        if c.method not in PYTHON_METHODS and c.thresholds:
            scores.append(_bounded_score(c, lcol, rcol).alias(_score_col(i)))
            gammas.append(level(c, lcol, rcol, F.col(_score_col(i))).alias(gamma_col(i)))
        else:
            gammas.append(level(c, lcol, rcol).alias(gamma_col(i)))
    if not scores:
        return pairs.select("*", *gammas)
    return pairs.select("*", *scores).select(*pairs.columns, *gammas)


def _score_col(i: int) -> str:
    return f"_dq_s{i}"


def sorted_rows(rows: list[Any], by: list[str]) -> list[Any]:
    """Collected pattern rows in a fixed order, so EM sums the same numbers in the same order whatever
    the partitioning (floating-point sums depend on order)."""
    return sorted(rows, key=lambda r: tuple(r[c] for c in by))
