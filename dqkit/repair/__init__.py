"""Repair (BigDansing §5, R29–R35): detect -> repair until no violation with a fix remains.

``repair(table, rules)`` alternates detection (``dqkit.detect``) and a repair step on the candidate
fixes, as BigDansing §2.2 does, and returns a ``RepairResult``:

* method ``"equivalence-class"`` (``"auto"`` picks it): the cells joined by ``cell = cell`` fixes form
  equivalence classes, each set to its most frequent value (``dqkit.repair.equivalence``); this repairs
  FDs and DCs with equality fixes, several rules together (R35);
* the changes of a round are applied by a left join on the tuple id (R34): same rows, same columns and
  types; the input is never modified;
* a cell changed ``freeze_after`` times is frozen (never changed again), so rules that pull a cell two
  ways cannot loop (§2.2); the loop also stops after ``max_iterations`` rounds, or when the remaining
  violations have no fix the method can apply (they are reported, not looped on).

Without a ``key``, tuple ids are the content ids of the *input* rows (``dqkit.violations.tuple_ids``),
kept in a hidden column through the rounds so a row keeps its id while its cells change.
Holistic repair of inequality DCs is not implemented yet (``method="holistic"`` is refused).
"""
from __future__ import annotations

import time
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.errors import ParameterError
from dqkit.progress import ProgressCallback
from dqkit.repair._result import RepairResult
from dqkit.repair.equivalence import apply_changes, equivalence_class_repair
from dqkit.repair.hypergraph import ViolationHypergraph, violation_hypergraph
from dqkit.session import get_spark
from dqkit.sources import read_table
from dqkit.sparkutil import cancellable
from dqkit.violations import tuple_ids

__all__ = ["repair", "RepairResult", "ViolationHypergraph", "violation_hypergraph", "METHODS"]

METHODS = ("auto", "equivalence-class", "holistic")
HIDDEN_TID = "__dqkit_tid"


def repair(table: Any, rules: Any, *, key: str | None = None, method: str = "auto", max_iterations: int = 10,
           freeze_after: int = 3, spark: SparkSession | None = None, name: str | None = None,
           progress: ProgressCallback | None = None) -> RepairResult:
    """Repair ``table`` against ``rules``: detect -> repair rounds until no violation with a fix remains.

    ``table``/``rules``/``key`` as in ``dqkit.detect.detect`` (the key must be unique and non-NULL).
    ``max_iterations``: at most that many repair rounds. ``freeze_after``: a cell changed that many
    times is never changed again. ``progress(stage, item, done, total)`` is called with stage
    ``"repair"`` after each round. Returns a ``RepairResult`` whose ``repaired`` DataFrame has the
    input's rows, columns and types; ``exit_code`` is 0 when no violation remains.
    """
    from dqkit.detect import detect

    if method not in METHODS:
        raise ParameterError(f"unknown repair method {method!r}", hint=f"one of {', '.join(METHODS)}")
    if method == "holistic":
        raise ParameterError("holistic repair (DCs with inequalities) is not available yet",
                             hint="use method='equivalence-class' (FDs and equality DCs)")
    if max_iterations < 1:
        raise ParameterError("max_iterations must be >= 1")
    if freeze_after < 1:
        raise ParameterError("freeze_after must be >= 1")
    spark = spark or get_spark()
    df = read_table(table, spark)
    label = name or (table if isinstance(table, str) else "table")
    if HIDDEN_TID in df.columns:
        raise ParameterError(f"column {HIDDEN_TID!r} is reserved by dqkit repair", hint="rename it")
    hidden = key is None
    tid = HIDDEN_TID if hidden else key
    current = df.select("*", tuple_ids(df, None).alias(HIDDEN_TID)) if hidden else df
    types = {f.name: f.dataType for f in df.schema.fields}

    history: list[dict[str, Any]] = []  # one entry per repair round that found violations
    detections: list[dict[str, int]] = []  # violations per rule: the input, then after each round
    changes: list[DataFrame] = []
    counts: DataFrame | None = None  # (tid, attr, n): times each cell was changed
    first_fixes: DataFrame | None = None
    iterations = 0
    stop = "no violation"
    with cancellable("the repair"):
        while True:
            det = detect(current, rules, key=tid, spark=spark, name=label)
            detections.append(det.counts)
            if det.total_violations == 0:
                stop = "no violation"
                break
            if iterations >= max_iterations:
                stop = f"max_iterations={max_iterations} reached"
                break
            fixes = det.candidate_fixes
            if first_fixes is None:
                first_fixes = fixes
            frozen = None if counts is None else counts.where(F.col("n") >= freeze_after).select("tid", "attr")
            t0 = time.perf_counter()
            entry: dict[str, Any] = {"iteration": iterations + 1, "violations": det.total_violations}
            history.append(entry)
            delta, stats = equivalence_class_repair(fixes, key=tid, frozen=frozen)
            delta = delta.localCheckpoint()
            changed = delta.count()
            entry.update(changed=changed, seconds=round(time.perf_counter() - t0, 4), **stats)
            if changed == 0:
                stop = "no violation left has a fix this method can apply"
                break
            iterations += 1
            changes.append(delta.withColumn("iteration", F.lit(iterations)))
            step = delta.groupBy("tid", "attr").agg(F.count(F.lit(1)).alias("n"))
            counts = step if counts is None else (counts.unionByName(step).groupBy("tid", "attr")
                                                  .agg(F.sum("n").alias("n"))).localCheckpoint()
            attrs = [a for a in types if a != tid]
            current = apply_changes(current, tid, delta, attrs, types).localCheckpoint()
            det.unpersist()
            if progress is not None:
                progress("repair", f"iteration {iterations}", iterations, max_iterations)

    tid_type = current.schema[tid].dataType
    all_changes = _union_changes(spark, changes, tid_type)
    if hidden:
        repaired = current.drop(HIDDEN_TID)
    else:
        repaired = current
    return RepairResult(table=label, method="equivalence-class", key=key, repaired=repaired, changes=all_changes,
                        iterations=iterations, history=tuple(history), detections=tuple(detections), final=det,
                        max_iterations=max_iterations,
                        freeze_after=freeze_after, stop_reason=stop,
                        input_paths=(table,) if isinstance(table, str) else (), first_fixes=first_fixes)


def _union_changes(spark: SparkSession, changes: list[DataFrame], tid_type: T.DataType) -> DataFrame:
    schema = T.StructType([T.StructField("tid", tid_type), T.StructField("attr", T.StringType()),
                           T.StructField("old", T.StringType()), T.StructField("new", T.StringType()),
                           T.StructField("rules", T.ArrayType(T.StringType())),
                           T.StructField("iteration", T.IntegerType())])
    out = spark.createDataFrame([], schema)
    for c in changes:
        out = out.unionByName(c.select(*[F.col(f.name).cast(f.dataType) for f in schema.fields]))
    return out
