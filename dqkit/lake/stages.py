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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.errors import ParameterError
from dqkit.primitives.fingerprint import hash_input_sql, row_fingerprint, row_fingerprint_sql
from dqkit.lake._lake import LakeTable
from dqkit.lake.modes import MODES
from dqkit.runtime.sparkutil import col, quote_ident


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
    ``rows`` hold the child's values; ``text`` the same values as Spark casts them to text;
    ``hashes`` per CLP mode, the 128-bit fingerprint of each sampled row's text over the mode's key
    columns (``keys``), which the probe looks up in the parent."""

    child: str
    search_columns: tuple[str, ...]
    predicates: tuple[tuple[str, Any], ...]
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    text: tuple[tuple[Any, ...], ...]
    hashes: Mapping[str, frozenset[tuple[int, int]]] = field(default_factory=dict, compare=False)

    def keys(self, mode: str) -> tuple[str, ...]:
        """The columns CLP compares in ``mode``: the search columns (``paper``; all columns when there
        are none) or all the child's columns (``strict``), sorted."""
        if mode not in MODES:
            raise ParameterError(f"unknown CLP mode {mode!r}", hint="paper or strict")
        return tuple(sorted(self.search_columns if mode == "paper" and self.search_columns else self.columns))


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


def _texted(df: DataFrame, types: Mapping[str, T.DataType], names: Sequence[str]) -> tuple[DataFrame, dict[str, str]]:
    """``df`` with each of ``names`` also as text (``_dq_t<i>``: maps in canonical order, then cast);
    one SQL projection over quoted identifiers, so it costs one driver-to-JVM call."""
    alias = {c: f"_dq_t{i}" for i, c in enumerate(names)}
    return df.selectExpr("*", *[f"CAST({_canon_sql(c, types[c])[0]} AS STRING) AS {alias[c]}" for c in names]), alias


def _key_hash(df: DataFrame, alias: Mapping[str, str], keys: Sequence[str]) -> Column:
    """The fingerprint (``dqkit.primitives.fingerprint``'s 128-bit row hash: NULL marker and value per column) of
    the text of ``keys``, in that order: the same expression on the child's sample and on the parent,
    so equal rows hash equally. One SQL expression, so it costs one driver-to-JVM call."""
    hi, lo = row_fingerprint_sql([hash_input_sql(alias[k], T.StringType(), k) for k in keys])
    return F.expr(f"named_struct('h', {hi}, 'l', {lo})")


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
            out[child.name] = CLPSample(child.name, (), (), names, (), (), {m: frozenset() for m in MODES})
            continue
        search, preds = _search(child, s, sd)
        texted, alias = _texted(child.df, child.types, names)
        picked = texted
        if preds:
            picked = picked.where(functools.reduce(lambda a, b: a | b,
                                                   [col(c).eqNullSafe(F.lit(v)) for c, v in preds]))
        shell = CLPSample(child.name, tuple(search), preds, names, (), ())
        text = F.array(*[F.col(alias[c]) for c in names])
        todo.append((child, search, preds, names,
                     picked.select(F.lit(len(todo)).alias("k"), text.alias("v"), _order_key(child.df, sd).alias("o"),
                                   *[_key_hash(texted, alias, shell.keys(m)).alias(f"h_{m}") for m in MODES])))
    w = Window.partitionBy("k").orderBy("o", "v")
    for i in range(0, len(todo), chunk):
        part = todo[i:i + chunk]
        frames = functools.reduce(DataFrame.unionAll, [f for *_, f in part])
        got: dict[int, list[Row]] = {}
        for r in (frames.withColumn("_dq_n", F.row_number().over(w)).where(F.col("_dq_n") <= t)
                  .orderBy("k", "_dq_n").collect()):  # at most t rows per child: bounded
            got.setdefault(r["k"], []).append(r)
        for j, (child, search, preds, names, _) in enumerate(part):
            texts, rows = [], []
            hashes: dict[str, set[tuple[int, int]]] = {m: set() for m in MODES}
            for r in got.get(i + j, []):
                vals = []
                for c, v in zip(names, r["v"]):
                    try:
                        vals.append(typed_value(v, child.types[c]))
                    except ValueError:
                        vals.append(TEXT)
                texts.append(tuple(r["v"]))
                rows.append(tuple(vals))
                for m in MODES:
                    hashes[m].add((r[f"h_{m}"]["h"], r[f"h_{m}"]["l"]))
            out[child.name] = CLPSample(child.name, tuple(search), preds, names, tuple(rows), tuple(texts),
                                        {m: frozenset(h) for m, h in hashes.items()})
    return out


