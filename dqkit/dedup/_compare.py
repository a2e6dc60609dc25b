"""Comparisons: each candidate pair gets one level (gamma) per comparison, on the executors.

Levels follow the Fellegi–Sunter agreement pattern, Splink's convention: ``-1`` NULL (a side is
missing: no evidence either way), ``0`` else (far), ``1..T`` the close levels (``T`` the closest),
``T + 1`` exact. Spark built-ins do the work where one exists (equality, ``levenshtein``, Jaccard on
word arrays, numeric and date differences); Jaro-Winkler and token-set ratios run in pandas UDFs on
rapidfuzz's vectorised ``process.cpdist`` (one C++ call per Arrow batch, never a Python loop per
pair). A NULL side gives the NULL level whatever the method, as ``dqkit.similarity`` treats NULLs.
"""
from __future__ import annotations

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
def _cpdist(a: pd.Series, b: pd.Series, scorer: Callable[..., Any], scale: float = 1.0) -> pd.Series:
    """``scorer`` on each pair (a[i], b[i]) with rapidfuzz's ``process.cpdist``; NaN where a side is NULL."""
    from rapidfuzz import process

    ok = (a.notna() & b.notna()).to_numpy()
    out = np.full(len(a), np.nan)
    if ok.any():
        xs = a[ok].astype(str).tolist()
        ys = b[ok].astype(str).tolist()
        out[ok] = process.cpdist(xs, ys, scorer=scorer, dtype=np.float64, workers=1) / scale
    return pd.Series(out)


def jaro_winkler_scores(a: pd.Series, b: pd.Series) -> pd.Series:
    """Jaro-Winkler similarity in [0, 1] of each pair (NaN for a NULL side)."""
    from rapidfuzz.distance import JaroWinkler

    return _cpdist(a, b, JaroWinkler.normalized_similarity)


def token_set_scores(a: pd.Series, b: pd.Series) -> pd.Series:
    """rapidfuzz's token-set ratio / 100 of each pair (NaN for a NULL side)."""
    from rapidfuzz import fuzz

    return _cpdist(a, b, fuzz.token_set_ratio, 100.0)


_UDFS: dict[str, Any] = {}


def _udf(name: str) -> Any:
    if name not in _UDFS:
        fn = {"jaro_winkler": jaro_winkler_scores, "token_set": token_set_scores}[name]
        _UDFS[name] = F.pandas_udf(fn, T.DoubleType())  # type: ignore[call-overload]
    return _UDFS[name]


# ----------------------------------------------------------------------------------- levels
def similarity(c: Comparison, l: Column, r: Column) -> Column:
    """The raw score of the method (a distance for levenshtein/numeric/date, a similarity otherwise)."""
    if c.method == "levenshtein":
        return F.levenshtein(l, r)
    if c.method in ("jaro_winkler", "token_set"):
        return _udf(c.method)(l, r)
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


def level(c: Comparison, l: Column, r: Column) -> Column:
    """The gamma of comparison ``c`` for the pair (l, r): -1 NULL, 0 else, 1..T close, T+1 exact."""
    t = len(c.thresholds)
    g = F.when(l.isNull() | r.isNull(), F.lit(-1)).when(l == r, F.lit(t + 1))
    if t:
        s = similarity(c, l, r)
        ascending = c.method in ("levenshtein", "numeric", "date")
        for n, th in enumerate(c.thresholds):
            g = g.when(s <= th if ascending else s >= th, F.lit(t - n))
    return g.otherwise(F.lit(0)).cast("int")


def add_levels(pairs: DataFrame, comparisons: Sequence[Comparison], columns: list[str],
               dtypes: dict[str, T.DataType]) -> DataFrame:
    """``pairs`` (with ``_dq_c{k}_l`` / ``_dq_c{k}_r``) plus one gamma column ``_dq_g{i}`` per comparison."""
    gammas = []
    for i, c in enumerate(comparisons):
        k = columns.index(c.column)
        dtype = dtypes[c.column]
        lcol = prepared(c, F.col(value_col(k) + "_l"), dtype)
        rcol = prepared(c, F.col(value_col(k) + "_r"), dtype)
        gammas.append(level(c, lcol, rcol).alias(gamma_col(i)))
    return pairs.select("*", *gammas)
