"""The lake: every readable table of a folder (or ``catalog:DB``, or a dict), flattened, profiled once.

Reading goes through ``dqkit.io.sources`` only (its folder rule decides what a table is). A table that
cannot be read, when its schema is read or when it is first profiled, is named, skipped and reported
(``Lake.skipped``); the rest of the lake is analysed, and the result is INCOMPLETE (exit 2). A table
read but not exactly as stored (nanosecond timestamps truncated) is noted in ``Lake.notes``.

Profiling is the one pass MMP and CLP stand on (R2D2 §4.2, §6.5): per table its row count and the
min/max of every orderable column, from the Parquet footers (pyarrow) where they hold valid
statistics, otherwise from ONE cached ``agg`` job over the columns the footers could not answer.
Invalid statistics (absent, all-NULL, truncated, a type whose footer order is not Spark's) are
recorded as missing, so they can never prune.
"""
from __future__ import annotations

import hashlib
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.io import sources
from dqkit.errors import DqkitError, ParameterError, SourceError
from dqkit.runtime.session import get_spark
from dqkit.runtime.sparkutil import col, quote_ident

#: types whose min/max MMP may compare (a total order in Spark); others are never used to prune
ORDERABLE = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType, T.DecimalType,
             T.StringType, T.DateType, T.TimestampType, T.TimestampNTZType, T.BooleanType)
#: types whose Parquet footer statistics are read (timestamps go to the aggregate: time zones)
_FOOTER_OK = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType, T.DecimalType,
              T.StringType, T.DateType, T.BooleanType)


@dataclass(frozen=True)
class ColumnStats:
    """min/max of one column over its non-NULL (and non-NaN) values; ``valid`` False = never prune."""

    min: Any = None
    max: Any = None
    valid: bool = False
    source: str = "none"  # footer | aggregate | none


@dataclass(frozen=True)
class LakeTable:
    """One table of the lake: its flattened DataFrame, schema tokens, files, size and profile."""

    name: str
    df: DataFrame = field(repr=False, compare=False)
    columns: tuple[str, ...]
    types: Mapping[str, T.DataType] = field(repr=False, compare=False)
    tokens: frozenset[str]
    path: str | None = None
    format: str | None = None
    files: tuple[str, ...] = ()
    partition_columns: tuple[str, ...] = ()
    bytes: int = 0
    rows: int | None = None
    stats: Mapping[str, ColumnStats] = field(default_factory=dict, repr=False, compare=False)
    fingerprint: str = ""  # of files and sizes: identifies this version of the table

    def stat(self, c: str) -> ColumnStats:
        return self.stats.get(c, ColumnStats())


@dataclass(frozen=True)
class Lake:
    """Readable tables by name (sorted) and the skipped ones with the reason."""

    label: str
    tables: Mapping[str, LakeTable]
    skipped: tuple[tuple[str, str], ...] = ()
    source: Any = None
    notes: tuple[str, ...] = ()  # how tables were read when not exactly as stored (SourceWarning)

    @property
    def names(self) -> list[str]:
        return list(self.tables)


# ----------------------------------------------------------------------------------- flattening
def flatten_schema(schema: T.StructType) -> list[tuple[tuple[str, ...], T.DataType]]:
    """Leaf paths of a (nested) struct schema, as (path, type); a flat schema is its columns (req. 1)."""
    out: list[tuple[tuple[str, ...], T.DataType]] = []

    def walk(prefix: tuple[str, ...], st: T.StructType) -> None:
        for f in st.fields:
            path = (*prefix, f.name)
            if isinstance(f.dataType, T.StructType) and f.dataType.fields:
                walk(path, f.dataType)
            else:
                out.append((path, f.dataType))

    walk((), schema)
    return out


