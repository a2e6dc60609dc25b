"""Delta's configuration, checked before any Spark job: which tables and columns are compared, keys,
exclusions, and which mismatched column types can be reconciled (``TablePlan``, ``plan_tables``)."""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.delta._names import RESERVED
from dqkit.delta.schema import SchemaDelta, TableSchemaDelta, compare_as, refuse_changes, table_schema_delta
from dqkit.errors import (
    ParameterError, ReservedColumnError, UnknownColumnError, UnknownTableError, UnsupportedTypeError,
)
from dqkit.checks.params import parse_keys
from dqkit.io.sources import read_failure
from dqkit.runtime.sparkutil import quote_ident as _q

@dataclass(frozen=True)
class TablePlan:
    """What will be compared for one table: its compared columns and optional key.

    The compared columns carry their name in the new version; ``old_names`` maps a renamed one to
    its name in the old version. ``types`` are the types both versions are read as: a widened
    numeric column is cast to the common type (``cast_old``/``cast_new``: compared by value), another
    retyped column to string (compared as text), so the fingerprints of unchanged rows match."""

    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...] | None
    types: Mapping[str, T.DataType]
    #: columns of the old (new) version read as typed NULLs: NULL-typed columns, or every
    #: mismatched column of a version without rows, take the other version's type
    retype_old: Mapping[str, T.DataType] = field(default_factory=dict)
    retype_new: Mapping[str, T.DataType] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    #: compared column (new name) -> its name in the old version, for renamed columns
    old_names: Mapping[str, str] = field(default_factory=dict)
    #: columns cast to their compared type on read, per version (retyped columns)
    cast_old: Mapping[str, T.DataType] = field(default_factory=dict)
    cast_new: Mapping[str, T.DataType] = field(default_factory=dict)
    #: per-column tolerances of column validation: column -> (abs_tol, rel_tol)
    tolerances: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def aligned(self) -> bool:
        """Whether either version must be projected (renamed, cast or NULL-typed columns)."""
        return bool(self.old_names or self.cast_old or self.cast_new or self.retype_old or self.retype_new)


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


