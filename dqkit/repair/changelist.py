"""The change list of a repair: one row per changed cell, the provenance of every fix (issue #26).

A repair run keeps a log of its rounds (``RepairResult.changes``: a cell changed in two rounds is two
rows). The change list folds that log to one row per cell whose value differs between the input and
the repaired table, so that Diftong's delta of the two (``dqkit delta DIRTY REPAIRED --key K``) names
exactly its cells. Its columns (``CHANGE_LIST_COLUMNS``):

* ``tid``: the row's key (the ``--key`` column's value, or a content id without a key);
* ``attr``: the column; ``old`` / ``new``: the input's value and the repaired value, as text;
* ``rules``: the rules whose fixes changed the cell (every round's, sorted);
* ``violation_id``: the smallest id (``rule|t1|t2``) of the violations naming the cell in the round
  that set its final value; ``iteration``: that round; ``method``: how that round repaired the cell
  (``equivalence-class``, ``holistic`` or ``black-box``).

Reading a saved change list back (``read_change_list``) and the Spark-free look at one
(``inspect_change_list``: its format, key and rule names) serve the review step (``dqkit.repair.review``).
"""
from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dqkit.errors import ParameterError
from dqkit.repair.hypergraph import violation_id
from dqkit.repair.review_manifest import CHANGE_LIST_COLUMNS, ChangeListInfo, inspect_change_list


__all__ = ["CHANGE_LIST_COLUMNS", "with_violation_ids", "fold_changes", "change_counts", "ChangeListInfo",
           "inspect_change_list", "read_change_list"]



def with_violation_ids(delta: DataFrame, fixes: DataFrame) -> DataFrame:
    """``delta (tid, attr, ..., rules)`` with ``violation_id``: the smallest id of the violations of
    the cell's rules whose candidate fixes (``fixes``, the round's detection) name the cell."""
    vid = violation_id(F.col("rule"), F.col("t1"), F.col("t2")).alias("_dq_vid")
    left = fixes.select(F.col("tid").cast("string").alias("_dq_t"), F.col("attr").alias("_dq_a"), "rule", vid)
    right = fixes.where(F.col("rhs_tid").isNotNull()).select(
        F.col("rhs_tid").cast("string").alias("_dq_t"), F.col("rhs_attr").alias("_dq_a"), "rule", vid)
    naming = left.unionByName(right)
    cond = ((F.col("tid").cast("string") == F.col("_dq_t")) & (F.col("attr") == F.col("_dq_a"))
            & F.array_contains(F.col("rules"), F.col("rule")))
    cols = delta.columns
    return (delta.join(naming, cond, "left").groupBy(*[F.col(c) for c in cols])
            .agg(F.min("_dq_vid").alias("violation_id")))


def fold_changes(log: DataFrame) -> DataFrame:
    """The change list (``CHANGE_LIST_COLUMNS``) of a repair's round log: per cell the input's value
    (the first round's ``old``), the final value (the last round's ``new``), every round's rules and
    the last round's violation, iteration and method; a cell set back to its input value is no change."""
    first = F.min(F.struct("iteration", "old"))
    last = F.max(F.struct("iteration", "new", "violation_id", "method"))
    folded = log.groupBy("tid", "attr").agg(
        first["old"].alias("old"), last["new"].alias("new"),
        F.array_sort(F.array_distinct(F.flatten(F.collect_list("rules")))).alias("rules"),
        last["violation_id"].alias("violation_id"), last["iteration"].alias("iteration"),
        last["method"].alias("method"))
    return folded.where(~F.col("old").eqNullSafe(F.col("new"))).select(*CHANGE_LIST_COLUMNS)


def change_counts(changes: DataFrame) -> tuple[dict[str, int], dict[str, int]]:
    """(changed cells per rule, changed cells per column) of a change list; one small aggregate each.
    A cell changed for two rules counts once for each."""
    per_rule = {r["rule"]: int(r["n"]) for r in changes.select(F.explode("rules").alias("rule"))
                .groupBy("rule").count().withColumnRenamed("count", "n").orderBy("rule").collect()}
    per_col = {r["attr"]: int(r["n"]) for r in changes.groupBy("attr").count()
               .withColumnRenamed("count", "n").orderBy("attr").collect()}
    return per_rule, per_col


def read_change_list(info: ChangeListInfo, spark: Any) -> DataFrame:
    """The rows of a saved change list as ``CHANGE_LIST_COLUMNS`` (``rules`` an array; CSV text read
    as text, so ``old``/``new`` keep their exact spelling)."""
    if info.format == "csv":
        df = spark.read.option("header", True).option("inferSchema", False).csv(info.rows)
        df = (df.withColumn("rules", F.split(F.coalesce(F.col("rules"), F.lit("")), ";"))
              .withColumn("rules", F.filter("rules", lambda r: r != ""))
              .withColumn("iteration", F.col("iteration").cast("int")))
    else:
        df = spark.read.parquet(info.rows)
    missing = [c for c in CHANGE_LIST_COLUMNS if c not in df.columns]
    if missing:
        raise ParameterError(f"{info.path} is not a change list: no column(s) {', '.join(missing)}")
    return df.select(*CHANGE_LIST_COLUMNS)
