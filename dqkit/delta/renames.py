"""Proposed renames: a dropped and an added column of one table whose values agree (issue 47).

dqkit never applies a proposal: it reports it with its evidence and the ``--rename`` that accepts it.

* With a key, both versions' candidate columns are joined on the key (NULL-safe) and, for every
  (dropped, added) pair, the share of key-paired rows whose values agree is counted in one aggregation.
* Without a key, each candidate column's distinct values are hashed and the pairs' value sets compared
  (Jaccard overlap: shared distinct values over all distinct values of the two).

A pair is proposed when at least ``PROPOSE_SHARE`` agree; each dropped and each added column appears in
at most one proposal (best share first). Values are compared in the type ``compare_as`` gives the pair
(numbers by value, others as text), NULL agreeing with NULL.
"""
from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dqkit.delta.plan import TablePlan
from dqkit.delta.schema import TableSchemaDelta, compare_as, is_numeric
from dqkit.runtime.sparkutil import quote_ident as _q

#: the least share of agreeing values (key-paired rows, or shared distinct values) for a proposal
PROPOSE_SHARE = 0.9


def _candidates(table: TableSchemaDelta) -> list[tuple[str, str, str]]:
    """(dropped, added, compared type) for every pair of a dropped and an added column."""
    return [(d, a, compare_as(td, ta)[0] or "string") for d, td in table.dropped for a, ta in table.added]


def propose_renames(old: DataFrame, new: DataFrame, plan: TablePlan, table: TableSchemaDelta,
                    threshold: float = PROPOSE_SHARE) -> tuple[dict[str, Any], ...]:
    """The renames proposed for one table (see the module notes); one Spark job, none without candidates."""
    pairs = _candidates(table)
    if not pairs:
        return ()
    if plan.key:
        scored = _by_key(old, new, plan, pairs)
    else:
        scored = _by_values(old, new, pairs, dict(table.dropped), dict(table.added))
    out: list[dict[str, Any]] = []
    used_old: set[str] = set()
    used_new: set[str] = set()
    for share, agree, total, d, a, what in sorted(scored, key=lambda s: (-s[0], s[3], s[4])):
        if total == 0 or share < threshold or d in used_old or a in used_new:
            continue
        used_old.add(d)
        used_new.add(a)
        out.append({"old": d, "new": a, "agreeing": round(share, 4),
                    "evidence": f"{agree} of {total} {what} agree", "accept": f"--rename {plan.name}.{d}={a}"})
    return tuple(out)


def _by_key(old: DataFrame, new: DataFrame, plan: TablePlan, pairs: list[tuple[str, str, str]]
            ) -> list[tuple[float, int, int, str, str, str]]:
    assert plan.key is not None
    dropped = sorted({d for d, _, _ in pairs})
    added = sorted({a for _, a, _ in pairs})
    o = old.select(*[F.col(_q(plan.old_names.get(k, k))).alias(f"_dq_k{i}") for i, k in enumerate(plan.key)],
                   *[F.col(_q(d)).alias(f"_dq_o{i}") for i, d in enumerate(dropped)])
    n = new.select(*[F.col(_q(k)).alias(f"_dq_j{i}") for i, k in enumerate(plan.key)],
                   *[F.col(_q(a)).alias(f"_dq_n{i}") for i, a in enumerate(added)])
    cond = None
    for i in range(len(plan.key)):
        c = F.col(f"_dq_k{i}").eqNullSafe(F.col(f"_dq_j{i}"))
        cond = c if cond is None else cond & c
    aggs = [F.count(F.lit(1)).alias("_dq_total")]
    for p, (d, a, t) in enumerate(pairs):
        left = F.col(f"_dq_o{dropped.index(d)}").cast(t)
        right = F.col(f"_dq_n{added.index(a)}").cast(t)
        aggs.append(F.count_if(left.eqNullSafe(right)).alias(f"_dq_p{p}"))
    row = o.join(n, cond).agg(*aggs).first()
    total = int(row["_dq_total"]) if row is not None else 0
    return [((int(row[f"_dq_p{p}"]) / total) if total else 0.0, int(row[f"_dq_p{p}"]) if total else 0, total,
             d, a, "key-paired rows") for p, (d, a, _) in enumerate(pairs)]


def _value_hashes(df: DataFrame, columns: list[str], types: dict[str, str]) -> DataFrame:
    """(column index, hash of a distinct non-NULL value) of each candidate column."""
    cells = F.array(*[F.struct(F.lit(i).alias("c"), F.xxhash64(F.col(_q(c)).cast(types[c])).alias("h"),
                               F.col(_q(c)).isNull().alias("z")) for i, c in enumerate(columns)])
    return (df.select(F.explode(cells).alias("_dq_cell")).select("_dq_cell.*")
            .filter(~F.col("z")).select("c", "h").distinct())


def _by_values(old: DataFrame, new: DataFrame, pairs: list[tuple[str, str, str]],
               types_old: dict[str, str | None], types_new: dict[str, str | None]) -> list[tuple[float, int, int, str, str, str]]:
    dropped = sorted({d for d, _, _ in pairs})
    added = sorted({a for _, a, _ in pairs})
    # numbers hash as doubles (5 and 5.0 agree), everything else as text: one form per column
    o_types = {d: "double" if is_numeric(types_old.get(d)) else "string" for d in dropped}
    n_types = {a: "double" if is_numeric(types_new.get(a)) else "string" for a in added}
    o = _value_hashes(old, dropped, o_types)
    n = _value_hashes(new, added, n_types)
    sizes_o = {int(r["c"]): int(r["k"]) for r in o.groupBy("c").agg(F.count(F.lit(1)).alias("k")).collect()}
    sizes_n = {int(r["c"]): int(r["k"]) for r in n.groupBy("c").agg(F.count(F.lit(1)).alias("k")).collect()}
    shared = {(int(r["co"]), int(r["cn"])): int(r["k"]) for r in
              o.withColumnRenamed("c", "co").join(n.withColumnRenamed("c", "cn"), "h")
              .groupBy("co", "cn").agg(F.count(F.lit(1)).alias("k")).collect()}
    out = []
    for d, a, _ in pairs:
        i, j = dropped.index(d), added.index(a)
        if o_types[d] != n_types[a]:
            continue  # a number against text: no common hash
        inter = shared.get((i, j), 0)
        union = sizes_o.get(i, 0) + sizes_n.get(j, 0) - inter
        out.append(((inter / union) if union else 0.0, inter, union, d, a, "distinct values"))
    return out
