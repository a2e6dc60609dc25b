"""The change detection of ``dedup NEW --since RUN`` on the driver, for a table that fits there (as the
full run's driver route, ``dqkit.dedup._driver``, decides: ``DQKIT_DEDUP_DRIVER_PAIRS`` bounds the
records, the key is an integer or binary-collated text, no block key has a floating-point part).

The Spark route (``dqkit.dedup._since_scan``) reads NEW twice: an aggregation of NEW's fingerprints and
block-key hashes with the saved fingerprints by key (one shuffle of both tables), then a scan that
collects the touched blocks' records. Here NEW is read ONCE, with no shuffle: one Arrow fetch of every
record's key, fingerprint, block-key hashes and JSON keys and compared values (``fetch``); the saved
fingerprints are read with pyarrow; what changed is a hash join of the two by key (``changes``); the
touched blocks' records are a filter of the fetched table (``near``).

The same answer as the Spark route, by construction:

* the fingerprints are Spark's, computed in the fetch by the expression the saved run stored
  (``row_fingerprint`` over ``_since_io.fingerprint_columns``) and compared as the same two 64-bit
  integers: a record is inserted (key only in NEW), deleted (key only in the run) or updated (a half
  differs), as ``_since_scan.changes`` says (``dqkit.primitives.changes``' words);
* a NULL or repeated key in NEW is found here and refused by ``dqkit.primitives.keys.check_key`` as before;
* ``near`` keeps the rows ``_since_scan.near``'s filter keeps: a block-key hash among the touched
  records' hashes (the hash ``_since_scan.new_side`` computes: xxhash64 of the same struct) or a JSON
  key among the saved run's oversized blocks, per rule; its columns are ``_since_pairs.collect_near``'s.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dqkit.dedup import _blocking as B
from dqkit.dedup import _compare as C
from dqkit.dedup import _since_pairs as P
from dqkit.dedup import _since_saved as SV
from dqkit.dedup._driver import _exact_blocks, _key_ok
from dqkit.dedup._since_io import FINGERPRINTS, fingerprint_columns
from dqkit.primitives.changes import DELETED, INSERTED, UPDATED
from dqkit.primitives.fingerprint import FP_HI, FP_LO, row_fingerprint
from dqkit.checks.preflight import dedup_driver_pairs
from dqkit.runtime.sparkutil import col

__all__ = ["takes", "records", "fetch", "saved_fingerprints", "changes", "blocks_of", "near"]

_ROW = "_dq_row"


def records(df: DataFrame, key: str, cfg: Any, rules: list[Any]) -> DataFrame:
    """``dedup._records``' columns (the id, each rule's block key, the compared values) and the
    fingerprint the saved run stored (``_since_io.fingerprints``), lazy."""
    hi, lo = row_fingerprint(df, fingerprint_columns(df, cfg))
    return df.select(col(key).alias(B.ID), *[B.block_key(r.parts).alias(B.block_col(i)) for i, r in enumerate(rules)],
                     *[col(c).alias(C.value_col(k)) for k, c in enumerate(cfg.columns())],
                     hi.alias(FP_HI), lo.alias(FP_LO))


def takes(recs: DataFrame, n_rules: int, saved_records: Any, new_bound: int | None = None) -> bool:
    """Whether the change is detected on the driver: the saved run's record count is known and within
    ``DQKIT_DEDUP_DRIVER_PAIRS``, and so is tonight's bound when it can be read without Spark
    (``preflight.record_bound``: Parquet footers, CSV lines; else the saved count stands in, as NEW's own
    is not known before its scan); the key is one the driver orders and compares as Spark does, and no
    block key has a floating-point part."""
    limit = dedup_driver_pairs()
    schema = recs.schema
    return (limit > 0 and saved_records is not None and int(saved_records) <= limit
            and (new_bound is None or new_bound <= limit)
            and _key_ok(schema[B.ID].dataType) and all(_exact_blocks(schema[B.block_col(i)].dataType)
                                                       for i in range(n_rules)))


def fetch(recs: DataFrame, n_rules: int, n_columns: int) -> pa.Table:
    """Every record of ``records`` on the driver (one Spark job, a scan of NEW): ``collect_near``'s
    columns and the fingerprint's two halves."""
    return P.collect_near(recs, n_rules, [C.value_col(k) for k in range(n_columns)], (F.col(FP_HI), F.col(FP_LO)))


