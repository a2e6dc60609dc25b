"""The content stages: MMP (§4.2), CLP (§4.3), exact verification and the ground truths (§6.2, §6.4.2).

Every stage only removes candidate edges and is one-sided: it never removes an edge (parent, child)
whose child is truly contained in the parent. Containment means every row of the child appears in the
parent projected onto the child's columns, by column NAME (column and row order never matter, req. 23).
Where a column has different types in the two tables (a CSV's inferred ``int`` beside a Parquet
``bigint``), its values are compared as text, in every stage and in the ground truth alike.
NULL equals NULL (null-safe comparisons, req. 15).
"""
from __future__ import annotations

import functools
import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.errors import ParameterError
from dqkit.fingerprint import row_fingerprint
from dqkit.lake._lake import LakeTable
from dqkit.sparkutil import col

MODES = ("paper", "strict")


def edge_seed(seed: int, *names: str) -> int:
    """A 63-bit seed derived from the run seed and names: the same whatever order edges are visited in."""
    return zlib.crc32(("\x1f".join([str(seed), *names])).encode()) & 0x7FFFFFFF


# ----------------------------------------------------------------------------------------- MMP
def mmp_keeps(parent: LakeTable, child: LakeTable) -> tuple[bool, str | None]:
    """Algorithm 2: remove (parent, child) when some common column has min(parent) > min(child) or
    max(parent) < max(child). Only columns of the same type with valid statistics on both sides are
    compared (req. 12); returns (kept, the column that pruned)."""
    for c in sorted(child.columns):
        pt = parent.types.get(c)
        if pt is None or pt != child.types[c]:
            continue
        ps, cs = parent.stat(c), child.stat(c)
        if not (ps.valid and cs.valid):
            continue
        try:
            if ps.min > cs.min or ps.max < cs.max:
                return False, c
        except TypeError:
            continue
    return True, None


# ----------------------------------------------------------------------------------------- CLP
def required_samples(eps: float, delta: float) -> int:
    """Theorem 4.2: samples enough to prune a pair with CM ≤ 1−ε with probability ≥ 1−δ:
    ⌈ln(1/δ) / ln(1/(1−ε))⌉ (29 for ε = 0.1, δ = 0.05)."""
    if not (0 < eps < 1) or not (0 < delta < 1):
        raise ParameterError(f"eps and delta must lie strictly between 0 and 1, not {eps!r} and {delta!r}")
    return math.ceil(math.log(1 / delta) / math.log(1 / (1 - eps)))


@dataclass(frozen=True)
class CLPSample:
    """The child's sample, drawn once per child per run: at most t rows chosen by WHERE predicates.
    ``rows`` hold the child's values; ``text`` the same values as Spark casts them to text (used where
    a parent column has another type)."""

    child: str
    search_columns: tuple[str, ...]
    predicates: tuple[tuple[str, Any], ...]
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    text: tuple[tuple[Any, ...], ...]


def _order_key(df: DataFrame, seed: int) -> Column:
    hi, lo = row_fingerprint(df, sorted(df.columns))
    return F.xxhash64(F.lit(seed), hi, lo)


#: marks a sampled value compared as text (a type without an exact typed literal, e.g. arrays, maps)
TEXT = object()


def _search(child: LakeTable, s: int, sd: int) -> tuple[list[str], tuple[tuple[str, Any], ...]]:
    usable = [c for c in child.columns if child.stat(c).valid]
    parts = [c for c in child.partition_columns if c in usable]
    rest = sorted((c for c in usable if c not in parts), key=lambda c: edge_seed(sd, c))
    search = (parts + rest)[:s]
    preds = tuple((c, child.stat(c).min if edge_seed(sd, c, "v") % 2 == 0 else child.stat(c).max) for c in search)
    return search, preds


def clp_sample(child: LakeTable, s: int = 4, t: int = 10, seed: int = 0) -> CLPSample:
    """Algorithm 3's ``sample(y, searchCols, maxRows=t)`` for one child (see ``clp_samples``)."""
    return clp_samples([child], s, t, seed)[child.name]


