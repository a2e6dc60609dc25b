"""The vectorised inner join of OCJoin: all (l, r) pairs of one partition pair satisfying
``L.a_i op_i R.b_i`` for every condition i (BigDansing §4.3, joining phase).

Pure numpy; runs inside ``applyInPandas`` on executors. Conditions already guaranteed by the
partitions' min/max are dropped by the caller; what remains is solved by

* no condition left: the full product;
* one condition: a sort of R plus ``searchsorted`` (ranges per l, O((m + out) log m));
* several: the sides are cut into sorted chunks whose min/max decide each condition again (always /
  never / undecided); chunk pairs with one undecided condition use ``searchsorted``, the rest a
  boolean matrix over the chunk pair. This is the same min/max pruning as the partition level, one
  level down, so inequality joins stay near O(n log n + output) on realistic data.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Cond = tuple[int, str]  # (condition index, op)

_CMP = {
    "<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
    "=": np.equal, "!=": np.not_equal,
}


def possible(op: str, amin, amax, bmin, bmax) -> bool:
    """Can some a in [amin, amax] and b in [bmin, bmax] satisfy ``a op b``?"""
    if op == "<":
        return amin < bmax
    if op == "<=":
        return amin <= bmax
    if op == ">":
        return amax > bmin
    if op == ">=":
        return amax >= bmin
    if op == "=":
        return not (amax < bmin or amin > bmax)
    return not (amin == amax == bmin == bmax)  # !=


def always(op: str, amin, amax, bmin, bmax) -> bool:
    """Does every a in [amin, amax] and b in [bmin, bmax] satisfy ``a op b``?"""
    if op == "<":
        return amax < bmin
    if op == "<=":
        return amax <= bmin
    if op == ">":
        return amin > bmax
    if op == ">=":
        return amin >= bmax
    if op == "=":
        return amin == amax == bmin == bmax
    return amax < bmin or amin > bmax  # !=


def _ranges_1d(op: str, a: np.ndarray, b_sorted: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """For each a, the index ranges [start, end) of ``b_sorted`` with ``a op b``."""
    m = len(b_sorted)
    if op in ("<", "<=", "=", "!=", ">", ">="):
        left = np.searchsorted(b_sorted, a, side="left")
        right = np.searchsorted(b_sorted, a, side="right")
    zeros = np.zeros(len(a), dtype=np.int64)
    full = np.full(len(a), m, dtype=np.int64)
    if op == "<":  # b > a
        return [(right, full)]
    if op == "<=":  # b >= a
        return [(left, full)]
    if op == ">":  # b < a
        return [(zeros, left)]
    if op == ">=":  # b <= a
        return [(zeros, right)]
    if op == "=":
        return [(left, right)]
    return [(zeros, left), (right, full)]


def _expand(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(l index, position in b) for every position in each range."""
    n = np.maximum(ends - starts, 0).astype(np.int64)
    total = int(n.sum())
    if total == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    li = np.repeat(np.arange(len(n), dtype=np.int64), n)
    offs = np.cumsum(n) - n
    pos = np.arange(total, dtype=np.int64) - np.repeat(offs, n) + np.repeat(starts.astype(np.int64), n)
    return li, pos


def _sort(values: np.ndarray) -> np.ndarray:
    return np.argsort(values, kind="stable")


class _Side:
    def __init__(self, cols: Sequence[np.ndarray]) -> None:
        self.cols = list(cols)
        self.n = len(cols[0]) if cols else 0


def join_count(lcols: Sequence[np.ndarray], rcols: Sequence[np.ndarray], conds: Sequence[Cond],
               chunk: int = 512) -> int:
    """Number of (l, r) pairs satisfying every condition."""
    total = 0
    for li, ri, cnt in _solve(lcols, rcols, conds, chunk, count_only=True):
        total += cnt
    return total


