"""The dedup and row stages: one fingerprint shuffle for the changed rows and statistics (1)-(8),
then one broadcast fetch of the changed rows (the row delta)."""
from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from dqkit.delta._names import _C_NEW, _C_OLD, _STATS, DELETE, INSERT, ROW_COUNT, STATUS
from dqkit.delta.plan import TablePlan
from dqkit.fingerprint import FP_HI, FP_LO, row_fingerprint
from dqkit.sparkutil import quote_ident as _q
from dqkit.sparkutil import scoped_conf

def _fingerprinted(df: DataFrame, plan: TablePlan) -> DataFrame:
    hi, lo = row_fingerprint(df, plan.columns)
    return df.select(*[F.col(_q(c)) for c in plan.columns], hi.alias(FP_HI), lo.alias(FP_LO))


#: Planner options for the group-bys whose groups are nearly all distinct (row fingerprints, keys):
#: partial aggregation before the shuffle would build a hash map that reduces nothing, so it is
#: skipped (Spark 4.3+; older versions ignore the option).
DISTINCT_GROUPS_CONF = {"spark.sql.execution.bypassPartialAggregation": "true"}

#: Planner option for dqkit's short-lived caches (changed fingerprints, fetched rows): compressing
#: their columns costs more time than their memory is worth (fingerprints do not compress at all).
UNCOMPRESSED_CACHE_CONF = {"spark.sql.inMemoryColumnarStorage.compressed": "false"}


def fingerprint_counts(old: DataFrame, new: DataFrame, plan: TablePlan) -> DataFrame:
    """One shuffle: for each distinct row fingerprint, its number of copies in old and in new."""
    hi, lo = row_fingerprint(old, plan.columns)
    o = old.select(hi.alias(FP_HI), lo.alias(FP_LO), F.lit(True).alias("_dq_old"))
    hi, lo = row_fingerprint(new, plan.columns)
    n = new.select(hi.alias(FP_HI), lo.alias(FP_LO), F.lit(False).alias("_dq_old"))
    return (o.unionByName(n).groupBy(FP_HI, FP_LO)
            .agg(F.count_if(F.col("_dq_old")).alias(_C_OLD), F.count_if(~F.col("_dq_old")).alias(_C_NEW)))


def _row_stat_columns() -> list[Column]:
    c_old, c_new = F.col(_C_OLD), F.col(_C_NEW)
    differ = c_old != c_new
    return [
        F.coalesce(F.sum(c_old), F.lit(0)).alias("rows_old"),
        F.coalesce(F.sum(c_new), F.lit(0)).alias("rows_new"),
        F.count_if(c_old > 0).alias("dedup_rows_old"),
        F.count_if(c_new > 0).alias("dedup_rows_new"),
        F.count_if(differ & (c_old > 0)).alias("deletes"),
        F.count_if(differ & (c_new > 0)).alias("inserts"),
        # a changed row present more than once on its side: the row fetch must deduplicate
        F.count_if(differ & ((c_old > 1) | (c_new > 1))).alias("_dq_repeated"),
    ]


def _finish_counts(row: Mapping[str, Any]) -> dict[str, Any]:
    stats = {k: int(row[k] or 0) for k in ("rows_old", "rows_new", "dedup_rows_old", "dedup_rows_new",
                                           "deletes", "inserts")}
    out = finish_row_statistics(stats)
    out["_repeated"] = int(row.get("_dq_repeated") or 0)
    return out


def changed_fingerprints(old: DataFrame, new: DataFrame, plan: TablePlan
                         ) -> tuple[DataFrame, dict[str, Any], DataFrame]:
    """The dedup and row stages' one shuffle: (the changed fingerprints; statistics (1)-(8); the cache).

    The changed fingerprints are a view of the cache; ``cache.unpersist()`` releases it.

    One job computes both, exactly: the changed fingerprints (``c_old != c_new``) and one row of
    statistics over every fingerprint are two branches of one union over the same fingerprint
    aggregate, whose shuffle Spark plans once and reuses for the second branch (``ReusedExchange``).
    The union is cached; the statistics row is read back from the cache. Nothing here rests on
    observed metrics (``Dataset.observe``): Spark aggregates those through an accumulator that a
    recomputed task or stage (a lost executor, a fetch-failure retry) can leave counting only part
    of the rows, which once turned a cluster run's 300,000 rows into 150,185 with exit 1 as usual.
    Row data and statistics both come from ordinary query results, which Spark recomputes exactly.
    """
    counts = fingerprint_counts(old, new, plan)
    spark = counts.sparkSession
    stats = counts.agg(F.struct(*_row_stat_columns()).alias(_STATS))
    changed_part = counts.filter(F.col(_C_OLD) != F.col(_C_NEW)).select(
        FP_HI, FP_LO, _C_OLD, _C_NEW, F.lit(None).cast(stats.schema[_STATS].dataType).alias(_STATS))
    stats_part = stats.select(*[F.lit(None).cast(counts.schema[c].dataType).alias(c)
                                for c in (FP_HI, FP_LO, _C_OLD, _C_NEW)], _STATS)
    # a cached query is planned when persist() is called, so the planner options must be set here
    with scoped_conf(spark, {**DISTINCT_GROUPS_CONF, **UNCOMPRESSED_CACHE_CONF}):
        combined = changed_part.unionByName(stats_part).persist()
    try:
        with scoped_conf(spark, DISTINCT_GROUPS_CONF):
            combined.count()
            row = combined.filter(F.col(_STATS).isNotNull()).select(f"{_STATS}.*").first()
        stats_row = row.asDict() if row is not None else {}
        result = _finish_counts(stats_row)
    except BaseException:
        combined.unpersist()
        raise
    return combined.filter(F.col(FP_HI).isNotNull()).drop(_STATS), result, combined


