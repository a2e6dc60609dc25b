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


def touched_blocks(touched: DataFrame, n_rules: int) -> dict[int, set[str]]:
    """The block keys (JSON) of the ``touched`` records per rule (one job, a scan filtered to their keys)."""
    out: dict[int, set[str]] = {i: set() for i in range(n_rules)}
    if n_rules:
        for row in touched.select(*[_json(i).alias(f"_k{i}") for i in range(n_rules)]).collect():
            for i in range(n_rules):
                if row[f"_k{i}"] is not None:
                    out[i].add(row[f"_k{i}"])
    return out


def _json(i: int) -> Any:
    return F.when(F.col(B.block_col(i)).isNotNull(), B._block_json(i))


def near(records: DataFrame, blocks: dict[int, set[str]]) -> DataFrame:
    """The records in any of ``blocks`` (per rule, JSON keys), lazy: one scan of NEW filtered by literal
    sets. Every pair of a touched record is between two of them, and every block of ``blocks`` is whole."""
    keep = F.lit(False)
    for i, keys in blocks.items():
        if keys:
            keep = keep | _json(i).isin(sorted(keys))
    return records.where(keep)


def oversized_in(part: DataFrame, blocks: dict[int, set[str]], max_block_size: int) -> dict[int, list[tuple[str, int]]]:
    """Which of ``blocks`` hold more than ``max_block_size`` records of ``part`` (``near``'s records: the
    blocks are whole in it), as ``_blocking.oversized_blocks`` gives them ((JSON key, records), largest first)."""
    entries = [F.when(_json(i).isin(sorted(keys)), F.struct(F.lit(i).alias("r"), _json(i).alias("k")))
               for i, keys in blocks.items() if keys]
    if not entries:
        return {}
    sizes = (part.select(F.explode(F.array(*entries)).alias("e")).where(F.col("e").isNotNull())
             .groupBy("e.r", "e.k").agg(F.count(F.lit(1)).alias("n")).where(F.col("n") > max_block_size).collect())
    out: dict[int, list[tuple[str, int]]] = {}
    for r in sorted(sizes, key=lambda r: (r["r"], -r["n"], r["k"])):
        out.setdefault(int(r["r"]), []).append((r["k"], int(r["n"])))
    return out
