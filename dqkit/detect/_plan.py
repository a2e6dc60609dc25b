"""The shared pieces of detection plans: the plan record, each rule side's frame, the violation rows.

Below both ``dqkit.detect`` (rule plans) and ``dqkit.detect.ocjoin``/``_udf`` (their operators), so
imports only go downward.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.rules import Attr, DenialConstraint
from dqkit.runtime.sparkutil import col, local_frame
from dqkit.primitives.violations import conjunction, not_null, predicate_column

TID = "_dq_tid"
MODES = ("violations", "count", "sample")


@dataclass
class _Plan:
    """One rule's chosen operator: its logical and physical plan, the violations and how to count them."""
    rule: Any
    operator: str
    logical: str
    physical: str
    violations: Any  # DataFrame, or a callable building it on first use
    count: Any  # callable () -> (violations, candidates | None)
    details: dict[str, Any] = field(default_factory=dict)
    # the same counts as one lazy row ``v, cand`` (long, long or NULL), when they are a plain aggregation:
    # detection then counts all such rules in one Spark job (``dqkit.detect.detect``)
    count_frame: Any = None


def _side_frames(rule: DenialConstraint, scope: DataFrame, types: dict[str, str]
                 ) -> tuple[DataFrame, DataFrame]:
    """Scope of each tuple variable: rows passing that tuple's own predicates, prefixed a_/b_."""
    cols = [TID] + list(rule.columns)
    frames = []
    for t, prefix in ((1, "a_"), (2, "b_")):
        needed = {p.left.column for p in rule.cross_predicates if p.left.tuple == t}
        needed |= {p.right.column for p in rule.cross_predicates
                   if isinstance(p.right, Attr) and p.right.tuple == t}
        f = scope.select(*[col(c).alias(prefix + c) for c in cols])
        preds = [predicate_column(p, {1: prefix, 2: prefix}) for p in rule.side_predicates(t)]
        nn = not_null([prefix + c for c in sorted(needed)], {prefix + k: v for k, v in types.items()})
        frames.append(f.where(conjunction(preds) & nn))
    return frames[0], frames[1]


def _select_violations(df: DataFrame, rule: Any, t2: bool = True) -> DataFrame:
    """The violation rows ``rule, t1, t2`` of a frame of prefixed tuple pairs."""
    return df.select(F.lit(rule.name).alias("rule"), col("a_" + TID).alias("t1"),
                     (col("b_" + TID) if t2 else F.lit(None)).alias("t2"))


#: a partition pair's number and its two hash partitions: the broadcast table that routes each row to the
#: pairs it takes part in (UCrossProduct over hash partitions, OCJoin over range buckets)
PAIR_TABLE = T.StructType([T.StructField("_dq_pair", T.IntegerType()), T.StructField("_dq_i", T.IntegerType()),
                           T.StructField("_dq_j", T.IntegerType())])


def pair_table(spark: SparkSession, pairs: list[tuple[int, int, int]]) -> DataFrame:
    """``(_dq_pair, _dq_i, _dq_j)`` rows as a frame read without Python workers (``local_frame``)."""
    return local_frame(spark, pairs, PAIR_TABLE)
