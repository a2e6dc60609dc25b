"""Delta's configuration, checked before any Spark job: which tables and columns are compared, keys,
exclusions, and which mismatched column types can be reconciled (``TablePlan``, ``plan_tables``)."""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.delta._names import RESERVED
from dqkit.errors import ParameterError, ReservedColumnError, SchemaMismatchError, UnknownColumnError, UnknownTableError
from dqkit.checks.params import parse_keys
from dqkit.io.sources import read_failure
from dqkit.runtime.sparkutil import quote_ident as _q

@dataclass(frozen=True)
class TablePlan:
    """What will be compared for one table: its compared columns and optional key."""

    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...] | None
    types: Mapping[str, T.DataType]
    #: columns of the old (new) version read as typed NULLs: NULL-typed columns, or every
    #: mismatched column of a version without rows, take the other version's type
    retype_old: Mapping[str, T.DataType] = field(default_factory=dict)
    retype_new: Mapping[str, T.DataType] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def _as_list(value: str | Iterable[str] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v) for v in value]


def _normalise_keys(keys: Mapping[str, str | Sequence[str]] | str | Sequence[str] | None
                    ) -> dict[str, tuple[str, ...]]:
    """Keys in any form ``dqkit.checks.params.parse_keys`` reads -> {table: (columns)}."""
    return {t: tuple(c) for t, c in parse_keys(keys).items()}


def _split_excludes(exclude: Iterable[str]) -> tuple[set[str], dict[str, set[str]]]:
    """``TABLE.COL`` excludes a column, a bare ``TABLE`` excludes a whole table."""
    tables: set[str] = set()
    cols: dict[str, set[str]] = {}
    for item in exclude:
        item = str(item).strip()
        if not item:
            continue
        if "." in item:
            table, col = item.split(".", 1)
            cols.setdefault(table, set()).add(col)
        else:
            tables.add(item)
    return tables, cols


def _schema_problems(name: str, old: T.StructType, new: T.StructType) -> list[str]:
    o = {f.name: f.dataType for f in old.fields}
    n = {f.name: f.dataType for f in new.fields}
    problems = []
    for col in o.keys() - n.keys():
        problems.append(f"{name}.{col} ({o[col].simpleString()}) is only in the old version")
    for col in n.keys() - o.keys():
        problems.append(f"{name}.{col} ({n[col].simpleString()}) is only in the new version")
    for col in sorted(o.keys() & n.keys()):
        if o[col] != n[col]:
            problems.append(f"{name}.{col} is {o[col].simpleString()} in the old version "
                            f"but {n[col].simpleString()} in the new one")
    return sorted(problems)


def _reconcile(name: str, old: DataFrame, new: DataFrame, o: T.StructType, n: T.StructType
               ) -> tuple[dict[str, T.DataType], dict[str, T.DataType], list[str]]:
    """Which mismatched columns can take the other version's type, and why.

    A NULL-typed (``void``) column holds only NULLs, so it is compatible with any type. When the
    column names agree but types still differ and one version has no rows (a header-only CSV infers
    every column as string), that version takes the populated one's types: 0 rows against N is a real
    comparison. Only this case runs a (one-row) Spark job, and only for a table whose types differ.
    """
    ot = {f.name: f.dataType for f in o.fields}
    nt = {f.name: f.dataType for f in n.fields}
    differ = [c for c in ot if c in nt and ot[c] != nt[c]]
    retype_old = {c: nt[c] for c in differ if isinstance(ot[c], T.NullType)}
    retype_new = {c: ot[c] for c in differ if isinstance(nt[c], T.NullType) and c not in retype_old}
    notes = []
    if retype_old or retype_new:
        notes.append(f"table {name}: the NULL-typed column(s) {', '.join(sorted({*retype_old, *retype_new}))} "
                     f"take the other version's type")
    rest = [c for c in differ if c not in retype_old and c not in retype_new]
    if rest and ot.keys() == nt.keys():
        old_empty, new_empty = _is_empty(old), _is_empty(new)
        if old_empty:
            retype_old.update({c: nt[c] for c in rest})
            notes.append(f"table {name}: the old version has no rows, so its columns take the new version's types")
        elif new_empty:
            retype_new.update({c: ot[c] for c in rest})
            notes.append(f"table {name}: the new version has no rows, so its columns take the old version's types")
    return retype_old, retype_new, notes


def _is_empty(df: DataFrame) -> bool:
    try:
        return df.isEmpty()
    except Exception as exc:
        failure = read_failure(exc)
        if failure is not None:
            raise failure from exc
        raise