def flatten(df: DataFrame, name: str = "table", synonyms: Mapping[str, str] | None = None) -> DataFrame:
    """``df`` with nested struct fields as top-level columns named by dot-joined paths
    (``product.price``), each renamed through ``synonyms`` (the canonical-token hook, req. 3)."""
    cols = []
    seen: dict[str, str] = {}
    for path, _ in flatten_schema(df.schema):
        expr = col(path[0])
        for part in path[1:]:
            expr = expr.getField(part)
        flat = ".".join(path)
        canon = (synonyms or {}).get(flat, flat)
        if canon in seen:
            raise SourceError(f"table {name!r}: the columns {seen[canon]!r} and {flat!r} both flatten to {canon!r}",
                              hint="rename one of them, or fix the synonym map")
        seen[canon] = flat
        cols.append(expr.alias(canon))
    return df.select(*cols)


def schema_tokens(columns: Mapping[str, T.DataType], with_types: bool = False) -> frozenset[str]:
    """The schema token set: column names, or ``name:type`` with ``with_types`` (req. 2)."""
    if with_types:
        return frozenset(f"{c}:{t.simpleString()}" for c, t in columns.items())
    return frozenset(columns)


# ----------------------------------------------------------------------------------- loading
def load_lake(source: Any, *, with_types: bool = False, synonyms: Mapping[str, str] | None = None,
              spark: SparkSession | None = None, profile: bool = True) -> Lake:
    """Read a lake: a folder of tables, ``catalog:DB``, or a dict of name -> table source.

    Unreadable tables are skipped with the reason (``Lake.skipped``). No table is an error; one
    table is a valid (trivial) lake.
    """
    spark = spark or get_spark()
    if synonyms is not None and not isinstance(synonyms, Mapping):
        raise ParameterError("synonyms must map a column name to its canonical name")
    entries: list[tuple[str, Any, Path | None]] = []
    skipped: list[tuple[str, str]] = []
    label = sources.describe(source)
    if isinstance(source, Mapping):
        entries = [(str(k), v, Path(os.fspath(v)) if isinstance(v, (str, os.PathLike)) else None)
                   for k, v in source.items()]
    elif isinstance(source, (str, os.PathLike)) and os.fspath(source).startswith(sources.CATALOG_PREFIX):
        for name, df in sources.read_database(source, spark).items():
            entries.append((name, df, None))
    elif isinstance(source, (str, os.PathLike)):
        path = Path(os.fspath(source))
        if not path.exists():
            raise SourceError(f"no such lake folder: {path}", hint="a lake is a folder of Parquet/CSV/JSON tables "
                                                                   "or catalog:DB")
        children = sources.folder_tables(path) if path.is_dir() else None
        if children is None:
            entries = [(sources._table_name(path), path, path)]
        else:
            entries = [(sources._table_name(c), c, c) for c in children]
            if not entries:
                raise SourceError(f"the lake folder {path} holds no tables", hint=sources.LAYOUT_HINT)
    else:
        raise ParameterError("a lake is a folder path, catalog:DB or a dict of name -> table",
                             hint="for example find_containment('/data/lake')")
    tables: dict[str, LakeTable] = {}
    notes: list[str] = []
    for name, src, path in sorted(entries, key=lambda e: e[0]):
        if name in tables:
            skipped.append((name, "a second table with this name"))
            continue
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", sources.SourceWarning)
            try:
                tables[name] = _read_one(spark, name, src, path, with_types, synonyms)
            except DqkitError as exc:
                skipped.append((name, exc.message))
        notes += [str(w.message) for w in caught if issubclass(w.category, sources.SourceWarning)]
        for w in caught:  # other warnings go on as they came
            if not issubclass(w.category, sources.SourceWarning):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    lake = Lake(label, tables, tuple(skipped), source, tuple(notes))
    return profile_lake(lake) if profile else lake


