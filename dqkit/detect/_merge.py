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


# --------------------------------------------------------------------------- counting in O(n log n)
_ORDERING = ("<", "<=", ">", ">=")


def _joint_ranks(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dense ranks of the values of both sides in one order (equal values, equal ranks)."""
    both = np.concatenate([np.asarray(left), np.asarray(right)])
    _, inv = np.unique(both, return_inverse=True)
    inv = np.asarray(inv, dtype=np.int64).reshape(-1)
    return inv[:len(left)], inv[len(left):]


def _count_earlier_smaller(y: np.ndarray, src: np.ndarray, dst: np.ndarray, or_equal: bool) -> int:
    """Pairs of positions p < q with ``src[p]``, ``dst[q]`` and ``y[p] < y[q]`` (``<=`` with ``or_equal``).

    ``y`` holds non-negative integers. A wavelet-style pass over the bits of ``y``, most significant
    first: at each level the positions are kept grouped by the bits above (a stable partition inside
    each group, no sort), and the pairs that first differ at this bit (0 at p, 1 at q) are counted with
    one cumulative sum. O(n log max(y)) in a few sequential numpy passes per level.
    """
    n = len(y)
    if n == 0:
        return 0
    idx = np.arange(n, dtype=np.int64)
    # y, src and dst packed in one integer, carried along in the current order
    v = (np.asarray(y, dtype=np.int64) << 2) | (np.asarray(src, dtype=np.int64) << 1) | np.asarray(dst, dtype=np.int64)
    total = 0

    def groups(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        start = np.ones(n, dtype=bool)
        start[1:] = key[1:] != key[:-1]
        end = np.ones(n, dtype=bool)
        end[:-1] = start[1:]
        gs = np.maximum.accumulate(np.where(start, idx, 0))
        ge = np.minimum.accumulate(np.where(end, idx, n - 1)[::-1])[::-1]
        return gs, ge

    # (integer arithmetic throughout: numpy's cumsum and where are several times slower on booleans)
    every = bool(np.all(src)) and bool(np.all(dst))  # self-join: every position is both
    for t in range(max(1, int(y.max()).bit_length()) - 1, -1, -1):
        gs, ge = groups(v >> (t + 3))
        one = (v >> (t + 2)) & 1
        zero = 1 - one
        c0ex = np.cumsum(zero) - zero
        r0 = c0ex - c0ex[gs]  # bit-0 positions before each position in its group
        if every:
            total += int(np.dot(r0, one))
        else:
            a = ((v >> 1) & 1) * zero
            cex = np.cumsum(a) - a  # src rows with this bit 0 strictly before each position
            q = np.flatnonzero((v & 1) * one)
            if len(q):
                total += int((cex[q] - cex[gs[q]]).sum())
        # stable partition by this bit inside each group: bit-0 positions first
        n0 = c0ex[ge] + zero[ge] - c0ex[gs]
        dest = gs + r0 + one * (n0 + idx - gs - 2 * r0)
        new = np.empty_like(v)
        new[dest] = v
        v = new
    if or_equal:
        gs, _ = groups(v >> 2)
        a = (v >> 1) & 1
        cex = np.cumsum(a) - a
        q = np.flatnonzero(v & 1)
        if len(q):
            total += int((cex[q] - cex[gs[q]]).sum())
    return total


def dominance_count(lx: np.ndarray, ly: np.ndarray, rx: np.ndarray, ry: np.ndarray, opx: str, opy: str) -> int:
    """Number of pairs (l, r) with ``lx[l] opx rx[r]`` and ``ly[l] opy ry[r]``, ops in < <= > >=.

    IEJoin's counting problem solved as 2-d dominance counting: both attributes become joint dense
    ranks (flipped so both conditions read ``l > r`` or ``l >= r``), the rows of both sides are sorted
    once on x (ties broken by strictness), and the pairs with an R row before an L row and a smaller y
    are counted by ``_count_earlier_smaller``. O((|L| + |R|) log(|L| + |R|)), whatever the data.
    """
    nl, nr = len(lx), len(rx)
    if nl == 0 or nr == 0:
        return 0
    xl, xr = _joint_ranks(lx, rx)
    yl, yr = _joint_ranks(ly, ry)
    if opx in ("<", "<="):
        xl, xr = -xl, -xr
    if opy in ("<", "<="):
        yl, yr = -yl, -yr
    x = np.concatenate([xl, xr])
    y = np.concatenate([yl, yr])
    y = y - y.min()
    is_l = np.zeros(nl + nr, dtype=bool)
    is_l[:nl] = True
    # equal x: a strict condition must not pair them (L first), a non-strict one must (R first)
    tie = ~is_l if opx in ("<", ">") else is_l
    order = np.argsort(2 * x + tie, kind="stable")
    return _count_earlier_smaller(y[order], ~is_l[order], is_l[order], or_equal=opy in ("<=", ">="))


def self_dominance_count(x: np.ndarray, y: np.ndarray, opx: str, opy: str) -> int:
    """Number of ordered pairs (i, j), i != j, of ONE set of rows with ``x[i] opx x[j]`` and ``y[i] opy y[j]``.

    The self-join case of ``dominance_count`` (t1 and t2 range over the same rows and compare the same
    attributes) on n rows instead of 2n: sort on x with ties ordered by y (descending when x is strict,
    so equal x never pairs; ascending otherwise, so it pairs once), count the ordered position pairs
    with a smaller (or equal) y, and correct for rows equal on both attributes.
    """
    n = len(x)
    if n < 2:
        return 0
    _, xr = np.unique(np.asarray(x), return_inverse=True)
    _, yr = np.unique(np.asarray(y), return_inverse=True)
    xr = np.asarray(xr, dtype=np.int64).reshape(-1)
    yr = np.asarray(yr, dtype=np.int64).reshape(-1)
    if opx in ("<", "<="):
        xr = xr.max() - xr
    if opy in ("<", "<="):
        yr = yr.max() - yr
    strict_x, strict_y = opx in ("<", ">"), opy in ("<", ">")
    order = np.lexsort((-yr if strict_x else yr, xr))
    ones = np.ones(n, dtype=bool)
    total = _count_earlier_smaller(yr[order], ones, ones, or_equal=not strict_y)
    if strict_y:
        return total
    # rows equal on (x, y), with a non-strict y: each such pair was counted once; with a strict x it
    # satisfies neither order, with a non-strict x both
    key = xr[order] * (int(yr.max()) + 1) + yr[order]
    _, k = np.unique(key, return_counts=True)
    same = int((k * (k - 1) // 2).sum())
    return total - same if strict_x else total + same


def count_pairs(lcols: Sequence[np.ndarray], rcols: Sequence[np.ndarray], conds: Sequence[Cond],
                chunk: int = 512) -> int:
    """Number of (l, r) pairs satisfying every condition, with the best counting kernel for the shape:
    two ordering conditions by dominance counting (O(n log n)), anything else by ``join_count``."""
    conds = list(conds)
    if len(conds) == 2 and all(op in _ORDERING for _, op in conds):
        (i, opx), (j, opy) = conds
        return dominance_count(lcols[i], lcols[j], rcols[i], rcols[j], opx, opy)
    return join_count(lcols, rcols, conds, chunk)


def counted_by_dominance(ops: Sequence[str]) -> bool:
    return len(ops) == 2 and all(op in _ORDERING for op in ops)


def one_partition_counter(nvals: int, lpos: Sequence[int], rpos: Sequence[int], ops: Sequence[str], limit: int):
    """The ``mapInArrow`` function of OCJoin's one-partition count (see ``dqkit.detect``).

    Input batches: ``_dq_a``, ``_dq_b`` (row can be t1 / t2; absent when every row can be both) and
    ``_dq_c0..`` (condition attributes);
    condition i compares ``_dq_c{lpos[i]}`` of t1 with ``_dq_c{rpos[i]}`` of t2. Output: one row, the
    number of ordered pairs of different rows satisfying every condition and the number of rows read;
    ``n = -1`` when there are more than ``limit`` rows (then it stops reading).
    """
    lpos, rpos, ops = list(lpos), list(rpos), list(ops)

    def run(batches):
        import pyarrow as pa
        import pyarrow.compute as pc

        def out(n: int, rows: int):
            return pa.RecordBatch.from_pydict({"n": [n], "rows": [rows]},
                                              schema=pa.schema([("n", pa.int64()), ("rows", pa.int64())]))

        kept, rows = [], 0
        for batch in batches:
            rows += batch.num_rows
            if rows > limit:
                yield out(-1, rows)
                return
            if batch.num_rows:
                kept.append(batch)
        if not kept:
            yield out(0, 0)
            return
        tbl = pa.Table.from_batches(kept)
        if "_dq_a" in tbl.column_names:
            is_a, is_b = tbl.column("_dq_a"), tbl.column("_dq_b")
        else:  # every row can be t1 and t2
            is_a = is_b = pa.chunked_array([pa.array(np.ones(tbl.num_rows, dtype=bool))])

        def values(mask, pos):  # filtered first, so no NULL turns an integer column into floats
            if mask is is_a and is_a is is_b:
                return [tbl.column(f"_dq_c{j}").to_numpy() for j in pos]
            return [pc.filter(tbl.column(f"_dq_c{j}"), mask).to_numpy() for j in pos]

        if lpos == rpos and counted_by_dominance(ops) and (is_a is is_b or pc.all(pc.equal(is_a, is_b)).as_py()):
            # t1 and t2 range over the same rows: the self-join kernel, pairs of distinct rows only
            x, y = values(is_a, lpos)
            yield out(self_dominance_count(x, y, ops[0], ops[1]), rows)
            return
        lv, rv = values(is_a, lpos), values(is_b, rpos)
        nl, nr = len(lv[0]), len(rv[0])
        n = count_pairs(lv, rv, list(enumerate(ops)), chunk=int(min(2048, max(128, 2 * np.sqrt(nl + nr)))))
        both = pc.and_(is_a, is_b)
        if n and pc.any(both).as_py():  # a tuple paired with itself is not a violation
            sl, sr = values(both, lpos), values(both, rpos)
            ok = np.ones(len(sl[0]), dtype=bool)
            for i, op in enumerate(ops):
                ok &= _CMP[op](sl[i], sr[i])
            n -= int(np.count_nonzero(ok))
        yield out(int(n), rows)

    return run
