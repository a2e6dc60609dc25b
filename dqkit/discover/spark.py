"""The Spark route: every candidate ``X -> A`` of one lattice level measured in one aggregation job,
with the DataFrame API only (it runs under Spark Connect too).

For a batch of candidates, with S = X ∪ A the distinct attribute sets:

1. *expand*: each row once per set S (``explode`` of the set numbers), every column not in S masked
   to NULL, then grouped by (S, the masked columns): the count of each (X ∪ A)-group. Within one set
   the mask is the same on every row, so a masked NULL never meets a real one (NULL equals NULL);
2. each group once per candidate on its set (a literal map from set to candidates), A masked too,
   grouped by (candidate, the columns): per X-group, its size and its largest (X, A)-subgroup;
3. per candidate: rows to delete = sum of (size - largest), rows covered = sum of the sizes >= 2.

The three aggregations are one job (one ``collect``). A level with more sets than ``BATCH_SETS`` is
split into batches, each one job; the base frame (the searched columns) is cached by the caller.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

#: attribute sets per Spark job: more widen the expand (each row once per set) and the plan
BATCH_SETS = 256


class SparkMeasure:
    """``measure`` for ``dqkit.discover.lattice.search_fds`` over the columns ``columns`` of ``df``."""

    def __init__(self, df: DataFrame, columns: Sequence[str]) -> None:
        self.columns = list(columns)
        self.names = [f"_c{i}" for i in range(len(self.columns))]
        self.df = df.select(*[F.col(_quote(c)).alias(n) for c, n in zip(self.columns, self.names)])
        self.jobs = 0

    def __call__(self, cands: list[tuple[tuple[int, ...], int]]) -> list[tuple[int, int]]:
        sets: dict[tuple[int, ...], int] = {}
        for x, a in cands:
            sets.setdefault(tuple(sorted((*x, a))), len(sets))
        order = list(sets)
        results: dict[int, tuple[int, int]] = {}
        for start in range(0, len(order), BATCH_SETS):
            batch = set(order[start:start + BATCH_SETS])
            ids = [i for i, (x, a) in enumerate(cands) if tuple(sorted((*x, a))) in batch]
            results.update(self._job([(i, cands[i]) for i in ids], {s: sets[s] for s in batch}))
        return [results.get(i, (0, 0)) for i in range(len(cands))]

    def _job(self, cands: list[tuple[int, tuple[tuple[int, ...], int]]], sets: dict[tuple[int, ...], int]
             ) -> dict[int, tuple[int, int]]:
        self.jobs += 1
        used = sorted({c for s in sets for c in s})
        names = [self.names[c] for c in used]
        # 1. (X ∪ A)-group counts, one group per set
        members = {c: [sid for s, sid in sets.items() if c in s] for c in used}
        expanded = self.df.select(F.explode(F.array(*[F.lit(sid) for sid in sets.values()])).alias("_s"),
                                  *[F.col(n) for n in names])
        masked = expanded.select("_s", *[F.when(F.col("_s").isin(members[c]), F.col(self.names[c]))
                                         .alias(self.names[c]) for c in used])
        counted = masked.groupBy("_s", *names).agg(F.count(F.lit(1)).alias("_n"))
        # 2. each group once per candidate of its set, A masked: per X-group its size and largest subgroup
        per_set: dict[int, list[tuple[int, int]]] = {}
        for cid, (x, a) in cands:
            per_set.setdefault(sets[tuple(sorted((*x, a)))], []).append((cid, a))
        mapping = F.create_map(*[item for sid, items in per_set.items() for item in
                                 (F.lit(sid), F.array(*[F.struct(F.lit(cid).alias("c"), F.lit(a).alias("a"))
                                                       for cid, a in items]))])
        spread = counted.select(F.explode(F.element_at(mapping, F.col("_s"))).alias("_k"), *names, "_n")
        spread = spread.select(F.col("_k.c").alias("_cand"), *[F.when(F.col("_k.a") != F.lit(c), F.col(self.names[c]))
                                                               .alias(self.names[c]) for c in used], "_n")
        groups = spread.groupBy("_cand", *names).agg(F.sum("_n").alias("_size"), F.max("_n").alias("_best"))
        # 3. per candidate
        totals = groups.groupBy("_cand").agg(
            F.sum(F.col("_size") - F.col("_best")).alias("_v"),
            F.sum(F.when(F.col("_size") >= 2, F.col("_size")).otherwise(F.lit(0))).alias("_s"))
        return {int(r["_cand"]): (int(r["_v"] or 0), int(r["_s"] or 0)) for r in totals.collect()}


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def rows(df: DataFrame) -> int:
    """The number of rows (one job)."""
    return int(df.count())


def frame_arrow(df: DataFrame) -> Any:
    """The frame on the driver as an Arrow table (``DataFrame.toArrow``)."""
    return df.toArrow()