def _read_one(spark: SparkSession, name: str, src: Any, path: Path | None, with_types: bool,
              synonyms: Mapping[str, str] | None) -> LakeTable:
    df = sources.read_table(src, spark) if not isinstance(src, Path) else sources.read_path(src, spark)
    flat = flatten(df, name, synonyms)
    types = {f.name: f.dataType for f in flat.schema.fields}
    files: tuple[str, ...] = ()
    fmt = None
    parts: tuple[str, ...] = ()
    size = 0
    if path is not None and path.exists():
        data = [path] if path.is_file() else sources._data_files(path)
        files = tuple(str(f) for f in data)
        size = sum(f.stat().st_size for f in data)
        split = sources._split_name(data[0].name) if data else None
        fmt = split[1] if split else None
        if path.is_dir():
            seen: list[str] = []
            for f in data:
                for piece in f.relative_to(path).parts[:-1]:
                    key = piece.split("=", 1)[0] if "=" in piece else None
                    if key and key not in seen:
                        seen.append(key)
            parts = tuple(k for k in seen if k in types)
    digest = hashlib.sha1("|".join(f"{f}:{os.path.getsize(f)}:{os.path.getmtime(f)}" for f in files).encode()).hexdigest()
    return LakeTable(name, flat, tuple(types), types, schema_tokens(types, with_types), str(path) if path else None,
                     fmt, files, parts, size, None, {}, digest if files else "")


# ----------------------------------------------------------------------------------- profiling
def _orderable(t: T.DataType) -> bool:
    return isinstance(t, ORDERABLE)


def footer_stats(files: tuple[str, ...], types: Mapping[str, T.DataType]) -> tuple[int | None, dict[str, ColumnStats]]:
    """Row count and valid min/max per column from Parquet footers (no Spark job).

    A column is valid only when every row group holding a value has exact min/max statistics
    (``is_min_value_exact``/``is_max_value_exact`` where pyarrow reports them: truncated statistics
    are not exact). Unreadable footers give (None, {}): the aggregate answers instead.
    """
    import pyarrow.parquet as pq

    rows = 0
    acc: dict[str, list[Any]] = {}
    bad: set[str] = set()
    wanted = {c for c, t in types.items() if isinstance(t, _FOOTER_OK)}
    try:
        for f in files:
            md = pq.ParquetFile(f).metadata
            rows += md.num_rows
            present = set()
            for g in range(md.num_row_groups):
                rg = md.row_group(g)
                for j in range(rg.num_columns):
                    cm = rg.column(j)
                    name = cm.path_in_schema
                    if name not in wanted:
                        continue
                    present.add(name)
                    st = cm.statistics
                    if st is None:
                        bad.add(name)
                        continue
                    nonnull = st.num_values if st.num_values is not None else None
                    if not st.has_min_max:
                        if nonnull == 0 or (st.has_null_count and st.null_count == rg.num_rows):
                            continue  # an all-NULL row group: nothing to bound
                        bad.add(name)
                        continue
                    if not getattr(st, "is_min_value_exact", True) or not getattr(st, "is_max_value_exact", True):
                        bad.add(name)  # truncated statistics never prune (req. 12)
                        continue
                    lo, hi = st.min, st.max
                    if isinstance(lo, bytes) or isinstance(hi, bytes):
                        bad.add(name)
                        continue
                    if isinstance(lo, float) and (lo != lo or hi != hi):
                        bad.add(name)
                        continue
                    a = acc.setdefault(name, [lo, hi])
                    a[0], a[1] = min(a[0], lo), max(a[1], hi)
            bad |= wanted - present  # a column some file does not hold
    except Exception:
        return None, {}
    out = {c: ColumnStats(v[0], v[1], True, "footer") for c, v in acc.items() if c not in bad}
    # booleans: Parquet gives Python bools; int physical for small ints: cast to the Spark type's Python type
    for c, s in list(out.items()):
        if isinstance(types[c], T.BooleanType):
            out[c] = replace(s, min=bool(s.min), max=bool(s.max))
    return rows, out