def join_pairs(lcols: Sequence[np.ndarray], rcols: Sequence[np.ndarray], conds: Sequence[Cond],
               chunk: int = 512) -> tuple[np.ndarray, np.ndarray]:
    """Indices (into L and R) of all pairs satisfying every condition."""
    ls, rs = [], []
    for li, ri, _ in _solve(lcols, rcols, conds, chunk, count_only=False):
        ls.append(li)
        rs.append(ri)
    if not ls:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(ls), np.concatenate(rs)


def _solve(lcols, rcols, conds, chunk, count_only):
    nl = len(lcols[0]) if len(lcols) else 0
    nr = len(rcols[0]) if len(rcols) else 0
    if nl == 0 or nr == 0:
        return
    lidx = np.arange(nl, dtype=np.int64)
    ridx = np.arange(nr, dtype=np.int64)
    yield from _solve_sub(lcols, rcols, lidx, ridx, list(conds), chunk, count_only, top=True)


def _solve_sub(lcols, rcols, lidx, ridx, conds, chunk, count_only, top=False):
    """Pairs among rows ``lidx`` x ``ridx`` satisfying ``conds``."""
    nl, nr = len(lidx), len(ridx)
    if nl == 0 or nr == 0:
        return
    if not conds:
        if count_only:
            yield None, None, nl * nr
        else:
            yield np.repeat(lidx, nr), np.tile(ridx, nl), 0
        return
    if len(conds) == 1:
        i, op = conds[0]
        a = lcols[i][lidx]
        b = rcols[i][ridx]
        order = _sort(b)
        bs = b[order]
        for starts, ends in _ranges_1d(op, a, bs):
            if count_only:
                yield None, None, int(np.maximum(ends - starts, 0).sum())
            else:
                li, pos = _expand(starts, ends)
                yield lidx[li], ridx[order[pos]], 0
        return
    if nl * nr <= chunk * chunk or not top:
        # small enough (or already a chunk pair): boolean matrix
        yield from _brute(lcols, rcols, lidx, ridx, conds, count_only)
        return
    # chunk both sides on the first undecided condition, decide the rest per chunk pair
    i0, _ = conds[0]
    lo = lidx[_sort(lcols[i0][lidx])]
    ro = ridx[_sort(rcols[i0][ridx])]
    lchunks = [lo[s:s + chunk] for s in range(0, nl, chunk)]
    rchunks = [ro[s:s + chunk] for s in range(0, nr, chunk)]

    def bounds(cols, chunks):
        out = []
        for i, _ in conds:
            mins = np.array([cols[i][c].min() for c in chunks], dtype=object)
            maxs = np.array([cols[i][c].max() for c in chunks], dtype=object)
            out.append((mins, maxs))
        return out

    lb, rb = bounds(lcols, lchunks), bounds(rcols, rchunks)
    for x, lc in enumerate(lchunks):
        for y, rc in enumerate(rchunks):
            rest = []
            dead = False
            for k, (i, op) in enumerate(conds):
                amin, amax = lb[k][0][x], lb[k][1][x]
                bmin, bmax = rb[k][0][y], rb[k][1][y]
                if not possible(op, amin, amax, bmin, bmax):
                    dead = True
                    break
                if not always(op, amin, amax, bmin, bmax):
                    rest.append((i, op))
            if dead:
                continue
            yield from _solve_sub(lcols, rcols, lc, rc, rest, chunk, count_only, top=False)


def _brute(lcols, rcols, lidx, ridx, conds, count_only):
    step = max(1, 4_000_000 // max(1, len(ridx)))
    for s in range(0, len(lidx), step):
        ls = lidx[s:s + step]
        mask = None
        for i, op in conds:
            m = _CMP[op](lcols[i][ls][:, None], rcols[i][ridx][None, :])
            mask = m if mask is None else (mask & m)
        if count_only:
            yield None, None, int(np.count_nonzero(mask))
        else:
            a, b = np.nonzero(mask)
            yield ls[a], ridx[b], 0
