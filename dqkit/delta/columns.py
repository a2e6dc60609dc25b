"""The column stage: changed rows paired by key, ``calc_diff`` per column, statistics (9)-(14)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.contract import render
from dqkit.delta._names import DELETE, INSERT, NULL_CHANGES, ROW_COUNT, STATUS
from dqkit.delta.calc import _is_float, calc_diff_sql, changed_sql
from dqkit.delta.plan import TablePlan
from dqkit.runtime.sparkutil import quote_ident as _q

#: per column: the key-paired values that differ yet are equal within the column's tolerance
WITHIN_TOLERANCE = "within_tolerance"

def key_counts(row_delta: DataFrame, plan: TablePlan) -> DataFrame:
    """Per key of the row delta: its number of DELETE and INSERT records (fixed-width, hash-aggregated).

    Grouping treats NULL keys as equal (NULL-safe pairing).
    """
    assert plan.key is not None
    is_delete = F.col(STATUS) == DELETE
    return row_delta.groupBy(*[F.col(_q(k)) for k in plan.key]).agg(
        F.count_if(is_delete).alias("_dq_deletes"), F.count_if(~is_delete).alias("_dq_inserts"))


#: A key with exactly one DELETE and one INSERT record: an update that can be paired (over key counts).
_PAIR_SQL = "(_dq_deletes = 1 AND _dq_inserts = 1)"


def _is_pair() -> Column:
    return F.expr(_PAIR_SQL)


def _pairing_aggregates() -> list[Column]:
    return [F.expr(f"count_if({_PAIR_SQL})").alias("_dq_pairs"),
            F.expr("coalesce(sum(_dq_deletes), 0)").alias("_dq_deletes"),
            F.expr("coalesce(sum(_dq_inserts), 0)").alias("_dq_inserts"),
            F.expr("coalesce(sum(CASE WHEN _dq_deletes > 1 THEN _dq_deletes ELSE 0 END"
                   " + CASE WHEN _dq_inserts > 1 THEN _dq_inserts ELSE 0 END), 0)").alias("_dq_ambiguous")]


#: Cost rule of the column stage: with at most this many DELETE and INSERT records (known from the
#: row statistics before the stage runs), one aggregation per key both counts a key's records and
#: keeps its one DELETE and one INSERT (``key_groups``), so pairing, the column statistics and the
#: pairing counts take one shuffle and one query; above it, shuffled hash joins (``pair_by_key``),
#: which never sort the wide records.
GROUPED_PAIRING_RECORDS = 200_000


def _record_sql(plan: TablePlan) -> str:
    values = [c for c in (*plan.columns, ROW_COUNT) if c not in (plan.key or ())]
    return f"struct({', '.join(_q(c) for c in values)})"


def key_groups(row_delta: DataFrame, plan: TablePlan) -> DataFrame:
    """Per key of the row delta: its number of DELETE and INSERT records (``_dq_deletes``, ``_dq_inserts``)
    and, where a side has exactly one record, that record (``o`` the DELETE, ``n`` the INSERT).

    One aggregation (grouping treats NULL keys as equal: NULL-safe pairing). ``o`` and ``n`` are read
    only for a pair (``_is_pair``), where each is the side's one record; a key with more records on a
    side is ambiguous and never paired, whatever record ``first`` kept for it.
    """
    assert plan.key is not None
    is_delete, record = f"({STATUS} = '{DELETE}')", _record_sql(plan)
    return row_delta.groupBy(*[F.col(_q(k)) for k in plan.key]).agg(
        F.expr(f"count_if({is_delete})").alias("_dq_deletes"),
        F.expr(f"count_if(NOT {is_delete})").alias("_dq_inserts"),
        F.expr(f"first(CASE WHEN {is_delete} THEN {record} END, true)").alias("o"),
        F.expr(f"first(CASE WHEN NOT {is_delete} THEN {record} END, true)").alias("n"))


def pair_by_key(row_delta: DataFrame, plan: TablePlan, records: int | None = None) -> DataFrame:
    """The key-paired updates: one row per key with exactly one DELETE (``o``) and one INSERT (``n``).

    A small changed set (``records``, DELETE plus INSERT records, at most ``GROUPED_PAIRING_RECORDS``)
    is paired by ``key_groups``. A large one by two equi-joins on the key (NULL-safe) restricted to
    the keys counted once on each side, so every aggregate stays fixed-width and a non-unique key can
    never produce a cross product: a key with more than one record on a side is ambiguous and is left
    unpaired (counted by ``column_statistics``). The answer is the same either way.
    """
    assert plan.key is not None
    key_cols = [F.col(_q(k)) for k in plan.key]
    if records is not None and records <= GROUPED_PAIRING_RECORDS:
        return key_groups(row_delta, plan).filter(_is_pair()).select(*key_cols, "o", "n")
    counts = key_counts(row_delta, plan)
    keys = counts.filter(_is_pair()).select(*key_cols)

    def side(status: str, alias: str) -> DataFrame:
        return row_delta.filter(F.col(STATUS) == status).select(
            *[F.col(_q(k)).alias(f"_dq_{alias}{n}") for n, k in enumerate(plan.key)],
            F.expr(_record_sql(plan)).alias(alias))

    def on(frame: DataFrame, alias: str) -> Column:
        conds = [F.col(_q(k)).eqNullSafe(frame[f"_dq_{alias}{n}"]) for n, k in enumerate(plan.key)]
        out = conds[0]
        for c in conds[1:]:
            out = out & c
        return out

    # hash joins: the sides are about as large as the key list, and sorting wide records costs more
    o, n = side(DELETE, "o").hint("shuffle_hash"), side(INSERT, "n").hint("shuffle_hash")
    joined = keys.join(o, on(o, "o")).join(n, on(n, "n"))
    return joined.select(*key_cols, "o", "n")


def build_column_delta(pairs: DataFrame, plan: TablePlan, abs_tol: float, rel_tol: float,
                       grouped: bool = False) -> tuple[DataFrame, DataFrame, list[Column]]:
    """(col_delta, updates, the aggregate expressions of statistics (9)-(14)) over the key pairs.

    With ``grouped``, ``pairs`` is ``key_groups``: the deltas are over its rows that hold a pair, and
    the aggregates count only those, so they can share one query with the pairing counts. Every
    expression is SQL text (``calc_diff_sql``): one driver-to-JVM call each.
    """
    values = [c for c in (*plan.columns, ROW_COUNT) if c not in (plan.key or ())]
    types = dict(plan.types)
    types[ROW_COUNT] = T.LongType()
    deltas, null_flags, changed_flags = [], [], []
    aggs: list[Column] = []
    for c in values:
        o, n = "o." + _q(c), "n." + _q(c)
        dt = types[c]
        own = c in plan.tolerances  # a per-column tolerance replaces the global one for its column
        a_tol, r_tol = plan.tolerances[c] if own else (abs_tol, rel_tol)
        diff = calc_diff_sql(o, n, dt, a_tol, r_tol, any_number=own)
        is_change = changed_sql(o, n, dt, a_tol, r_tol, any_number=own)
        null_change = f"({is_change} AND ({o} IS NULL OR {n} IS NULL))"
        # equal only within tolerance: the values differ, yet the change is not counted
        tolerated = (own or _is_float(dt)) and (a_tol or r_tol)
        within = f"(NOT ({o} <=> {n}) AND NOT {is_change})" if tolerated else None
        deltas.append(F.expr(diff).alias(c))
        null_flags.append(F.when(F.expr(null_change), F.lit(c)))
        changed_flags.append(F.when(F.expr(is_change), F.lit(c)))
        if grouped:
            diff, null_change = f"(CASE WHEN {_PAIR_SQL} THEN {diff} END)", f"({_PAIR_SQL} AND {null_change})"
            within = f"({_PAIR_SQL} AND {within})" if within else None
        aggs.append(F.expr(
            f"named_struct('count', count({diff}) + count_if({null_change}), 'max', max({diff}), "
            f"'min', min({diff}), 'q', percentile(CAST({diff} AS DOUBLE), array(0.25D, 0.5D, 0.75D)), "
            f"'{NULL_CHANGES}', count_if({null_change})"
            + (f", '{WITHIN_TOLERANCE}', count_if({within})" if within else "") + ")").alias(c))
    key_cols = [F.col(_q(k)) for k in (plan.key or ())]
    if grouped:
        pairs = pairs.filter(F.expr(_PAIR_SQL))
    col_delta = pairs.select(*key_cols, *deltas,
                             F.filter(F.array(*null_flags), lambda x: x.isNotNull()).alias(NULL_CHANGES))
    updates = pairs.select(*key_cols,
                           F.filter(F.array(*changed_flags), lambda x: x.isNotNull()).alias("changed_columns"),
                           F.col("o").alias("old"), F.col("n").alias("new"))
    return col_delta, updates, aggs


def column_statistics(pairs: DataFrame, aggs: Sequence[Column], row_delta: DataFrame, plan: TablePlan,
                      row_stats: Mapping[str, Any], grouped: bool = False
                      ) -> tuple[dict[str, dict[str, Any]], dict[str, int]]:
    """Statistics (9)-(14) for every column and the pairing counts.

    One aggregation over the pairs gives every column's statistics and the number of pairs. The
    DELETE and INSERT record counts are the row statistics. With ``grouped`` (``pairs`` is
    ``key_groups`` and ``aggs`` were built with ``grouped=True``), the same aggregation also counts
    the ambiguous keys; otherwise, only when some records stayed unpaired does a second fixed-width
    aggregation over the keys tell the ambiguous ones apart (a key with more than one record on a
    side). Both are ordinary query results, never observed metrics, which a recomputed task can
    leave partial (see ``changed_fingerprints``).
    """
    counts = _pairing_aggregates() if grouped else [F.count(F.lit(1)).alias("_dq_pairs")]
    row = pairs.agg(*counts, *aggs).first()
    stats: dict[str, dict[str, Any]] = {}
    for name in row.asDict():
        if name.startswith("_dq_"):
            continue
        s = row[name]
        q = s["q"] or [None, None, None]
        stats[name] = render.to_jsonable({
            "count": int(s["count"]), "max": s["max"], "min": s["min"],
            "q1": q[0], "median": q[1], "q3": q[2], NULL_CHANGES: int(s[NULL_CHANGES]),
            **({WITHIN_TOLERANCE: int(s[WITHIN_TOLERANCE])} if WITHIN_TOLERANCE in s.asDict() else {})})
    paired, deletes, inserts = int(row["_dq_pairs"]), int(row_stats["deletes"]), int(row_stats["inserts"])
    ambiguous = int(row["_dq_ambiguous"]) if grouped else 0
    if not grouped and paired < max(deletes, inserts):
        seen = key_counts(row_delta, plan).agg(*_pairing_aggregates()).first().asDict()
        ambiguous = int(seen["_dq_ambiguous"])
    pairing = {"paired": paired, "deletes": deletes, "inserts": inserts, "ambiguous_key_rows": ambiguous,
               "unpaired_deletes": deletes - paired, "unpaired_inserts": inserts - paired}
    return stats, pairing
