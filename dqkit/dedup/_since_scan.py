"""The passes of ``dedup NEW --since RUN`` that read NEW whole, kept light so the run's work grows with
the changed records and their blocks, not with the table (issue #26: ≥ 10× a full re-run at 100K
entities):

* ``changes``: NEW's fingerprints and the saved ones in ONE aggregation over the key (one shuffle, no
  join, no separate key check: ``dqkit.primitives.changes.by_key``, as ``detect --since``): per key, NEW's
  rows and both fingerprints say whether the record was inserted, deleted or updated, and whether NEW's
  key is NULL or repeated (then ``dqkit.primitives.keys.check_key`` words the refusal). NEW's record
  count is the saved run's plus inserted minus deleted.
  The same aggregation carries NEW's block-key hashes, so the touched records' blocks (``blocks_of``)
  come with the change, with no scan of their own.
* ``near``: the records in the touched records' blocks or in the saved run's oversized blocks (one scan
  of NEW filtered by literal hash sets), collected once (``dqkit.dedup._since_pairs``): their block
  sizes and pairs are counted and joined on the driver. NEW is read twice in all.
* Oversized blocks (``_since_pairs.oversized_in``) without the whole table's block statistics. A block no
  inserted or updated record is in holds only untouched records, whose block keys are as before (the
  fingerprint covers the blocking columns), so it is at most as large as in the saved run: if it is
  oversized now, it was then. So NEW's oversized blocks are among the blocks of the touched records
  and the saved run's oversized blocks, which ``near`` holds whole.
"""
from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dqkit.dedup import _blocking as B
from dqkit.primitives import changes as C
from dqkit.primitives.fingerprint import FP_HI, FP_LO
from dqkit.runtime.sparkutil import col

__all__ = ["changes", "new_side", "blocks_of", "collect_changes", "near",
           "block_hash", "MAX_NEAR_KEYS"]

#: at most this many block keys (over all rules) are counted by ``oversized_near`` (a literal set each);
#: beyond, the caller counts every block of NEW instead
MAX_NEAR_KEYS = 20_000


def changes(new_fp: DataFrame, old_fp: DataFrame, key: str, n_rules: int = 0) -> DataFrame:
    """``key, change, bad, _dq_h0..``, only rows with a change or a bad key (lazy): ``change`` is inserted,
    deleted or updated (``dqkit.primitives.changes.by_key``: one aggregation of both sides by key), ``bad``
    NEW's key is NULL or repeated, ``_dq_h{i}`` the hash of NEW's block key of rule ``i`` (``new_fp``
    carries them, see ``new_side``), so the touched blocks come with the change (no scan of their own)."""
    hashes = [f"_dq_h{i}" for i in range(n_rules)]
    per = C.by_key(new_fp, old_fp, key, carry=hashes)
    n = F.col(C.NEW_ROWS)
    bad = (n > 1) | (col(key).isNull() & (n > 0))
    return per.select(col(key).alias("key"), C.CHANGE, bad.alias("bad"),
                      *[F.col(C.carried(h, 1)).alias(h) for h in hashes]).where(F.col(C.CHANGE).isNotNull() | F.col("bad"))


def new_side(records: DataFrame, key: str, cfg: Any, rules: list[Any]) -> DataFrame:
    """NEW's side of ``changes``: the key, the fingerprint (``_since_io.fingerprints``) and each rule's
    block-key hash (``_dq_h{i}``, as ``block_hash`` computes it on ``_records``' block columns: the same
    struct, so the same hash)."""
    from dqkit.dedup._since_io import fingerprint_columns
    from dqkit.primitives.fingerprint import row_fingerprint

    hi, lo = row_fingerprint(records, fingerprint_columns(records, cfg))
    return records.select(col(key), hi.alias(FP_HI), lo.alias(FP_LO),
                          *[_hash_of(B.block_key(r.parts)).alias(f"_dq_h{i}") for i, r in enumerate(rules)])


def blocks_of(rows: list[Any], n_rules: int) -> dict[int, set[int]]:
    """The touched (inserted or updated) records' block-key hashes per rule, from ``changes``' rows."""
    out: dict[int, set[int]] = {i: set() for i in range(n_rules)}
    for row in rows:
        if row["change"] in (C.INSERTED, C.UPDATED):
            for i in range(n_rules):
                if row[f"_dq_h{i}"] is not None:
                    out[i].add(int(row[f"_dq_h{i}"]))
    return out


def collect_changes(frame: DataFrame, cap: int | None) -> tuple[list[Any], bool]:
    """The rows of ``changes`` (one Spark job): all of them, or at most ``cap`` (then ``True`` says
    there were more)."""
    if cap is None:
        return frame.collect(), False
    rows = frame.limit(cap + 1).collect()
    return rows[:cap], len(rows) > cap


def _hash_of(block: Any) -> Any:
    return F.when(block.isNotNull(), F.xxhash64(block))


def block_hash(i: int) -> Any:
    """Rule ``i``'s block key as a 64-bit hash, NULL for no block: a cheap filter (no text built per
    record); a colliding block only adds records to ``near``, never removes one."""
    return _hash_of(F.col(B.block_col(i)))



def _in_blocks(i: int, hashes: set[int], saved: list[str]) -> Any:
    """Rule ``i``'s block is one of ``hashes`` or ``saved``. The hashes (numbers dqkit computed, never user
    text) go into one SQL expression: one call into the JVM however many (``Column.isin`` makes one
    call per value, seconds for thousands), and Spark turns the list into a hash set (InSet)."""
    b = F.col(B.block_col(i))
    keep = F.lit(False)
    if hashes:
        values = ", ".join(f"{int(h)}L" if h != -2**63 else f"({-2**63 + 1}L - 1L)" for h in sorted(hashes))
        keep = b.isNotNull() & F.expr(f"xxhash64(`{B.block_col(i)}`) IN ({values})")
    if saved:  # the saved run's oversized blocks, named by their JSON keys (few)
        keep = keep | F.coalesce(F.col(B.block_col(i)).isNotNull() & B._block_json(i).isin(sorted(saved)),
                                 F.lit(False))
    return keep


def near(records: DataFrame, blocks: dict[int, set[int]], saved: dict[int, list[str]]) -> DataFrame:
    """The records in a block of a touched record (``blocks``: per rule, the hashes of ``blocks_of``)
    or in a ``saved`` oversized block (per rule, JSON keys), lazy: one scan of NEW filtered by literal
    sets. Every pair of a touched record is between two of them, and each of those blocks is whole."""
    keep = F.lit(False)
    for i in blocks:
        keep = keep | _in_blocks(i, blocks[i], saved.get(i, []))
    return records.where(keep)
