"""OCJoin (BigDansing §4.3): DCs whose cross-tuple predicates are only orderings (and ``!=``), without a
cartesian product: range partitions, min/max pruning of partition pairs, a vectorised sort-merge per pair.
Used by detection (``_ocjoin_plan``) and by Daisy's restricted checks (``restricted_pairs``).
"""
from __future__ import annotations

import math
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.detect import _merge
from dqkit.detect._plan import TID, _Plan, _side_frames, pair_table
from dqkit.rules import Attr, DenialConstraint, Predicate, type_class
from dqkit.runtime.session import get_spark
from dqkit.runtime.sparkutil import col, estimated_bytes
from dqkit.primitives.violations import conjunction, not_null, predicate_column

ROWS_PER_PART = 5000  # default OCJoin partition size when nb_parts is not given
# OCJoin counts of small inputs run in one task (one Spark job): up to this many candidate rows (both
# sides) when the count takes O(n log n) (one or two ordering conditions), fewer for other shapes
ONE_PART_ROWS = 2_000_000
ONE_PART_ROWS_GENERAL = 200_000
ONE_PART_BYTES = 128 << 20  # not attempted when Spark's size estimate of the rows is larger


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
        pt = pair_table(spark, [(p[0], p[1], p[2]) for p in use] or [(-1, -1, -1)])
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
