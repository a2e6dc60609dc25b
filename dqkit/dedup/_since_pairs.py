"""The touched records' neighbourhood of ``dedup NEW --since RUN`` on the driver: one Spark job collects
the records in a block of a touched record (``_since_scan.near``) through Arrow, then their block sizes
and the candidate pairs with a touched record are counted and joined here, in NumPy, with no further
Spark job (the Spark version cost a checkpoint, a block-size job and one broadcast per blocking rule,
each of fixed cost whatever the few rows: most of a ``--since`` run at 100K entities).

A block is identified by its key's 64-bit hash AND its key as JSON (``_blocking._block_json``), so two
blocks are one exactly when Spark's join on the key would join them (a hash collision alone never
pairs two blocks). The pairs are the ones ``since._touched_pairs`` (and a full run's
``_blocking.candidate_pairs``) gives: oversized blocks purged, each pair once under the first rule
that pairs it (``_dq_rule``), with the bitmask of the rules pairing it (``_dq_rules``), its smaller
id first.

A full run's driver route (``dqkit.dedup._driver``) calls the same ``block_pairs`` with every record
touched: each block's pairs are then made by index arithmetic over the rows sorted by block, not by a join.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dqkit.dedup import _blocking as B
from dqkit.dedup._since_saved import is_in as _isin

__all__ = ["collect_near", "oversized_in", "block_pairs", "spark_rank", "touched_pairs", "hash_col", "json_col"]


def hash_col(i: int) -> str:
    return f"_dq_h{i}"


def json_col(i: int) -> str:
    return f"_dq_j{i}"


def collect_near(near: DataFrame, n_rules: int, carry: list[str], extra: tuple[Any, ...] = ()) -> pa.Table:
    """``near`` (the records of the touched blocks, lazy) on the driver, one job: the id, per rule the
    block key's hash and JSON (NULL for no block), the ``carry`` (compared) columns and ``extra``
    (Columns: dedup's driver route adds its u sample's hash)."""
    from dqkit.dedup._since_scan import block_hash

    cols = [F.col(B.ID)]
    for i in range(n_rules):
        b = F.col(B.block_col(i))
        cols += [block_hash(i).alias(hash_col(i)), F.when(b.isNotNull(), B._block_json(i)).alias(json_col(i))]
    return near.select(*cols, *[F.col(c) for c in carry], *extra).toArrow()


def _whole(tbl: pa.Table, i: int, hashes: set[int], saved: list[str]) -> np.ndarray:
    """Rows in rule ``i``'s blocks that ``near`` holds whole: a touched block (its hash) or a saved oversized
    one (its JSON key)."""
    keep = np.zeros(tbl.num_rows, dtype=bool)
    if hashes:
        keep |= _isin(tbl.column(hash_col(i)), pa.array(sorted(hashes), pa.int64()))
    if saved:
        keep |= _isin(tbl.column(json_col(i)), pa.array(sorted(saved), pa.string()))
    return keep


def oversized_in(tbl: pa.Table, blocks: dict[int, set[int]], saved: dict[int, list[str]], max_block_size: int
                 ) -> dict[int, list[tuple[str, int]]]:
    """Which blocks of ``near`` (whole there) hold more than ``max_block_size`` records, as
    ``_blocking.oversized_blocks`` gives them ((JSON key, records), largest first): counted here."""
    out: dict[int, list[tuple[str, int]]] = {}
    for i in blocks:
        if not blocks[i] and not saved.get(i):
            continue
        whole = _whole(tbl, i, blocks[i], saved.get(i, []))
        keys = pd.DataFrame({"h": tbl.column(hash_col(i)).filter(pa.array(whole)).to_pandas(types_mapper=pd.ArrowDtype),
                             "j": tbl.column(json_col(i)).filter(pa.array(whole)).to_pandas()}).dropna()
        if keys.empty:
            continue
        n = keys.groupby(["h", "j"], sort=False).size()
        big = sorted(((str(j), int(c)) for (_h, j), c in n[n > max_block_size].items()), key=lambda t: (-t[1], t[0]))
        if big:
            out[i] = big
    return out


def _codes(tbl: pa.Table, i: int, purged: list[str]) -> np.ndarray:
    """Rule ``i``'s block of each row as a small integer (hash and JSON key together), -1 for no block or a
    purged (oversized) one."""
    h, j = tbl.column(hash_col(i)), tbl.column(json_col(i))
    ident = pc.binary_join_element_wise(pc.cast(h, pa.string()), j, "|")
    if isinstance(ident, pa.ChunkedArray):
        ident = ident.combine_chunks()
    codes = np.asarray(pc.fill_null(pc.dictionary_encode(ident).indices, -1), dtype=np.int64).copy()
    if purged:
        codes[_isin(j, pa.array(sorted(purged), pa.string()))] = -1
    return codes


def spark_rank(ids: Any) -> np.ndarray:
    """Each id's position in Spark's order of the (distinct, non-NULL) ids: bytes of text, value of
    numbers and dates."""
    rank = np.empty(len(ids), dtype=np.int64)
    rank[np.asarray(pc.sort_indices(ids))] = np.arange(len(ids))
    return rank


def _within_blocks(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every unordered pair of rows with one block code (>= 0), once, as row positions: the rows sorted
    by code, and each row paired with the rows after it in its block (index arithmetic, no join)."""
    rows = np.flatnonzero(codes >= 0)
    if not len(rows):
        return rows, rows
    rows = rows[np.argsort(codes[rows], kind="stable")]
    c = codes[rows]
    starts = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
    ends = np.repeat(np.r_[starts[1:], len(c)], np.diff(np.r_[starts, len(c)]))  # each row's block end
    after = ends - np.arange(len(c)) - 1  # rows after it in its block
    a = np.repeat(np.arange(len(c)), after)
    b = a + 1 + np.arange(len(a)) - np.repeat(np.cumsum(after) - after, after)
    return rows[a], rows[b]


