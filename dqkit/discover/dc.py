"""Two-tuple denial constraints from an evidence set (the approach of FastDC and FastADC), on the driver.

For every ordered pair of distinct rows (t1, t2) the *evidence* is, per column, how t1's value relates
to t2's: NULL (either side), equal, less or greater (for a column that cannot be ordered, "less" stands
for "different"). Each predicate ``t1.c op t2.c`` holds on a set of relations (``=``: equal; ``!=``:
less or greater; ``<``: less; ``<=``: less or equal; ...; a comparison with NULL is false, as in
``dqkit detect``). A DC ``not(p1 and ... and pk)`` is violated by the pairs whose evidence satisfies
every pi; with the distinct evidences counted once, a DC's violations are one masked sum, and all DCs
of two predicates one matrix product.

The search is level-wise over predicate sets of distinct columns (at most ``max_predicates``): a set
whose violations are at most ``error`` x the ordered pairs is a DC; its supersets are pruned; a DC
implied by another (each of the other's predicates implied by one of its own, e.g. ``<`` implies
``<=`` and ``!=``), a DC's mirror (t1 and t2 swapped) and a DC of one column's ``=`` alone are left out.
Bounded: at most ``SAMPLE_ROWS`` rows (a seeded sample above that, said in the notes), 32 columns.
"""
from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dqkit.discover.lattice import ident

#: rows the evidence set is built from (ordered pairs: SAMPLE_ROWS x (SAMPLE_ROWS - 1))
SAMPLE_ROWS = 2000
#: columns the evidence codes hold (2 bits each in one 64-bit word)
MAX_COLUMNS = 32
NULL, EQ, LT, GT = 0, 1, 2, 3
#: the relations on which each operator holds
HOLDS = {"=": (EQ,), "!=": (LT, GT), "<": (LT,), "<=": (LT, EQ), ">": (GT,), ">=": (GT, EQ)}
ORDERED_OPS = ("=", "!=", "<", "<=", ">", ">=")
UNORDERED_OPS = ("=", "!=")
MIRROR = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


@dataclass(frozen=True)
class DiscoveredDC:
    """``not(t1.c1 op1 t2.c1 and ...)`` violated by ``violations`` of ``pairs`` ordered pairs of ``rows``
    rows; ``support`` pairs satisfy all its predicates but one (the pairs it constrains)."""

    predicates: tuple[tuple[str, str], ...]
    violations: int
    pairs: int
    support: int
    rows: int

    kind = "dc"
    lhs: tuple[str, ...] = ()

    @property
    def g3(self) -> float:
        """The error: the violating share of ordered tuple pairs."""
        return self.violations / self.pairs if self.pairs else 0.0

    @property
    def score(self) -> float:
        """(pairs constrained - pairs violating) / pairs."""
        return max(self.support - self.violations, 0) / self.pairs if self.pairs else 0.0

    @property
    def text(self) -> str:
        return "not(" + " and ".join(f"t1.{ident(c)} {op} t2.{ident(c)}" for c, op in self.predicates) + ")"


@dataclass
class DCSearch:
    dcs: list[DiscoveredDC] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    complete: bool = True
    pairs: int = 0


def _orderable(arrow_type: Any) -> bool:
    import pyarrow as pa

    t = arrow_type
    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t) or pa.types.is_date(t)
            or pa.types.is_timestamp(t))


def _relations(table: Any, columns: Sequence[str]) -> tuple[np.ndarray, list[bool]]:
    """Per ordered pair (i, j), i != j, the evidence word: 2 bits per column (NULL, EQ, LT, GT)."""
    import pyarrow as pa

    from dqkit.discover.driver import encode

    m = table.num_rows
    word = np.zeros((m, m), dtype=np.uint64)
    orderable = []
    for k, c in enumerate(columns):
        col = table.column(c)
        order = _orderable(col.type)
        orderable.append(order)
        if order:
            numeric = col.cast(pa.float64()) if pa.types.is_decimal(col.type) else (
                col.cast(pa.int64()) if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)) else col)
            values = np.asarray(numeric.to_numpy(zero_copy_only=False), dtype=np.float64)
            null = np.asarray(col.is_null().to_numpy(zero_copy_only=False)) | np.isnan(values)
            a, b = values[:, None], values[None, :]
            rel = np.where(a == b, EQ, np.where(a < b, LT, GT)).astype(np.uint64)
        else:
            codes = encode(table, [c])[0]
            null = np.asarray(col.is_null().to_numpy(zero_copy_only=False))
            rel = np.where(codes[:, None] == codes[None, :], EQ, LT).astype(np.uint64)
        rel[null, :] = NULL
        rel[:, null] = NULL
        word |= rel << np.uint64(2 * k)
    off = ~np.eye(m, dtype=bool)
    return word[off], orderable


