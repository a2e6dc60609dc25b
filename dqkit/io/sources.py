# Long because every way a table comes in (catalog, files, folders, CSV dialects, Parquet
# footers) and every way reading one fails are one reader; its error messages share the same helpers.
"""Tables in, by name.

A *table source* is one of: a Spark DataFrame; a Spark catalog table (``catalog:db.table``); a Parquet,
CSV or JSON file; a folder read whole as one table. A *database source* is one of: a dict of name ->
DataFrame (or table source); a Spark catalog database (``catalog:DBNAME``); a folder of tables; a single
table path (a one-table database named after the file).

How a folder is read (one rule): **a folder is one Spark-written table when it holds a ``_SUCCESS``
marker, ``part-*`` files or Hive ``key=value`` partition folders; otherwise it is a database in which
each Parquet/CSV/JSON file and each subfolder is one table, named after it without its extension.**
So ``old/users.parquet`` + ``old/orders.parquet`` (as pandas, DuckDB or Polars write them) are the
tables ``users`` and ``orders``, while ``old/users/part-0000*.parquet`` + ``_SUCCESS`` is ``users``. A
folder with both (part files or ``_SUCCESS`` beside named table files) is ambiguous and refused.
Hidden files, ``_``-prefixed files and ``.crc`` checksums are ignored; a table subfolder is read
whole and must hold one format.

Reading never drops or guesses at data:
* CSV is read with a header row and inferred types, in Spark's FAILFAST mode: a row with more (or
  fewer) fields than the header fails the run with a ``SourceError`` naming the file and the line,
  instead of Spark's default of silently dropping the extra fields. Quoted fields may hold newlines
  (multiLine mode: each CSV file is read by one task; not for a path with a colon or a glob character,
  which Spark's multiLine reader cannot open: such a file is read line by line). A UTF-8 byte-order mark is dropped. The field
  separator is detected from the header line: the first of ``, ; TAB |`` outside quotes (comma when
  none, i.e. one column); every file of one table must use the same. Files are read as UTF-8. Both versions of a CSV database
  must infer the same types; dqkit reports any schema difference instead of guessing (a header-only
  CSV is compared as an empty table: see ``dqkit.delta.plan_tables``).
* JSON must be JSON Lines (one object per line); a file with malformed lines is a ``SourceError``.
* A Parquet timestamp stored in nanoseconds (pandas' and pyarrow's default for datetime columns) is
  read at microsecond precision (floored), as TIMESTAMP_NTZ (wall-clock) or TIMESTAMP (instant, when
  the file marks it isAdjustedToUTC), the types Spark gives the same column in microseconds. dqkit
  sets ``spark.sql.legacy.parquet.nanosAsLong`` for the session (it only makes such a column readable)
  and casts back. When any value had a sub-microsecond part, a ``SourceWarning`` names the file, the
  column and how many values were truncated. Nanosecond timestamps nested in a struct or list, and
  Parquet UUID/INTERVAL columns (which Spark has no type for), are a ``SourceError`` naming them.
* A Parquet column of Parquet's NULL type (an all-NULL column as pandas/pyarrow write it) is read as
  a NULL-typed (``void``) column, which is compatible with any type of the other version.
* A corrupt or unreadable file is a ``SourceError`` naming the file, whether Spark notices it while
  reading the schema or in the first job (``read_failure`` maps the latter).
* A table with no columns (a zero-column Parquet file, an empty CSV file without a header row) is a
  ``SourceError``; a header-only CSV or a Parquet file with columns and no rows is an empty table.
* File names with glob characters (``[ ] { } * ?``) or a colon are read literally.
"""
from __future__ import annotations

import csv
import os
import re
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Union
from urllib.parse import unquote

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.errors import DqkitWarning, SourceError, UnknownTableError
from dqkit.runtime.session import get_spark
from dqkit.runtime.sparkutil import quote_ident

TableSource = Union[DataFrame, str, os.PathLike]
DatabaseSource = Union[Mapping[str, TableSource], str, os.PathLike]