def block_pairs(tbl: pa.Table, is_t: np.ndarray, n_rules: int, oversized: dict[int, list[str]]
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The candidate pairs with a touched record (``is_t``; every row touched: all candidate pairs, as a
    full run's ``_blocking.candidate_pairs`` gives them) among ``tbl``'s rows, as row positions: ``lo``
    and ``hi`` (the smaller id first, Spark's order), the first rule pairing them and the bitmask of
    the rules pairing them. Oversized blocks (``oversized``: JSON keys per rule) pair nothing."""
    rank = spark_rank(tbl.column(B.ID))
    codes = [_codes(tbl, i, oversized.get(i, [])) for i in range(n_rules)]
    everyone = bool(is_t.all())
    stacked = np.column_stack(codes) if codes else np.zeros((len(is_t), 0), dtype=np.int64)
    bits = np.left_shift(1, np.arange(n_rules, dtype=np.int64))
    parts_a, parts_b, first, masks = [], [], [], []
    for i in range(n_rules):
        if everyone:  # a full run: every pair of each block, once
            a, b = _within_blocks(codes[i])
        else:
            left = np.flatnonzero(is_t & (codes[i] >= 0))
            right = np.flatnonzero(codes[i] >= 0)
            if not len(left):
                continue
            m = pd.DataFrame({"c": codes[i][left], "a": left}).merge(
                pd.DataFrame({"c": codes[i][right], "b": right}), on="c")
            a, b = m["a"].to_numpy(), m["b"].to_numpy()
            del m
            # each pair once: a touched-untouched pair from its touched side, a touched pair from its smaller id
            keep = (a != b) & (~is_t[b] | (rank[a] < rank[b]))
            a, b = a[keep], b[keep]
        ca, cb = stacked[a], stacked[b]
        same = (ca >= 0) & (ca == cb)  # pairs x rules: the rules whose blocks hold the pair
        mask = same.astype(np.int64) @ bits
        keep = ~same[:, :i].any(axis=1)  # paired by an earlier rule: that rule's pair
        del ca, cb, same
        parts_a.append(a[keep])
        parts_b.append(b[keep])
        first.append(np.full(int(keep.sum()), i, dtype=np.int32))
        masks.append(mask[keep])
    a = np.concatenate(parts_a) if parts_a else np.zeros(0, dtype=np.int64)
    b = np.concatenate(parts_b) if parts_b else np.zeros(0, dtype=np.int64)
    swap = rank[a] > rank[b]
    lo, hi = np.where(swap, b, a), np.where(swap, a, b)
    return (lo, hi, np.concatenate(first) if first else np.zeros(0, dtype=np.int32),
            np.concatenate(masks) if masks else np.zeros(0, dtype=np.int64))


def touched_pairs(tbl: pa.Table, touched: set[Any], n_rules: int, oversized: dict[int, list[str]],
                  carry: list[str]) -> pa.Table:
    """The candidate pairs with a touched record among ``near``'s records (``tbl``), in the columns
    ``since._touched_pairs`` gives (``_dq_id1 < _dq_id2``, ``_dq_rule``, ``_dq_rules``, ``<carry>_l`` and
    ``<carry>_r``). A touched block is whole in ``tbl``, so every pair of a touched record is there."""
    ids = tbl.column(B.ID)
    is_t = _isin(ids, pa.array(list(touched))) if touched else np.zeros(tbl.num_rows, dtype=bool)
    lo, hi, first, masks = block_pairs(tbl, is_t, n_rules, oversized)
    lo_a, hi_a = pa.array(lo), pa.array(hi)
    cols = {B.ID1: ids.take(lo_a), B.ID2: ids.take(hi_a), B.FIRST: pa.array(first), B.RULES: pa.array(masks)}
    for c in carry:
        cols[f"{c}_l"] = tbl.column(c).take(lo_a)
        cols[f"{c}_r"] = tbl.column(c).take(hi_a)
    return pa.table(cols)