def discover_dcs(source: Any, columns: Sequence[str], *, rows: int, error: float = 0.0, max_predicates: int = 2,
                 sample_rows: int = SAMPLE_ROWS, seed: int = 0) -> DCSearch:
    """The minimal two-tuple DCs of at most ``max_predicates`` predicates over ``columns`` of ``source``
    (an Arrow table, or a Spark DataFrame sampled to ``sample_rows`` rows) violated by at most
    ``error`` of the ordered pairs."""
    out = DCSearch()
    cols = list(columns)
    if len(cols) > MAX_COLUMNS:
        out.notes.append(f"denial constraints were searched over the first {MAX_COLUMNS} of {len(cols)} columns "
                         f"(give --columns to choose)")
        out.complete = False
        cols = cols[:MAX_COLUMNS]
    table = _sample(source, cols, rows, sample_rows, seed, out)
    m = table.num_rows
    if m < 2:
        return out
    words, orderable = _relations(table, cols)
    evidence, counts = np.unique(words, return_counts=True)
    total = int(m * (m - 1))
    out.pairs = total
    limit = error * total + 1e-9 * total if error > 0 else 0
    preds = [(c, op) for k, c in enumerate(cols) for op in (ORDERED_OPS if orderable[k] else UNORDERED_OPS)]
    sat = np.zeros((len(preds), len(evidence)), dtype=bool)
    for p, (c, op) in enumerate(preds):
        rel = (evidence >> np.uint64(2 * cols.index(c))) & np.uint64(3)
        sat[p] = np.isin(rel, np.array(HOLDS[op], dtype=np.uint64))
    weighted = sat * counts[None, :]
    found: list[tuple[int, ...]] = []
    for size in range(1, max_predicates + 1):
        level = []
        for combo in itertools.combinations(range(len(preds)), size):
            if len({preds[p][0] for p in combo}) < size:
                continue  # one predicate per column
            if any(set(f) <= set(combo) for f in found):
                continue  # a superset of a DC found
            mask = sat[list(combo)].all(axis=0)
            violations = int(counts[mask].sum())
            if violations <= limit:
                level.append((combo, violations))
        found += [combo for combo, _ in level]
        for combo, violations in level:
            if _implied(combo, found, preds) or _mirror_seen(combo, out.dcs, preds):
                continue
            support = total if size == 1 else max(
                int(weighted[[p for p in combo if p != q]].min(axis=0).sum()) for q in combo)
            out.dcs.append(DiscoveredDC(tuple(preds[p] for p in combo), violations, total, support, m))
    return out


def _implies(strong: str, weak: str) -> bool:
    return set(HOLDS[strong]) <= set(HOLDS[weak])


def _implied(combo: tuple[int, ...], others: list[tuple[int, ...]], preds: list[tuple[str, str]]) -> bool:
    """Another DC whose every predicate is implied by one of ``combo``'s (same column) makes it redundant."""
    mine = {preds[p][0]: preds[p][1] for p in combo}
    for other in others:
        if other != combo and len(other) <= len(combo) and all(preds[q][0] in mine and _implies(mine[preds[q][0]], preds[q][1])
                                            for q in other):
            return True
    return False


def _mirror_seen(combo: tuple[int, ...], kept: list[DiscoveredDC], preds: list[tuple[str, str]]) -> bool:
    mirror = {(preds[p][0], MIRROR[preds[p][1]]) for p in combo}
    return any(set(dc.predicates) == mirror for dc in kept)


def _sample(source: Any, cols: Sequence[str], rows: int, limit: int, seed: int, out: DCSearch) -> Any:
    """The rows the evidence is built from: all of them up to ``limit``, else a seeded sample (noted)."""
    import pyarrow as pa

    if isinstance(source, pa.Table):
        table = source.select(list(cols))
        if table.num_rows > limit:
            idx = np.sort(np.random.default_rng(seed).choice(table.num_rows, limit, replace=False))
            table = table.take(pa.array(idx))
            _sampled(out, limit, rows)
        return table
    frame = source.select(*[f"`{c.replace('`', '``')}`" for c in cols])
    if rows > limit:
        frame = frame.sample(fraction=min(1.0, 1.2 * limit / rows), seed=seed).limit(limit)
        _sampled(out, limit, rows)
    return frame.toArrow()


def _sampled(out: DCSearch, limit: int, rows: int) -> None:
    out.complete = False
    out.notes.append(f"denial constraints were found on a sample of {limit:,} of {rows:,} rows: one found exact may be "
                     f"violated elsewhere (check it with dqkit detect)")