CATALOG_PREFIX = "catalog:"
_FORMATS = {".parquet": "parquet", ".csv": "csv", ".json": "json", ".jsonl": "json", ".ndjson": "json"}
_COMPRESSIONS = {".gz", ".bz2", ".deflate", ".lz4", ".snappy", ".zst", ".xz"}
_PARTITION_DIR = re.compile(r"^[^=]+=")
_GLOB_CHARS = re.compile(r"([\\\[\]{}*?])")
_CORRUPT = "_corrupt_record"
#: Hadoop's local file system without the checksum layer, whose ``.NAME.crc`` lookup cannot parse
#: a file name with a colon; used (for that read only) when a path holds a colon.
_RAW_LOCAL_FS = {"fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem", "fs.file.impl.disable.cache": "true"}
#: Parquet footers inspected for NULL-typed columns, at most (a large dataset is not scanned).
_MAX_FOOTERS = 64
LAYOUT_HINT = ("a database folder holds one Parquet/CSV/JSON file or subfolder per table; a Spark table "
               "folder holds only part-* files, _SUCCESS and key=value partition folders")


def _is_dataframe(obj: object) -> bool:
    # Classic and Connect DataFrames are different classes; both have these.
    return hasattr(obj, "schema") and hasattr(obj, "groupBy") and hasattr(obj, "select")


def _split_name(name: str) -> tuple[str, str] | None:
    """(table name, format) of a data file name such as ``users.csv.gz``; None for other files."""
    lower = name.lower()
    suffixes = Path(lower).suffixes
    if suffixes and suffixes[-1] in _COMPRESSIONS:
        lower, suffixes = lower[: -len(suffixes[-1])], suffixes[:-1]
    if not suffixes or suffixes[-1] not in _FORMATS:
        return None
    return name[: len(lower) - len(suffixes[-1])], _FORMATS[suffixes[-1]]


def _ignored(name: str) -> bool:
    return name.startswith((".", "_")) or name.endswith(".crc")


def _walk_data_files(folder: Path) -> Iterator[Path]:
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not _ignored(d))
        yield from (Path(root) / f for f in sorted(files)
                    if not _ignored(f) and (_split_name(f) is not None or f.startswith("part-")))


def _data_files(folder: Path) -> list[Path]:
    """Every data file under ``folder`` (recursively), skipping hidden, ``_``-prefixed and .crc files."""
    return list(_walk_data_files(folder))


def _folder_format(folder: Path, files: list[Path]) -> str:
    formats = {s[1] for f in files if (s := _split_name(f.name)) is not None}
    if len(formats) == 1 and all(_split_name(f.name) for f in files):
        return formats.pop()
    if not files:
        raise SourceError(f"the folder {folder} holds no Parquet, CSV or JSON files", hint=LAYOUT_HINT)
    if len(formats) > 1:
        raise SourceError(f"the folder {folder} mixes formats ({', '.join(sorted(formats))}), so it is not one table",
                          hint=LAYOUT_HINT)
    odd = next(f for f in files if _split_name(f.name) is None)
    raise SourceError(f"cannot tell the format of {odd}: expected a .parquet, .csv or .json file", hint=LAYOUT_HINT)


def folder_tables(path: Path) -> list[Path] | None:
    """The rule above: None when ``path`` is one Spark-written table, else its table files and folders.

    Only the folder's own listing is read (no Spark job). Raises ``SourceError`` for an ambiguous folder.
    """
    markers: list[str] = []
    tables: list[Path] = []
    for child in sorted(path.iterdir()):
        name = child.name
        if name == "_SUCCESS":
            markers.append(name)
        elif _ignored(name):
            continue
        elif child.is_dir():
            if _PARTITION_DIR.match(name):
                markers.append(name + "/")
            elif next(_walk_data_files(child), None) is not None:
                tables.append(child)
        elif name.startswith("part-"):
            markers.append(name)
        elif _split_name(name) is not None:
            tables.append(child)
    if markers and tables:
        raise SourceError(
            f"the folder {path} is ambiguous: it looks like one Spark table ({', '.join(markers[:3])}) "
            f"but also holds named tables ({', '.join(t.name for t in tables[:3])})",
            hint="move the named files out of the Spark table folder, or point at each table path; " + LAYOUT_HINT)
    return None if markers else tables


