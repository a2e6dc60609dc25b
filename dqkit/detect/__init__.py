"""Violation detection at scale (BigDansing §3–§4) on Spark DataFrames.

``detect(table, rules)`` turns every rule into a logical plan (Scope, Block, Iterate, Detect, GenFix),
consolidates the Scopes of rules reading the same table into one shared scan, and picks a physical
operator per rule:

* ``Scope+Detect`` -- one-tuple DCs: a filter.
* ``Block+UCrossProduct`` -- FDs and symmetric DCs with an equality: a hash block on the equality
  attributes and each unordered pair inside a block once (``t1.tid < t2.tid``): n(n-1)/2 pairs, no
  duplicate violations.
* ``Block+CrossProduct`` -- asymmetric DCs with an equality: ordered pairs inside blocks.
* ``OCJoin`` -- DCs whose cross-tuple predicates are only ordering comparisons (and !=): range
  partitioning on the first inequality attribute, min/max pruning of partition pairs on every
  inequality attribute, an equi-join of rows to the surviving partition pairs (the same partition
  paired with itself included) and a vectorised sort-merge inside each pair. No cartesian product.
* UDF jobs (``dqkit.rules.Job``): see ``dqkit.detect._udf``.

Every violation names its rule and tuples by a stable tuple id: the user's key, or a deterministic
content id (see ``tuple_ids``). NULL semantics: a predicate on NULL is false, as in SQL.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.detect import _merge
from dqkit.detect._result import DetectionResult, RuleSummary
from dqkit.errors import ParameterError, RuleError
from dqkit.keys import check_key, check_reserved
from dqkit.rules import (
    NEGATE, Attr, Const, DenialConstraint, FunctionalDependency, Predicate, UDFRule, as_rules,
    type_class, validate_rules,
)
from dqkit.progress import ProgressCallback
from dqkit.session import get_spark
from dqkit.sources import read_table
from dqkit.sparkutil import cancellable, col, estimated_bytes, spark_plan
from dqkit.violations import conjunction, disjunction, fix_schema, fix_struct, not_null, predicate_column, tuple_ids

TID = "_dq_tid"
ROWS_PER_PART = 5000  # default OCJoin partition size when nb_parts is not given
# OCJoin counts of small inputs run in one task (one Spark job): up to this many candidate rows (both
# sides) when the count takes O(n log n) (one or two ordering conditions), fewer for other shapes
ONE_PART_ROWS = 2_000_000
ONE_PART_ROWS_GENERAL = 200_000
ONE_PART_BYTES = 128 << 20  # not attempted when Spark's size estimate of the rows is larger
MODES = ("violations", "count", "sample")

__all__ = ["detect", "tuple_ids", "spark_plan", "DetectionResult", "RuleSummary", "MODES", "restricted_pairs"]


# -------------------------------------------------------------------------------------- rule plans
@dataclass
class _Plan:
    rule: Any
    operator: str
    logical: str
    physical: str
    violations: Any  # DataFrame, or a callable building it on first use
    count: Any  # callable () -> (violations, candidates | None)
    details: dict[str, Any] = field(default_factory=dict)


def _fd_plan(rule: FunctionalDependency, scope: DataFrame, types: dict[str, str]) -> _Plan:
    lhs, rhs = list(rule.lhs), list(rule.rhs)
    s = scope.select(TID, *[col(c) for c in rule.columns]).where(not_null(lhs, types))
    # dirty blocks: more than one distinct non-NULL value on some rhs attribute
    dirty = (s.groupBy(*[col(c) for c in lhs])
             .agg(*[F.countDistinct(col(r)).alias(f"_dq_nd{i}") for i, r in enumerate(rhs)])
             .where(F.greatest(*[F.col(f"_dq_nd{i}") for i in range(len(rhs))], F.lit(0)) > 1)
             .select(*[col(c) for c in lhs]))
    def viol() -> DataFrame:
        d = s.join(dirty, on=lhs, how="left_semi")
        a = d.select(*[col(c).alias("a_" + c) for c in [TID] + list(rule.columns)])
        b = d.select(*[col(c).alias("b_" + c) for c in [TID] + list(rule.columns)])
        cond = conjunction([col("a_" + c) == col("b_" + c) for c in lhs]) & (col("a_" + TID) < col("b_" + TID))
        differs = disjunction([F.coalesce(col("a_" + r) != col("b_" + r), F.lit(False)) for r in rhs])
        return (a.join(b, on=cond & differs, how="inner")
                .select(F.lit(rule.name).alias("rule"), col("a_" + TID).alias("t1"), col("b_" + TID).alias("t2")))

    def count() -> tuple[int, int]:
        if len(rhs) == 1:
            r = rhs[0]
            g = s.groupBy(*[col(c) for c in lhs], col(r)).agg(F.count(F.lit(1)).alias("_dq_c"))
            g = g.withColumn("_dq_nn", F.when(col(r).isNotNull(), F.col("_dq_c")).otherwise(0))
            blk = g.groupBy(*[col(c) for c in lhs]).agg(
                F.sum("_dq_c").alias("_dq_n"), F.sum("_dq_nn").alias("_dq_n_nn"),
                F.sum(F.col("_dq_nn") * (F.col("_dq_nn") - 1) / 2).alias("_dq_same"))
            row = blk.agg(
                F.sum(F.col("_dq_n_nn") * (F.col("_dq_n_nn") - 1) / 2 - F.col("_dq_same")).alias("v"),
                F.sum(F.col("_dq_n") * (F.col("_dq_n") - 1) / 2).alias("cand")).collect()[0]
            return int(row["v"] or 0), int(row["cand"] or 0)
        cand = s.groupBy(*[col(c) for c in lhs]).agg(F.count(F.lit(1)).alias("_dq_c")).agg(
            F.sum(F.col("_dq_c") * (F.col("_dq_c") - 1) / 2)).collect()[0][0]
        return viol().count(), int(cand or 0)

    logical = (f"Scope({', '.join(rule.columns)}) -> Block({', '.join(lhs)}) -> Iterate(pairs) -> "
               f"Detect({' or '.join(f't1.{r} != t2.{r}' for r in rhs)}) -> GenFix")
    physical = (f"Block+UCrossProduct: hash block on ({', '.join(lhs)}); blocks with one rhs value "
                f"skipped; unordered pairs t1.tid < t2.tid inside blocks; count by block arithmetic")
    return _Plan(rule, "Block+UCrossProduct", logical, physical, viol, count)


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
    return df.select(F.lit(rule.name).alias("rule"), col("a_" + TID).alias("t1"),
                     (col("b_" + TID) if t2 else F.lit(None)).alias("t2"))


def _dc1_plan(rule: DenialConstraint, scope: DataFrame, types: dict[str, str], tid_type: T.DataType) -> _Plan:
    s = scope.select(*[col(c).alias("a_" + c) for c in [TID] + list(rule.columns)])
    v = s.where(conjunction([predicate_column(p, {1: "a_"}) for p in rule.predicates]))
    viol = v.select(F.lit(rule.name).alias("rule"), col("a_" + TID).alias("t1"),
                    F.lit(None).cast(tid_type).alias("t2"))
    logical = f"Scope({', '.join(rule.columns)}) -> Detect({' and '.join(map(str, rule.predicates))}) -> GenFix"
    return _Plan(rule, "Scope+Detect", logical, "Scope+Detect: one filter over the shared scan",
                 viol, lambda: (viol.count(), None))


def _blocked_plan(rule: DenialConstraint, scope: DataFrame, types: dict[str, str]) -> _Plan:
    a, b = _side_frames(rule, scope, types)
    eqs = [p for p in rule.cross_predicates if p.op == "="]
    rest = [p for p in rule.cross_predicates if p.op != "="]
    sym = rule.symmetric
    cond = conjunction([predicate_column(p, {1: "a_", 2: "b_"}) for p in eqs + rest])
    cond = cond & ((col("a_" + TID) < col("b_" + TID)) if sym else (col("a_" + TID) != col("b_" + TID)))
    viol = _select_violations(a.join(b, on=cond, how="inner"), rule)
    op = "Block+UCrossProduct" if sym else "Block+CrossProduct"
    keys = ", ".join(f"{p.left.column}={p.right.column}" if p.left.column != p.right.column  # type: ignore[union-attr]
                     else p.left.column for p in eqs)
    logical = (f"Scope({', '.join(rule.columns)}) -> Block({keys}) -> Iterate(pairs) -> "
               f"Detect({' and '.join(map(str, rule.predicates))}) -> GenFix")
    pairs = "unordered pairs t1.tid < t2.tid" if sym else "ordered pairs t1.tid != t2.tid"
    physical = f"{op}: hash block on ({keys}); {pairs} inside blocks" + (
        f"; residual {' and '.join(map(str, rest))}" if rest else "")
    return _Plan(rule, op, logical, physical, viol, lambda: (viol.count(), None))


# ------------------------------------------------------------------------------------------ OCJoin
def _proxy(value: Column, tclass: str) -> Column:
    """A numeric, order-preserving (non-decreasing) proxy of a value, for range boundaries only."""
    if tclass == "numeric":
        return value.cast("double")
    if tclass == "date":
        return F.unix_date(value).cast("double")
    if tclass == "timestamp":
        return value.cast("timestamp").cast("double")
    if tclass == "boolean":
        return value.cast("int").cast("double")
    # first 7 UTF-8 bytes, right-padded, as a number: byte order = Spark's string order
    return F.conv(F.rpad(F.hex(F.substring(value, 1, 7)), 14, "0"), 16, 10).cast("double")


def _one_partition_count(rule: DenialConstraint, scope: DataFrame, types: dict[str, str], lcols: list[str],
                         rcols: list[str], ops: list[str]) -> tuple[int, int] | None:
    """OCJoin count of a small input in one Spark job: (ordered violating pairs, candidate rows), or None.

    One scan keeps each row that can be t1 (``_dq_a``: t1's own predicates hold, its condition attributes
    are not NULL) or t2 (``_dq_b``; no flags when both sides are the same rows); ``coalesce(1)`` brings them to one task whose ``mapInArrow`` counts
    the pairs with ``_merge.count_pairs`` and subtracts the pairs of a tuple with itself. The task stops
    reading and answers None (the caller then range-partitions) as soon as the input has more rows than
    ``ONE_PART_ROWS``, so a large input costs a bounded, single-task read, and is not attempted at all
    when Spark already estimates it as large.
    """
    vals = list(dict.fromkeys(lcols + rcols))
    lpos = [vals.index(c) for c in lcols]
    rpos = [vals.index(c) for c in rcols]
    values = [col(c).alias(f"_dq_c{j}") for j, c in enumerate(vals)]
    if not rule.side_predicates(1) and not rule.side_predicates(2) and set(lcols) == set(rcols):
        # t1 and t2 range over the same rows (the usual self-join): no side flags to ship
        frame = scope.where(not_null(vals, types)).select(*values)
    else:
        false = F.lit(False)
        a_flag = F.coalesce(conjunction([predicate_column(p, {1: "", 2: ""}) for p in rule.side_predicates(1)]
                                 + [not_null(lcols, types)]), false)
        b_flag = F.coalesce(conjunction([predicate_column(p, {1: "", 2: ""}) for p in rule.side_predicates(2)]
                                 + [not_null(rcols, types)]), false)
        frame = (scope.select(a_flag.alias("_dq_a"), b_flag.alias("_dq_b"), *values)
                 .where(F.col("_dq_a") | F.col("_dq_b")))
    limit = ONE_PART_ROWS if (len(ops) == 1 or _merge.counted_by_dominance(ops)) else ONE_PART_ROWS_GENERAL
    est = estimated_bytes(frame)
    if est is not None and est > ONE_PART_BYTES:
        return None
    fn = _merge.one_partition_counter(len(vals), lpos, rpos, list(ops), limit)
    # coalesce(1) keeps the scan in the task that counts (no shuffle); without a size estimate
    # (Spark Connect) a shuffle to one partition keeps a possibly large upstream parallel instead
    one = frame.coalesce(1) if est is not None else frame.repartition(1)
    rows = one.mapInArrow(fn, "n long, rows long").collect()
    if not rows:  # no partition at all: an empty input
        return 0, 0
    n, nrows = int(rows[0]["n"]), int(rows[0]["rows"])
    return None if n < 0 else (n, nrows)


def _ocjoin_plan(rule: DenialConstraint, scope: DataFrame, types: dict[str, str], tid_type: T.DataType,
                 nb_parts: int | None, spark: SparkSession) -> _Plan:
    conds = list(rule.cross_predicates)
    # primary condition: first ordering comparison (else the first !=)
    order = sorted(range(len(conds)), key=lambda i: (conds[i].op == "!=", i))
    conds = [conds[i] for i in order]
    lcols = [p.left.column for p in conds]
    rcols = [p.right.column for p in conds]  # type: ignore[union-attr]
    ops = [p.op for p in conds]
    sym = rule.symmetric
    prim_l, prim_r = lcols[0], rcols[0]
    tclass = type_class(types[prim_l])
    info: dict[str, Any] = {"partition_attribute": f"t1.{prim_l}"}
    cond_text = " and ".join(str(p) for p in conds)
    logical = (f"Scope({', '.join(rule.columns)}) -> Iterate(pairs) -> Detect({cond_text}) -> GenFix")
    memo: dict[str, Any] = {}

    def partitioned() -> dict[str, Any]:
        """Range partitioning, min/max pruning and the per-pair merge (runs its planning jobs once)."""
        if not memo:
            a, b = _side_frames(rule, scope, types)
            memo.update(_ocjoin_partitioned(rule, a, b, types, tid_type, nb_parts, spark, conds, lcols, rcols,
                                            ops, sym, prim_l, prim_r, tclass, info))
        return memo

    plan = _Plan(rule, "OCJoin", logical, "", lambda: partitioned()["viol"](), None, info)

    def count() -> tuple[int, None]:
        if nb_parts is None:  # automatic: a small input is counted in one task, one Spark job
            n = _one_partition_count(rule, scope, types, lcols, rcols, ops)
            if n is not None:
                info.update(nb_parts=1, rows=n[1], counted_in="one partition")
                kernel = ("dominance counting (IEJoin-style: sort on one attribute, count the other's "
                          "inversions bit by bit)" if _merge.counted_by_dominance(ops)
                          else "sort + searchsorted" if len(ops) == 1 else "chunked min/max merge")
                plan.physical = (
                    f"OCJoin: count of {n[1]} candidate rows in one partition (one Spark job: "
                    f"coalesce(1) + mapInArrow), {kernel}; "
                    + ("unordered pairs (symmetric rule)" if sym else "ordered pairs")
                    + f"; violations, when materialised: range partitions on t1.{prim_l} with min/max pruning")
                return (n[0] // 2 if sym else n[0]), None
        p = partitioned()
        plan.physical = p["physical"]
        return p["count"]()

    plan.count = count
    plan.physical = (f"OCJoin: range-partition on t1.{prim_l}, min/max pruning, vectorised sort-merge per "
                     f"partition pair")
    return plan


def _ocjoin_partitioned(rule: DenialConstraint, a: DataFrame, b: DataFrame, types: dict[str, str],
                        tid_type: T.DataType, nb_parts: int | None, spark: SparkSession, conds: list[Predicate],
                        lcols: list[str], rcols: list[str], ops: list[str], sym: bool, prim_l: str, prim_r: str,
                        tclass: str, info: dict[str, Any]) -> dict[str, Any]:
    """OCJoin over range partitions: runs the partitioning jobs, returns viol/count/physical."""
    k_max = int(nb_parts or 16)

    # partitioning phase: row count and range boundaries on the primary attribute in one pass
    # (approximate percentiles); small inputs get fewer partitions (about ROWS_PER_PART rows each)
    probs = [i / k_max for i in range(1, k_max)]
    px = _proxy(col("a_" + prim_l), tclass)
    aggs0 = [F.count(F.lit(1)).alias("n")]
    if probs:
        aggs0.append(F.percentile_approx(px, probs, 4 * k_max * 100).alias("q"))
    row0 = a.agg(*aggs0).collect()[0]
    n_left = int(row0["n"])
    k = k_max if nb_parts else max(1, min(k_max, n_left // ROWS_PER_PART))
    qs = list(row0["q"] or []) if probs else []
    if k < k_max and qs:
        qs = [qs[int(len(qs) * i / k)] for i in range(1, k)]
    bounds = sorted(set(x for x in (qs if k > 1 else []) if x is not None and not math.isnan(x)))
    info["nb_parts"] = len(bounds) + 1
    info["boundaries"] = len(bounds) + 1

    def bucket(value: Column) -> Column:
        px = _proxy(value, tclass)
        out = F.lit(0)
        for x in bounds:
            out = out + (px >= F.lit(x)).cast("int")
        return out

    la = a.select(bucket(col("a_" + prim_l)).alias("_dq_bucket"), col("a_" + TID).alias("_dq_t"),
                  *[col("a_" + c).alias(f"_dq_v{i}") for i, c in enumerate(lcols)],
                  conjunction([predicate_column(p, {1: "a_", 2: "a_"}) for p in rule.side_predicates(2)]
                       + [predicate_column(Predicate(p.left, p.op, Attr(1, p.right.column)), {1: "a_"})  # type: ignore[union-attr]
                          for p in conds]
                       + [not_null(["a_" + c for c in rcols], {"a_" + kk: v for kk, v in types.items()})]
                       ).alias("_dq_self"))
    rb = b.select(bucket(col("b_" + prim_r)).alias("_dq_bucket"), col("b_" + TID).alias("_dq_t"),
                  *[col("b_" + c).alias(f"_dq_v{i}") for i, c in enumerate(rcols)], F.lit(False).alias("_dq_self"))
    both = la.withColumn("_dq_side", F.lit(0)).unionByName(rb.withColumn("_dq_side", F.lit(1)))

    # pruning phase: per-partition min/max of every condition attribute (a small aggregate)
    aggs = [F.count(F.lit(1)).alias("n"), F.sum(F.col("_dq_self").cast("long")).alias("self")]
    for i in range(len(conds)):
        aggs += [F.min(f"_dq_v{i}").alias(f"min{i}"), F.max(f"_dq_v{i}").alias(f"max{i}")]
    if bounds:
        stats = both.groupBy("_dq_side", "_dq_bucket").agg(*aggs).collect()
    else:  # one partition: no pruning to do; self-pairs are removed inside the merge
        stats = [{"_dq_side": s_, "_dq_bucket": 0, "n": 0, "self": 0,
                  **{f"{m}{i}": None for i in range(len(conds)) for m in ("min", "max")}} for s_ in (0, 1)]
    lstat = {r["_dq_bucket"]: r for r in stats if r["_dq_side"] == 0}
    rstat = {r["_dq_bucket"]: r for r in stats if r["_dq_side"] == 1}
    self_pairs = sum(int(r["self"] or 0) for r in lstat.values())
    pairs: list[tuple[int, int, int, int]] = []  # (pair id, left bucket, right bucket, undecided mask)
    decided_product = 0
    for i in sorted(lstat):
        for j in sorted(rstat):
            und = 0
            ok = True
            for c, op in enumerate(ops):
                lo1, hi1 = lstat[i][f"min{c}"], lstat[i][f"max{c}"]
                lo2, hi2 = rstat[j][f"min{c}"], rstat[j][f"max{c}"]
                if not bounds:
                    und |= 1 << c
                    continue
                if lo1 is None or lo2 is None:
                    ok = False
                    break
                if not _merge.possible(op, lo1, hi1, lo2, hi2):
                    ok = False
                    break
                if not _merge.always(op, lo1, hi1, lo2, hi2):
                    und |= 1 << c
            if ok:
                pairs.append((len(pairs), i, j, und))
                if und == 0:
                    decided_product += int(lstat[i]["n"]) * int(rstat[j]["n"])
    total_pairs = len(lstat) * len(rstat)
    info.update(partition_pairs=total_pairs, pairs_after_pruning=len(pairs),
                pairs_pruned=total_pairs - len(pairs),
                pairs_decided_by_minmax=sum(1 for p in pairs if p[3] == 0))
    und_of = {p[0]: p[3] for p in pairs}
    n_all = sum(int(r["n"]) for r in stats)
    chunk = int(min(2048, max(128, 4 * math.sqrt(max(1, n_all / max(1, k))))))

    def joined(only_undecided: bool) -> DataFrame:
        vcols = [f"_dq_v{i}" for i in range(len(conds))]
        if not bounds:  # one partition pair (0, 0): no join needed
            return la.select(F.lit(0).alias("_dq_pair"), F.lit(0).alias("_dq_side"), "_dq_t", *vcols).unionByName(
                rb.select(F.lit(0).alias("_dq_pair"), F.lit(1).alias("_dq_side"), "_dq_t", *vcols))
        use = [p for p in pairs if p[3] != 0] if only_undecided else pairs
        pt = spark.createDataFrame([(p[0], p[1], p[2]) for p in use] or [(-1, -1, -1)],
                                   "_dq_pair int, _dq_i int, _dq_j int")
        lside = la.join(F.broadcast(pt), F.col("_dq_bucket") == F.col("_dq_i")).select(
            "_dq_pair", F.lit(0).alias("_dq_side"), "_dq_t", *[f"_dq_v{i}" for i in range(len(conds))])
        rside = rb.join(F.broadcast(pt), F.col("_dq_bucket") == F.col("_dq_j")).select(
            "_dq_pair", F.lit(1).alias("_dq_side"), "_dq_t", *[f"_dq_v{i}" for i in range(len(conds))])
        return lside.unionByName(rside)

    nconds = len(conds)

    def _split(pdf):
        left = pdf[pdf["_dq_side"] == 0]
        right = pdf[pdf["_dq_side"] == 1]
        lv = [left[f"_dq_v{i}"].to_numpy() for i in range(nconds)]
        rv = [right[f"_dq_v{i}"].to_numpy() for i in range(nconds)]
        pid = int(pdf["_dq_pair"].iloc[0])
        active = [(i, ops[i]) for i in range(nconds) if und_of.get(pid, (1 << nconds) - 1) >> i & 1]
        return left, right, lv, rv, active

    in_pandas_self = not bounds

    def count_fn(pdf):
        import numpy as np
        import pandas as pd
        left, right, lv, rv, active = _split(pdf)
        n = _merge.count_pairs(lv, rv, active, chunk)
        if in_pandas_self and len(left) and len(right):
            # ordered pairs (x, x) of a tuple with itself are not violations
            lt = left["_dq_t"].to_numpy()
            rpos = pd.Series(np.arange(len(right)), index=right["_dq_t"].to_numpy())
            common = np.flatnonzero(pd.Index(rpos.index).get_indexer(lt) >= 0)
            if len(common):
                ri = rpos.loc[lt[common]].to_numpy()
                ok = np.ones(len(common), dtype=bool)
                for i, op in enumerate(ops):
                    ok &= _merge._CMP[op](lv[i][common], rv[i][ri])
                n -= int(ok.sum())
        return pd.DataFrame({"n": [n]})

    def pairs_fn(pdf):
        import numpy as np
        import pandas as pd
        left, right, lv, rv, active = _split(pdf)
        li, ri = _merge.join_pairs(lv, rv, active, chunk)
        t1 = left["_dq_t"].to_numpy()[li]
        t2 = right["_dq_t"].to_numpy()[ri]
        keep = (t1 < t2) if sym else (t1 != t2)
        keep = np.asarray(keep, dtype=bool)
        return pd.DataFrame({"t1": t1[keep], "t2": t2[keep]})

    tid_ddl = tid_type.simpleString()
    def viol() -> DataFrame:
        return (joined(False).groupBy("_dq_pair").applyInPandas(pairs_fn, f"t1 {tid_ddl}, t2 {tid_ddl}")
                .select(F.lit(rule.name).alias("rule"), "t1", "t2"))

    def count() -> tuple[int, None]:
        und_pairs = [p for p in pairs if p[3] != 0]
        n = decided_product
        if und_pairs:
            n += int(joined(True).groupBy("_dq_pair").applyInPandas(count_fn, "n long")
                     .agg(F.sum("n")).collect()[0][0] or 0)
        n -= self_pairs
        if sym:
            n //= 2
        return n, None

    physical = (f"OCJoin: range-partition on t1.{prim_l} into {len(bounds) + 1} partitions; min/max pruning "
                f"on {', '.join(sorted(set(lcols)))}: {len(pairs)}/{total_pairs} partition pairs kept "
                f"({info['pairs_decided_by_minmax']} decided by min/max alone); equi-join of rows to kept "
                f"pairs; vectorised sort-merge per pair (chunk {chunk}); "
                + ("unordered pairs (symmetric rule)" if sym else "ordered pairs"))
    info["chunk"] = chunk
    return {"viol": viol, "count": count, "physical": physical}


def restricted_pairs(rule: DenialConstraint, left: DataFrame, right: DataFrame, types: dict[str, str],
                     nb_parts: int | None = None, spark: SparkSession | None = None) -> tuple[DataFrame, dict[str, Any]]:
    """Ordered violating pairs ``(t1, t2)`` of a two-tuple DC with t1 from ``left`` and t2 from ``right``
    (both frames with ``_dq_tid`` and the rule's columns), ``t1 != t2``.

    The same machinery as detection: OCJoin (range partitions, min/max pruning, vectorised merge) when the
    cross predicates are orderings and ``!=``; a hash-blocked join when one is an equality. Daisy uses it
    to check only a query result against the unseen part of a table (R21). Returns the lazy pairs and the
    OCJoin details (partitions, pairs pruned), filled when the pairs are planned.
    """
    spark = spark or get_spark()
    a, _ = _side_frames(rule, left, types)
    _, b = _side_frames(rule, right, types)
    info: dict[str, Any] = {}
    conds = list(rule.cross_predicates)
    if any(p.op == "=" for p in conds):
        cond = conjunction([predicate_column(p, {1: "a_", 2: "b_"}) for p in conds])
        cond = cond & (col("a_" + TID) != col("b_" + TID))
        info["operator"] = "Block+CrossProduct"
        return a.join(b, on=cond, how="inner").select(col("a_" + TID).alias("t1"), col("b_" + TID).alias("t2")), info
    order = sorted(range(len(conds)), key=lambda i: (conds[i].op == "!=", i))
    conds = [conds[i] for i in order]
    lcols = [p.left.column for p in conds]
    rcols = [p.right.column for p in conds]  # type: ignore[union-attr]
    ops = [p.op for p in conds]
    tid_type = left.schema[TID].dataType
    info["operator"] = "OCJoin"
    out = _ocjoin_partitioned(rule, a, b, types, tid_type, nb_parts, spark, conds, lcols, rcols, ops, False,
                              lcols[0], rcols[0], type_class(types[lcols[0]]), info)
    return out["viol"]().select("t1", "t2"), info


# ------------------------------------------------------------------------------------------ GenFix
def _const_text(value: Any) -> Column:
    return F.lit(str(Const(value)))


def _candidate_fixes(rule: Any, viol: DataFrame, scope: DataFrame, tid_type: T.DataType,
                     types: dict[str, str]) -> DataFrame:
    """GenFix: candidate fixes ``cell op (cell | constant)`` for each violation of a declarative rule.

    FD: ``t2[city] = t4[city]`` for each differing rhs attribute, plus the lhs alternatives
    ``t2[zipcode] != 90210`` (kind ``lhs``). DC: each predicate negated (kind ``dc``).
    """
    cols = list(rule.columns)
    a = scope.select(col(TID).alias("_a_t"), *[col(c).alias("_a_" + c) for c in cols])
    b = scope.select(col(TID).alias("_b_t"), *[col(c).alias("_b_" + c) for c in cols])
    v = viol.join(a, F.col("t1") == F.col("_a_t"))
    if rule.arity == 2:
        v = v.join(b, F.col("t2") == F.col("_b_t"))
    ta, tb = F.col("t1"), F.col("t2")
    fixes: list[Column] = []
    if isinstance(rule, FunctionalDependency):
        for r in rule.rhs:
            fixes.append(fix_struct(ta, r, col("_a_" + r), "=", tb, r, col("_b_" + r), None, "rhs",
                                     when=F.coalesce(col("_a_" + r) != col("_b_" + r), F.lit(False))))
        for x in rule.lhs:
            for t, pre in ((ta, "_a_"), (tb, "_b_")):
                fixes.append(fix_struct(t, x, col(pre + x), "!=", None, None, None,
                                         _value_text(col(pre + x), types[x]), "lhs"))
    else:
        pre = {1: ("_a_", ta), 2: ("_b_", tb)}
        for p in rule.predicates:
            op = NEGATE[p.op]
            lp, lt = pre[p.left.tuple]
            if isinstance(p.right, Attr):
                rp, rt = pre[p.right.tuple]
                fixes.append(fix_struct(lt, p.left.column, col(lp + p.left.column), op, rt,
                                         p.right.column, col(rp + p.right.column), None, "dc"))
            else:
                fixes.append(fix_struct(lt, p.left.column, col(lp + p.left.column), op, None, None,
                                         None, _const_text(p.right.value), "dc"))
    out = v.select("rule", "t1", "t2", F.explode(F.array(*fixes)).alias("f")).where(F.col("f").isNotNull())
    return out.select("rule", "t1", "t2", F.col("f.tid").cast(tid_type).alias("tid"), "f.attr", "f.value", "f.op",
                      F.col("f.rhs_tid").cast(tid_type).alias("rhs_tid"), "f.rhs_attr", "f.rhs_value",
                      "f.constant", "f.kind", "f.fix")


def _value_text(value: Column, type_name: str) -> Column:
    """Text of a cell value as a rule constant: numbers bare, everything else quoted."""
    if type_class(type_name) == "numeric":
        return value.cast("string")
    return F.concat(F.lit("'"), F.regexp_replace(value.cast("string"), "'", "\\\\'"), F.lit("'"))


# -------------------------------------------------------------------------------------------- main
def detect(table: Any, rules: Any, *, key: str | None = None, mode: str = "violations",
           sample: int | None = None, nb_parts: int | None = None, consolidate: bool = True,
           spark: SparkSession | None = None, name: str | None = None,
           progress: ProgressCallback | None = None, trust_key: bool = False) -> DetectionResult:
    """Detect the violations of ``rules`` in ``table``.

    ``rules``: rule objects, rule text, a mapping name -> text, a rules file, or ``Job``s/``UDFRule``s.
    ``key``: the column identifying tuples; it must be unique and non-NULL, and is checked with one
    aggregation before detection (``dqkit.keys.check_key``; ``trust_key=True`` skips that, for a
    caller that checked it already, as repair does once before its rounds). Default: a deterministic
    content id, see ``tuple_ids``.
    ``mode``: ``"violations"`` (lazy violation and candidate-fix DataFrames), ``"count"`` (counts
    only, no pair is materialised) or ``"sample"`` (at most ``sample`` violations per rule, the
    smallest (t1, t2), deterministic). Per-rule counts are always computed.
    ``nb_parts``: OCJoin range partitions (default 16). ``consolidate``: share one scan (R12).
    ``progress(stage, item, done, total)`` is called after each rule with stage ``"detect"`` and the
    rule's name (the protocol of ``dqkit.delta``). A run cancelled through its Spark job tag
    (``dqkit.progress.BackgroundRun``) raises ``CancelledError`` and keeps nothing cached.
    All rule, column and type errors are raised before any Spark job.
    """
    from dqkit.detect._udf import udf_plan
    from dqkit.rules import Job

    if mode not in MODES:
        raise ParameterError(f"unknown mode {mode!r}", hint=f"one of {', '.join(MODES)}")
    if mode == "sample" and (sample is None or sample < 1):
        raise ParameterError("mode='sample' needs sample >= 1")
    if sample is not None and mode == "violations":
        mode = "sample"
    if nb_parts is not None and nb_parts < 1:
        raise ParameterError("nb_parts must be >= 1")
    spark = spark or get_spark()
    df = read_table(table, spark)
    if isinstance(rules, Job):
        rules = rules.rule()
    rule_list = [r.rule() if isinstance(r, Job) else r for r in
                 (as_rules(rules) if not isinstance(rules, (list, tuple)) else
                  [x for r in rules for x in ([r] if isinstance(r, (Job, UDFRule)) else as_rules(r))])]
    if not rule_list:
        raise RuleError("no rules given")
    names = [r.name for r in rule_list]
    if len(set(names)) != len(names):
        raise RuleError(f"rule name {sorted(n for n in names if names.count(n) > 1)[0]!r} is used more than once")
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    validate_rules(rule_list, types, key)
    label = name or (table if isinstance(table, str) else "the table")
    check_reserved([c for c in types if not (trust_key and c == key)], table=label, command="detect")
    if key is not None and not trust_key:
        check_key(df, key, table=label, command="detect",
                  without="leave --key out so dqkit names rows by a content id")

    decl = [r for r in rule_list if not isinstance(r, UDFRule)]
    tid_type = df.schema[key].dataType if key else T.StringType()
    used = list(dict.fromkeys(c for r in decl for c in r.columns))
    # (one shared scope for several declarative rules; otherwise each rule builds its own below)
    shared = consolidate and len(decl) > 1
    scope = df.select(tuple_ids(df, key).alias(TID), *[col(c) for c in used]) if shared else df
    plans: list[_Plan] = []
    summaries: list[RuleSummary] = []
    scan_seconds = 0.0
    try:
        with cancellable("the detection"):
            if shared:
                t0 = time.perf_counter()
                scope = scope.persist()
                scope.count()  # the one shared scan
                scan_seconds = time.perf_counter() - t0
            for done, rule in enumerate(rule_list, start=1):
                t0 = time.perf_counter()
                rscope = scope if shared or isinstance(rule, UDFRule) else df.select(
                    tuple_ids(df, key).alias(TID), *[col(c) for c in rule.columns])
                if isinstance(rule, UDFRule):
                    plan = udf_plan(rule, spark, mode)
                elif isinstance(rule, FunctionalDependency):
                    plan = _fd_plan(rule, rscope, types)
                elif rule.arity == 1:
                    plan = _dc1_plan(rule, rscope, types, tid_type)
                elif any(p.op == "=" for p in rule.cross_predicates):
                    plan = _blocked_plan(rule, rscope, types)
                else:
                    plan = _ocjoin_plan(rule, rscope, types, tid_type, nb_parts, spark)
                nviol, ncand = plan.count()
                seconds = time.perf_counter() - t0
                plans.append(plan)
                summaries.append(RuleSummary(rule.name, rule.kind, str(rule), plan.operator, int(nviol), seconds,
                                             None if ncand is None else int(ncand), dict(plan.details)))
                if progress is not None:
                    progress("detect", rule.name, done, len(rule_list))
    except BaseException:
        if shared:  # a failed or cancelled run keeps nothing cached
            scope.unpersist()
        raise

    viol_cache: list[DataFrame] = []

    def viol_frames() -> list[DataFrame]:
        if not viol_cache:
            for plan in plans:
                v = plan.violations() if callable(plan.violations) else plan.violations
                if mode == "sample":
                    v = v.orderBy("t1", "t2").limit(int(sample))  # type: ignore[arg-type]
                if v.schema["t1"].dataType != tid_type:
                    v = v.select("rule", F.col("t1").cast(tid_type), F.col("t2").cast(tid_type))
                viol_cache.append(v)
        return viol_cache

    def violations_builder() -> DataFrame:
        frames = viol_frames()
        out = frames[0]
        for v in frames[1:]:
            out = out.unionByName(v)
        return out

    udf_fixes = {p.rule.name: p.details.get("_fixes") for p in plans if isinstance(p.rule, UDFRule)}

    def fixes_builder() -> DataFrame:
        fixes = spark.createDataFrame([], fix_schema(tid_type))
        for plan, v in zip(plans, viol_frames()):
            if isinstance(plan.rule, UDFRule):
                f = udf_fixes.get(plan.rule.name)
                if f is None:
                    continue
                f = f.select(*[F.col(fl.name).cast(fl.dataType) for fl in fixes.schema.fields])
            else:
                src = scope if shared else df.select(tuple_ids(df, key).alias(TID),
                                                     *[col(c) for c in plan.rule.columns])
                f = _candidate_fixes(plan.rule, v, src, tid_type, types)
            fixes = fixes.unionByName(f)
        return fixes

    for s in summaries:
        s.details.pop("_fixes", None)
    logical = "\n".join(f"{p.rule.name}: {p.logical}" for p in plans)
    if shared:
        consolidated = (f"Scope(tid, {', '.join(used)}) -- one shared scan, read once for "
                        f"{', '.join(r.name for r in decl)}\n" +
                        "\n".join(f"  {p.rule.name}: {p.logical.split(' -> ', 1)[1] if ' -> ' in p.logical else p.logical}"
                                  for p in plans if not isinstance(p.rule, UDFRule)))
    else:
        consolidated = "(nothing to consolidate)\n" + logical
    consolidated += "".join(f"\n{p.rule.name}: {p.logical}" for p in plans if isinstance(p.rule, UDFRule) and shared)
    physical = "\n".join(f"{p.rule.name}: {p.physical}" for p in plans)
    return DetectionResult(
        table=name or (table if isinstance(table, str) else "table"), mode=mode, sample=sample,
        rules=tuple(rule_list), summaries=tuple(summaries), violations_builder=violations_builder, fixes_builder=fixes_builder,
        logical_plan=logical, consolidated_plan=consolidated, physical_plan=physical,
        scan_seconds=scan_seconds, shared_scope=scope if shared else None, key=key, schema=types,
        fingerprints=_fingerprints(df, key, rule_list) if key and mode == "violations" else None)


def _fingerprints(df: DataFrame, key: str, rules: list[Any]) -> DataFrame:
    """``key, _dq_fp_hi, _dq_fp_lo`` over the rules' columns (lazy), saved by ``--out`` for ``--since``."""
    from dqkit.fingerprint import row_fingerprint
    from dqkit.systems._since import rule_columns

    hi, lo = row_fingerprint(df, rule_columns(rules))
    return df.select(col(key), hi.alias("_dq_fp_hi"), lo.alias("_dq_fp_lo"))