def _plain_key(values: Any, integer: bool) -> pa.Array:
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    return pc.cast(values, pa.int64() if integer else pa.string())


def changes(tbl: pa.Table, saved: pa.Table, key: str, integer: bool) -> tuple[pd.DataFrame, np.ndarray] | None:
    """What changed between NEW (``fetch``) and the saved fingerprints (``saved``: ``key``, ``_dq_fp_hi``,
    ``_dq_fp_lo``): ``(key, change)`` for every inserted, deleted or updated record, and the rows of
    ``tbl`` that are inserted or updated (the touched records). None when NEW's key is NULL or repeated
    (the caller refuses with the key check's words)."""
    ids = _plain_key(tbl.column(B.ID), integer)
    if ids.null_count or pc.count_distinct(ids).as_py() != len(ids):
        return None
    new = pa.table({"k": ids, "nh": tbl.column(FP_HI), "nl": tbl.column(FP_LO),
                    _ROW: pa.array(np.arange(tbl.num_rows, dtype=np.int64))})
    old = pa.table({"k": _plain_key(saved.column(key), integer), "oh": pc.cast(saved.column(FP_HI), pa.int64()),
                    "ol": pc.cast(saved.column(FP_LO), pa.int64()), "_o": pa.array(np.ones(saved.num_rows, bool))})
    both = new.join(old, "k", join_type="full outer")
    in_new = np.asarray(pc.is_valid(both.column(_ROW)))
    in_old = np.asarray(pc.is_valid(both.column("_o")))
    same = np.asarray(pc.fill_null(pc.and_(pc.equal(both.column("nh"), both.column("oh")),
                                           pc.equal(both.column("nl"), both.column("ol"))), False))
    inserted, deleted = in_new & ~in_old, in_old & ~in_new
    updated = in_new & in_old & ~same
    kind = np.full(both.num_rows, None, dtype=object)
    kind[inserted], kind[deleted], kind[updated] = INSERTED, DELETED, UPDATED
    hit = inserted | deleted | updated
    keys = both.column("k").filter(pa.array(hit)).to_pylist()
    out = pd.DataFrame({"key": pd.Series(keys, dtype=object), "change": kind[hit]}, columns=["key", "change"])
    rows = np.asarray(both.column(_ROW).filter(pa.array(inserted | updated)), dtype=np.int64)
    return out, np.sort(rows)


def blocks_of(tbl: pa.Table, rows: np.ndarray, n_rules: int) -> dict[int, set[int]]:
    """The touched records' (``rows``) block-key hashes per rule, as ``_since_scan.blocks_of`` gives them."""
    take = pa.array(rows, pa.int64())
    out: dict[int, set[int]] = {}
    for i in range(n_rules):
        hashes = tbl.column(P.hash_col(i)).take(take)
        out[i] = {int(h) for h in pc.unique(pc.drop_null(hashes)).to_pylist()}
    return out


def near(tbl: pa.Table, blocks: Mapping[int, set[int]], saved: Mapping[int, list[str]]) -> pa.Table:
    """The rows of ``tbl`` in a touched block (``blocks``: per rule, the hashes of ``blocks_of``) or in a
    saved oversized block (per rule, JSON keys), in ``collect_near``'s columns: what
    ``collect_near(_since_scan.near(...))`` fetches, without a Spark job."""
    keep = np.zeros(tbl.num_rows, dtype=bool)
    for i in blocks:
        keep |= P._whole(tbl, i, blocks[i], list(saved.get(i, [])))
    return tbl.filter(pa.array(keep)).drop_columns([FP_HI, FP_LO])


def saved_fingerprints(folder: Any, fmt: str, key: str, integer: bool) -> pa.Table:
    """The saved run's ``fingerprints/`` (key and both halves) with pyarrow: no Spark job."""
    return SV.read(folder, FINGERPRINTS, fmt, integer, (key,), [key, FP_HI, FP_LO])

