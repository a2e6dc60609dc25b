"""Diftong: two versions of a database compared, table by table (spec: shared/specs/diftong.md).

Stages, as in the paper: **dedup** (each distinct row once, with ``row_count``), **row** validation
(row delta of INSERT/DELETE records and row statistics (1)-(8)) and **column** validation (key-paired
DELETE/INSERT records, ``calc_diff`` per column, and column statistics (9)-(14)).

How it runs (two scans of each version instead of the paper's ~100 passes): every row of both
versions is fingerprinted (``dqkit.fingerprint``) and one shuffle groups the union by fingerprint,
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
* Keys need not be unique (unlike every other command's ``--key``, which ``dqkit.keys.check_key``
  refuses when it repeats or is NULL): delta compares each table as a **multiset** of rows (a row that
  repeats is one row with its ``row_count``), and the key serves only to pair the changed rows of the
  column stage. A key held by more than one DELETE (or more than one INSERT) record of a table
  cannot be paired safely; those records are left unpaired (they stay in the row delta), counted in
  ``ambiguous_key_rows`` and reported in a warning; nothing is guessed and nothing is cross-joined.
  A key repeated only among unchanged rows changes nothing. NULL keys pair NULL-safely (NULL pairs
  with NULL, as one key value). So a repeated or NULL key never makes delta wrong, only less
  detailed; checking uniqueness up front would cost a scan of both versions for no change in the
  answer.
"""
from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit import render
from dqkit.errors import (
    DqkitError,
    ParameterError,
    ReservedColumnError,
    SchemaMismatchError,
    SourceError,
    UnknownColumnError,
    UnknownTableError,
    UnsupportedTypeError,
)
from dqkit.fingerprint import FP_HI, FP_LO, row_fingerprint
from dqkit.params import parse_keys
from dqkit.progress import ProgressCallback
from dqkit.result import Chart, Facts, Notes, Result, Table, Verdict
from dqkit.session import get_spark
from dqkit.sources import DatabaseSource, describe, read_database, read_failure
from dqkit.sparkutil import cancellable, scoped_conf
from dqkit.sparkutil import quote_ident as _q

STAGES: tuple[str, ...] = ("dedup", "row", "column")
ROW_COUNT = "row_count"
STATUS = "validation_status"
INSERT, DELETE = "INSERT", "DELETE"
NULL_CHANGES = "null_changes"
RESERVED = (ROW_COUNT, STATUS)
ROW_STAT_NAMES = ("rows_old", "rows_new", "rows_abs_diff", "dedup_rows_old", "dedup_rows_new",
                  "dedup_abs_diff", "differences", "percent")
COLUMN_STAT_NAMES = ("count", "max", "min", "q1", "median", "q3")
_C_OLD, _C_NEW = "_dq_c_old", "_dq_c_new"
_STATS = "_dq_row_stats"



# --------------------------------------------------------------------------------------------
# Configuration, checked before any Spark job
# --------------------------------------------------------------------------------------------

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
    """Keys in any form ``dqkit.params.parse_keys`` reads -> {table: (columns)}."""
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


# --------------------------------------------------------------------------------------------
# calc_diff
# --------------------------------------------------------------------------------------------

def check_calc_diff_type(table: str, column: str, dtype: T.DataType) -> None:
    """Raise ``UnsupportedTypeError`` for a type ``calc_diff`` cannot compare."""
    if isinstance(dtype, (T.MapType, T.CalendarIntervalType, T.NullType)) or dtype.typeName() == "variant":
        raise UnsupportedTypeError(
            f"column {table}.{column} has type {dtype.simpleString()}, which column validation cannot compare",
            hint=f"exclude it with --exclude {table}.{column} (row validation still covers it)")
    if isinstance(dtype, (T.ArrayType, T.StructType)) and _has_map(dtype):
        raise UnsupportedTypeError(
            f"column {table}.{column} ({dtype.simpleString()}) contains a map, which cannot be compared",
            hint=f"exclude it with --exclude {table}.{column}")


def _has_map(dtype: T.DataType) -> bool:
    if isinstance(dtype, T.MapType):
        return True
    if isinstance(dtype, T.ArrayType):
        return _has_map(dtype.elementType)
    if isinstance(dtype, T.StructType):
        return any(_has_map(f.dataType) for f in dtype.fields)
    return False


def _is_float(dtype: T.DataType) -> bool:
    return isinstance(dtype, (T.FloatType, T.DoubleType))


def changed(old: Column, new: Column, dtype: T.DataType, abs_tol: float = 0.0, rel_tol: float = 0.0) -> Column:
    """True when the two values differ (NULL-safe; floats within tolerance or both NaN are equal)."""
    if _is_float(dtype):
        both_nan = F.isnan(old) & F.isnan(new)
        close = F.abs(new - old) <= F.lit(abs_tol) + F.lit(rel_tol) * F.greatest(F.abs(old), F.abs(new))
        same = (old.isNull() & new.isNull()) | (old.isNotNull() & new.isNotNull() & (both_nan | close))
        return ~F.coalesce(same, F.lit(False))
    return ~old.eqNullSafe(new)


def calc_diff(old: Column, new: Column, dtype: T.DataType, abs_tol: float = 0.0, rel_tol: float = 0.0) -> Column:
    """The paper's ``calc_diff``: the magnitude of the change from ``old`` to ``new``.

    NULL when the values are equal, both NULL, or one side is NULL (see the module docstring).
    """
    if isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType)):
        magnitude = F.abs(new.cast("long") - old.cast("long"))
    elif isinstance(dtype, T.LongType):
        magnitude = F.abs(new.cast("decimal(20,0)") - old.cast("decimal(20,0)"))
    elif isinstance(dtype, T.DecimalType):
        magnitude = F.abs(new - old)
    elif _is_float(dtype):
        magnitude = F.abs(new.cast("double") - old.cast("double"))
    elif isinstance(dtype, T.StringType):
        magnitude = F.levenshtein(old, new)
    elif isinstance(dtype, T.DateType):
        magnitude = F.abs(F.datediff(new, old))
    elif isinstance(dtype, (T.TimestampType, T.TimestampNTZType)):
        micros = F.unix_micros(new.cast("timestamp")) - F.unix_micros(old.cast("timestamp"))
        magnitude = F.abs(micros) / F.lit(1_000_000.0)
    else:  # boolean, binary, array, struct: a change indicator
        magnitude = F.lit(1)
    both = old.isNotNull() & new.isNotNull()
    return F.when(both & changed(old, new, dtype, abs_tol, rel_tol), magnitude)


