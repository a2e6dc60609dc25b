"""``dqkit delta``'s checks before Spark starts, kept in the delta package beside the schema delta they
use: the two versions exist and hold the tables, keys and columns named, and their schemas are read
without Spark (column types from Parquet footers with pyarrow, column names from CSV headers):
``--rename`` names a dropped and an added column, ``--tolerance`` a numeric column, and
``--schema-changes fail`` refuses any schema change (``dqkit.delta.schema``). Nothing here imports pyspark."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dqkit.checks.preflight import (_data_files, _split, _table_format, check_columns, check_number, check_out,
                                    database_tables, table_columns)
from dqkit.errors import ParameterError, UnknownColumnError, UnknownTableError


def table_types(path: Path | None) -> dict[str, str | None] | None:
    """{column: Spark type name} of a table file or folder, read without Spark: the Parquet footer's
    types (None for a type Spark may read otherwise), or a CSV header's names (types None: Spark infers
    them from the data). None when the columns cannot be known without Spark."""
    if path is None:
        return None
    files = [path] if path.is_file() else _data_files(path)
    if files and _table_format(files[0]) == "parquet":
        import pyarrow.parquet as pq

        try:
            schema = pq.read_schema(files[0])
        except Exception:  # noqa: BLE001 - table_columns says why, with the file's name
            table_columns(path)
            return None
        return {f.name: _arrow_type(f.type) for f in schema}
    columns = table_columns(path)
    return None if columns is None else {c: None for c in columns}


def _arrow_type(t: Any) -> str | None:
    """The Spark type name of a Parquet column's Arrow type, where the two agree; None otherwise."""
    import pyarrow as pa

    simple = [(pa.types.is_int8, "tinyint"), (pa.types.is_int16, "smallint"), (pa.types.is_int32, "int"),
              (pa.types.is_int64, "bigint"), (pa.types.is_float32, "float"), (pa.types.is_float64, "double"),
              (pa.types.is_boolean, "boolean"), (pa.types.is_date32, "date"), (pa.types.is_null, "void")]
    for test, name in simple:
        if test(t):
            return name
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "binary"
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    return None  # timestamps, nested and unsigned types: Spark's reading depends on its options


def delta_schemas(dbs: Mapping[str, Mapping[str, Path] | None], tables: Any, exclude: Any,
                   renames: Mapping[str, Mapping[str, str]], tolerances: Mapping[str, Mapping[str, Any]],
                   schema_changes: str) -> None:
    """The schema delta of ``dqkit delta``'s two versions from footers and headers (no Spark): renames
    name a dropped and an added column, tolerances numeric columns, and ``--schema-changes fail``
    refuses any change. Tables whose columns only Spark can read are left to the kernel."""
    from dqkit.delta import schema as sd

    old_db, new_db = dbs["the old version"], dbs["the new version"]
    if old_db is None or new_db is None:
        return
    include = _split(tables) or None
    excluded_tables = {e for e in _split(exclude) if "." not in e}
    excluded: dict[str, list[str]] = {}
    for item in _split(exclude):
        table, _, column = item.partition(".")
        if column:
            excluded.setdefault(table, []).append(column)
    for table in (*renames, *tolerances):
        if table not in old_db or table not in new_db:
            where = "either version" if table not in old_db and table not in new_db else \
                ("the new version" if table in old_db else "the old version")
            raise UnknownTableError(f"--rename/--tolerance: no table {table!r} in {where}",
                                    hint=f"tables in both versions: {', '.join(sorted(set(old_db) & set(new_db)))}")

    def chosen(name: str) -> bool:
        return (include is None or name in include) and name not in excluded_tables

    old_types = {n: table_types(p) for n, p in old_db.items() if chosen(n)}
    new_types = {n: table_types(p) for n, p in new_db.items() if chosen(n)}
    delta = sd.schema_delta(old_types, new_types, renames, excluded)
    for table, columns in tolerances.items():
        o_types, n_types = old_types.get(table), new_types.get(table)
        if o_types is None or n_types is None:
            continue
        mapping = renames.get(table, {})
        back = {n: o for o, n in mapping.items()}
        # the type a column is compared as: a retyped column's common type (None: unknown)
        compared = {c: sd.compare_as(o_types.get(back.get(c, c)), t)[0] if back.get(c, c) in o_types else t
                    for c, t in n_types.items()}
        sd.check_tolerance_columns(table, {mapping.get(c, c): t for c, t in columns.items()}, compared)
    if schema_changes not in sd.SCHEMA_CHANGES:
        raise ParameterError(f"--schema-changes must be one of {', '.join(sd.SCHEMA_CHANGES)}, not {schema_changes!r}")
    if schema_changes == "fail":
        sd.refuse_changes(delta)


def delta(old: Any, new: Any, *, keys: Any = None, tables: Any = None, exclude: Any = None,
          abs_tol: Any = 0.0, rel_tol: Any = 0.0, sample_rows: Any = 10, out: Any = None,
          overwrite: bool = False, renames: Any = None, tolerances: Any = None,
          schema_changes: str = "report") -> None:
    """``dqkit delta``: both versions exist, keys/tables/exclusions name what is there, tolerances >= 0
    (the stages are the declaration's choices, ``dqkit.delta._names.STAGES``); renames and per-column
    tolerances read and name columns that are there (a tolerance a number column, where the footer
    says), and with ``schema_changes="fail"`` the schemas read from footers and headers are the same
    (``dqkit.delta.schema``)."""
    from dqkit.checks.params import parse_keys
    from dqkit.delta import schema as sd

    rename_map, tolerance_map = sd.parse_renames(renames), sd.parse_tolerances(tolerances)

    dbs = {"the old version": database_tables(old, "the old version"),
           "the new version": database_tables(new, "the new version")}
    check_out(out, [old, new], overwrite)
    check_number(abs_tol, "--abs-tol", low=0)
    check_number(rel_tol, "--rel-tol", low=0)
    check_number(sample_rows, "--sample-rows", low=0, integer=True)
    known = [db for db in dbs.values() if db is not None]
    names = sorted(set().union(*known)) if known else []
    for table in _split(tables):
        if known and all(table not in db for db in known):
            raise UnknownTableError(f"--tables: no table {table!r} in either version", hint=f"tables: {', '.join(names)}")
    for item in _split(exclude):
        table, _, column = item.partition(".")
        present = [db[table] for db in known if table in db]
        if known and not present and item not in names:
            raise UnknownTableError(f"--exclude: no table {table!r} in either version", hint=f"tables: {', '.join(names)}")
        if column and present:
            cols = [table_columns(p) for p in present]
            if all(c is not None and column not in c for c in cols):
                check_columns([column], cols[0], f"--exclude {item}")
    for table, columns in parse_keys(keys).items():
        present = [db[table] for db in known if table in db]
        if known and not present:
            raise UnknownTableError(f"--key {table}=...: no table {table!r} in either version",
                                    hint=f"tables: {', '.join(names)}")
        for path in present:
            cols = table_columns(path)
            missing = [c for c in columns if cols is not None and c not in cols]
            if missing:
                raise UnknownColumnError(f"--key: the key column {table}.{missing[0]} does not exist",
                                         hint=f"columns of {table}: {', '.join(cols or [])}")
    delta_schemas(dbs, tables, exclude, rename_map, tolerance_map, schema_changes)