def _spark_path(path: Path) -> str:
    """``path`` as Spark's ``load`` must see it: absolute, ``file://``, glob characters escaped."""
    return "file://" + _GLOB_CHARS.sub(r"\\\1", path.resolve().as_posix())


def _load(spark: SparkSession, fmt: str, path: Path, files: list[Path], infer_types: bool = True) -> DataFrame:
    reader = spark.read.format(fmt)
    footers = _parquet_footers(files) if fmt == "parquet" else _Footers()
    if footers.nested_nanos:
        raise SourceError(f"{path} has nanosecond timestamps inside a struct or list "
                          f"({', '.join(footers.nested_nanos[:5])}), which Spark cannot read",
                          hint="write timestamps in microseconds (pandas: df.to_parquet(..., coerce_timestamps='us', "
                               "allow_truncated_timestamps=True))")
    if footers.nanos:
        spark.conf.set(NANOS_AS_LONG, "true")  # only makes an unreadable column readable (as INT64)
    colon = ":" in path.resolve().as_posix() or any(":" in f.name for f in files)
    if colon:
        reader = reader.options(**_RAW_LOCAL_FS)
    if fmt == "csv":
        # multiLine keeps quoted newlines; Spark's multiLine reader cannot open a path with a colon or a
        # (escaped) glob character, so such a path is read line by line
        odd = colon or _GLOB_CHARS.search(path.resolve().as_posix()) is not None
        reader = reader.option("header", "true").option("inferSchema", "true" if infer_types else "false") \
            .option("mode", "FAILFAST").option("multiLine", "false" if odd else "true") \
            .option("sep", csv_separator(files))
    try:
        df = reader.load(_spark_path(path))
        schema = df.schema
    except Exception as exc:
        if footers.no_spark_type:
            cols = ", ".join(f"{c!r} ({k})" for c, k in footers.no_spark_type.items())
            raise SourceError(f"cannot read {path}: Spark has no type for the Parquet column(s) {cols}",
                              hint="; ".join(sorted({f"{k}: {_NO_SPARK_TYPE[k]}" for k in footers.no_spark_type.values()}))) from exc
        from dqkit.errors import cluster_error  # a server that went away is not a bad file

        raise (cluster_error(exc) or read_failure(exc) or SourceError(
            f"cannot read {path} as {fmt}: {_first_line(exc)}",
            hint="check that the file is complete and in the format its extension says")) from exc
    if not schema.fields:
        empty = all(f.stat().st_size == 0 for f in files) if files else False
        raise SourceError(f"{path} has no columns" + (" (the file is empty: no header row)" if empty else ""),
                          hint="a table needs at least one column: remove the file, or write it "
                               + ("with its header row" if fmt == "csv" else "with its columns"))
    if fmt == "json" and _CORRUPT in schema.fieldNames():
        raise SourceError(
            f"{path} has lines that are not JSON objects"
            + (" (no line parsed)" if len(schema.fields) == 1 else ""),
            hint="dqkit reads JSON Lines (one JSON object per line); convert a multi-line JSON "
                 "document with, for example, jq -c '.[]' FILE")
    if footers.nulls or footers.nanos:
        nanos = {n: a for n, a in footers.nanos.items() if isinstance(schema[n].dataType, T.LongType)} \
            if footers.nanos else {}
        df = df.select(*[F.lit(None).alias(f.name) if f.name in footers.nulls
                         else _micros(f.name, nanos[f.name]) if f.name in nanos
                         else F.col(quote_ident(f.name)) for f in schema.fields])
        note = _nanos_note(path, files, nanos) if nanos else None
        if note:
            warnings.warn(note, SourceWarning, stacklevel=3)
    return df


class SourceWarning(DqkitWarning):
    """A table was read, but not exactly as stored (nanosecond timestamps truncated to microseconds)."""


#: Spark's switch that makes a Parquet nanosecond timestamp readable at all (as its INT64 value); dqkit
#: turns it on, for the session, only when a file holds such a column, then casts the value back.
NANOS_AS_LONG = "spark.sql.legacy.parquet.nanosAsLong"
#: rows of nanosecond columns scanned (with pyarrow) to tell whether truncation drops digits, at most
_MAX_NANOS_CHECK_ROWS = 5_000_000
#: Parquet logical types Spark cannot read, and what to do about each
_NO_SPARK_TYPE = {"UUID": "write it as a string (DuckDB: CAST(col AS VARCHAR))",
                  "Interval": "write it as a number of seconds or a string"}