def clp_samples(children: Sequence[LakeTable], s: int = 4, t: int = 10, seed: int = 0,
                chunk: int = 32) -> dict[str, CLPSample]:
    """The CLP sample of each child, drawn once per child per run (the children of a chunk in one job).

    searchCols: up to ``s`` columns with known values, partition columns first (their predicates
    prune partitions), the rest in a seeded order. Each column's predicate value is the child's own
    min or max (a value the child holds, known from the profile without a scan; chosen by the seed).
    The rows matching any predicate ``c <=> v`` are ordered by a seeded row hash (ties by value) and
    cut to ``t``, so the sample does not depend on partitioning. A column without statistics is never
    a search column; with none at all the sample is the first ``t`` rows in seeded hash order.
    """
    from pyspark.sql import Window

    from dqkit.lake._lake import typed_value

    if s < 1 or t < 1:
        raise ParameterError(f"s and t must be at least 1, not s={s}, t={t}")
    out: dict[str, CLPSample] = {}
    todo = []
    for child in children:
        names = tuple(child.df.columns)
        sd = edge_seed(seed, child.name)
        if child.rows == 0:
            out[child.name] = CLPSample(child.name, (), (), names, (), ())
            continue
        search, preds = _search(child, s, sd)
        picked = child.df
        if preds:
            picked = picked.where(functools.reduce(lambda a, b: a | b,
                                                   [col(c).eqNullSafe(F.lit(v)) for c, v in preds]))
        text = F.array(*[_canon(col(c), child.types[c]).cast("string") for c in names])
        todo.append((child, search, preds, names,
                     picked.select(F.lit(len(todo)).alias("k"), text.alias("v"), _order_key(child.df, sd).alias("o"))))
    w = Window.partitionBy("k").orderBy("o", "v")
    for i in range(0, len(todo), chunk):
        part = todo[i:i + chunk]
        frames = functools.reduce(DataFrame.unionAll, [f for *_, f in part])
        got: dict[int, list[Row]] = {}
        for r in (frames.withColumn("_dq_n", F.row_number().over(w)).where(F.col("_dq_n") <= t)
                  .orderBy("k", "_dq_n").collect()):  # at most t rows per child: bounded
            got.setdefault(r["k"], []).append(r)
        for child, search, preds, names, _ in part:
            k = next(j for j, item in enumerate(todo) if item[0] is child)
            texts, rows = [], []
            for r in got.get(k, []):
                vals = []
                for c, v in zip(names, r["v"]):
                    try:
                        vals.append(typed_value(v, child.types[c]))
                    except ValueError:
                        vals.append(TEXT)
                texts.append(tuple(r["v"]))
                rows.append(tuple(vals))
            out[child.name] = CLPSample(child.name, tuple(search), preds, names, tuple(rows), tuple(texts))
    return out


def _canon(c: Column, dt: T.DataType) -> Column:
    if isinstance(dt, T.MapType):
        return F.to_json(F.array_sort(F.map_entries(c)))
    return c


def _aligned(child: LakeTable, parent: LakeTable, keys: Sequence[str]) -> tuple[list[Column], list[Column]]:
    """Per key, the child's and the parent's expression: the same type on both sides (text when the
    tables' types differ), maps in canonical order."""
    cs, ps = [], []
    for k in keys:
        ct, pt = child.types[k], parent.types[k]
        a, b = _canon(col(k), ct), _canon(col(k), pt)
        if ct != pt:
            a, b = a.cast("string"), b.cast("string")
        cs.append(a)
        ps.append(b)
    return cs, ps


