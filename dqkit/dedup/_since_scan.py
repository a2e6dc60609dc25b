"""The passes of ``dedup NEW --since RUN`` that read NEW whole, kept light so the run's work grows with
the changed records and their blocks, not with the table (issue #26: ≥ 10× a full re-run at 100K
entities):

* ``changes``: NEW's fingerprints and the saved ones in ONE aggregation over the key (one shuffle, no
  join, no separate key check): per key, NEW's rows and both fingerprints say whether the record was
  added, removed or changed, and whether NEW's key is NULL or repeated (then ``dqkit.keys.check_key``
  words the refusal). NEW's record count is the saved run's plus added minus removed.
* ``touched_blocks`` and ``near``: the blocks of the touched (added or changed) records, and the records
  in them or in the saved run's oversized blocks, kept (checkpointed) as the small table every later
  step reads: the block sizes, the touched records' broadcast and their pairs (NEW is scanned three
  times in all, each scan filtered by literal key sets, one shuffle).
* ``oversized_in``: NEW's oversized blocks without the whole table's block statistics. A block no
  added or changed record is in holds only untouched records, whose block keys are as before (the
  fingerprint covers the blocking columns), so it is at most as large as in the saved run: if it is
  oversized now, it was then. So NEW's oversized blocks are among the blocks of the touched records
  and the saved run's oversized blocks, which ``near`` holds whole.
"""
from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dqkit.dedup import _blocking as B
from dqkit.fingerprint import FP_HI, FP_LO
from dqkit.sparkutil import col

__all__ = ["changes", "collect_changes", "touched_blocks", "near", "oversized_in", "MAX_NEAR_KEYS"]

#: at most this many block keys (over all rules) are counted by ``oversized_near`` (a literal set each);
#: beyond, the caller counts every block of NEW instead
MAX_NEAR_KEYS = 20_000


def changes(new_fp: DataFrame, old_fp: DataFrame, key: str) -> DataFrame:
    """``key, change, bad``, only rows with a change or a bad key (lazy): ``change`` is added, removed or
    changed (fingerprints differ), ``bad`` NEW's key is NULL or repeated. Both sides are the same
    columns, unioned and aggregated once by key."""
    none = F.lit(None).cast("long")
    n = new_fp.select(col(key).alias("_k"), F.lit(1).alias("_n"), F.col(FP_HI).alias("_nh"),
                      F.col(FP_LO).alias("_nl"), none.alias("_oh"), none.alias("_ol"))
    o = old_fp.select(col(key).alias("_k"), F.lit(0).alias("_n"), none.alias("_nh"), none.alias("_nl"),
                      F.col(FP_HI).alias("_oh"), F.col(FP_LO).alias("_ol"))
    per = n.unionByName(o).groupBy("_k").agg(
        F.sum("_n").alias("_n"), (F.count(F.lit(1)) - F.sum("_n")).alias("_o"), F.max("_nh").alias("_nh"),
        F.max("_nl").alias("_nl"), F.max("_oh").alias("_oh"), F.max("_ol").alias("_ol"))
    kind = (F.when(F.col("_n") == 0, F.lit("removed")).when(F.col("_o") == 0, F.lit("added"))
            .when((F.col("_oh") != F.col("_nh")) | (F.col("_ol") != F.col("_nl")), F.lit("changed")))
    bad = (F.col("_n") > 1) | (F.col("_k").isNull() & (F.col("_n") > 0))
    return per.select(F.col("_k").alias("key"), kind.alias("change"), bad.alias("bad")).where(
        F.col("change").isNotNull() | F.col("bad"))


def collect_changes(frame: DataFrame, cap: int | None) -> tuple[list[Any], bool]:
    """The rows of ``changes`` (one Spark job): all of them, or at most ``cap`` (then ``True`` says
    there were more)."""
    if cap is None:
        return frame.collect(), False
    rows = frame.limit(cap + 1).collect()
    return rows[:cap], len(rows) > cap


def touched_blocks(touched: DataFrame, n_rules: int) -> dict[int, set[int]]:
    """The block keys of the ``touched`` records per rule, as 64-bit hashes (``_hash``; one job, a scan
    filtered to their keys)."""
    out: dict[int, set[int]] = {i: set() for i in range(n_rules)}
    if n_rules:
        for row in touched.select(*[_hash(i).alias(f"_k{i}") for i in range(n_rules)]).collect():
            for i in range(n_rules):
                if row[f"_k{i}"] is not None:
                    out[i].add(int(row[f"_k{i}"]))
    return out


def _hash(i: int) -> Any:
    """Rule ``i``'s block key as a 64-bit hash, NULL for no block: a cheap filter (no text built per
    record); a colliding block only adds records to ``near``, never removes one."""
    return F.when(F.col(B.block_col(i)).isNotNull(), F.xxhash64(F.col(B.block_col(i))))


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
    """The records in a block of a touched record (``blocks``: per rule, the hashes of ``touched_blocks``)
    or in a ``saved`` oversized block (per rule, JSON keys), lazy: one scan of NEW filtered by literal
    sets. Every pair of a touched record is between two of them, and each of those blocks is whole."""
    keep = F.lit(False)
    for i in blocks:
        keep = keep | _in_blocks(i, blocks[i], saved.get(i, []))
    return records.where(keep)


def oversized_in(part: DataFrame, blocks: dict[int, set[int]], saved: dict[int, list[str]],
                 max_block_size: int) -> dict[int, list[tuple[str, int]]]:
    """Which blocks of ``near``'s records (whole in ``part``) hold more than ``max_block_size`` records, as
    ``_blocking.oversized_blocks`` gives them ((JSON key, records), largest first): one job, one small
    aggregation per rule by the block key itself (a JSON key only for an oversized block)."""
    per: DataFrame | None = None
    for i in blocks:
        if not blocks[i] and not saved.get(i):
            continue
        b = B.block_col(i)
        sizes = (part.where(_in_blocks(i, blocks[i], saved.get(i, []))).groupBy(b).agg(F.count(F.lit(1)).alias("n"))
                 .where(F.col("n") > max_block_size).select(F.lit(i).alias("r"), B._block_json(i).alias("k"), "n"))
        per = sizes if per is None else per.unionByName(sizes)
    out: dict[int, list[tuple[str, int]]] = {}
    for r in sorted(per.collect() if per is not None else [], key=lambda r: (r["r"], -r["n"], r["k"])):
        out.setdefault(int(r["r"]), []).append((r["k"], int(r["n"])))
    return out