def typed_value(text: str | None, dt: T.DataType) -> Any:
    """A value Spark rendered as text (``cast(... as string)``) back as the Python value of its type.

    Timestamps stay text (Spark's rendering sorts as the instants do and casts back in the session's
    time zone); a type without an exact text form raises ``ValueError`` (callers then compare as text).
    """
    import datetime
    import decimal

    if text is None:
        return None
    if isinstance(dt, (T.StringType, T.TimestampType, T.TimestampNTZType)):
        return text
    if isinstance(dt, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return int(text)
    if isinstance(dt, (T.FloatType, T.DoubleType)):
        return float(text)
    if isinstance(dt, T.DecimalType):
        return decimal.Decimal(text)
    if isinstance(dt, T.DateType):
        return datetime.date.fromisoformat(text)
    if isinstance(dt, T.BooleanType):
        if text not in ("true", "false"):
            raise ValueError(text)
        return text == "true"
    raise ValueError(f"no exact text form for {dt.simpleString()}")


def _needs(t: LakeTable) -> tuple[int | None, dict[str, ColumnStats], list[str]]:
    stats: dict[str, ColumnStats] = {}
    rows = None
    if t.format == "parquet" and t.files:
        rows, stats = footer_stats(t.files, t.types)
    need = [c for c, ty in t.types.items() if _orderable(ty) and c not in stats]
    return rows, stats, need


def _profile_frame(t: LakeTable, need: list[str], k: int) -> DataFrame:
    """One row: ``k`` and a JSON object {rows, min<i>, max<i>} with every value rendered as text."""
    aggs = [F.count(F.lit(1)).cast("string").alias("rows")]
    for i, c in enumerate(need):
        v = col(c)
        if isinstance(t.types[c], (T.FloatType, T.DoubleType)):
            v = F.when(~F.isnan(v), v)
        aggs += [F.min(v).cast("string").alias(f"min{i}"), F.max(v).cast("string").alias(f"max{i}")]
    return t.df.agg(*aggs).select(F.lit(k).alias("k"), F.to_json(F.struct("*")).alias("j"))


def _apply_profile(t: LakeTable, rows: int | None, stats: dict[str, ColumnStats], need: list[str],
                   got: dict[str, Any] | None) -> LakeTable:
    stats = dict(stats)
    if got is not None:
        rows = int(got["rows"])
        for i, c in enumerate(need):
            try:
                lo, hi = typed_value(got.get(f"min{i}"), t.types[c]), typed_value(got.get(f"max{i}"), t.types[c])
            except ValueError:
                lo = hi = None
            stats[c] = ColumnStats(lo, hi, lo is not None and hi is not None, "aggregate")
    return replace(t, rows=rows, stats=stats)


def profile_table(t: LakeTable) -> LakeTable:
    """``t`` with its row count and column statistics: footers first, then one aggregate job."""
    import json

    rows, stats, need = _needs(t)
    got = None
    if need or rows is None:
        try:
            got = json.loads(_profile_frame(t, need, 0).collect()[0]["j"])
        except Exception as exc:
            err = sources.read_failure(exc)
            raise (err or SourceError(f"cannot read table {t.name!r}: {sources._first_line(exc)}")) from exc
    return _apply_profile(t, rows, stats, need, got)


def profile_lake(lake: Lake, chunk: int = 32) -> Lake:
    """Profile every table once: footers first, then the aggregates of all tables that need one in a
    few Spark jobs (unioned). When a job fails, its tables are profiled one by one, so the unreadable
    one is named, skipped and reported like a table whose schema could not be read."""
    import json

    tables: dict[str, LakeTable] = {}
    skipped = list(lake.skipped)
    pending = []
    for name, t in lake.tables.items():
        if t.rows is not None:
            tables[name] = t
            continue
        rows, stats, need = _needs(t)
        if need or rows is None:
            pending.append((t, rows, stats, need))
        else:
            tables[name] = _apply_profile(t, rows, stats, need, None)
    for i in range(0, len(pending), chunk):
        part = pending[i:i + chunk]
        try:
            frames = [_profile_frame(t, need, k) for k, (t, _, _, need) in enumerate(part)]
            import functools

            got = {r["k"]: json.loads(r["j"]) for r in functools.reduce(DataFrame.unionAll, frames).collect()}
            for k, (t, rows, stats, need) in enumerate(part):
                tables[t.name] = _apply_profile(t, rows, stats, need, got[k])
        except Exception:
            for t, _, _, _ in part:
                try:
                    tables[t.name] = profile_table(t)
                except DqkitError as exc:
                    skipped.append((t.name, exc.message))
    tables = dict(sorted(tables.items()))
    return replace(lake, tables=tables, skipped=tuple(sorted(skipped)))


def quoted(names: list[str]) -> str:
    return ", ".join(quote_ident(n) for n in names)
