"""Dedup's driver route: a run whose candidate pairs fit on the driver is blocked, levelled and
counted there, from one Arrow fetch of the compared records, instead of in Spark jobs.

At 100K entities (3.2M candidate pairs) the Spark route spends most of its time in fixed costs per
job and in shipping every pair's values through Python workers (pandas UDFs) and back; the same pairs
joined, levelled and counted in NumPy and rapidfuzz on the driver cost seconds. The route is taken
when the pairs fit the memory the driver has, measured when the run starts (``pair_budget``: half of the
memory available, at ``BYTES_PER_PAIR`` each; ``DQKIT_DEDUP_DRIVER_PAIRS`` overrides it with a pair count,
0 turns the route off; checked by ``dqkit.checks.preflight.dedup_driver_pairs``): that bounds both the
comparisons the block statistics imply (the sum over the rules, an upper bound of the distinct pairs) and
the records fetched, every comparison is
scored exactly as Spark scores it (``_since_score.scorable``: text columns, the methods rapidfuzz and
Spark agree on), one table is deduplicated (linking stays on Spark) and the key is an integer, text
or a date (whose Arrow order is Spark's).

It computes what the Spark route computes, with the code ``dedup --since`` already runs on the
driver: the same candidate pairs (``_since_pairs.block_pairs``: each pair once, under the first rule
that blocks it, the rules' bitmask, oversized blocks purged), the same levels
(``_since_score.levels``), the same u sample (the ``u_sample_records`` records with the smallest
``xxhash64(key, seed)``, ties by key: the hash is computed by Spark in the fetch, the top-k taken
here, so it is the very set ``_estimate_u`` samples), and the level-pattern counts in the order the
Spark route sorts its collected rows (so EM adds the same numbers in the same order: the same model,
bit for bit). The levelled pairs stay on the driver as one Arrow table (``DriverPairs``): Spark reads the
matching ones at the threshold, or all of them when asked (``--all-pairs``), from a file written for it
(``dqkit.runtime.arrowframe``), and the clusters are labelled and counted from the matching pairs on the
driver at any threshold (``DriverPairs.clusters``: ``dqkit.primitives.components.label_components``).
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.dedup import _blocking as B
from dqkit.dedup import _compare as C
from dqkit.dedup import _since_pairs as P
from dqkit.dedup import _since_score as SC
from dqkit.primitives.similarity import workers
from dqkit.runtime.arrowframe import arrow_frame
from dqkit.checks.preflight import DEDUP_DRIVER_PAIRS_ENV as ENV
from dqkit.checks.preflight import dedup_driver_pairs

__all__ = ["DriverPairs", "DriverRun", "takes", "run", "ENV"]

U_HASH = "_dq_uh"
_BATCH = 1_000_000  # pairs levelled per rapidfuzz call (bounds the values taken at once)
_FRAME_BATCH = 2_000_000  # pairs per Arrow batch handed to Spark (a Parquet row group)


@dataclass(frozen=True, eq=False)
class DriverPairs:
    """The candidate pairs kept on the driver, compactly: each pair as the row positions ``lo``, ``hi``
    of its records in ``ids`` (the smaller id first) and the row of the level-pattern table it falls in
    (``row``; a pair's levels, rules' bitmask and first rule are its pattern row's: ``row_patterns``,
    ``row_masks``), so the matches at any threshold are a mask and a pair costs 12 bytes. Spark sees them
    only when asked (``frame``, ``matching_frame``), written in batches to a file it reads lazily
    (``dqkit.runtime.arrowframe``): they never enter the JVM whole."""

    ids: Any
    lo: np.ndarray
    hi: np.ndarray
    row: np.ndarray
    row_patterns: np.ndarray
    row_masks: np.ndarray
    schema: T.StructType
    _kept: dict = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.row)

    def _batches(self, keep: np.ndarray | None) -> Iterator[pa.RecordBatch]:
        """The levelled pairs (``keep``: a mask of the pairs, None all) as Arrow batches of the frame's columns."""
        first = _lowest_bit(self.row_masks).astype(np.int32)
        where = None if keep is None else np.flatnonzero(keep)
        total = len(self.row) if where is None else len(where)
        names = self.schema.fieldNames()
        for s in range(0, max(total, 1), _FRAME_BATCH):
            at = slice(s, s + _FRAME_BATCH) if where is None else where[s:s + _FRAME_BATCH]
            lo, hi, row = self.lo[at], self.hi[at], self.row[at]
            cols = [self.ids.take(pa.array(lo)), self.ids.take(pa.array(hi)), pa.array(first[row]),
                    pa.array(self.row_masks[row].astype(np.int64)),
                    *[pa.array(self.row_patterns[row, i].astype(np.int32)) for i in range(self.row_patterns.shape[1])]]
            yield pa.RecordBatch.from_arrays([c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c
                                              for c in cols], names=names)

    def frame(self, spark: Any) -> DataFrame:
        """Every levelled pair as a Spark DataFrame (made once)."""
        if "all" not in self._kept:
            self._kept["all"] = arrow_frame(spark, self._batches(None), self.schema)
        return self._kept["all"]

    def matching_frame(self, spark: Any, matching_rows: np.ndarray) -> DataFrame:
        """The levelled pairs whose pattern row is matching (``matching_rows[g]``), as a Spark DataFrame
        (the last mask's frame is kept: the result's sections and its save read the same one)."""
        mask = np.asarray(matching_rows, dtype=bool)
        key = mask.tobytes()
        if self._kept.get("mask") != key:
            self._kept["matching"] = arrow_frame(spark, self._batches(mask[self.row]), self.schema)
            self._kept["mask"] = key
        return self._kept["matching"]

    def clusters(self, matching_rows: np.ndarray, n_records: int) -> tuple[pa.Table | None, dict[int, int]]:
        """The connected components of the pairs whose pattern row is matching (``matching_rows[g]``) as
        ``dqkit.primitives.components.label_components`` gives them (``(node, component)``, None without a match),
        and the cluster sizes (size -> clusters) of all ``n_records`` records, counted here: no job."""
        from dqkit.primitives.components import label_components

        keep = np.flatnonzero(np.asarray(matching_rows, dtype=bool)[self.row])
        if not len(keep):
            return None, ({1: n_records} if n_records else {})
        a, b = self.ids.take(pa.array(self.lo[keep])), self.ids.take(pa.array(self.hi[keep]))
        labelled = label_components(a, b)
        per = np.bincount(np.asarray(pc.value_counts(labelled.column("component").combine_chunks()).field("counts")))
        sizes = {int(s): int(n) for s, n in enumerate(per) if n}
        if n_records > labelled.num_rows:  # the records in no matching pair: clusters of one
            sizes[1] = sizes.get(1, 0) + n_records - labelled.num_rows
        return labelled, dict(sorted(sizes.items()))