def _retyped_schema(schema: T.StructType, retype: Mapping[str, T.DataType]) -> T.StructType:
    return T.StructType([T.StructField(f.name, retype.get(f.name, f.dataType), f.nullable) for f in schema.fields])


def retyped(df: DataFrame, retype: Mapping[str, T.DataType]) -> DataFrame:
    """``df`` with the ``retype`` columns read as NULLs of the given types (see ``TablePlan``)."""
    if not retype:
        return df
    return df.select(*[F.lit(None).cast(retype[f.name]).alias(f.name) if f.name in retype else F.col(_q(f.name))
                       for f in df.schema.fields])


def plan_tables(
    old: Mapping[str, DataFrame],
    new: Mapping[str, DataFrame],
    tables: Iterable[str] | None,
    exclude: Iterable[str],
    columns: Mapping[str, Sequence[str]] | None,
    keys: Mapping[str, tuple[str, ...]],
) -> tuple[list[TablePlan], list[str], list[str]]:
    """Validate the selection against both schemas; return the plans and the one-sided tables."""
    excluded_tables, excluded_cols = _split_excludes(exclude)
    include = _as_list(tables) if tables is not None else None
    all_names = set(old) | set(new)
    for name in (include or []):
        if name not in all_names:
            raise UnknownTableError(f"table {name!r} is in neither version",
                                    hint=f"tables found: {', '.join(sorted(all_names)) or 'none'}")
    for name in sorted(excluded_tables) + list(excluded_cols) + list(keys) + list(columns or {}):
        if name not in all_names:
            raise UnknownTableError(f"table {name!r} (named in an exclusion, key or column list) is in neither version",
                                    hint=f"tables found: {', '.join(sorted(all_names)) or 'none'}")

    def selected(name: str) -> bool:
        return (include is None or name in include) and name not in excluded_tables

    only_old = sorted(n for n in old if n not in new and selected(n))
    only_new = sorted(n for n in new if n not in old and selected(n))
    plans: list[TablePlan] = []
    problems: list[str] = []
    for name in sorted(set(old) & set(new)):
        if not selected(name):
            continue
        o_schema, n_schema = old[name].schema, new[name].schema
        drop = excluded_cols.get(name, set())
        keep = list(columns[name]) if columns and name in columns else None
        names_old = [f.name for f in o_schema.fields]
        for col in sorted(drop | set(keep or [])):
            if col not in names_old and col not in n_schema.fieldNames():
                raise UnknownColumnError(f"column {name}.{col} does not exist",
                                         hint=f"columns of {name}: {', '.join(names_old)}")
        compared = [c for c in names_old if c not in drop and (keep is None or c in keep)]
        sub_old = T.StructType([f for f in o_schema.fields if f.name in compared])
        sub_new = T.StructType([f for f in n_schema.fields if f.name in compared or
                                (f.name not in drop and keep is None and f.name not in names_old)])
        found = _schema_problems(name, sub_old, sub_new)
        retype_old: dict[str, T.DataType] = {}
        retype_new: dict[str, T.DataType] = {}
        notes: list[str] = []
        if found:
            retype_old, retype_new, notes = _reconcile(name, old[name], new[name], sub_old, sub_new)
            sub_old, sub_new = _retyped_schema(sub_old, retype_old), _retyped_schema(sub_new, retype_new)
            found = _schema_problems(name, sub_old, sub_new)
        if found:
            problems.extend(found)
            continue
        clash = [c for c in compared if c in RESERVED or c.startswith("_dq_")]
        if clash:
            raise ReservedColumnError(
                f"table {name} has a column named {clash[0]!r}, which dqkit adds to its outputs",
                hint=f"rename it, or exclude it with --exclude {name}.{clash[0]}")
        key = keys.get(name)
        if key is not None:
            for col in key:
                if col not in compared:
                    why = "is excluded" if col in drop or (keep is not None and col not in keep) else "does not exist"
                    raise UnknownColumnError(f"key column {name}.{col} {why}",
                                             hint=f"compared columns of {name}: {', '.join(compared)}")
        if not compared:
            raise ParameterError(f"every column of table {name} is excluded", hint=f"exclude the table instead: {name}")
        types = {f.name: f.dataType for f in sub_old.fields}
        plans.append(TablePlan(name, tuple(compared), key, types, retype_old, retype_new, tuple(notes)))
    if problems:
        raise SchemaMismatchError("the two versions have different schemas:\n  " + "\n  ".join(problems),
                                  hint="compare only versions with the same columns and types, "
                                       "or exclude the differing columns (--exclude TABLE.COL)")
    return plans, only_old, only_new
