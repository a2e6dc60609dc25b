"""Tables in, by name.

A *table source* is one of: a Spark DataFrame; a Spark catalog table (``catalog:db.table``); a Parquet,
CSV or JSON path. A *database source* is one of: a dict of name -> DataFrame (or table source); a Spark
catalog database (``catalog:DBNAME``); a folder holding one table per Parquet/CSV/JSON file or per
Parquet subfolder (the table name is the file or folder name without its extension); a single table
path (a one-table database named after the file).

CSV is read with a header row and inferred types, so both versions of a CSV database must infer the
same types; dqkit reports any schema difference instead of guessing.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Union

from pyspark.sql import DataFrame, SparkSession

from dqkit.errors import SourceError, UnknownTableError
from dqkit.session import get_spark

TableSource = Union[DataFrame, str, os.PathLike]
DatabaseSource = Union[Mapping[str, TableSource], str, os.PathLike]

CATALOG_PREFIX = "catalog:"
_FORMATS = {".parquet": "parquet", ".csv": "csv", ".json": "json", ".jsonl": "json", ".ndjson": "json"}


def _is_dataframe(obj: object) -> bool:
    # Classic and Connect DataFrames are different classes; both have these.
    return hasattr(obj, "schema") and hasattr(obj, "groupBy") and hasattr(obj, "select")


def _format_of(path: Path) -> str | None:
    if path.is_dir():
        if (path / "_SUCCESS").exists() or any(p.suffix == ".parquet" for p in path.iterdir()):
            return "parquet"
        return None
    return _FORMATS.get(path.suffix.lower())


def read_path(path: str | os.PathLike, spark: SparkSession | None = None) -> DataFrame:
    """Read one table from a Parquet/CSV/JSON file or a Parquet folder."""
    spark = spark or get_spark()
    p = Path(path)
    if not p.exists():
        raise SourceError(f"no such file or folder: {os.fspath(path)!s}",
                          hint="check the path; tables are Parquet, CSV or JSON files or Parquet folders")
    fmt = _format_of(p)
    if fmt is None:
        raise SourceError(f"cannot tell the format of {p}: expected a .parquet, .csv or .json file "
                          f"or a folder of Parquet files")
    reader = spark.read
    if fmt == "csv":
        reader = reader.option("header", "true").option("inferSchema", "true")
    return reader.format(fmt).load(p.resolve().as_posix())


def read_table(source: TableSource, spark: SparkSession | None = None) -> DataFrame:
    """Resolve a table source to a DataFrame (lazily: no data is read here)."""
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
    return read_path(text, spark)


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
        raise SourceError(f"no such database folder or table path: {text}",
                          hint="a database is a folder with one Parquet/CSV/JSON file or Parquet folder per table")
    if not path.is_dir() or _format_of(path) == "parquet" and not _has_table_children(path):
        return {_table_name(path): read_path(path, spark)}
    tables: dict[str, DataFrame] = {}
    for child in sorted(path.iterdir()):
        if child.name.startswith((".", "_")) or _format_of(child) is None:
            continue
        name = _table_name(child)
        if name in tables:
            raise SourceError(f"two files in {path} give the table name {name!r}",
                              hint="keep one file or folder per table")
        tables[name] = read_path(child, spark)
    if not tables:
        raise SourceError(f"the folder {path} holds no tables (Parquet, CSV or JSON files or Parquet folders)")
    return tables


def _has_table_children(path: Path) -> bool:
    return any(c.is_dir() and _format_of(c) == "parquet" for c in path.iterdir())


def _table_name(path: Path) -> str:
    name = path.name
    for suffix in _FORMATS:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def describe(source: DatabaseSource | TableSource) -> str:
    """A short human label for a source (for reports); never includes data values."""
    if isinstance(source, Mapping):
        return "in-memory tables: " + ", ".join(sorted(map(str, source)))
    if _is_dataframe(source):
        return "DataFrame"
    return os.fspath(source)
