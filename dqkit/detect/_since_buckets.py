"""With a saved OLD, ``detect --since`` finds the buckets of keys that changed before it shuffles any key.

A saved result holds one 128-bit fingerprint per key of OLD (``row_fingerprints``), its keys checked unique
and non-NULL when it was saved. Both sides' rows are hashed into ``BUCKETS`` buckets by key, and per bucket
one aggregation (partial sums on each task: a few thousand rows shuffled, not millions) compares the
multisets of ``(key, fingerprint)``: the row counts and two 64-bit sums of independent hashes, each summed in
two 32-bit halves (no overflow). A bucket whose multisets are equal holds no inserted, deleted or updated
key, and no repeated or NULL key of NEW either (OLD's keys in it are unique and non-NULL, and NEW's equal
them); equal sums of different multisets need a 2^-128 chance. Only the rows of the other buckets go
through the change job's shuffle by key (``dqkit.detect.since._by_key``), which checks their keys exactly.
"""
from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from dqkit.runtime.sparkutil import col, quote_ident

__all__ = ["BUCKETS", "MAX_BUCKETS", "bucket_of", "changed_buckets", "in_buckets"]

#: buckets of the pre-pass: at 1M rows and 0.1 % changed, ~1.8 % of the rows fall in a changed bucket
BUCKETS = 1 << 16
#: above this many changed buckets the pre-pass is not used (an ``IN`` list that long costs more to parse
#: than it saves): every row goes through the change job
MAX_BUCKETS = 8192
_SALT = "dqkit/since/buckets/v1"
_FP = ("_dq_fp_hi", "_dq_fp_lo")


def bucket_of(key: str) -> Column:
    """A row's bucket: its key's 64-bit hash modulo ``BUCKETS`` (a NULL key falls in a bucket too)."""
    return F.pmod(F.xxhash64(col(key)), F.lit(BUCKETS).cast("bigint"))


def _halves(key: str) -> list[Column]:
    """Four non-negative 32-bit parts of two independent hashes of ``(key, fingerprint)``."""
    args = [col(key), F.col(_FP[0]), F.col(_FP[1])]
    out = []
    for h in (F.xxhash64(*args), F.xxhash64(F.lit(_SALT), *args)):
        out += [h.bitwiseAND(F.lit(0xFFFFFFFF)), F.shiftrightunsigned(h, 32)]
    return out


def changed_buckets(new_fp: DataFrame, old_fp: DataFrame, key: str) -> tuple[int, list[int] | None]:
    """ONE action over both sides' ``key, _dq_fp_hi, _dq_fp_lo``: NEW's row count and the buckets whose
    multisets differ, or None when more than ``MAX_BUCKETS`` do."""
    def sig(rows: DataFrame, sign: int) -> DataFrame:
        return rows.select(bucket_of(key).alias("_dq_b"), F.lit(sign).alias("_dq_sg"),
                           *[(p * sign).alias(f"_dq_p{i}") for i, p in enumerate(_halves(key))])

    both = sig(new_fp, 1).unionByName(sig(old_fp, -1))
    per = both.groupBy("_dq_b").agg(F.sum(F.when(F.col("_dq_sg") == 1, 1).otherwise(0)).alias("_dq_n"),
                                    F.sum("_dq_sg").alias("_dq_d"), *[F.sum(f"_dq_p{i}").alias(f"_dq_s{i}")
                                                                      for i in range(4)])
    differ = F.col("_dq_d") != 0
    for i in range(4):
        differ = differ | (F.col(f"_dq_s{i}") != 0)
    total = per.agg(F.coalesce(F.sum("_dq_n"), F.lit(0)).cast("bigint").alias("_dq_t")).select(
        F.lit(0).alias("_dq_w"), "_dq_t", F.lit(None).cast("bigint").alias("_dq_b"))
    buckets = per.where(differ).select(F.lit(1).alias("_dq_w"), F.lit(None).cast("bigint").alias("_dq_t"),
                                       F.col("_dq_b").cast("bigint")).limit(MAX_BUCKETS + 1)
    got = total.unionByName(buckets).collect()
    rows_new = int(next(r["_dq_t"] for r in got if r["_dq_w"] == 0))
    found = sorted(int(r["_dq_b"]) for r in got if r["_dq_w"] == 1)
    return rows_new, (found if len(found) <= MAX_BUCKETS else None)


def in_buckets(rows: DataFrame, key: str, buckets: list[Any]) -> DataFrame:
    """The rows of ``rows`` whose key falls in one of ``buckets`` (a literal set of numbers)."""
    if not buckets:
        return rows.where(F.lit(False))
    values = ", ".join(str(int(b)) + "L" for b in buckets)
    return rows.where(F.expr(f"pmod(xxhash64({quote_ident(key)}), {BUCKETS}L) IN ({values})"))
