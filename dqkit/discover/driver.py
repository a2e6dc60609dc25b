"""The driver route: the table's columns as integer codes (NULL one value of its own) and Tane's
stripped partitions in NumPy/pandas, for a table that fits on the driver.

A left-hand side X is kept as its *stripped partition*: the rows lying in groups of two rows or more
that agree on X, with their group numbers (rows alone in their group can violate nothing and support
nothing). ``X ∪ {B}`` is X's partition refined by B's codes. For ``X -> A`` the rows to delete are, per
group of X, its size less the largest subgroup agreeing on A (g3's numerator); the rows X covers are
the stripped partition's size (``violations_many``, for several right-hand sides at once).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd


def encode(table: Any, columns: Sequence[str]) -> list[np.ndarray]:
    """Each column of the Arrow table ``table`` as dense int64 codes; NULL is one code of its own
    (NULL equals NULL), and NaN one value."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out: list[np.ndarray] = []
    for name in columns:
        col = table.column(name)
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        if pa.types.is_null(col.type):
            out.append(np.zeros(len(col), dtype=np.int64))
            continue
        try:
            codes = pc.dictionary_encode(col, null_encoding="encode").indices
            out.append(np.asarray(codes.to_numpy(zero_copy_only=False), dtype=np.int64))
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
            # nested and other types Arrow cannot hash: their text, NULL kept as None
            values = [None if v is None else repr(v) for v in col.to_pylist()]
            out.append(pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=False)[0].astype(np.int64))
    return out


class Partition:
    """A stripped partition: ``rows`` (row numbers in groups of >= 2) and their dense ``gid``."""

    __slots__ = ("rows", "gid", "groups")

    def __init__(self, rows: np.ndarray, gid: np.ndarray, groups: int) -> None:
        self.rows, self.gid, self.groups = rows, gid, groups

    @classmethod
    def everything(cls, n: int) -> Partition:
        """The partition of the empty set: one group of every row (stripped away below two rows)."""
        if n < 2:
            return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), 0)
        return cls(np.arange(n, dtype=np.int64), np.zeros(n, np.int64), 1)

    def refine(self, codes: np.ndarray) -> Partition:
        """This partition intersected with a column's codes, stripped of single rows."""
        if not len(self.rows):
            return self
        sub = codes[self.rows]
        key = self.gid * (int(sub.max()) + 1) + sub
        ids, _ = pd.factorize(key)
        sizes = np.bincount(ids)
        big = np.flatnonzero(sizes >= 2)
        if not len(big):
            return Partition(np.zeros(0, np.int64), np.zeros(0, np.int64), 0)
        keep = sizes[ids] >= 2
        remap = np.full(len(sizes), -1, dtype=np.int64)
        remap[big] = np.arange(len(big), dtype=np.int64)  # the groups kept, numbered densely
        return Partition(self.rows[keep], remap[ids[keep]], len(big))


def _counts(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ids, uniq = pd.factorize(key)
    return np.asarray(uniq), np.bincount(ids)


#: cells (rows x right-hand sides) one vectorised violations pass takes at most
CHUNK_CELLS = 8_000_000


def violations_many(part: Partition, matrix: np.ndarray, rhs: Sequence[int]) -> np.ndarray:
    """``part.violations`` for several right-hand sides (columns of ``matrix``) in one NumPy pass:
    the (column, group, value) triples counted at once, the largest per (column, group) kept."""
    q = len(rhs)
    r = len(part.rows)
    if not r or not q:
        return np.zeros(q, dtype=np.int64)
    sub = matrix[np.ix_(part.rows, np.asarray(rhs))]
    m = int(sub.max()) + 1
    key = part.gid[:, None] * m + sub + (np.arange(q, dtype=np.int64) * (part.groups * m))[None, :]
    flat = key.ravel()
    uniq, counts = np.unique(flat, return_counts=True) if len(flat) < 4096 else _counts(flat)
    best = np.zeros(q * part.groups, dtype=np.int64)
    np.maximum.at(best, uniq // m, counts)
    return r - best.reshape(q, part.groups).sum(axis=1)


class DriverMeasure:
    """``measure`` for ``dqkit.discover.lattice.search_fds`` on integer-coded columns: the partitions of
    the previous level are kept to build this level's (X from X minus its last attribute); the
    candidates sharing a left-hand side are measured in one vectorised pass."""

    def __init__(self, codes: Sequence[np.ndarray]) -> None:
        self.codes = list(codes)
        self.n = len(self.codes[0]) if self.codes else 0
        self.matrix = np.column_stack(self.codes) if self.codes else np.zeros((0, 0), np.int64)
        self.cache: dict[tuple[int, ...], Partition] = {(): Partition.everything(self.n)}

    def partition(self, x: tuple[int, ...], built: dict[tuple[int, ...], Partition]) -> Partition:
        if x in built:
            return built[x]
        if x in self.cache:
            part = self.cache[x]
        elif not x:
            part = Partition.everything(self.n)
        else:
            part = self.partition(x[:-1], built).refine(self.codes[x[-1]])
        built[x] = part
        return part

    def __call__(self, cands: list[tuple[tuple[int, ...], int]]) -> list[tuple[int, int]]:
        built: dict[tuple[int, ...], Partition] = {}
        by_lhs: dict[tuple[int, ...], list[int]] = {}
        for i, (x, _) in enumerate(cands):
            by_lhs.setdefault(x, []).append(i)
        out: list[tuple[int, int]] = [(0, 0)] * len(cands)
        for x, idx in by_lhs.items():
            part = self.partition(x, built)
            rhs = [cands[i][1] for i in idx]
            step = max(1, CHUNK_CELLS // max(len(part.rows), 1))
            for s in range(0, len(rhs), step):
                found = violations_many(part, self.matrix, rhs[s:s + step])
                for i, v in zip(idx[s:s + step], found):
                    out[i] = (int(v), len(part.rows))
        self.cache = built  # the next level builds on this one's left-hand sides only
        return out