@dataclass
class _Footers:
    """What the Parquet footers of a table say before Spark reads it (no Spark job)."""

    nulls: set[str] = field(default_factory=set)  # NULL-typed in every file
    nanos: dict[str, bool] = field(default_factory=dict)  # top-level ns timestamp -> isAdjustedToUTC
    nested_nanos: list[str] = field(default_factory=list)  # ns timestamps inside a struct or list
    no_spark_type: dict[str, str] = field(default_factory=dict)  # column path -> logical type


def _parquet_footers(files: list[Path]) -> _Footers:
    """Inspect the footers of ``files`` (at most ``_MAX_FOOTERS``; the first only when there are more:
    Spark infers a schema from one file too). Unreadable footers are left to Spark to report."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    out = _Footers()
    common: set[str] | None = None
    for f in files if len(files) <= _MAX_FOOTERS else files[:1]:
        try:
            pf = pq.ParquetFile(f)
            arrow = pf.schema_arrow
        except Exception:
            return _Footers()  # Spark reports a corrupt file with its own words
        nulls = {fld.name for fld in arrow if pa.types.is_null(fld.type)}
        common = nulls if common is None else common & nulls
        top = set(arrow.names)
        for i in range(len(pf.schema)):
            c = pf.schema.column(i)
            logical = json.loads(c.logical_type.to_json())
            kind = logical.get("Type")
            if kind == "Timestamp" and logical.get("timeUnit") == "nanoseconds":
                if c.path in top:
                    out.nanos[c.path] = bool(logical.get("isAdjustedToUTC"))
                elif c.path not in out.nested_nanos:
                    out.nested_nanos.append(c.path)
            elif kind in _NO_SPARK_TYPE:
                out.no_spark_type[c.path] = kind
    out.nulls = (common or set()) if len(files) <= _MAX_FOOTERS else set()
    return out


def _nanos_truncated(files: list[Path], columns: list[str]) -> dict[str, int] | None:
    """{column: values with a sub-microsecond part}, read with pyarrow; None when the files hold more
    than ``_MAX_NANOS_CHECK_ROWS`` rows (not checked)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        if sum(pq.ParquetFile(f).metadata.num_rows for f in files) > _MAX_NANOS_CHECK_ROWS:
            return None
        lost = dict.fromkeys(columns, 0)
        for f in files:
            for batch in pq.ParquetFile(f).iter_batches(columns=columns, batch_size=65536):
                for name in columns:
                    v = pc.fill_null(batch.column(name).cast(pa.int64()), 0)
                    lost[name] += pc.sum(pc.not_equal(pc.subtract(v, pc.multiply(pc.divide(v, 1000), 1000)),
                                                      0).cast(pa.int64())).as_py() or 0
        return lost
    except Exception:
        return None


def _micros(name: str, adjusted_to_utc: bool) -> Column:
    """The INT64 nanosecond value of ``name`` (read with ``NANOS_AS_LONG``) as a microsecond timestamp,
    floored (as pandas' ``dt.floor('us')``): TIMESTAMP for instants (isAdjustedToUTC), TIMESTAMP_NTZ for
    wall-clock times, as Spark types the same column stored in microseconds."""
    q = quote_ident(name)
    us = f"(({q} - pmod({q}, 1000)) div 1000)"
    if adjusted_to_utc:
        return F.expr(f"timestamp_micros({us})").alias(name)
    return F.expr(f"timestampadd(MICROSECOND, {us}, TIMESTAMP_NTZ'1970-01-01 00:00:00')").alias(name)


