"""Row fingerprints: the one canonical, NULL-aware encoding of a row and its hash.

Diftong's row delta, exact dedup, TCFC's fragment signatures and R2D2's content checks all stand on
this module, so it is written once here.

* ``row_fingerprint`` is the fast 128-bit fingerprint used by the kernels: two 64-bit xxhash64 values
  with different seeds over, per column, a NULL marker and the typed value. Spark's ``xxhash64`` skips
  NULLs, so without the marker ``(NULL,'a')`` and ``('a',NULL)`` would collide; with it, NULL, ``''``
  and ``'NULL'`` differ, and moving text between adjacent strings changes the hash (each value is
  hashed whole, its length mixed in). Equal values hash equally whatever the partitioning, so the
  fingerprint is stable across runs. With 128 bits, a chance collision among 10^9 distinct rows has
  probability about 3e-21; it can neither hide nor invent a difference in practice.
* ``canonical_encoding`` is the injective string form ``len:value`` per column (``-1:`` for NULL), for
  people and for the SHA-512 variant (``row_sha512``) that matches the paper's choice of hash.
* ``multi_hash`` is the paper's own ``multi_hash`` (value followed by its length, SHA-512), kept for
  compatibility only: it is not injective (see the tests for the counterexample).
* ``group_fingerprint`` is the commutative aggregate of a group of rows (a multiset hash).
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.errors import UnsupportedTypeError
from dqkit.runtime.sparkutil import col

FP_HI = "_dq_fp_hi"
FP_LO = "_dq_fp_lo"
# A fixed, arbitrary salt: hashing it first changes xxhash64's seed for the second half.
_SALT = "dqkit/fingerprint/v1"
_TWO64 = 2**64


def _hash_form(dt: T.DataType, name: str) -> str:
    """How one column's value is hashed: ``map`` (sorted entries as JSON), ``json`` (arrays and structs),
    ``null`` or ``value``; the one rule behind both the Column and the SQL-text forms below."""
    if isinstance(dt, T.MapType):
        # Map order is not canonical; sort the entries so equal maps hash equally.
        return "map"
    if isinstance(dt, (T.ArrayType, T.StructType)):
        # xxhash64 skips NULL elements inside arrays; JSON keeps them (as null) and keeps order.
        return "json"
    if isinstance(dt, T.NullType):
        return "null"
    if dt.typeName() in ("variant", "object", "calendarinterval"):
        raise UnsupportedTypeError(
            f"column {name!r} has type {dt.simpleString()}, which dqkit cannot fingerprint",
            hint="exclude the column or cast it to a string first")
    return "value"


def _hashable(field: T.StructField) -> Column:
    """The value of one column in a form xxhash64 hashes exactly and deterministically."""
    value = col(field.name)
    form = _hash_form(field.dataType, field.name)
    if form == "map":
        return F.to_json(F.array_sort(F.map_entries(value)))
    if form == "json":
        return F.to_json(value)
    if form == "null":
        return F.lit(None).cast("string")
    return value


def _hash_inputs(df: DataFrame, columns: Sequence[str] | None) -> list[Column]:
    fields = {f.name: f for f in df.schema.fields}
    names = list(columns) if columns is not None else list(fields)
    inputs: list[Column] = []
    for name in names:
        field = fields[name]
        inputs.append(col(name).isNull())
        inputs.append(_hashable(field))
    return inputs or [F.lit(True)]


def row_fingerprint(df: DataFrame, columns: Sequence[str] | None = None) -> tuple[Column, Column]:
    """Two 64-bit halves of the 128-bit fingerprint of each row over ``columns`` (default: all)."""
    inputs = _hash_inputs(df, columns)
    hi = F.xxhash64(*inputs)
    lo = F.xxhash64(F.lit(_SALT), *inputs)
    return hi, lo


def hash_input_sql(expr: str, dt: T.DataType, name: str) -> str:
    """One column's hash input as Spark SQL text: its NULL marker, then its value in the form
    ``row_fingerprint`` hashes (``expr`` is a quoted identifier or an expression of type ``dt``).

    For callers that build one SQL projection for many columns (R2D2 plans thousands of pairs, and a
    SQL expression costs one driver-to-JVM call where Columns cost several per column)."""
    form = _hash_form(dt, name)
    value = {"map": f"to_json(array_sort(map_entries({expr})))", "json": f"to_json({expr})",
             "null": "CAST(NULL AS STRING)", "value": expr}[form]
    return f"isnull({expr}), {value}"


def row_fingerprint_sql(inputs: Sequence[str]) -> tuple[str, str]:
    """The two halves of ``row_fingerprint`` as Spark SQL text over ``hash_input_sql`` parts, in order:
    equal to ``row_fingerprint`` over the same columns."""
    args = ", ".join(inputs) or "true"
    return f"xxhash64({args})", f"xxhash64('{_SALT}', {args})"


def with_fingerprint(df: DataFrame, columns: Sequence[str] | None = None) -> DataFrame:
    """``df`` with the fingerprint columns ``_dq_fp_hi`` and ``_dq_fp_lo`` appended."""
    hi, lo = row_fingerprint(df, columns)
    return df.withColumns({FP_HI: hi, FP_LO: lo})


def canonical_encoding(df: DataFrame, columns: Sequence[str] | None = None) -> Column:
    """Injective string encoding: ``len:value`` per column, ``-1:`` for NULL, concatenated.

    Values are rendered as Spark casts them to string (complex types as JSON). Because each value
    carries its length *before* it, the encoding can be parsed back unambiguously: it is injective.
    """
    fields = {f.name: f for f in df.schema.fields}
    names = list(columns) if columns is not None else list(fields)
    parts = []
    for name in names:
        value = _hashable(fields[name]).cast("string")
        parts.append(F.when(value.isNull(), F.lit("-1:"))
                     .otherwise(F.concat(F.char_length(value).cast("string"), F.lit(":"), value)))
    return F.concat(*parts) if parts else F.lit("")


def row_sha512(df: DataFrame, columns: Sequence[str] | None = None) -> Column:
    """SHA-512 (hex) of the canonical encoding: the paper's hash over an injective encoding."""
    return F.sha2(canonical_encoding(df, columns), 512)