def finish_row_statistics(s: dict[str, int]) -> dict[str, Any]:
    """Derive (3), (6), (7) and (8) from the counted statistics."""
    differences = s["deletes"] + s["inserts"]
    total = s["dedup_rows_old"] + s["dedup_rows_new"]
    percent = 0.0 if total == 0 else float(
        (Decimal(100 * differences) / Decimal(total)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))
    return {"rows_old": s["rows_old"], "rows_new": s["rows_new"],
            "rows_abs_diff": abs(s["rows_old"] - s["rows_new"]),
            "dedup_rows_old": s["dedup_rows_old"], "dedup_rows_new": s["dedup_rows_new"],
            "dedup_abs_diff": abs(s["dedup_rows_old"] - s["dedup_rows_new"]),
            "differences": differences, "percent": percent,
            "deletes": s["deletes"], "inserts": s["inserts"]}


def dedup_frame(source: DataFrame, plan: TablePlan) -> DataFrame:
    """DDB: each distinct row of ``source`` (over the compared columns) once, with ``row_count``."""
    rows = _fingerprinted(source, plan)
    return (rows.groupBy(FP_HI, FP_LO)
            .agg(*[F.first(_q(c)).alias(c) for c in plan.columns], F.count(F.lit(1)).alias(ROW_COUNT))
            .drop(FP_HI, FP_LO))


#: Changed fingerprints are broadcast to the row fetch up to this many (16 bytes + a count each).
BROADCAST_CHANGED_ROWS = 4_000_000


def build_row_delta(old: DataFrame, new: DataFrame, plan: TablePlan, changed: DataFrame,
                    row_stats: Mapping[str, Any]) -> DataFrame:
    """Every copy of every row whose fingerprint count changed, tagged DELETE/INSERT, fingerprinted.

    No shuffle of the inputs: the changed fingerprints (their number is known from the row
    statistics) are broadcast to one scan of each side. A row present ``row_count`` times comes back
    once per copy; ``fetch_changed_rows`` deduplicates only those rows (``row_count > 1``, counted
    in the row stage), so the common case of no repeated changed rows needs no aggregation at all.
    """
    def side(df: DataFrame, count_col: str, status: str) -> DataFrame:
        wanted = changed.filter(F.col(count_col) > 0).select(FP_HI, FP_LO, F.col(count_col).alias(ROW_COUNT))
        if row_stats["differences"] <= BROADCAST_CHANGED_ROWS:
            wanted = F.broadcast(wanted)
        rows = _fingerprinted(df, plan)
        # One 64-bit join key (Spark's compact long-keyed hash table), the other half checked on the
        # match. Written as an equality, the second half would become a join key too (a generic
        # two-column hash table, about 10% slower to probe); the XOR keeps it a residual condition.
        wanted = wanted.withColumnRenamed(FP_HI, "_dq_w_hi").withColumnRenamed(FP_LO, "_dq_w_lo")
        hit = (rows[FP_HI] == wanted["_dq_w_hi"]) & (rows[FP_LO].bitwiseXOR(wanted["_dq_w_lo"]) == 0)
        return rows.join(wanted, hit).drop("_dq_w_hi", "_dq_w_lo").withColumn(STATUS, F.lit(status))

    return side(old, _C_OLD, DELETE).unionByName(side(new, _C_NEW, INSERT))


def fetch_changed_rows(old: DataFrame, new: DataFrame, plan: TablePlan, changed: DataFrame,
                       row_stats: Mapping[str, Any]) -> tuple[DataFrame, DataFrame]:
    """(the fetched rows, cached and materialised; the row delta over them).

    The fetch is the run's second and last scan of the inputs. Caching its output means the
    column stage, the saved Parquet, notebook samples and charts all read the changed rows from
    memory instead of scanning both versions again.
    """
    spark = changed.sparkSession
    with scoped_conf(spark, UNCOMPRESSED_CACHE_CONF):
        fetched = build_row_delta(old, new, plan, changed, row_stats).persist()
    try:
        fetched.count()
    except BaseException:
        fetched.unpersist()
        raise
    rows = fetched
    if row_stats.get("_repeated", 1):
        single = fetched.filter(F.col(ROW_COUNT) == 1)
        repeated = fetched.filter(F.col(ROW_COUNT) > 1).dropDuplicates([STATUS, FP_HI, FP_LO])
        rows = single.unionByName(repeated)
    return fetched, rows.drop(FP_HI, FP_LO)