def _nanos_note(path: Path, files: list[Path], nanos: dict[str, bool]) -> str | None:
    """The warning for nanosecond columns read at microsecond precision, or None when no digit was lost."""
    lost = _nanos_truncated(files, sorted(nanos))
    if lost is None:
        return (f"{path}: the nanosecond timestamp column(s) {', '.join(map(repr, sorted(nanos)))} were read at "
                f"microsecond precision; sub-microsecond digits, if any, were truncated (too many rows to check)")
    lost = {c: n for c, n in lost.items() if n}
    if not lost:
        return None
    return (f"{path}: nanosecond timestamps read at microsecond precision; truncated "
            + ", ".join(f"{n} value(s) of {c!r}" for c, n in sorted(lost.items())))


#: field separators dqkit recognises in a CSV header line, in order of precedence
CSV_SEPARATORS = (",", ";", "\t", "|")


def _header_line(path: Path) -> str | None:
    """The first line of a (possibly compressed) CSV file, BOM removed; None when it cannot be read here."""
    import bz2
    import gzip
    import lzma

    opener = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}.get(path.suffix.lower())
    if opener is None and path.suffix.lower() != ".csv":
        return None  # another codec: Spark decompresses it, dqkit does not look inside
    try:
        with (opener or open)(path, "rt", encoding="utf-8-sig", errors="replace", newline="") as fh:
            return fh.readline(1 << 16).rstrip("\r\n")
    except OSError:
        return None


def _separators_outside_quotes(line: str) -> list[str]:
    found, quoted = [], False
    for ch in line:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in CSV_SEPARATORS and ch not in found:
            found.append(ch)
    return found


def csv_separator(files: list[Path]) -> str:
    """The field separator of a CSV table: the first of ``, ; TAB |`` (in that order) that occurs outside
    quotes in the header line; a comma when the header has none (one column). Every file of a folder must
    agree; no Spark job (the files' first lines only)."""
    seps: dict[str, Path] = {}
    for f in files[:_MAX_FOOTERS]:
        line = _header_line(f)
        if line is None:
            continue
        found = _separators_outside_quotes(line)
        sep = next((c for c in CSV_SEPARATORS if c in found), ",")
        seps.setdefault(sep, f)
    if len(seps) > 1:
        shown = ", ".join(f"{f.name}: {s!r}" for s, f in seps.items())
        raise SourceError(f"the CSV files of one table use different separators ({shown})",
                          hint="write every file of a table with the same separator")
    return next(iter(seps), ",")


def _first_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip() and not ln.strip().startswith("at ")]
    text = next((ln for ln in lines if "[" in ln and "]" in ln), lines[0] if lines else type(exc).__name__)
    return text[:300]


_FAILED_READ = re.compile(r"FAILED_READ_FILE[.\w]*\]\s*Encountered error while reading file ([^\n]+?)\.(?=\s|$)")


def read_failure(exc: BaseException) -> SourceError | None:
    """The ``SourceError`` for a Spark error raised while reading a file, or None for other errors.

    Spark reports a corrupt file or a malformed CSV row (FAILFAST) only when a job reads it; this
    names the file, and for a malformed CSV row also the line (found by scanning the file).
    """
    from dqkit.errors import cluster_error

    if cluster_error(exc) is not None:
        return None
    text = str(exc)
    m = _FAILED_READ.search(text)
    if m is None:
        return None
    where = unquote(re.sub(r"^file:(//)?", "", m.group(1)))
    if "MALFORMED_RECORD" in text or "Malformed" in text:
        line = _ragged_csv_line(Path(where)) if _split_name(Path(where).name) else None
        at = f", line {line[0]}: {line[1]} fields where the header has {line[2]}" if line else ""
        return SourceError(f"{where} has a malformed row{at}",
                           hint="every row of a CSV file must have as many fields as its header; "
                                "dqkit does not drop the extra fields as Spark would by default")
    return SourceError(f"cannot read {where}: {_first_line(exc)}",
                       hint="the file is corrupt or incomplete; restore or rewrite it")


def _ragged_csv_line(path: Path) -> tuple[int, int, int] | None:
    """(line number, fields, header fields) of the first CSV row whose width differs from the header."""
    split = _split_name(path.name)
    if split is None or split[1] != "csv" or not path.name.lower().endswith(".csv") or not path.is_file():
        return None
    try:
        sep = csv_separator([path])
        with open(path, newline="", encoding="utf-8-sig", errors="replace") as fh:
            rows = csv.reader(fh, delimiter=sep, escapechar="\\")
            header = next(rows, None)
            if header is None:
                return None
            for row in rows:
                if row and len(row) != len(header):
                    return rows.line_num, len(row), len(header)
    except (OSError, csv.Error):
        return None
    return None