def _partition_values(sample: CLPSample, parent: LakeTable, child: LakeTable, mode: str
                      ) -> dict[str, tuple[set[Any], set[Any]]] | None:
    """Per partition column of the parent among the mode's keys, the sampled values (typed, and as
    text where the two tables' types differ or the value has no exact literal). None: no such column."""
    keys = sample.keys(mode)
    cols = [c for c in parent.partition_columns if c in keys]
    if not cols:
        return None
    out: dict[str, tuple[set[Any], set[Any]]] = {c: (set(), set()) for c in cols}
    for raw, txt in zip(sample.rows, sample.text):
        for c in cols:
            i = sample.columns.index(c)
            v, ct, pt = raw[i], child.types[c], parent.types[c]
            if ct == pt and v is not TEXT and not isinstance(ct, (T.TimestampType, T.TimestampNTZType)):
                out[c][0].add(v)
            else:
                out[c][1].add(txt[i])
    return out


def _partition_filter(values: Sequence[Mapping[str, tuple[set[Any], set[Any]]]], parent: LakeTable) -> Column | None:
    """A filter every parent row equal to a sampled row (on the keys) passes: per partition column, the
    sampled values of all the samples (an ``isin``, NULL-safe), ANDed over the columns. It is weaker than
    matching whole sampled rows (so still one-sided) and stays a small partition predicate however many
    rows are sampled, so Spark prunes partitions at planning time (``PartitionFilters``; req. 18)."""
    cols = sorted(set.intersection(*[set(v) for v in values])) if values else []
    terms = []
    for c in cols:
        typed = set().union(*[v[c][0] for v in values])
        text = set().union(*[v[c][1] for v in values])
        parts = []
        if None in typed or None in text:
            parts.append(col(c).isNull())
        if typed - {None}:
            parts.append(col(c).isin(sorted(typed - {None}, key=repr)))
        if text - {None}:
            parts.append(F.expr(f"CAST({_canon_sql(c, parent.types[c])[0]} AS STRING)").isin(sorted(text - {None})))
        if parts:
            terms.append(functools.reduce(lambda a, b: a | b, parts))
    return functools.reduce(lambda a, b: a & b, terms) if terms else None


def _probe(parent: LakeTable, items: Sequence[tuple[CLPSample, LakeTable]], mode: str) -> tuple[DataFrame, list[int]]:
    """One scan of ``parent`` for the samples of several children: per distinct key-column set, the
    parent rows' key fingerprints that some sampled row has (an ``isin`` on the 64-bit half, then the
    full 128 bits compared on the driver). Returns a one-row frame ``hit`` (array, per key set, of the
    matched fingerprints) and, per item, the index of its key set."""
    groups: dict[tuple[str, ...], set[int]] = {}
    index = []
    for sample, _ in items:
        keys = sample.keys(mode)
        index.append(list(groups).index(keys) if keys in groups else len(groups))
        groups.setdefault(keys, set()).update(h for h, _ in sample.hashes[mode])
    needed = sorted({k for keys in groups for k in keys})
    texted, alias = _texted(parent.df.select(*[col(k) for k in needed]), parent.types, needed)
    df = texted
    values = [_partition_values(sample, parent, child, mode) for sample, child in items]
    if values and all(v is not None for v in values):
        pf = _partition_filter([v for v in values if v is not None], parent)
        if pf is not None:
            df = df.where(pf)  # partition pruning (req. 18)
    hashed = df.select(*[_key_hash(texted, alias, keys).alias(f"g{i}") for i, keys in enumerate(groups)])
    found = [F.col(f"g{i}.h").isin(sorted(hs)) for i, hs in enumerate(groups.values())]
    hit = hashed.where(functools.reduce(lambda a, b: a | b, found)).agg(
        F.array(*[F.collect_set(F.when(f, F.col(f"g{i}"))) for i, f in enumerate(found)]).alias("hit"))
    return hit, index