def _reconcile(name: str, old: DataFrame, new: DataFrame, o: T.StructType, n: T.StructType,
               same_names: bool = True) -> tuple[dict[str, T.DataType], dict[str, T.DataType], list[str]]:
    """Which mismatched columns can take the other version's type, and why.

    A NULL-typed (``void``) column holds only NULLs, so it is compatible with any type. When the
    column names agree but types still differ, and one version has no rows and strings for every
    mismatched column (a header-only CSV infers every column as string), that version takes the
    populated one's types: 0 rows against N is a real comparison. Only this case runs a (one-row) Spark job, and only for a table whose types differ.
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
    # a version without rows whose mismatched columns are all strings: a header-only CSV, whose types
    # Spark could not infer (a typed empty table keeps its types: a change of them is a schema change)
    old_strings = bool(rest) and all(isinstance(ot[c], T.StringType) for c in rest)
    new_strings = bool(rest) and all(isinstance(nt[c], T.StringType) for c in rest)
    if (old_strings or new_strings) and same_names and ot.keys() == nt.keys():
        old_empty = old_strings and _is_empty(old)
        new_empty = not old_empty and new_strings and _is_empty(new)
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


def retyped(df: DataFrame, retype: Mapping[str, T.DataType]) -> DataFrame:
    """``df`` with the ``retype`` columns read as NULLs of the given types (see ``TablePlan``)."""
    if not retype:
        return df
    return df.select(*[F.lit(None).cast(retype[f.name]).alias(f.name) if f.name in retype else F.col(_q(f.name))
                       for f in df.schema.fields])


def aligned_frame(df: DataFrame, plan: TablePlan, side: str) -> DataFrame:
    """One version of a table as it is compared: the compared columns under their new names, cast to
    the compared types (``df`` itself when the plan needs no projection)."""
    if not plan.aligned:
        return df
    old = side == "old"
    retype = plan.retype_old if old else plan.retype_new
    cast = plan.cast_old if old else plan.cast_new
    out = []
    for c in plan.columns:
        src = plan.old_names.get(c, c) if old else c
        if c in retype:
            out.append(F.lit(None).cast(retype[c]).alias(c))
        elif c in cast:
            out.append(F.col(_q(src)).cast(cast[c]).alias(c))
        else:
            out.append(F.col(_q(src)).alias(c))
    return df.select(*out)


_SIMPLE_TYPES = {"tinyint": T.ByteType(), "smallint": T.ShortType(), "int": T.IntegerType(),
                 "bigint": T.LongType(), "float": T.FloatType(), "double": T.DoubleType(),
                 "string": T.StringType()}


def _spark_type(name: str) -> T.DataType:
    """A compared type named by ``dqkit.delta.schema.compare_as`` (a number type or string)."""
    if name in _SIMPLE_TYPES:
        return _SIMPLE_TYPES[name]
    precision, scale = name[len("decimal("):-1].split(",")
    return T.DecimalType(int(precision), int(scale))


def plan_tables(
    old: Mapping[str, DataFrame],
    new: Mapping[str, DataFrame],
    tables: Iterable[str] | None,
    exclude: Iterable[str],
    columns: Mapping[str, Sequence[str]] | None,
    keys: Mapping[str, tuple[str, ...]],
    renames: Mapping[str, Mapping[str, str]] | None = None,
    tolerances: Mapping[str, Mapping[str, Any]] | None = None,
    schema_changes: str = "report",
) -> tuple[list[TablePlan], list[str], list[str], SchemaDelta]:
    """Validate the selection against both schemas; return the plans, the one-sided tables and the
    schema delta (``dqkit.delta.schema``). ``renames`` maps {table: {old column: new column}};
    ``tolerances`` {table: {column: Tolerance}}; ``schema_changes="fail"`` refuses any schema change."""
    renames, tolerances = renames or {}, tolerances or {}
    excluded_tables, excluded_cols = _split_excludes(exclude)
    include = _as_list(tables) if tables is not None else None
    all_names = set(old) | set(new)
    for name in (include or []):
        if name not in all_names:
            raise UnknownTableError(f"table {name!r} is in neither version",
                                    hint=f"tables found: {', '.join(sorted(all_names)) or 'none'}")
    for name in (sorted(excluded_tables) + list(excluded_cols) + list(keys) + list(columns or {})
                 + list(renames) + list(tolerances)):
        if name not in all_names:
            raise UnknownTableError(f"table {name!r} (named in an exclusion, key, column list, rename or "
                                    f"tolerance) is in neither version",
                                    hint=f"tables found: {', '.join(sorted(all_names)) or 'none'}")

    def selected(name: str) -> bool:
        return (include is None or name in include) and name not in excluded_tables

    only_old = sorted(n for n in old if n not in new and selected(n))
    only_new = sorted(n for n in new if n not in old and selected(n))
    for name in sorted(set(renames) | set(tolerances)):
        if name in only_old or name in only_new:
            raise UnknownTableError(f"table {name!r} (named in a rename or tolerance) is only in the "
                                    f"{'old' if name in only_old else 'new'} version",
                                    hint="renames and tolerances apply to tables in both versions")
    plans: list[TablePlan] = []
    deltas: dict[str, TableSchemaDelta] = {n: TableSchemaDelta(n, "dropped") for n in only_old}
    deltas.update({n: TableSchemaDelta(n, "added") for n in only_new})
    for name in sorted(set(old) & set(new)):
        if not selected(name):
            continue
        plan, table_delta = _plan_table(name, old[name], new[name], excluded_cols.get(name, set()),
                                        list(columns[name]) if columns and name in columns else None,
                                        keys.get(name), dict(renames.get(name, {})), tolerances.get(name, {}))
        plans.append(plan)
        deltas[name] = table_delta
    schema = SchemaDelta({n: deltas[n] for n in sorted(deltas)})
    if schema_changes == "fail":
        refuse_changes(schema)
    return plans, only_old, only_new, schema


def _plan_table(name: str, old_df: DataFrame, new_df: DataFrame, drop: set[str], keep: list[str] | None,
                key: tuple[str, ...] | None, renames: dict[str, str], tolerances: Mapping[str, Any]
                ) -> tuple[TablePlan, TableSchemaDelta]:
    """One table's plan and schema delta (see ``plan_tables``)."""
    o_schema, n_schema = old_df.schema, new_df.schema
    names_old, names_new = o_schema.fieldNames(), n_schema.fieldNames()
    for col in sorted(drop | set(keep or [])):
        if col not in names_old and col not in names_new:
            raise UnknownColumnError(f"column {name}.{col} does not exist",
                                     hint=f"columns of {name}: {', '.join(names_old)}")
    # a column named by its old name in --exclude or --columns follows its rename
    back = {n: o for o, n in renames.items()}
    skip = drop | {renames.get(c, c) for c in drop}
    if keep is not None:
        wanted = {renames.get(c, c) for c in keep}
        skip |= {c for c in names_new if c not in wanted} | {c for c in names_old if renames.get(c, c) not in wanted}
    ot = {f.name: f.dataType for f in o_schema.fields}
    nt = {f.name: f.dataType for f in n_schema.fields}
    table_delta = table_schema_delta(name, {c: t.simpleString() for c, t in ot.items()},
                                     {c: t.simpleString() for c, t in nt.items()}, renames, skip)
    compared = [renames.get(c, c) for c in names_old
                if renames.get(c, c) in nt and c not in skip and renames.get(c, c) not in skip]
    # the old version's schema under the new names, over the compared columns
    sub_old = T.StructType([T.StructField(c, ot[back.get(c, c)], True) for c in compared])
    sub_new = T.StructType([T.StructField(c, nt[c], True) for c in compared])
    retype_old, retype_new, notes = _reconcile(name, old_df, new_df, sub_old, sub_new,
                                               same_names=not table_delta.added and not table_delta.dropped
                                               and not renames)
    types: dict[str, T.DataType] = {}
    cast_old: dict[str, T.DataType] = {}
    cast_new: dict[str, T.DataType] = {}
    for c in compared:
        t_old, t_new = retype_old.get(c, ot[back.get(c, c)]), retype_new.get(c, nt[c])
        if t_old == t_new:
            types[c] = t_old
            continue
        common, kind = compare_as(t_old.simpleString(), t_new.simpleString())
        target = _spark_type(common or "string")
        types[c] = target
        if t_old != target:
            cast_old[c] = target
        if t_new != target:
            cast_new[c] = target
        if kind == "text":
            notes.append(f"warning: {name}.{c} is {t_old.simpleString()} in the old version but "
                         f"{t_new.simpleString()} in the new one: compared as text "
                         f"(exclude it with --exclude {name}.{c})")
    if retype_old or retype_new:  # the reconciled types are no schema change
        table_delta = dataclasses.replace(table_delta, retyped=tuple(
            r for r in table_delta.retyped if r[0] not in retype_old and r[0] not in retype_new))
        if table_delta.status == "changed" and not (table_delta.added or table_delta.dropped
                                                    or table_delta.retyped or table_delta.renamed):
            table_delta = dataclasses.replace(table_delta, status="same")
    clash = [c for c in compared if c in RESERVED or c.startswith("_dq_")]
    if clash:
        raise ReservedColumnError(
            f"table {name} has a column named {clash[0]!r}, which dqkit adds to its outputs",
            hint=f"rename it, or exclude it with --exclude {name}.{clash[0]}")
    if key is not None:
        key = tuple(renames.get(c, c) for c in key)
        for col in key:
            if col not in compared:
                why = ("is excluded" if col in skip else
                       "is not in both versions" if col in names_old or col in names_new else "does not exist")
                raise UnknownColumnError(f"key column {name}.{col} {why}",
                                         hint=f"compared columns of {name}: {', '.join(compared)}")
    if not compared:
        raise ParameterError(f"every column of table {name} is excluded or only in one version",
                             hint=f"exclude the table instead: {name}")
    tol: dict[str, tuple[float, float]] = {}
    for col, t in tolerances.items():
        target = renames.get(col, col)
        if target not in compared:
            raise UnknownColumnError(f"--tolerance {name}.{col}: the column is not compared "
                                     f"({'excluded or only in one version' if target in ot or target in nt else 'no such column'})",
                                     hint=f"compared columns of {name}: {', '.join(compared)}")
        if not isinstance(types[target], T.NumericType):
            raise UnsupportedTypeError(f"--tolerance {name}.{col}: the column is {types[target].simpleString()}, "
                                       f"not a number", hint="a tolerance applies to numeric columns only")
        tol[target] = (float(t.abs_tol), float(t.rel_tol))
    old_names = {n: o for o, n in renames.items() if n in compared}
    plan = TablePlan(name, tuple(compared), key, types, retype_old, retype_new, tuple(notes), old_names,
                     cast_old, cast_new, tol)
    return plan, table_delta