def read_path(path: str | os.PathLike, spark: SparkSession | None = None, *, infer_types: bool = True) -> DataFrame:
    """Read one table from a Parquet/CSV/JSON file or a folder (read whole: one format throughout).
    ``infer_types=False`` reads every CSV column as text (a postcode such as 0800 keeps its zero);
    typed formats (Parquet, JSON) keep their types either way."""
    spark = spark or get_spark()
    p = Path(path)
    if not p.exists():
        raise SourceError(f"no such file or folder: {os.fspath(path)!s}",
                          hint="check the path; tables are Parquet, CSV or JSON files or folders of them")
    if p.is_dir():
        files = _data_files(p)
        return _load(spark, _folder_format(p, files), p, files, infer_types)
    split = _split_name(p.name)
    if split is None:
        raise SourceError(f"cannot tell the format of {p}: expected a .parquet, .csv or .json file "
                          f"or a folder of them")
    return _load(spark, split[1], p, [p], infer_types)


def read_table(source: TableSource, spark: SparkSession | None = None, *, infer_types: bool = True) -> DataFrame:
    """Resolve a table source to a DataFrame (lazily: no data is read here). ``infer_types=False``:
    CSV columns are read as text instead of inferred (see ``read_path``)."""
    if _is_dataframe(source):
        return source  # type: ignore[return-value]
    spark = spark or get_spark()
    text = os.fspath(source)
    if text.startswith(CATALOG_PREFIX):
        name = text[len(CATALOG_PREFIX):]
        if not spark.catalog.tableExists(name):
            raise UnknownTableError(f"catalog table {name!r} does not exist",
                                    hint="list tables with spark.catalog.listTables(DB)")
        return spark.table(name)
    return read_path(text, spark, infer_types=infer_types)


def read_database(source: DatabaseSource, spark: SparkSession | None = None) -> dict[str, DataFrame]:
    """Resolve a database source to an ordered {table name: DataFrame} (sorted by name)."""
    if isinstance(source, Mapping):
        tables = {str(name): read_table(t, spark) for name, t in source.items()}
        return dict(sorted(tables.items()))
    if _is_dataframe(source):
        raise SourceError("a single DataFrame is not a database",
                          hint="pass a dict such as {'users': df}")
    spark = spark or get_spark()
    text = os.fspath(source)
    if text.startswith(CATALOG_PREFIX):
        db = text[len(CATALOG_PREFIX):]
        if not spark.catalog.databaseExists(db):
            raise SourceError(f"catalog database {db!r} does not exist")
        names = sorted(t.name for t in spark.catalog.listTables(db) if not t.isTemporary)
        return {n: spark.table(f"{db}.{n}") for n in names}
    path = Path(text)
    if not path.exists():
        raise SourceError(f"no such database folder or table path: {text}", hint=LAYOUT_HINT)
    if not path.is_dir():
        return {_table_name(path): read_path(path, spark)}
    children = folder_tables(path)
    if children is None:
        return {_table_name(path): read_path(path, spark)}
    tables: dict[str, DataFrame] = {}
    for child in children:
        name = _table_name(child)
        if name in tables:
            raise SourceError(f"two entries of {path} give the table name {name!r}",
                              hint="keep one file or folder per table")
        tables[name] = read_path(child, spark)
    if not tables:
        raise SourceError(f"the folder {path} holds no tables (Parquet, CSV or JSON files or folders of them)",
                          hint=LAYOUT_HINT)
    return tables


def _table_name(path: Path) -> str:
    split = _split_name(path.name)
    return split[0] if split else path.name


def describe(source: DatabaseSource | TableSource) -> str:
    """A short human label for a source (for reports); never includes data values."""
    if isinstance(source, Mapping):
        return "in-memory tables: " + ", ".join(sorted(map(str, source)))
    if _is_dataframe(source):
        return "DataFrame"
    return os.fspath(source)