def _probe_conditions(sample: CLPSample, parent: LakeTable, child: LakeTable, mode: str) -> list[Column] | None:
    """One null-safe equality condition per distinct sampled key tuple (None: nothing sampled)."""
    if mode not in MODES:
        raise ParameterError(f"unknown CLP mode {mode!r}", hint="paper or strict")
    if not sample.rows:
        return None
    keys = list(sample.search_columns) if mode == "paper" and sample.search_columns else sorted(child.columns)
    pos = [sample.columns.index(k) for k in keys]
    tuples: list[tuple[Any, ...]] = []
    seen: set[str] = set()
    for raw, txt in zip(sample.rows, sample.text):
        tup = tuple(raw[i] if child.types[k] == parent.types[k] and raw[i] is not TEXT
                    and not isinstance(child.types[k], (T.TimestampType, T.TimestampNTZType))
                    else (TEXT, txt[i]) for k, i in zip(keys, pos))
        if repr(tup) not in seen:
            seen.add(repr(tup))
            tuples.append(tup)
    conds = []
    for tup in tuples:
        parts = []
        for k, v in zip(keys, tup):
            if isinstance(v, tuple) and len(v) == 2 and v[0] is TEXT:
                parts.append(_canon(col(k), parent.types[k]).cast("string").eqNullSafe(F.lit(v[1])))
            else:
                parts.append(col(k).eqNullSafe(F.lit(v)))
        conds.append(functools.reduce(lambda a, b: a & b, parts))
    return conds


def _probe(parent: LakeTable, conds: list[Column]) -> DataFrame:
    anyc = functools.reduce(lambda a, b: a | b, conds)
    return parent.df.where(anyc).agg(F.array(*[F.max(F.when(c, F.lit(1)).otherwise(F.lit(0))) for c in conds])
                                     .alias("hit"))


def clp_probe(sample: CLPSample, parent: LakeTable, child: LakeTable, mode: str = "paper") -> DataFrame | None:
    """The null-safe left-anti join of the sampled rows against the parent, as one scan of the parent:
    a one-row frame ``hit`` (array: 1 where sampled key tuple j occurs in the parent). The filter is
    the disjunction of the sampled tuples, so Parquet row groups are skipped and, on partition
    columns, partitions pruned (``PartitionFilters`` in the plan; req. 18). None: nothing sampled.

    ``paper`` joins on the search columns, ``strict`` on all the child's columns (both one-sided).
    """
    conds = _probe_conditions(sample, parent, child, mode)
    return None if conds is None else _probe(parent, conds)


def clp_keeps(sample: CLPSample, parent: LakeTable, child: LakeTable, spark: SparkSession | None = None,
              mode: str = "paper") -> bool:
    """Algorithm 3 for one edge: keep it exactly when every sampled row occurs in the parent."""
    return clp_keeps_many([(sample, parent, child)], mode)[0]


def clp_keeps_many(tasks: Sequence[tuple[CLPSample, LakeTable, LakeTable]], mode: str = "paper",
                   chunk: int = 48) -> list[bool]:
    """``clp_keeps`` for many edges: each parent is scanned once for the sampled tuples of all its
    children, and the probes of a chunk of parents run in one Spark job."""
    keep = [True] * len(tasks)
    by_parent: dict[str, tuple[LakeTable, list[tuple[int, int, int]], list[Column]]] = {}
    for k, (sample, parent, child) in enumerate(tasks):
        conds = _probe_conditions(sample, parent, child, mode)
        if conds is None:
            continue
        _, spans, all_conds = by_parent.setdefault(parent.name, (parent, [], []))
        spans.append((k, len(all_conds), len(all_conds) + len(conds)))
        all_conds.extend(conds)
    names = sorted(by_parent)
    probes = [_probe(by_parent[n][0], by_parent[n][2]).select(F.lit(i).alias("k"), "hit") for i, n in enumerate(names)]
    for r in _union_collect(probes, chunk):
        hit = r["hit"]
        for k, lo, hi in by_parent[names[r["k"]]][1]:
            keep[k] = hit is not None and all(h == 1 for h in hit[lo:hi])
    return keep


def _union_collect(frames: Sequence[DataFrame], chunk: int) -> list[Row]:
    out: list[Row] = []
    for i in range(0, len(frames), chunk):
        out += functools.reduce(DataFrame.unionAll, frames[i:i + chunk]).collect()
    return out


