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

import csv
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dqkit.errors import ParameterError, SourceError
from dqkit.repair.hypergraph import violation_id

__all__ = ["CHANGE_LIST_COLUMNS", "with_violation_ids", "fold_changes", "change_counts", "ChangeListInfo",
           "inspect_change_list", "read_change_list"]

CHANGE_LIST_COLUMNS = ("tid", "attr", "old", "new", "rules", "violation_id", "iteration", "method")
#: where a repair ``--out FOLDER`` keeps its change list
FOLDER_FRAME = "changes"


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


@dataclass(frozen=True)
class ChangeListInfo:
    """What a saved change list says about itself, read without Spark: where its rows are (``rows``,
    ``format`` ``parquet`` or ``csv``), the key it was computed with (None when unknown or a content
    id), whether it was a dry run, and the names of the rules it holds changes of."""

    path: str
    rows: str
    format: str
    key: str | None
    rules: tuple[str, ...]
    dry_run: bool = False


def inspect_change_list(path: str | os.PathLike) -> ChangeListInfo:
    """Look at a saved change list without Spark: a ``repair --out FOLDER`` (its ``changes/`` and
    ``summary.json``) or a ``NAME.changes.csv`` / ``NAME.changes.parquet`` file written beside a
    repaired table file. Refuses (``SourceError``) what is none of these."""
    p = Path(os.fspath(path))
    hint = "give the folder that `dqkit repair --out FOLDER` (or --dry-run) wrote, or its NAME.changes.csv file"
    if not p.exists():
        raise SourceError(f"no change list at {p}", hint=hint)
    if p.is_dir():
        summary = p / "summary.json"
        if not summary.is_file() or not (p / FOLDER_FRAME).is_dir():
            raise SourceError(f"{p} is not a repair's output folder (no summary.json and {FOLDER_FRAME}/)", hint=hint)
        try:
            data = json.loads(summary.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SourceError(f"cannot read {summary}: {exc}", hint=hint) from None
        if "change_list" not in data or "rule_methods" not in data:
            raise SourceError(f"{summary} is not the summary of a repair with a change list",
                              hint="rerun `dqkit repair ... --out FOLDER` (or --dry-run) with this dqkit")
        rules = tuple(sorted(set(data["rule_methods"]) | set(data["change_list"].get("per_rule", {}))))
        return ChangeListInfo(str(p), str(p / FOLDER_FRAME), "parquet", data.get("key"), rules,
                              bool(data.get("dry_run", False)))
    suffix = p.suffix.lower()
    if suffix == ".csv":
        with p.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            missing = [c for c in CHANGE_LIST_COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise SourceError(f"{p} is not a change list: no column(s) {', '.join(missing)}", hint=hint)
            names = {r for row in reader for r in (row["rules"] or "").split(";") if r}
        return ChangeListInfo(str(p), str(p), "csv", None, tuple(sorted(names)))
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(p, columns=["rules"])
        except Exception as exc:  # noqa: BLE001 - any unreadable file is the same refusal
            raise SourceError(f"{p} is not a change list ({exc})", hint=hint) from None
        names = {r for rules in table.column("rules").to_pylist() for r in (rules or [])}
        return ChangeListInfo(str(p), str(p), "parquet", None, tuple(sorted(names)))
    raise SourceError(f"{p} is not a change list (a folder, .csv or .parquet)", hint=hint)


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