def multi_hash(values: Sequence[str]) -> str:
    """The paper's ``multi_hash``: SHA-512 of each string followed by its decimal length.

    Kept only for compatibility with Diftong; it is NOT injective when values contain digits
    (``['x1'+'y'*19, '2']`` and ``['x', 'y'*19+'21']`` collide). dqkit's kernels use
    ``row_fingerprint`` instead.
    """
    joined = "".join(f"{v}{len(v)}" for v in values)
    return hashlib.sha512(joined.encode("utf-8")).hexdigest()


def multi_hash_column(*cols: Column) -> Column:
    """``multi_hash`` as a Spark expression over string columns (NULL is treated as ``''``)."""
    parts = []
    for c in cols:
        s = F.coalesce(c.cast("string"), F.lit(""))
        parts.append(F.concat(s, F.char_length(s).cast("string")))
    return F.sha2(F.concat(*parts), 512)


def group_fingerprint(hi: Column, lo: Column) -> Column:
    """Commutative multiset hash of a group: (row count, sum of each half mod 2^64).

    Order-independent, so a group's signature does not depend on partitioning; unlike XOR, a row
    that appears twice does not cancel itself out. Use inside ``agg``.
    """
    def _sum_mod(c: Column) -> Column:
        total = F.sum(c.cast("decimal(38,0)"))
        return F.pmod(total, F.lit(str(_TWO64)).cast("decimal(38,0)")).cast("decimal(20,0)")

    return F.struct(F.count(F.lit(1)).alias("rows"), _sum_mod(hi).alias("sum_hi"), _sum_mod(lo).alias("sum_lo"))
