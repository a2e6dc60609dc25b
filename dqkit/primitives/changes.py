"""What changed between two versions of a table, by key: one vocabulary and one aggregation, shared by
``detect --since`` (``dqkit.detect.since``) and ``dedup --since`` (``dqkit.dedup.since``).

The words are Diftong's: a row is **inserted** when its key is in the new version only, **deleted** when
in the old version only, and **updated** when its 128-bit fingerprint (``dqkit.primitives.fingerprint``,
over the columns the system reads) differs between the two. A row whose fingerprint is the same is
unchanged, whatever happened to the columns the fingerprint leaves out.

``by_key`` finds them in ONE aggregation over both sides (a union, partitioned by key once, then grouped:
no join, and no sort since keys and fingerprints are fixed-width), and counts each key's rows per side,
so the caller's key check (``dqkit.primitives.keys``: a NULL or repeated key is refused) needs no scan
of its own. Importing this module needs no Spark.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

INSERTED, DELETED, UPDATED = "inserted", "deleted", "updated"
#: the kinds of change, in the order counts are shown
CHANGE_KINDS: tuple[str, ...] = (INSERTED, DELETED, UPDATED)
#: the columns of ``by_key``: the kind of change (NULL: unchanged), the key's rows in NEW and in OLD
CHANGE, NEW_ROWS, OLD_ROWS = "change", "_dq_nn", "_dq_no"
_SIDE, _K = "_dq_s", "_dq_k"


def carried(name: str, side: int) -> str:
    """The column of ``by_key`` holding carry column ``name`` of side ``side`` (1: NEW, 0: OLD)."""
    return f"_dq_{side}{name}"


def by_key(new: Any, old: Any, key: str, *, carry: Sequence[str] = ()) -> Any:
    """Per key value of either side: ``key``, ``NEW_ROWS``, ``OLD_ROWS``, ``CHANGE`` (inserted, deleted,
    updated, or NULL) and, per ``carry`` column, its value on each side (``carried(name, 1)`` and
    ``carried(name, 0)``; NULL where a side has no row or no such column). Lazy.

    ``new`` and ``old`` hold the key, the fingerprint (``FP_HI``, ``FP_LO``) and (either or both) the ``carry`` columns, one
    row per record. The change kind assumes one row per side; a key repeated or NULL is for the caller
    to refuse (``NEW_ROWS``/``OLD_ROWS`` say so): two fingerprints per side are XORed, not compared.
    """
    from pyspark.sql import functions as F

    from dqkit.primitives.fingerprint import FP_HI, FP_LO
    from dqkit.runtime.sparkutil import col

    def side(frame: Any, tag: int, other: Any) -> Any:
        have = set(frame.columns)
        types = {f.name: f.dataType for f in other.schema.fields}
        return frame.select(col(key).alias(_K), F.col(FP_HI), F.col(FP_LO), F.lit(tag).alias(_SIDE),
                            *[col(n) if n in have else F.lit(None).cast(types.get(n, "bigint")).alias(n)
                              for n in carry])

    tag = F.col(_SIDE)
    # partitioned by key once: the aggregation needs no shuffle of its own and no partial aggregation
    both = side(new, 1, old).unionByName(side(old, 0, new)).repartition(F.col(_K))
    per = both.groupBy(_K).agg(
        F.sum(tag).alias(NEW_ROWS), (F.count(F.lit(1)) - F.sum(tag)).alias(OLD_ROWS),
        F.bit_xor(FP_HI).alias("_dq_xh"), F.bit_xor(FP_LO).alias("_dq_xl"),
        *[F.max(F.when(tag == s, col(n))).alias(carried(n, s)) for s in (1, 0) for n in carry])
    # one row per side: the fingerprints differ iff their XOR is not zero
    change = (F.when(F.col(OLD_ROWS) == 0, F.lit(INSERTED)).when(F.col(NEW_ROWS) == 0, F.lit(DELETED))
              .when((F.col("_dq_xh") != 0) | (F.col("_dq_xl") != 0), F.lit(UPDATED)))
    return per.select(F.col(_K).alias(key), NEW_ROWS, OLD_ROWS, change.alias(CHANGE),
                      *[carried(n, s) for s in (1, 0) for n in carry])


def change_counts(changes: Any) -> dict[str, int]:
    """``{kind: rows}`` of every kind (zeros included) from rows or a pandas frame with a ``change`` column."""
    if hasattr(changes, "columns") and hasattr(changes, "loc"):  # pandas
        values = list(changes[CHANGE])
    else:
        values = [r[CHANGE] for r in changes]
    return {k: sum(1 for v in values if v == k) for k in CHANGE_KINDS}
