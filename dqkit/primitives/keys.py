"""Keys checked before they are trusted, and the names dqkit reserves for its own columns.

A key tells rows apart: detection names tuples by it, repair applies a fix to the row carrying the key
the fix was computed for, deduplication and query-time cleaning identify records by it. A key that
repeats or is NULL silently breaks that promise (a fix computed for one row lands on another row with
the same key), so every kernel taking a key calls ``check_key`` before it computes or writes anything:
one Spark aggregation over the key, and a refusal (``InvalidKeyError``, exit 2) naming the column(s),
how many key values repeat, how many rows have a NULL key and at most ``MAX_EXAMPLES`` examples.

A composite key is NULL when any of its columns is NULL (such a row cannot be told apart reliably:
SQL equality on NULL is unknown).

``check_reserved`` needs no Spark (it reads column names only), so a registry's ``validate()`` can
call it on a schema taken from a Parquet footer or a CSV header.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dqkit.errors import InvalidKeyError, UnknownColumnError
from dqkit.checks.reserved import RESERVED_PREFIXES, check_reserved, reserved_in
from dqkit.runtime.sparkutil import cancellable, col

__all__ = ["MAX_EXAMPLES", "WITHOUT_KEY", "RESERVED_PREFIXES", "key_columns", "check_key", "refuse_key", "check_reserved",
           "reserved_in"]

MAX_EXAMPLES = 5
"""At most this many repeated key values are shown in a refusal."""

WITHOUT_KEY = "leave --key out so dqkit adds a row id"
"""The default way on without a key (commands that number rows themselves)."""


_N = "_dq_n"


def key_columns(columns: str | Sequence[str]) -> tuple[str, ...]:
    """The key's columns as a tuple (a single name, or a sequence of names)."""
    cols = (columns,) if isinstance(columns, str) else tuple(columns)
    if not cols or not all(isinstance(c, str) and c for c in cols):
        raise UnknownColumnError(f"a key is one or more column names, not {columns!r}")
    return cols


def _label(cols: tuple[str, ...]) -> str:
    return cols[0] if len(cols) == 1 else "(" + ", ".join(cols) + ")"


def _value(v: Any) -> str:
    return repr(v) if isinstance(v, str) else str(v)


def check_key(df: DataFrame, columns: str | Sequence[str], *, table: str, command: str,
              without: str = WITHOUT_KEY) -> int:
    """Refuse a key that repeats or is NULL in ``df``; returns the row count when the key is sound.

    ``table`` names the table in the message, ``command`` the dqkit command (or function) that needs
    the key, ``without`` how to go on without a key (the hint starts with "choose a unique key, or").
    One aggregation over the key decides; only a refusal runs a second (bounded) job for examples.
    Raises ``UnknownColumnError`` for a column not in ``df`` and ``InvalidKeyError`` for a bad key.
    """
    cols = key_columns(columns)
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise UnknownColumnError(f"{command}: key column {missing[0]!r} is not in {table}",
                                 hint="columns are " + ", ".join(df.columns))
    ks = [f"_dq_k{i}" for i in range(len(cols))]
    per = df.groupBy(*[col(c).alias(k) for c, k in zip(cols, ks)]).agg(F.count(F.lit(1)).alias(_N))
    null = F.lit(False)
    for k in ks:
        null = null | F.col(k).isNull()
    repeated = ~null & (F.col(_N) > 1)
    with cancellable(f"the key check of {table}"):
        row = per.agg(F.coalesce(F.sum(_N), F.lit(0)).alias("rows"),
                      F.coalesce(F.sum(F.when(null, F.col(_N))), F.lit(0)).alias("nulls"),
                      F.count(F.when(repeated, 1)).alias("repeats"),
                      F.coalesce(F.sum(F.when(repeated, F.col(_N))), F.lit(0)).alias("repeat_rows")).collect()[0]
    refuse_key(per, cols, nulls=int(row["nulls"]), repeats=int(row["repeats"]), repeat_rows=int(row["repeat_rows"]),
               table=table, command=command, without=without)
    return int(row["rows"])


def refuse_key(per: DataFrame, columns: str | Sequence[str], *, nulls: int, repeats: int, repeat_rows: int,
               table: str, command: str, without: str = WITHOUT_KEY) -> None:
    """Raise ``check_key``'s refusal when ``nulls`` or ``repeats`` is non-zero; else return.

    ``per``: one row per key value, the key's columns as ``_dq_k0, _dq_k1, ...`` and its row count as
    ``_dq_n`` (read only on a refusal, for the examples). Shared by ``check_key`` and commands that
    count keys inside an aggregation of their own (``detect --since`` fuses it into its change join),
    so every refusal of a bad key reads the same.
    """
    cols = key_columns(columns)
    ks = [f"_dq_k{i}" for i in range(len(cols))]
    if not nulls and not repeats:
        return
    null = F.lit(False)
    for k in ks:
        null = null | F.col(k).isNull()
    repeated = ~null & (F.col(_N) > 1)
    label = _label(cols)
    parts = []
    examples: list[str] = []
    if repeats:
        with cancellable(f"the key check of {table}"):
            ex = per.where(repeated).orderBy(F.desc(_N), *ks).limit(MAX_EXAMPLES).collect()
        for r in ex:
            vals = [r[k] for k in ks]
            shown = _value(vals[0]) if len(vals) == 1 else "(" + ", ".join(_value(v) for v in vals) + ")"
            examples.append(f"{shown} ({r[_N]} rows)")
        parts.append(f"{repeats} key value(s) repeat, on {repeat_rows} rows, for example "
                     + ", ".join(examples))
    if nulls:
        parts.append(f"the key is NULL in {nulls} row(s)")
    what = "is not unique" if repeats else "has NULL values"
    if repeats and nulls:
        what = "is not unique and has NULL values"
    raise InvalidKeyError(f"{command}: key {label} of {table} {what}: " + "; ".join(parts),
                          hint=f"choose a unique key, or {without}; nothing was written",
                          columns=cols, repeated=repeats, null_rows=nulls, examples=tuple(examples))