def clp_probe(sample: CLPSample, parent: LakeTable, child: LakeTable, mode: str = "strict") -> DataFrame | None:
    """The null-safe left-anti join of the sampled rows against the parent, as one filtered scan of the
    parent: a one-row frame ``hit`` holding the parent's rows (as key fingerprints) that match a sampled
    row. On the parent's partition columns the sampled values filter the scan too, so partitions are
    pruned (``PartitionFilters`` in the plan; req. 18). None: nothing sampled.

    ``paper`` compares the search columns, ``strict`` all the child's columns (both one-sided).
    """
    if not sample.rows:
        return None
    return _probe(parent, [(sample, child)], mode)[0]


def clp_keeps(sample: CLPSample, parent: LakeTable, child: LakeTable, spark: SparkSession | None = None,
              mode: str = "strict") -> bool:
    """Algorithm 3 for one edge: keep it exactly when every sampled row occurs in the parent."""
    return clp_keeps_many([(sample, parent, child)], mode)[0]


def clp_keeps_many(tasks: Sequence[tuple[CLPSample, LakeTable, LakeTable]], mode: str = "strict",
                   chunk: int = 16) -> list[bool]:
    """``clp_keeps`` for many edges: each parent is scanned once for the samples of all its children
    (rows compared by the fingerprint of their text over the mode's keys, so the plan stays small
    however many children a parent has), and the probes of a chunk of parents run in one Spark job.

    Text comparison is one-sided: rows equal by value (the ground truth's comparison) have equal
    text, so a contained child's sampled rows are always found."""
    if mode not in MODES:
        raise ParameterError(f"unknown CLP mode {mode!r}", hint="paper or strict")
    keep = [True] * len(tasks)
    by_parent: dict[str, tuple[LakeTable, list[int]]] = {}
    for k, (sample, parent, _) in enumerate(tasks):
        if sample.rows:
            by_parent.setdefault(parent.name, (parent, []))[1].append(k)
    names = sorted(by_parent)
    probes, indexes = [], []
    for i, n in enumerate(names):
        parent, ks = by_parent[n]
        frame, index = _probe(parent, [(tasks[k][0], tasks[k][2]) for k in ks], mode)
        probes.append(frame.select(F.lit(i).alias("k"), "hit"))
        indexes.append(index)
    for r in _union_collect(probes, chunk):
        i = r["k"]
        hit = r["hit"] or []
        found = [{(x["h"], x["l"]) for x in g} for g in hit]
        for k, g in zip(by_parent[names[i]][1], indexes[i]):
            keep[k] = bool(found) and tasks[k][0].hashes[mode] <= found[g]
    return keep


def _union_collect(frames: Sequence[DataFrame], chunk: int) -> list[Row]:
    out: list[Row] = []
    for i in range(0, len(frames), chunk):
        out += functools.reduce(DataFrame.unionAll, frames[i:i + chunk]).collect()
    return out


# ----------------------------------------------------------------------------------- exact stage
def _canon_sql(name: str, dt: T.DataType) -> tuple[str, T.DataType]:
    """``_canon`` as SQL text over a quoted identifier, with the type it yields."""
    q = quote_ident(name)
    if isinstance(dt, T.MapType):
        return f"to_json(array_sort(map_entries({q})))", T.StringType()
    return q, dt