# --------------------------------------------------------------------------------------------
# The result
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TableDelta:
    """Everything computed for one table. DataFrames are lazy; the statistics are computed values."""

    name: str
    plan: TablePlan
    row_stats: dict[str, Any]
    changed_fingerprints: DataFrame | None = field(repr=False, default=None)
    row_delta: DataFrame | None = field(repr=False, default=None)
    col_delta: DataFrame | None = field(repr=False, default=None)
    updates: DataFrame | None = field(repr=False, default=None)
    column_stats: dict[str, dict[str, Any]] | None = None
    pairing: dict[str, int] | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    cached: tuple[DataFrame, ...] = field(repr=False, default=())


@dataclass(frozen=True, repr=False)
class DeltaResult(Result):
    """The outcome of ``delta``: per-table statistics and lazily evaluated delta DataFrames.

    It follows ``dqkit.result.Result``: ``to_dict``, ``sections`` and ``frames`` are defined here;
    ``to_text``, ``to_html``, ``save`` and ``figures`` come from the base, so the CLI, the widgets and
    the report templates render this same object and never recompute the comparison.
    """

    system = "dqkit delta"

    tables: dict[str, TableDelta]
    only_in_old: list[str]
    only_in_new: list[str]
    stages: tuple[str, ...]
    messages: list[str]
    parameters: dict[str, Any]
    seconds: dict[str, float]

    # ----- summaries
    @property
    def identical(self) -> bool:
        """True when no compared table differs and no table is on one side only."""
        return (not self.only_in_old and not self.only_in_new
                and all(t.row_stats.get("differences", 0) == 0 and t.row_stats.get("dedup_abs_diff", 0) == 0
                        and t.row_stats.get("rows_abs_diff", 0) == 0 for t in self.tables.values()))

    @property
    def row_stats(self) -> pd.DataFrame:
        """Row statistics (1)-(8), one row per table, in the paper's order."""
        rows = [{"table": n, **{k: t.row_stats.get(k) for k in ROW_STAT_NAMES}} for n, t in self.tables.items()]
        return pd.DataFrame(rows, columns=["table", *ROW_STAT_NAMES])

    def column_stats(self, table: str) -> pd.DataFrame:
        """Column statistics (9)-(14) for ``table`` (plus ``null_changes``), one row per column."""
        stats = self._table(table).column_stats
        if stats is None:
            return pd.DataFrame(columns=["column", *COLUMN_STAT_NAMES, NULL_CHANGES])
        rows = [{"column": c, **s} for c, s in stats.items()]
        # object dtype keeps integer deltas integers next to NULLs (pandas would upcast to float)
        frame = pd.DataFrame(rows, columns=["column", *COLUMN_STAT_NAMES, NULL_CHANGES], dtype=object)
        return frame.astype({"count": "int64", NULL_CHANGES: "int64"})

    def differing_tables(self) -> list[str]:
        """Tables with at least one row difference, in name order."""
        return [n for n, t in self.tables.items() if t.row_stats.get("differences", 0) > 0]

    def row_delta(self, table: str) -> DataFrame:
        """``<table>_row_delta``: the table's columns, ``row_count`` and ``validation_status``."""
        return self._needs(table, "row_delta", "row")

    def col_delta(self, table: str) -> DataFrame:
        """``<table>_col_delta``: the key, one ``calc_diff`` per column, and ``null_changes``."""
        return self._needs(table, "col_delta", "column")

    def updates(self, table: str) -> DataFrame:
        """The UPDATE view: each key-paired DELETE/INSERT with ``changed_columns``, ``old`` and ``new``."""
        return self._needs(table, "updates", "column")

    def dedup(self, table: str, side: str = "new") -> DataFrame:
        """DDB1 (``side='old'``) or DDB2 (``'new'``): each distinct row once, with ``row_count``."""
        t = self._table(table)
        if t.changed_fingerprints is None:
            raise ParameterError(f"table {table} has no dedup stage output in this result")
        if side not in ("old", "new"):
            raise ParameterError(f"side must be 'old' or 'new', not {side!r}")
        return dedup_frame(self.parameters["_sources"][side][table], t.plan)

    def _table(self, table: str) -> TableDelta:
        if table not in self.tables:
            raise UnknownTableError(f"table {table!r} is not in this result",
                                    hint=f"compared tables: {', '.join(self.tables) or 'none'}")
        return self.tables[table]

    def _needs(self, table: str, attr: str, stage: str) -> DataFrame:
        frame = getattr(self._table(table), attr)
        if frame is None:
            why = "has no key" if stage == "column" and self._table(table).plan.key is None else "was not computed"
            raise ParameterError(f"the {stage} stage for table {table} {why}",
                                 hint="run delta(...) with that stage" + (" and a key" if "key" in why else ""))
        return frame

    def unpersist(self) -> None:
        """Release what this result cached: the changed fingerprints and the fetched changed rows."""
        for t in self.tables.values():
            for frame in t.cached:
                frame.unpersist()

    # ----- the result contract (dqkit.result.Result)
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary: per-table row and column statistics and the one-sided tables."""
        tables = {}
        for name, t in self.tables.items():
            entry: dict[str, Any] = {"row_stats": {k: t.row_stats.get(k) for k in ROW_STAT_NAMES
                                                   if k in t.row_stats}}
            if t.column_stats is not None:
                entry["column_stats"] = t.column_stats
            if t.pairing is not None:
                entry["pairing"] = t.pairing
            if t.plan.key:
                entry["key"] = list(t.plan.key)
            entry["seconds"] = t.seconds
            tables[name] = entry
        return render.to_jsonable({
            "identical": self.identical,
            "verdict": self.verdict_block().label,
            "summary": self.verdict_block().summary,
            "tables": tables,
            "only_in_old": self.only_in_old,
            "only_in_new": self.only_in_new,
            "stages": list(self.stages),
            "messages": self.messages,
            "parameters": self.public_parameters(),
            "seconds": self.seconds,
        })

    def public_parameters(self) -> dict[str, Any]:
        """The parameters of the run as given (sources described, never their data)."""
        return {k: v for k, v in self.parameters.items() if not k.startswith("_")}

    def verdict_block(self) -> Verdict:
        """IDENTICAL or DIFFERENT, with a one-line summary of what differs."""
        if self.identical:
            n = len(self.tables)
            return Verdict(True, "IDENTICAL", f"the two versions hold the same rows in "
                                              f"{n} table{'s' if n != 1 else ''}")
        parts = []
        for name, t in self.tables.items():
            d = t.row_stats.get("differences")
            if d:
                parts.append(f"{name}: {d} difference record{'s' if d != 1 else ''}"
                             + (f" ({render.plain(t.row_stats['percent'])} %)" if "percent" in t.row_stats else ""))
            elif t.row_stats.get("rows_abs_diff") or t.row_stats.get("dedup_abs_diff"):
                parts.append(f"{name}: row counts differ")
        if self.only_in_old:
            parts.append(f"only in old: {', '.join(self.only_in_old)}")
        if self.only_in_new:
            parts.append(f"only in new: {', '.join(self.only_in_new)}")
        differing = len([t for t in self.tables.values() if t.row_stats.get("differences")
                         or t.row_stats.get("rows_abs_diff") or t.row_stats.get("dedup_abs_diff")])
        head = (f"{differing} of {len(self.tables)} table{'s' if len(self.tables) != 1 else ''} "
                f"differ{'s' if differing == 1 else ''}")
        return Verdict(False, "DIFFERENT", head + ("; " + "; ".join(parts) if parts else ""))

    def sections(self, sample_rows: int = 10) -> list[Any]:
        """Verdict, what was compared, row statistics, column statistics with quartile charts, then
        per differing table its changes (``column: old -> new`` beside the key) and a row-delta sample."""
        p = self.public_parameters()
        facts = {"old": p.get("old"), "new": p.get("new"),
                 "tables compared": ", ".join(self.tables) or "none",
                 "keys": "; ".join(f"{t}={','.join(c)}" for t, c in (p.get("keys") or {}).items()) or "none",
                 "excluded": ", ".join(p.get("exclude") or []) or "nothing",
                 "stages": ", ".join(self.stages)}
        if p.get("abs_tol") or p.get("rel_tol"):
            facts["float tolerance"] = f"abs {render.plain(p.get('abs_tol'))}, rel {render.plain(p.get('rel_tol'))}"
        blocks: list[Any] = [self.verdict_block(), Facts("What was compared", facts)]
        if self.tables and ("row" in self.stages or "dedup" in self.stages):
            blocks.append(Table("Row statistics", self.row_stats))
            blocks.append(Chart("Difference count per table", "difference_count", self.plot_difference_count))
            if "row" in self.stages:
                blocks.append(Chart("Difference percentage per table", "difference_percent",
                                    self.plot_difference_percent))
        for name, t in self.tables.items():
            if t.column_stats:
                blocks.append(Table(f"Column statistics: {name}", self.column_stats(name),
                                    note="count: changed key-paired rows; min to max: the size of each change "
                                         f"({'; '.join(f'{c}: {u}' for c, u in self.units(name).items())})"))
                blocks.append(Chart(f"Differences per column of {name}", f"{name}_column_differences",
                                    lambda name=name: self.plot_column_differences(name)))
                blocks.append(Chart(f"Quartiles of {name}", f"{name}_quartiles",
                                    lambda name=name: self.plot_quartiles(name)))
        if sample_rows:
            for name, t in self.tables.items():
                if t.updates is not None and (t.pairing or {}).get("paired", 0) > 0:
                    frame = self.changes(name, sample_rows)
                    blocks.append(Table(f"Changes: {name}", frame,
                                        note=f"first {sample_rows} changed rows in key order, each changed column "
                                             "as old -> new; whole rows: result.updates(table)"))
                if t.row_delta is not None and t.row_stats.get("differences", 0) > 0:
                    frame, note = self.row_delta_sample(name, sample_rows)
                    blocks.append(Table(f"Row delta sample: {name}", frame, note=note))
        if self.messages:
            blocks.append(Notes("Notes", self.messages))
        return blocks

    def frames(self, include_dedup: bool = False) -> dict[str, DataFrame]:
        """The validation namespace: ``<T>_row_delta``, ``<T>_col_delta``, ``<T>_updates`` (and with
        ``include_dedup`` ``ddb_old/<T>``, ``ddb_new/<T>``)."""
        frames: dict[str, DataFrame] = {}
        for name, t in self.tables.items():
            if t.row_delta is not None:
                frames[f"{name}_row_delta"] = t.row_delta
            if t.col_delta is not None:
                frames[f"{name}_col_delta"] = t.col_delta
                frames[f"{name}_updates"] = t.updates  # type: ignore[assignment]
            if include_dedup and t.changed_fingerprints is not None:
                frames[f"ddb_old/{name}"] = self.dedup(name, "old")
                frames[f"ddb_new/{name}"] = self.dedup(name, "new")
        return frames

    def inputs(self) -> list[Any]:
        return [self.parameters.get("_old_source"), self.parameters.get("_new_source")]

    def _save_extra(self, folder: Path) -> None:
        self.row_stats.to_csv(folder / "row_stats.csv", index=False)
        col = [self.column_stats(n).assign(table=n) for n, t in self.tables.items() if t.column_stats]
        if col:
            pd.concat(col)[["table", "column", *COLUMN_STAT_NAMES, NULL_CHANGES]].to_csv(
                folder / "column_stats.csv", index=False)

    def units(self, table: str) -> dict[str, str]:
        """The unit of ``calc_diff`` per column: what a difference of 1 means."""
        t = self._table(table)
        return {c: diff_unit(t.plan.types[c]) if c in t.plan.types else "rows"
                for c in (t.column_stats or {})}

    def sample(self, table: str, what: str = "row_delta", n: int = 10) -> pd.DataFrame:
        """A bounded, deterministic sample as pandas: the first ``n`` rows ordered by the key, then
        by every column, so the same inputs give the same sample whatever the partitioning."""
        frame = {"row_delta": self.row_delta, "col_delta": self.col_delta, "updates": self.updates}[what](table)
        flat = frame.select(*[_displayable(f) for f in frame.schema.fields])
        key = list(self._table(table).plan.key or [])
        order = key + [c for c in flat.columns if c not in key]
        rows = flat.orderBy(*[F.col(_q(c)) for c in order]).limit(n).collect()
        return pd.DataFrame([r.asDict() for r in rows], columns=flat.columns)

    def changes(self, table: str, n: int = 10) -> pd.DataFrame:
        """The UPDATE view as people read it: per changed key-paired row (first ``n`` in key order),
        one line per changed column with the key, ``column`` and ``old -> new``."""
        t = self._table(table)
        key = list(t.plan.key or [])
        upd = self.updates(table)
        rows = (upd.orderBy(*[F.col(_q(k)) for k in key]).limit(n)
                .select(*[F.col(_q(k)) for k in key], "changed_columns",
                        F.to_json("old").alias("_o"), F.to_json("new").alias("_n")).collect())
        import json as _json

        out = []
        for r in rows:
            old, new = _json.loads(r["_o"]), _json.loads(r["_n"])
            for c in r["changed_columns"]:
                out.append({**{k: r[k] for k in key}, "column": c,
                            "change": f"{render.plain(old.get(c))} \u2192 {render.plain(new.get(c))}"})
        return pd.DataFrame(out, columns=[*key, "column", "change"])

    def row_delta_sample(self, table: str, n: int = 10, max_columns: int = 8) -> tuple[pd.DataFrame, str]:
        """A row-delta sample bounded for a screen: key, status and changed columns first, at most
        ``max_columns`` data columns; returns the frame and a note on what was left out."""
        t = self._table(table)
        frame = self.sample(table, "row_delta", n)
        key = list(t.plan.key or [])
        changed_cols = [c for c, s in (t.column_stats or {}).items()
                        if s.get("count") and c in frame.columns and c not in (STATUS, ROW_COUNT)]
        rest = [c for c in frame.columns if c not in key and c not in changed_cols and c not in (STATUS, ROW_COUNT)]
        data_cols = (changed_cols + rest)[:max(max_columns - len(key), 1)]
        shown = [*key, STATUS, ROW_COUNT, *data_cols]
        hidden = len(frame.columns) - len(shown)
        note = f"first {n} records in key order; changed columns first"
        if hidden > 0:
            note += f"; {hidden} more column{'s' if hidden != 1 else ''} not shown (result.row_delta(table))"
        return frame[shown], note

    def plot_difference_count(self):
        """Row chart: difference count (7) per table (paper Fig. 11)."""
        from dqkit import charts as ch

        return ch.barh({n: t.row_stats.get("differences", 0) for n, t in self.tables.items()},
                       "Row validation: difference count", "Difference count (records)", "Table", integer=True)

    def plot_difference_percent(self):
        """Row chart: difference percentage (8) per table (paper Fig. 12)."""
        from dqkit import charts as ch

        return ch.barh({n: t.row_stats.get("percent", 0.0) for n, t in self.tables.items()},
                       "Row validation: difference percentage", "Difference percentage (%)", "Table")

    def plot_column_differences(self, table: str):
        """Column chart: difference count (9) per column of ``table`` (paper Fig. 13)."""
        from dqkit import charts as ch

        stats = self._table(table).column_stats or {}
        return ch.barh({c: s["count"] for c, s in stats.items()},
                       f"Column validation: {table}", "Difference count (rows)", "Column", integer=True)

    def plot_quartiles(self, table: str):
        """Quartile chart of ``table``: a box per column from min/Q1/median/Q3/max (Figs. 14-15)."""
        from dqkit import charts as ch

        return ch.quartile_chart(self._table(table).column_stats or {}, f"Column statistics: {table}",
                                 units=self.units(table))


def diff_unit(dtype: T.DataType) -> str:
    """What ``calc_diff`` measures for a type (see the module docstring)."""
    if isinstance(dtype, T.StringType):
        return "Levenshtein distance (characters)"
    if isinstance(dtype, T.DateType):
        return "days"
    if isinstance(dtype, (T.TimestampType, T.TimestampNTZType)):
        return "seconds"
    if isinstance(dtype, T.NumericType):
        return "absolute difference"
    return "1 per change"


def _displayable(f: T.StructField) -> Column:
    """A column as people read it (and as it sorts): nested values as JSON, binary as hex."""
    col = F.col(_q(f.name))
    if isinstance(f.dataType, T.BinaryType):
        return F.hex(col).alias(f.name)
    if isinstance(f.dataType, (T.StructType, T.ArrayType, T.MapType)):
        return F.to_json(col).alias(f.name)
    return col


# --------------------------------------------------------------------------------------------
# The kernel
# --------------------------------------------------------------------------------------------

def _fingerprinted(df: DataFrame, plan: TablePlan) -> DataFrame:
    hi, lo = row_fingerprint(df, plan.columns)
    return df.select(*[F.col(_q(c)) for c in plan.columns], hi.alias(FP_HI), lo.alias(FP_LO))


#: Planner options for the group-bys whose groups are nearly all distinct (row fingerprints, keys):
#: partial aggregation before the shuffle would build a hash map that reduces nothing, so it is
#: skipped (Spark 4.3+; older versions ignore the option).
DISTINCT_GROUPS_CONF = {"spark.sql.execution.bypassPartialAggregation": "true"}

#: Planner option for dqkit's short-lived caches (changed fingerprints, fetched rows): compressing
#: their columns costs more time than their memory is worth (fingerprints do not compress at all).
UNCOMPRESSED_CACHE_CONF = {"spark.sql.inMemoryColumnarStorage.compressed": "false"}


def fingerprint_counts(old: DataFrame, new: DataFrame, plan: TablePlan) -> DataFrame:
    """One shuffle: for each distinct row fingerprint, its number of copies in old and in new."""
    hi, lo = row_fingerprint(old, plan.columns)
    o = old.select(hi.alias(FP_HI), lo.alias(FP_LO), F.lit(True).alias("_dq_old"))
    hi, lo = row_fingerprint(new, plan.columns)
    n = new.select(hi.alias(FP_HI), lo.alias(FP_LO), F.lit(False).alias("_dq_old"))
    return (o.unionByName(n).groupBy(FP_HI, FP_LO)
            .agg(F.count_if(F.col("_dq_old")).alias(_C_OLD), F.count_if(~F.col("_dq_old")).alias(_C_NEW)))


def _row_stat_columns() -> list[Column]:
    c_old, c_new = F.col(_C_OLD), F.col(_C_NEW)
    differ = c_old != c_new
    return [
        F.coalesce(F.sum(c_old), F.lit(0)).alias("rows_old"),
        F.coalesce(F.sum(c_new), F.lit(0)).alias("rows_new"),
        F.count_if(c_old > 0).alias("dedup_rows_old"),
        F.count_if(c_new > 0).alias("dedup_rows_new"),
        F.count_if(differ & (c_old > 0)).alias("deletes"),
        F.count_if(differ & (c_new > 0)).alias("inserts"),
        # a changed row present more than once on its side: the row fetch must deduplicate
        F.count_if(differ & ((c_old > 1) | (c_new > 1))).alias("_dq_repeated"),
    ]


def _finish_counts(row: Mapping[str, Any]) -> dict[str, Any]:
    stats = {k: int(row[k] or 0) for k in ("rows_old", "rows_new", "dedup_rows_old", "dedup_rows_new",
                                           "deletes", "inserts")}
    out = finish_row_statistics(stats)
    out["_repeated"] = int(row.get("_dq_repeated") or 0)
    return out


def changed_fingerprints(old: DataFrame, new: DataFrame, plan: TablePlan
                         ) -> tuple[DataFrame, dict[str, Any], DataFrame]:
    """The dedup and row stages' one shuffle: (the changed fingerprints; statistics (1)-(8); the cache).

    The changed fingerprints are a view of the cache; ``cache.unpersist()`` releases it.

    One job computes both, exactly: the changed fingerprints (``c_old != c_new``) and one row of
    statistics over every fingerprint are two branches of one union over the same fingerprint
    aggregate, whose shuffle Spark plans once and reuses for the second branch (``ReusedExchange``).
    The union is cached; the statistics row is read back from the cache. Nothing here rests on
    observed metrics (``Dataset.observe``): Spark aggregates those through an accumulator that a
    recomputed task or stage (a lost executor, a fetch-failure retry) can leave counting only part
    of the rows, which once turned a cluster run's 300,000 rows into 150,185 with exit 1 as usual.
    Row data and statistics both come from ordinary query results, which Spark recomputes exactly.
    """
    counts = fingerprint_counts(old, new, plan)
    spark = counts.sparkSession
    stats = counts.agg(F.struct(*_row_stat_columns()).alias(_STATS))
    changed_part = counts.filter(F.col(_C_OLD) != F.col(_C_NEW)).select(
        FP_HI, FP_LO, _C_OLD, _C_NEW, F.lit(None).cast(stats.schema[_STATS].dataType).alias(_STATS))
    stats_part = stats.select(*[F.lit(None).cast(counts.schema[c].dataType).alias(c)
                                for c in (FP_HI, FP_LO, _C_OLD, _C_NEW)], _STATS)
    # a cached query is planned when persist() is called, so the planner options must be set here
    with scoped_conf(spark, {**DISTINCT_GROUPS_CONF, **UNCOMPRESSED_CACHE_CONF}):
        combined = changed_part.unionByName(stats_part).persist()
    try:
        with scoped_conf(spark, DISTINCT_GROUPS_CONF):
            combined.count()
            row = combined.filter(F.col(_STATS).isNotNull()).select(f"{_STATS}.*").first()
        stats_row = row.asDict() if row is not None else {}
        result = _finish_counts(stats_row)
    except BaseException:
        combined.unpersist()
        raise
    return combined.filter(F.col(FP_HI).isNotNull()).drop(_STATS), result, combined


def finish_row_statistics(s: dict[str, int]) -> dict[str, Any]:
    """Derive (3), (6), (7) and (8) from the counted statistics."""
    differences = s["deletes"] + s["inserts"]
    total = s["dedup_rows_old"] + s["dedup_rows_new"]
    percent = 0.0 if total == 0 else float(
        (Decimal(100 * differences) / Decimal(total)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))
    return {"rows_old": s["rows_old"], "rows_new": s["rows_new"],
            "rows_abs_diff": abs(s["rows_old"] - s["rows_new"]),
            "dedup_rows_old": s["dedup_rows_old"], "dedup_rows_new": s["dedup_rows_new"],
            "dedup_abs_diff": abs(s["dedup_rows_old"] - s["dedup_rows_new"]),
            "differences": differences, "percent": percent,
            "deletes": s["deletes"], "inserts": s["inserts"]}


def dedup_frame(source: DataFrame, plan: TablePlan) -> DataFrame:
    """DDB: each distinct row of ``source`` (over the compared columns) once, with ``row_count``."""
    rows = _fingerprinted(source, plan)
    return (rows.groupBy(FP_HI, FP_LO)
            .agg(*[F.first(_q(c)).alias(c) for c in plan.columns], F.count(F.lit(1)).alias(ROW_COUNT))
            .drop(FP_HI, FP_LO))


#: Changed fingerprints are broadcast to the row fetch up to this many (16 bytes + a count each).
BROADCAST_CHANGED_ROWS = 4_000_000


def build_row_delta(old: DataFrame, new: DataFrame, plan: TablePlan, changed: DataFrame,
                    row_stats: Mapping[str, Any]) -> DataFrame:
    """Every copy of every row whose fingerprint count changed, tagged DELETE/INSERT, fingerprinted.

    No shuffle of the inputs: the changed fingerprints (their number is known from the row
    statistics) are broadcast to one scan of each side. A row present ``row_count`` times comes back
    once per copy; ``fetch_changed_rows`` deduplicates only those rows (``row_count > 1``, counted
    in the row stage), so the common case of no repeated changed rows needs no aggregation at all.
    """
    def side(df: DataFrame, count_col: str, status: str) -> DataFrame:
        wanted = changed.filter(F.col(count_col) > 0).select(FP_HI, FP_LO, F.col(count_col).alias(ROW_COUNT))
        if row_stats["differences"] <= BROADCAST_CHANGED_ROWS:
            wanted = F.broadcast(wanted)
        rows = _fingerprinted(df, plan)
        # One 64-bit join key (Spark's compact long-keyed hash table), the other half checked on the
        # match. Written as an equality, the second half would become a join key too (a generic
        # two-column hash table, about 10% slower to probe); the XOR keeps it a residual condition.
        wanted = wanted.withColumnRenamed(FP_HI, "_dq_w_hi").withColumnRenamed(FP_LO, "_dq_w_lo")
        hit = (rows[FP_HI] == wanted["_dq_w_hi"]) & (rows[FP_LO].bitwiseXOR(wanted["_dq_w_lo"]) == 0)
        return rows.join(wanted, hit).drop("_dq_w_hi", "_dq_w_lo").withColumn(STATUS, F.lit(status))

    return side(old, _C_OLD, DELETE).unionByName(side(new, _C_NEW, INSERT))


def fetch_changed_rows(old: DataFrame, new: DataFrame, plan: TablePlan, changed: DataFrame,
                       row_stats: Mapping[str, Any]) -> tuple[DataFrame, DataFrame]:
    """(the fetched rows, cached and materialised; the row delta over them).

    The fetch is the run's second and last scan of the inputs. Caching its output means the
    column stage, the saved Parquet, notebook samples and charts all read the changed rows from
    memory instead of scanning both versions again.
    """
    spark = changed.sparkSession
    with scoped_conf(spark, UNCOMPRESSED_CACHE_CONF):
        fetched = build_row_delta(old, new, plan, changed, row_stats).persist()
    try:
        fetched.count()
    except BaseException:
        fetched.unpersist()
        raise
    rows = fetched
    if row_stats.get("_repeated", 1):
        single = fetched.filter(F.col(ROW_COUNT) == 1)
        repeated = fetched.filter(F.col(ROW_COUNT) > 1).dropDuplicates([STATUS, FP_HI, FP_LO])
        rows = single.unionByName(repeated)
    return fetched, rows.drop(FP_HI, FP_LO)


def key_counts(row_delta: DataFrame, plan: TablePlan) -> DataFrame:
    """Per key of the row delta: its number of DELETE and INSERT records (fixed-width, hash-aggregated).

    Grouping treats NULL keys as equal (NULL-safe pairing).
    """
    assert plan.key is not None
    is_delete = F.col(STATUS) == DELETE
    return row_delta.groupBy(*[F.col(_q(k)) for k in plan.key]).agg(
        F.count_if(is_delete).alias("_dq_deletes"), F.count_if(~is_delete).alias("_dq_inserts"))


def _is_pair() -> Column:
    """A key with exactly one DELETE and one INSERT record: an update that can be paired."""
    return (F.col("_dq_deletes") == 1) & (F.col("_dq_inserts") == 1)


def _pairing_aggregates() -> list[Column]:
    d, i = F.col("_dq_deletes"), F.col("_dq_inserts")
    return [F.count_if(_is_pair()).alias("_dq_pairs"),
            F.coalesce(F.sum(d), F.lit(0)).alias("_dq_deletes"),
            F.coalesce(F.sum(i), F.lit(0)).alias("_dq_inserts"),
            F.coalesce(F.sum(F.when(d > 1, d).otherwise(0) + F.when(i > 1, i).otherwise(0)),
                       F.lit(0)).alias("_dq_ambiguous")]


def pair_by_key(row_delta: DataFrame, plan: TablePlan) -> DataFrame:
    """The key-paired updates: one row per key with exactly one DELETE (``o``) and one INSERT (``n``).

    Pairing is two equi-joins on the key (NULL-safe) restricted to the keys counted once on each
    side, so every aggregate stays fixed-width and a non-unique key can never produce a cross
    product: a key with more than one record on a side is ambiguous and is left unpaired (counted
    by ``column_statistics``).
    """
    assert plan.key is not None
    values = [c for c in (*plan.columns, ROW_COUNT) if c not in plan.key]
    counts = key_counts(row_delta, plan)
    keys = counts.filter(_is_pair()).select(*[F.col(_q(k)) for k in plan.key])

    def side(status: str, alias: str) -> DataFrame:
        return row_delta.filter(F.col(STATUS) == status).select(
            *[F.col(_q(k)).alias(f"_dq_{alias}{n}") for n, k in enumerate(plan.key)],
            F.struct(*[F.col(_q(c)) for c in values]).alias(alias))

    def on(frame: DataFrame, alias: str) -> Column:
        conds = [F.col(_q(k)).eqNullSafe(frame[f"_dq_{alias}{n}"]) for n, k in enumerate(plan.key)]
        out = conds[0]
        for c in conds[1:]:
            out = out & c
        return out

    # hash joins: the sides are about as large as the key list, and sorting wide records costs more
    o, n = side(DELETE, "o").hint("shuffle_hash"), side(INSERT, "n").hint("shuffle_hash")
    joined = keys.join(o, on(o, "o")).join(n, on(n, "n"))
    return joined.select(*[F.col(_q(k)) for k in plan.key], "o", "n")


def build_column_delta(pairs: DataFrame, plan: TablePlan, abs_tol: float, rel_tol: float
                       ) -> tuple[DataFrame, DataFrame, list[Column]]:
    """(col_delta, updates, the aggregate expressions of statistics (9)-(14)) over the key pairs."""
    values = [c for c in (*plan.columns, ROW_COUNT) if c not in (plan.key or ())]
    types = dict(plan.types)
    types[ROW_COUNT] = T.LongType()
    deltas, null_flags, changed_flags = [], [], []
    aggs: list[Column] = []
    for c in values:
        o, n = F.col("o." + _q(c)), F.col("n." + _q(c))
        dt = types[c]
        diff = calc_diff(o, n, dt, abs_tol, rel_tol)
        is_change = changed(o, n, dt, abs_tol, rel_tol)
        null_change = is_change & (o.isNull() | n.isNull())
        deltas.append(diff.alias(c))
        null_flags.append(F.when(null_change, F.lit(c)))
        changed_flags.append(F.when(is_change, F.lit(c)))
        aggs.append(F.struct(
            (F.count(diff) + F.count_if(null_change)).alias("count"),
            F.max(diff).alias("max"), F.min(diff).alias("min"),
            F.percentile(diff.cast("double"), [0.25, 0.5, 0.75]).alias("q"),
            F.count_if(null_change).alias(NULL_CHANGES)).alias(c))
    key_cols = [F.col(_q(k)) for k in (plan.key or ())]
    col_delta = pairs.select(*key_cols, *deltas,
                             F.filter(F.array(*null_flags), lambda x: x.isNotNull()).alias(NULL_CHANGES))
    updates = pairs.select(*key_cols,
                           F.filter(F.array(*changed_flags), lambda x: x.isNotNull()).alias("changed_columns"),
                           F.col("o").alias("old"), F.col("n").alias("new"))
    return col_delta, updates, aggs


def column_statistics(pairs: DataFrame, aggs: Sequence[Column], row_delta: DataFrame, plan: TablePlan,
                      row_stats: Mapping[str, Any]) -> tuple[dict[str, dict[str, Any]], dict[str, int]]:
    """Statistics (9)-(14) for every column and the pairing counts.

    One aggregation over the pairs gives every column's statistics and the number of pairs. The
    DELETE and INSERT record counts are the row statistics. Only when some records stayed unpaired
    does a second fixed-width aggregation over the keys tell the ambiguous ones apart (a key with
    more than one record on a side). Both are ordinary query results, never observed metrics,
    which a recomputed task can leave partial (see ``changed_fingerprints``).
    """
    row = pairs.agg(F.count(F.lit(1)).alias("_dq_pairs"), *aggs).first()
    stats: dict[str, dict[str, Any]] = {}
    for name in row.asDict():
        if name.startswith("_dq_"):
            continue
        s = row[name]
        q = s["q"] or [None, None, None]
        stats[name] = render.to_jsonable({
            "count": int(s["count"]), "max": s["max"], "min": s["min"],
            "q1": q[0], "median": q[1], "q3": q[2], NULL_CHANGES: int(s[NULL_CHANGES])})
    paired, deletes, inserts = int(row["_dq_pairs"]), int(row_stats["deletes"]), int(row_stats["inserts"])
    ambiguous = 0
    if paired < max(deletes, inserts):
        seen = key_counts(row_delta, plan).agg(*_pairing_aggregates()).first().asDict()
        ambiguous = int(seen["_dq_ambiguous"])
    pairing = {"paired": paired, "deletes": deletes, "inserts": inserts, "ambiguous_key_rows": ambiguous,
               "unpaired_deletes": deletes - paired, "unpaired_inserts": inserts - paired}
    return stats, pairing


def delta(
    old: DatabaseSource,
    new: DatabaseSource,
    *,
    tables: str | Iterable[str] | None = None,
    exclude: str | Iterable[str] = (),
    columns: Mapping[str, Sequence[str]] | None = None,
    keys: Mapping[str, str | Sequence[str]] | None = None,
    stages: str | Iterable[str] = STAGES,
    abs_tol: float = 0.0,
    rel_tol: float = 0.0,
    previous: DeltaResult | None = None,
    spark: SparkSession | None = None,
    progress: ProgressCallback | None = None,
) -> DeltaResult:
    """Compare two versions of a database with Diftong's stages; return a ``DeltaResult``.

    ``old``/``new``: database sources (a folder of tables, ``catalog:DB``, or a dict of DataFrames).
    ``tables`` includes tables; ``exclude`` takes ``TABLE`` or ``TABLE.COL`` (dropped before hashing);
    ``columns`` restricts a table to some columns; ``keys`` maps a table to its key column(s) for
    column validation (need not be unique: records whose key repeats among a side's changed rows are
    left unpaired and counted in ``ambiguous_key_rows``, see the module notes). ``stages`` is any subset of dedup,row,column; a column stage reuses the row
    stage of ``previous`` when given. The inputs are never modified.
    """
    t0 = time.perf_counter()
    stage_list = _parse_stages(stages)
    abs_tol, rel_tol = _tolerance("abs_tol", abs_tol), _tolerance("rel_tol", rel_tol)
    spark = spark or get_spark()
    t_read = time.perf_counter()
    old_db = dict(read_database(old, spark))
    new_db = dict(read_database(new, spark))
    t_plan = time.perf_counter()
    key_map = _normalise_keys(keys)
    plans, only_old, only_new = plan_tables(old_db, new_db, tables, _as_list(exclude), columns, key_map)
    messages: list[str] = []
    for plan in plans:
        old_db[plan.name] = retyped(old_db[plan.name], plan.retype_old)
        new_db[plan.name] = retyped(new_db[plan.name], plan.retype_new)
        messages.extend(plan.notes)
    for name in only_old:
        messages.append(f"table {name} is only in the old version; it is reported, not compared")
    for name in only_new:
        messages.append(f"table {name} is only in the new version; it is reported, not compared")
    want_column = "column" in stage_list
    if want_column:
        for plan in plans:
            if plan.key is not None:
                for c in plan.columns:
                    if c not in plan.key:
                        check_calc_diff_type(plan.name, c, plan.types[c])
    reuse = previous.tables if previous is not None else {}

    results: dict[str, TableDelta] = {}
    # every step of the run has a stage, so the stages add up to the total: session start-up and
    # argument checks ("start"), source listing and schema reads ("read"), plan validation ("plan")
    seconds = {"start": t_read - t0, "read": t_plan - t_read, "plan": time.perf_counter() - t_plan,
               "dedup": 0.0, "row": 0.0, "column": 0.0}
    total = len(plans)
    try:
        with cancellable("the comparison"):
            for done, plan in enumerate(plans, start=1):
                results[plan.name] = _run_table(plan, old_db[plan.name], new_db[plan.name], stage_list,
                                                reuse.get(plan.name), abs_tol, rel_tol, messages, seconds)
                if progress is not None:
                    progress(stage_list[-1], plan.name, done, total)
    except BaseException as exc:
        for finished in results.values():  # a failed run keeps nothing cached
            for frame in finished.cached:
                frame.unpersist()
        failure = read_failure(exc) if isinstance(exc, Exception) and not isinstance(exc, DqkitError) else None
        if failure is not None:
            raise failure from exc
        raise
    t_finish = time.perf_counter()
    if want_column and plans and not any(r.row_stats.get("differences", 0) for r in results.values()):
        messages.append("no differences were found in any table, so column validation stopped: "
                        "there is nothing to compare column by column")
    params = {"old": describe(old), "new": describe(new), "tables": [p.name for p in plans],
              "exclude": _as_list(exclude), "keys": {k: list(v) for k, v in key_map.items()},
              "stages": list(stage_list), "abs_tol": abs_tol, "rel_tol": rel_tol,
              "_sources": {"old": old_db, "new": new_db}, "_old_source": old, "_new_source": new}
    t_end = time.perf_counter()
    seconds["finish"] = t_end - t_finish
    seconds["total"] = t_end - t0
    return DeltaResult(results, only_old, only_new, stage_list, messages, params,
                       {k: round(v, 3) for k, v in seconds.items()})


def _tolerance(name: str, value: float) -> float:
    """A tolerance as a finite, non-negative float: NaN or infinity would hide every float change."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number) or number < 0:
        raise ParameterError(f"{name} must be a finite, non-negative number, not {value!r}",
                             hint="NaN or infinity would count every change of a float column as equal")
    return number