# ----------------------------------------------------------------------------------- exact stage
def _fingerprinted(child: LakeTable, parent: LakeTable) -> tuple[DataFrame, DataFrame]:
    keys = sorted(child.columns)
    cs, ps = _aligned(child, parent, keys)
    names = [f"_dq_c{i}" for i in range(len(keys))]
    cdf = child.df.select(*[c.alias(n) for c, n in zip(cs, names)])
    pdf = parent.df.select(*[c.alias(n) for c, n in zip(ps, names)])
    ch, cl = row_fingerprint(cdf)
    ph, pl = row_fingerprint(pdf)
    return cdf.select(ch.alias("h"), cl.alias("l")), pdf.select(ph.alias("h"), pl.alias("l"))


def containment_fraction(parent: LakeTable, child: LakeTable, bag: bool = False) -> tuple[float, int]:
    """CM(child, parent) exactly, with the number of child rows it rests on (req. 20, 22).

    Set semantics (default): the share of the child's DISTINCT rows found in the parent. Bag
    semantics: Σ min(n_child(r), n_parent(r)) / n_child, so a row the child holds twice needs two
    copies in the parent. Rows are compared by ``dqkit.fingerprint`` (NULL-aware) over the child's
    columns projected from the parent. An empty child is contained (CM 1, resting on 0 rows).
    """
    return containment_fractions([(parent, child)], bag)[0]


def _cm_frame(parent: LakeTable, child: LakeTable, bag: bool, k: int) -> DataFrame:
    c, p = _fingerprinted(child, parent)
    if bag:
        cc = c.groupBy("h", "l").agg(F.count(F.lit(1)).alias("n"))
        pc = p.groupBy("h", "l").agg(F.count(F.lit(1)).alias("m"))
        agg = cc.join(pc, ["h", "l"], "left").agg(
            F.sum("n").cast("long").alias("total"),
            F.sum(F.least(F.col("n"), F.coalesce(F.col("m"), F.lit(0)))).cast("long").alias("hit"))
    else:
        agg = c.distinct().join(p.distinct().withColumn("_m", F.lit(1)), ["h", "l"], "left").agg(
            F.count(F.lit(1)).cast("long").alias("total"), F.count("_m").cast("long").alias("hit"))
    return agg.select(F.lit(k).alias("k"), "total", "hit")


def containment_fractions(pairs: Sequence[tuple[LakeTable, LakeTable]], bag: bool = False,
                          chunk: int = 64) -> list[tuple[float, int]]:
    """``containment_fraction`` for many (parent, child) pairs, in a few Spark jobs."""
    got = {r["k"]: r for r in _union_collect([_cm_frame(p, c, bag, k) for k, (p, c) in enumerate(pairs)], chunk)}
    out = []
    for k in range(len(pairs)):
        total, hit = int(got[k]["total"] or 0), int(got[k]["hit"] or 0)
        out.append(((1.0 if total == 0 else hit / total), total))
    return out


def pairwise_hash_containment(parent: LakeTable, child: LakeTable) -> tuple[float, int, int]:
    """The paper's literal ground truth (§6.4.2): compare the hash of every child row with the hash of
    every parent row (a nested-loop join Spark cannot turn into a hash join). Returns (CM over
    distinct rows, distinct child rows, hash comparisons made = M_child · M_parent). Small inputs only."""
    c, p = _fingerprinted(child, parent)
    c = c.distinct()
    p = p.distinct().select(F.col("h").alias("ph"), F.col("l").alias("pl"))
    m_c, m_p = c.count(), p.count()
    cond = (F.col("h").bitwiseXOR(F.col("ph")) == 0) & (F.col("l").bitwiseXOR(F.col("pl")) == 0)
    hit = c.crossJoin(p).where(cond).select("h", "l").distinct().count()
    return (1.0 if m_c == 0 else hit / m_c), m_c, m_c * m_p

