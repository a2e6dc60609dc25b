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
  instead of Spark's default of silently dropping the extra fields. Both versions of a CSV database
  must infer the same types; dqkit reports any schema difference instead of guessing (a header-only
  CSV is compared as an empty table: see ``dqkit.delta.plan_tables``).
* JSON must be JSON Lines (one object per line); a file with malformed lines is a ``SourceError``.
* A Parquet column of Parquet's NULL type (an all-NULL column as pandas/pyarrow write it) is read as
  a NULL-typed (``void``) column, which is compatible with any type of the other version.
* A corrupt or unreadable file is a ``SourceError`` naming the file, whether Spark notices it while
  reading the schema or in the first job (``read_failure`` maps the latter).
* File names with glob characters (``[ ] { } * ?``) or a colon are read literally.
"""
from __future__ import annotations

import csv
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Union
from urllib.parse import unquote

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from dqkit.errors import SourceError, UnknownTableError
from dqkit.session import get_spark

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
    if ":" in path.resolve().as_posix() or any(":" in f.name for f in files):
        reader = reader.options(**_RAW_LOCAL_FS)
    if fmt == "csv":
        reader = reader.option("header", "true").option("inferSchema", "true" if infer_types else "false") \
            .option("mode", "FAILFAST")
    try:
        df = reader.load(_spark_path(path))
        schema = df.schema
    except Exception as exc:
        from dqkit.errors import cluster_error  # a server that went away is not a bad file

        raise (cluster_error(exc) or read_failure(exc) or SourceError(
            f"cannot read {path} as {fmt}: {_first_line(exc)}",
            hint="check that the file is complete and in the format its extension says")) from exc
    if fmt == "json" and _CORRUPT in schema.fieldNames():
        raise SourceError(
            f"{path} has lines that are not JSON objects"
            + (" (no line parsed)" if len(schema.fields) == 1 else ""),
            hint="dqkit reads JSON Lines (one JSON object per line); convert a multi-line JSON "
                 "document with, for example, jq -c '.[]' FILE")
    if fmt == "parquet":
        nulls = _null_typed_columns(files)
        if nulls:
            df = df.select(*[F.lit(None).alias(f.name) if f.name in nulls else F.col(_quote(f.name))
                             for f in schema.fields])
    return df


def _null_typed_columns(files: list[Path]) -> set[str]:
    """Columns of Parquet's NULL type in every file (read from the footers: no Spark job)."""
    if not files or len(files) > _MAX_FOOTERS:
        return set()
    import pyarrow as pa
    import pyarrow.parquet as pq

    common: set[str] | None = None
    for f in files:
        try:
            schema = pq.read_schema(f)
        except Exception:
            return set()  # Spark read it; leave its types alone
        nulls = {field.name for field in schema if pa.types.is_null(field.type)}
        common = nulls if common is None else common & nulls
        if not common:
            return set()
    return common or set()


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


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
        with open(path, newline="", encoding="utf-8", errors="replace") as fh:
            rows = csv.reader(fh, escapechar="\\")
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
