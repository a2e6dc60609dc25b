"""Diftong: two versions of a database compared, table by table (spec: shared/specs/diftong.md).

Stages, as in the paper: **dedup** (each distinct row once, with ``row_count``), **row** validation
(row delta of INSERT/DELETE records and row statistics (1)-(8)) and **column** validation (key-paired
DELETE/INSERT records, ``calc_diff`` per column, and column statistics (9)-(14)).

How it runs (two scans of each version instead of the paper's ~100 passes): every row of both
versions is fingerprinted (``dqkit.primitives.fingerprint``) and one shuffle groups the union by fingerprint,
counting the copies on each side (``c_old``, ``c_new``); the same job caches the changed fingerprints
(``c_old != c_new``) and one row of statistics (1)-(8) over every fingerprint (two branches over one
reused shuffle; never observed metrics, which a lost executor can leave partial).
Those are broadcast to a second scan that fetches only the changed rows (cached, deduplicated only
where a row repeats) for the row delta; the column stage pairs them by key with equi-joins and
computes all column statistics in a single aggregation.

Choices where the paper is silent (also in the README):
* A row's identity includes its ``row_count``, so a changed multiplicity is a DELETE plus an INSERT.
* (8) is rounded half-up to one decimal, and is 0.0 when both deduplicated tables are empty.
* ``calc_diff`` returns the *absolute* difference (integers, decimals, floats), the Levenshtein distance
  (strings), days (dates), seconds (timestamps), and 1 for any change of a boolean, binary, array or
  struct value. Unchanged pairs and NULL/NULL give NULL. A change between NULL and a value has no
  magnitude: the delta stays NULL, the column is listed in ``null_changes`` and counted in (9) and in
  the extra statistic ``null_changes``; min/max/quartiles are over the non-NULL deltas only.
* Float tolerance (``abs_tol``, ``rel_tol``) applies in column validation: ``|a-b| <= abs_tol +
  rel_tol*max(|a|,|b|)`` counts as equal; NaN equals NaN.
* Keys need not be unique (unlike every other command's ``--key``, which ``dqkit.primitives.keys.check_key``
  refuses when it repeats or is NULL): delta compares each table as a **multiset** of rows (a row that
  repeats is one row with its ``row_count``), and the key serves only to pair the changed rows of the
  column stage. A key held by more than one DELETE (or more than one INSERT) record of a table
  cannot be paired safely; those records are left unpaired (they stay in the row delta), counted in
  ``ambiguous_key_rows`` and reported in a warning; nothing is guessed and nothing is cross-joined.
  A key repeated only among unchanged rows changes nothing. NULL keys pair NULL-safely (NULL pairs
  with NULL, as one key value). So a repeated or NULL key never makes delta wrong, only less
  detailed; checking uniqueness up front would cost a scan of both versions for no change in the
  answer.

Modules: ``plan`` (selection and schema checks before any job), ``calc`` (``calc_diff``), ``kernel``
(the dedup and row stages), ``columns`` (the column stage), ``result`` (``DeltaResult``); ``delta``
here runs them table by table (it looks ``column_statistics`` up in this package, so a test can
replace it here).
"""
from __future__ import annotations

from dqkit.runtime.lazy import lazy_face

__all__ = ['STAGES', 'ROW_COUNT', 'STATUS', 'INSERT', 'DELETE', 'NULL_CHANGES',
           'RESERVED', 'ROW_STAT_NAMES', 'COLUMN_STAT_NAMES', 'FP_HI', 'FP_LO', 'TablePlan',
           'plan_tables', 'retyped', 'check_calc_diff_type', 'changed', 'calc_diff', 'diff_unit',
           'TableDelta', 'DeltaResult', 'fingerprint_counts', 'changed_fingerprints', 'finish_row_statistics', 'dedup_frame',
           'build_row_delta', 'fetch_changed_rows', 'key_counts', 'pair_by_key', 'build_column_delta', 'column_statistics',
           'delta', 'BROADCAST_CHANGED_ROWS', 'GROUPED_PAIRING_RECORDS', 'key_groups', 'calc_diff_sql', 'changed_sql',
           'DISTINCT_GROUPS_CONF', 'UNCOMPRESSED_CACHE_CONF']

__getattr__, __dir__ = lazy_face(__name__, __all__)