def _fingerprinted(child: LakeTable, parent: LakeTable) -> tuple[DataFrame, DataFrame]:
    """The child's rows and the parent's rows projected onto the child's columns, as fingerprints
    ``(h, l)``: ``dqkit.primitives.fingerprint``'s 128-bit row hash over the aligned columns (text where the two
    tables' types differ). Written as two SQL expressions over quoted identifiers, so a pair costs a
    few driver-to-JVM calls instead of several per column (thousands of pairs are planned per run)."""
    sides: list[list[str]] = [[], []]
    for k in sorted(child.columns):
        ct, pt = child.types[k], parent.types[k]
        for side, dt in ((0, ct), (1, pt)):
            expr, et = _canon_sql(k, dt)
            if ct != pt:
                expr, et = f"CAST({expr} AS STRING)", T.StringType()
            sides[side].append(hash_input_sql(expr, et, k))
    out = []
    for table, inputs in ((child, sides[0]), (parent, sides[1])):
        hi, lo = row_fingerprint_sql(inputs)
        out.append(table.df.selectExpr(f"{hi} AS h", f"{lo} AS l"))
    return out[0], out[1]


def containment_fraction(parent: LakeTable, child: LakeTable, bag: bool = False) -> tuple[float, int]:
    """CM(child, parent) exactly, with the number of child rows it rests on (req. 20, 22).

    Set semantics (default): the share of the child's DISTINCT rows found in the parent. Bag
    semantics: Σ min(n_child(r), n_parent(r)) / n_child, so a row the child holds twice needs two
    copies in the parent. Rows are compared by ``dqkit.primitives.fingerprint`` (NULL-aware) over the child's
    columns projected from the parent. An empty child is contained (CM 1, resting on 0 rows).
    """
    return containment_fractions([(parent, child)], bag)[0]


def _cm_chunk(pairs: Sequence[tuple[int, LakeTable, LakeTable]], bag: bool) -> DataFrame:
    """Rows (k, total, hit) for a chunk of (k, parent, child) pairs: every pair's child and parent
    fingerprints, tagged with k and the side, grouped in ONE shuffle (no join, so no broadcast of a
    parent, and one exchange for the whole chunk). A pair with an empty child has no row."""
    frames = []
    for k, parent, child in pairs:
        c, p = _fingerprinted(child, parent)
        frames += [c.selectExpr(f"{int(k)} AS k", "h", "l", "1 AS n", "0 AS m"),
                   p.selectExpr(f"{int(k)} AS k", "h", "l", "0 AS n", "1 AS m")]
    both = functools.reduce(DataFrame.unionAll, frames)
    rows = both.groupBy("k", "h", "l").agg(F.expr("sum(n) AS n"), F.expr("sum(m) AS m")).where("n > 0")
    if bag:
        return rows.groupBy("k").agg(F.expr("CAST(sum(n) AS BIGINT) AS total"),
                                     F.expr("CAST(sum(least(n, m)) AS BIGINT) AS hit"))
    return rows.groupBy("k").agg(F.expr("CAST(count(1) AS BIGINT) AS total"),
                                 F.expr("CAST(count(CASE WHEN m > 0 THEN 1 END) AS BIGINT) AS hit"))


def containment_fractions(pairs: Sequence[tuple[LakeTable, LakeTable]], bag: bool = False,
                          chunk: int = 32) -> list[tuple[float, int]]:
    """``containment_fraction`` for many (parent, child) pairs, ``chunk`` pairs per Spark job."""
    got: dict[int, Row] = {}
    items = [(k, p, c) for k, (p, c) in enumerate(pairs)]
    for i in range(0, len(items), chunk):
        got.update({r["k"]: r for r in _cm_chunk(items[i:i + chunk], bag).collect()})  # one row per pair
    out = []
    for k in range(len(pairs)):
        r = got.get(k)
        total, hit = (int(r["total"] or 0), int(r["hit"] or 0)) if r is not None else (0, 0)
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