def _parse_stages(stages: str | Iterable[str]) -> tuple[str, ...]:
    names = _as_list(stages)
    unknown = [s for s in names if s not in STAGES]
    if unknown or not names:
        raise ParameterError(f"unknown stage(s): {', '.join(unknown) or '(none given)'}",
                             hint=f"stages are {', '.join(STAGES)}")
    return tuple(s for s in STAGES if s in names)


def _run_table(plan: TablePlan, old: DataFrame, new: DataFrame, stages: tuple[str, ...],
               prior: TableDelta | None, abs_tol: float, rel_tol: float,
               messages: list[str], seconds: dict[str, float]) -> TableDelta:
    timings: dict[str, float] = {}
    usable_prior = prior is not None and prior.plan.columns == plan.columns and prior.row_delta is not None
    need_row = "row" in stages or ("column" in stages and plan.key is not None and not usable_prior)
    changed = row_stats = row_delta = None
    cached: list[DataFrame] = []
    if "dedup" in stages or need_row:
        start = time.perf_counter()
        changed, row_stats, cache = changed_fingerprints(old, new, plan)
        cached.append(cache)
        timings["dedup"] = time.perf_counter() - start
        seconds["dedup"] += timings["dedup"]
        if need_row:
            start = time.perf_counter()
            try:
                fetched, row_delta = fetch_changed_rows(old, new, plan, changed, row_stats)
            except BaseException:
                cache.unpersist()
                raise
            cached.append(fetched)
            timings["row"] = time.perf_counter() - start
            seconds["row"] += timings["row"]
        row_stats.pop("_repeated", None)
    if row_stats is None and prior is not None:
        row_stats, row_delta, changed = dict(prior.row_stats), prior.row_delta, prior.changed_fingerprints
    if row_stats is not None and "row" not in stages and "dedup" in stages:
        row_stats = {k: v for k, v in row_stats.items()
                     if k in ("rows_old", "rows_new", "rows_abs_diff", "dedup_rows_old", "dedup_rows_new",
                              "dedup_abs_diff")}
    table = TableDelta(plan.name, plan, row_stats or {}, changed, row_delta, cached=tuple(cached))
    if "column" not in stages:
        return dataclasses.replace(table, seconds={k: round(v, 3) for k, v in timings.items()})
    if plan.key is None:
        messages.append(f"table {plan.name} has no key, so its column validation was skipped "
                        f"(give one with keys={{'{plan.name}': [...]}} or --key {plan.name}=COL)")
        return dataclasses.replace(table, seconds={k: round(v, 3) for k, v in timings.items()})
    if table.row_stats.get("differences", 0) == 0:
        messages.append(f"table {plan.name} has no differences, so column validation has nothing to compare")
        return dataclasses.replace(table, seconds={k: round(v, 3) for k, v in timings.items()})
    start = time.perf_counter()
    assert row_delta is not None
    pairs = pair_by_key(row_delta, plan)
    col_delta, updates, aggs = build_column_delta(pairs, plan, abs_tol, rel_tol)
    try:
        with scoped_conf(pairs.sparkSession, DISTINCT_GROUPS_CONF):
            stats, pairing = column_statistics(pairs, aggs, row_delta, plan, table.row_stats)
    except BaseException:
        for frame in cached:
            frame.unpersist()
        raise
    if pairing["ambiguous_key_rows"]:
        messages.append(f"warning: key ({', '.join(plan.key)}) of table {plan.name} is not unique among its "
                        f"changed rows; {pairing['ambiguous_key_rows']} records were left unpaired instead of "
                        f"being cross-joined")
    timings["column"] = time.perf_counter() - start
    seconds["column"] += timings["column"]
    return dataclasses.replace(table, col_delta=col_delta, updates=updates, column_stats=stats,
                               pairing=pairing, seconds={k: round(v, 3) for k, v in timings.items()})
