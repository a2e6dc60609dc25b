"""The violation model shared by detection, repair, deduplication and query-time cleaning.

BigDansing (§2.1, spec R1–R4): every input row has a stable tuple id; a violation names its rule and
the cells it involves; a candidate fix is ``cell op (cell | constant)``. This module holds, once:

* ``tuple_ids``: the stable id of each row (the user's key, or a deterministic content id);
* the predicate-to-Column compiler (``predicate_column``, ``conjunction``, ``not_null``), with
  conjunctions built as balanced trees so that a large rule stays a shallow expression;
* the schemas of cells (``CELL_SCHEMA``), violations (``VIOLATION_SCHEMA``) and candidate fixes
  (``fix_schema``, ``fix_struct``).

NULL semantics: a predicate on NULL is false, as in SQL (NaN counts as NULL in ``not_null``).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.primitives.fingerprint import row_fingerprint
from dqkit.rules import Attr, Predicate
from dqkit.runtime.sparkutil import col

__all__ = ["tuple_ids", "row_position", "predicate_column", "compare", "conjunction", "disjunction", "not_null",
           "CELL_SCHEMA", "VIOLATION_SCHEMA", "FIX_CELL_FIELDS", "FIX_FIELDS", "fix_schema", "fix_struct"]

# ------------------------------------------------------------------------------------------- schemas
CELL_SCHEMA = T.StructType([T.StructField("tid", T.StringType()), T.StructField("attr", T.StringType()),
                            T.StructField("value", T.StringType())])
"""A cell ``(tid, attr, value)``: attribute ``attr`` of the tuple ``tid``, its value as text (R1)."""

VIOLATION_SCHEMA = T.StructType([T.StructField("violation_id", T.StringType()),
                                 T.StructField("rule", T.StringType()),
                                 T.StructField("cells", T.ArrayType(CELL_SCHEMA))])
"""A violation ``(violation_id, rule, cells)``: a hyperedge of the violation graph over its cells (R2).
Detection reports the tuples of each violation (``rule, t1, t2``); repair works on these cells."""

FIX_CELL_FIELDS = ("tid", "attr", "value", "op", "rhs_tid", "rhs_attr", "rhs_value", "constant")
"""The fields of one candidate fix ``tid[attr] op (rhs_tid[rhs_attr] | constant)`` (R3)."""

FIX_FIELDS = ("rule", "t1", "t2") + FIX_CELL_FIELDS + ("kind", "fix")
"""Columns of the candidate-fix frame: the violation (rule, t1, t2), the fix, its kind and its text."""

_TID_FIELDS = ("t1", "t2", "tid", "rhs_tid")


def fix_schema(tid_type: T.DataType | None = None) -> T.StructType:
    """Schema of candidate fixes (``FIX_FIELDS``): tuple ids of ``tid_type`` (default string), the rest
    strings. Fixes of every rule share it, so they combine into one frame for repair (R4)."""
    tid_type = tid_type or T.StringType()
    return T.StructType([T.StructField(f, tid_type if f in _TID_FIELDS else T.StringType()) for f in FIX_FIELDS])


def fix_struct(tid: Column, attr: str, value: Column, op: str, rhs_tid: Column | None, rhs_attr: str | None,
               rhs_value: Column | None, constant: Column | None, kind: str, when: Column | None = None) -> Column:
    """One candidate fix ``tid[attr] op (rhs_tid[rhs_attr] | constant)`` as a struct of strings
    (``FIX_CELL_FIELDS`` then ``kind`` and ``fix``, its text); NULL unless ``when`` holds, if given."""
    none = F.lit(None).cast("string")
    if rhs_tid is not None:
        rhs_txt = F.concat(rhs_tid.cast("string"), F.lit(f"[{rhs_attr}]"))
    else:
        rhs_txt = constant if constant is not None else none
    s = F.struct(
        tid.cast("string").alias("tid"), F.lit(attr).alias("attr"), value.cast("string").alias("value"),
        F.lit(op).alias("op"),
        (rhs_tid.cast("string") if rhs_tid is not None else none).alias("rhs_tid"),
        (F.lit(rhs_attr) if rhs_attr is not None else none).alias("rhs_attr"),
        (rhs_value.cast("string") if rhs_value is not None else none).alias("rhs_value"),
        (constant if constant is not None and rhs_tid is None else none).alias("constant"),
        F.lit(kind).alias("kind"),
        F.concat(tid.cast("string"), F.lit(f"[{attr}] {op} "), rhs_txt).alias("fix"))
    return s if when is None else F.when(when, s)


# ----------------------------------------------------------------------------------------- tuple ids
def tuple_ids(df: DataFrame, key: str | None = None, *, order: Sequence[Column] = (),
              columns: Sequence[str] | None = None) -> Column:
    """The stable tuple id of each row: ``key`` when given, else a deterministic content id.

    The content id is the 128-bit row fingerprint of ``columns`` (default: all of ``df``'s) as 32 hex
    digits. Exact duplicate rows share a fingerprint, so the k-th copy (k >= 2) gets ``#k`` appended,
    k counted in ``order`` (for example ``row_position``). With a total ``order`` (a stable input
    position) the suffixes are reproducible: the k-th copy in the input is ``#k``, whatever the
    partitioning, and after any recomputation. Without one, copies are numbered in no particular
    order; they are identical in every column, so which copy holds which suffix cannot be observed in
    any output that does not also show a position (detection's, query-time cleaning's). The id never
    depends on partitioning (unlike ``monotonically_increasing_id``). Use a key when rows must keep
    their id across edits.
    """
    if key is not None:
        return col(key)
    hi, lo = row_fingerprint(df, columns)
    hexid = F.concat(F.lpad(F.hex(hi), 16, "0"), F.lpad(F.hex(lo), 16, "0"))
    rank = F.row_number().over(Window.partitionBy(hi, lo).orderBy(*(list(order) or [hi])))
    return F.when(rank == 1, hexid).otherwise(F.concat(hexid, F.lit("#"), rank.cast("string")))


def row_position(df: DataFrame) -> Column | None:
    """A row's position in its input file, stable under recomputation; None when ``df`` is not a file scan.

    The position is ``struct(file path, start of the file split, row)``, ordered by file, then by place
    in the file. For Parquet, ``row`` is Spark's ``_metadata.row_index`` (the row's index in its file,
    the split start 0): the same number on every read, whatever the split sizes, a retried task or a
    recomputed partition. Other file formats have no row index; there the split is a fixed byte range of
    a fixed file, read in file order, and ``row`` is ``monotonically_increasing_id`` (partition index in
    the upper bits, the ordinal of the row in its partition's read order in the lower), which grows with
    the row's place within the split. A retried task re-reads the same splits in the same order, so it
    gives every row the same number again (dqkit reads CSV in multiLine mode: one task per file). Use the
    position to order and tiebreak, never as an identifier. A DataFrame that is not a file scan (an
    in-memory frame, a join, a catalog view) has no such position: None.
    """
    if "_metadata" in df.columns:
        return None
    try:
        meta = df.select(F.col("_metadata")).schema["_metadata"].dataType
    except Exception:  # not a file scan: Spark has no _metadata column for it
        return None
    names = set(meta.fieldNames()) if isinstance(meta, T.StructType) else set()
    if not {"file_path", "file_block_start"} <= names:
        return None
    if "row_index" in names:
        return F.struct(F.col("_metadata.file_path").alias("file"), F.lit(0).cast("long").alias("split"),
                        F.col("_metadata.row_index").alias("row"))
    return F.struct(F.col("_metadata.file_path").alias("file"), F.col("_metadata.file_block_start").alias("split"),
                    # stable-id: ordered within (file, block start): one split of one file read in file order,
                    # so a recomputed partition numbers its rows the same way
                    F.monotonically_increasing_id().alias("row"))


# --------------------------------------------------------------------------------------- predicates
def compare(left: Column, op: str, right: Column) -> Column:
    """``left op right`` for a rule operator (``=, !=, <, <=, >, >=``)."""
    return {"=": left == right, "!=": left != right, "<": left < right, "<=": left <= right,
            ">": left > right, ">=": left >= right}[op]


def predicate_column(p: Predicate, side_prefix: dict[int, str]) -> Column:
    """Spark expression of a predicate; attribute of tuple t is column ``side_prefix[t] + name``."""
    left = col(side_prefix[p.left.tuple] + p.left.column)
    if isinstance(p.right, Attr):
        right = col(side_prefix[p.right.tuple] + p.right.column)
    else:
        right = F.lit(p.right.value)
    return compare(left, p.op, right)


def _balanced(cols: Sequence[Column], combine: Callable[[Column, Column], Column], empty: Any) -> Column:
    """``cols`` combined pairwise, level by level: a tree of depth log2(n), not a chain of depth n
    (Spark's analyser and optimiser recurse over the expression tree)."""
    level = list(cols)
    if not level:
        return F.lit(empty)
    while len(level) > 1:
        level = [combine(level[i], level[i + 1]) if i + 1 < len(level) else level[i]
                 for i in range(0, len(level), 2)]
    return level[0]


def conjunction(cols: Sequence[Column]) -> Column:
    """All of ``cols`` (SQL AND, balanced); true for none."""
    return _balanced(cols, lambda a, b: a & b, True)


def disjunction(cols: Sequence[Column]) -> Column:
    """Any of ``cols`` (SQL OR, balanced); false for none."""
    return _balanced(cols, lambda a, b: a | b, False)


def not_null(cols: Sequence[str], types: dict[str, str]) -> Column:
    """All columns non-NULL (and not NaN: NaN is treated as NULL by dqkit's predicates)."""
    conds = []
    for c in cols:
        e = col(c).isNotNull()
        if types.get(c, "").startswith(("float", "double")):
            e = e & ~F.isnan(col(c))
        conds.append(e)
    return conjunction(conds)