def _lowest_bit(masks: np.ndarray) -> np.ndarray:
    """The lowest set bit of each mask (a pair's first rule), -1 for 0."""
    masks = np.asarray(masks, dtype=np.int64)
    out = np.full(len(masks), -1, dtype=np.int64)
    for i in range(63):
        hit = (out < 0) & (((masks >> i) & 1) == 1)
        out[hit] = i
    return out


@dataclass(frozen=True)
class DriverRun:
    """What the driver route gives ``dedup``: the level patterns of the pairs (with the rules' bitmask)
    and counts, the u sample's patterns and counts, the pairs themselves (kept on the driver)."""

    patterns: np.ndarray
    counts: np.ndarray
    masks: np.ndarray
    u_patterns: np.ndarray
    u_counts: np.ndarray
    pairs: DriverPairs


def _key_ok(t: T.DataType) -> bool:
    if isinstance(t, T.StringType):
        return getattr(t, "collation", "UTF8_BINARY") == "UTF8_BINARY"
    return isinstance(t, (T.IntegralType, T.DateType))


def _exact_blocks(t: T.DataType) -> bool:
    """Block keys whose (hash, JSON) identity is Spark's equality: no floating-point part (-0.0, NaN)."""
    if isinstance(t, T.StructType):
        return all(_exact_blocks(f.dataType) for f in t.fields)
    return not isinstance(t, (T.FloatType, T.DoubleType, T.MapType, T.ArrayType))


#: the driver route's peak memory per candidate pair (estimated from the arrays it holds: the pairs'
#: positions, rules and levels while they are scored and counted, before they are kept as 12 bytes each)
BYTES_PER_PAIR = 120
#: the share of the memory available now that the driver route may take
MEMORY_SHARE = 0.5


def available_bytes() -> int:
    """The memory this process may still take: what the machine has available now (``psutil``), or
    what is left under the container's (cgroup v2) limit when that is less."""
    try:
        import psutil

        free = int(psutil.virtual_memory().available)
    except ImportError:  # Linux without psutil: the kernel's own estimate
        with open("/proc/meminfo") as f:
            free = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            limit = f.read().strip()
        with open("/sys/fs/cgroup/memory.current") as f:
            used = int(f.read().strip())
        if limit.isdigit():
            free = min(free, int(limit) - used)
    except (OSError, ValueError):
        pass
    return max(0, free)


def pair_budget(environ: dict[str, str] | None = None) -> int:
    """The most candidate pairs the driver route takes: ``DQKIT_DEDUP_DRIVER_PAIRS`` when set (0: none),
    else as many as ``MEMORY_SHARE`` of the memory available now holds at ``BYTES_PER_PAIR`` each."""
    import os

    raw = (os.environ if environ is None else environ).get(ENV)
    if raw is not None and raw.strip():
        return dedup_driver_pairs(environ)
    return int(available_bytes() * MEMORY_SHARE // BYTES_PER_PAIR)


def takes(stats: pd.DataFrame, n_records: int, comparisons: Sequence[Any], dtypes: dict[str, T.DataType],
          recs: DataFrame, n_rules: int, link: bool) -> bool:
    """Whether ``dedup`` takes the driver route for the compared records ``recs`` (the module
    docstring's conditions, the pair limit measured by ``pair_budget``; block keys with a
    floating-point part stay on Spark too)."""
    pairs = int(stats["comparisons"].sum()) if len(stats) else 0
    if link or not SC.scorable(comparisons, dtypes):
        return False
    limit = pair_budget()
    schema = recs.schema
    return (limit > 0 and pairs <= limit and n_records <= limit and _key_ok(schema[B.ID].dataType)
            and all(_exact_blocks(schema[B.block_col(i)].dataType) for i in range(n_rules)))


def _levels(tbl: pa.Table, lo: np.ndarray, hi: np.ndarray, comparisons: Sequence[Any], columns: list[str]
            ) -> np.ndarray:
    """The levels (pairs × comparisons, int32) of the pairs ``(lo[i], hi[i])`` of ``tbl``'s rows.

    A level is a function of the two values, so each column is dictionary-encoded once: NULL and equal
    come from the codes, and ``_since_score.levels`` scores each distinct pair of differing values once
    (names repeat: a seventh of the pairs at 100K entities), in batches."""
    out = np.empty((len(lo), len(comparisons)), dtype=np.int32)
    for i, c in enumerate(comparisons):
        values = tbl.column(C.value_col(columns.index(c.column)))
        enc = (values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values).dictionary_encode()
        codes = np.asarray(pc.fill_null(enc.indices, -1), dtype=np.int64)
        ca, cb = codes[lo], codes[hi]
        null = (ca < 0) | (cb < 0)
        equal = (ca == cb) & ~null
        todo = ~(null | equal)
        got = np.zeros(len(lo), dtype=np.int32)
        if c.thresholds and todo.any():
            n = len(enc.dictionary)
            inverse, distinct = pd.factorize(ca[todo] * n + cb[todo])
            scored = np.empty(len(distinct), dtype=np.int32)
            for s in range(0, len(distinct), _BATCH):
                part = distinct[s:s + _BATCH]
                scored[s:s + _BATCH] = SC.levels(c, enc.dictionary.take(pa.array(part // n)),
                                                 enc.dictionary.take(pa.array(part % n)))
            got[todo] = scored[inverse]
        got[equal] = len(c.thresholds) + 1
        got[null] = -1
        out[:, i] = got
    return out


def count_patterns(gammas: np.ndarray, masks: np.ndarray | None, levels: Sequence[int]
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(patterns, counts, masks, row)``: the distinct (levels, mask) rows of the pairs in the order the
    Spark route sorts its collected ``groupBy`` rows (levels, then mask, ascending), pairs per row
    (float), the mask of each row and each pair's row."""
    masks = np.zeros(len(gammas), dtype=np.int64) if masks is None else masks
    mask_code, distinct_masks = pd.factorize(masks, sort=True)
    code = np.zeros(len(gammas), dtype=np.int64)
    radix = 1
    for k in range(gammas.shape[1]):  # mixed radix, the first comparison most significant: its sort order
        radix *= levels[k] + 1
        code = code * (levels[k] + 1) + (gammas[:, k].astype(np.int64) + 1)
    if radix * max(len(distinct_masks), 1) >= 2 ** 62:  # too many levels for one int64: sort the rows
        _, first, row, n = np.unique(np.column_stack([gammas, masks]), axis=0, return_index=True,
                                     return_inverse=True, return_counts=True)
        row = row.reshape(-1)
    else:
        row, distinct = pd.factorize(code * max(len(distinct_masks), 1) + mask_code, sort=True)
        first = np.empty(len(distinct), dtype=np.int64)
        first[row] = np.arange(len(row))  # a pair of each row (any: they share the row's levels and mask)
        n = np.bincount(row, minlength=len(distinct))
    return (gammas[first].astype(np.int64).reshape(-1, gammas.shape[1]), n.astype(float), masks[first], row)


def u_sample_pairs(hashes: np.ndarray, rank: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Row positions ``(lo, hi)`` of every pair of the u sample: the ``size`` records with the smallest
    ``xxhash64(key, seed)`` (``hashes``), ties by key (``rank``: Spark's order of the keys), as
    ``_estimate_u``'s ``orderBy(hash, key).limit(size)`` picks them; the smaller key first."""
    chosen = np.lexsort((rank, hashes))[:size]
    chosen = chosen[np.argsort(rank[chosen], kind="stable")]
    i, j = np.triu_indices(len(chosen), 1)
    return chosen[i], chosen[j]


def run(recs: DataFrame, n_rules: int, oversized: dict[int, list[str]], comparisons: Sequence[Any],
        columns: list[str], seed: int, u_sample_records: int) -> DriverRun:
    """The candidate pairs, their levels and pattern counts, and the u sample's pattern counts, from one
    fetch of ``recs`` (``_dq_id``, the block keys, the compared columns; oversized blocks not yet purged)."""
    carry = [C.value_col(k) for k in range(len(columns))]
    tbl = P.collect_near(recs, n_rules, carry, (F.xxhash64(F.col(B.ID), F.lit(seed)).alias(U_HASH),))
    levels = [c.n_levels for c in comparisons]
    lo, hi, first, masks = P.block_pairs(tbl, np.ones(tbl.num_rows, dtype=bool), n_rules, oversized)
    rank = P.spark_rank(tbl.column(B.ID))
    hashes = np.asarray(tbl.column(U_HASH).to_numpy(), dtype=np.int64)
    ulo, uhi = u_sample_pairs(hashes, rank, u_sample_records)
    with workers(-1):  # Spark is idle while the driver scores: rapidfuzz may use every core
        gammas = _levels(tbl, lo, hi, comparisons, columns)
        u_gammas = _levels(tbl, ulo, uhi, comparisons, columns)
    patterns, counts, row_masks, row = count_patterns(gammas, masks, levels)
    del gammas, masks, first
    u_patterns, u_counts, _, _ = count_patterns(u_gammas, None, levels)
    small = np.int32 if tbl.num_rows < 2 ** 31 else np.int64
    ids = tbl.column(B.ID).combine_chunks()
    key_type = recs.schema[B.ID].dataType
    schema = T.StructType([T.StructField(B.ID1, key_type), T.StructField(B.ID2, key_type),
                           T.StructField(B.FIRST, T.IntegerType()), T.StructField(B.RULES, T.LongType()),
                           *[T.StructField(C.gamma_col(i), T.IntegerType()) for i in range(len(comparisons))]])
    pairs = DriverPairs(ids, lo.astype(small), hi.astype(small), row.astype(np.int32), patterns, row_masks, schema)
    return DriverRun(patterns, counts, row_masks, u_patterns, u_counts, pairs)
