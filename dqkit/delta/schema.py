"""The schema delta of two database versions, decided without Spark (issue 47).

Nightly tables change shape: columns are added, dropped, renamed or retyped, whole tables come and
go. This module says, per table, what changed and how each common column is compared:

* ``same`` types: compared as they are;
* ``widened`` (or ``narrowed``) numeric types: compared **by value** in the common type (int -> bigint
  -> double, a decimal whose precision or scale grows), so ``5`` and ``5.0`` are equal;
* any other change (string <-> number, date <-> string, ...): compared **as text**, with a warning
  naming the column (or excluded with ``--exclude TABLE.COL``).

Types are Spark's type names (``int``, ``bigint``, ``decimal(10,2)``, ...), or None when they cannot
be read without Spark (a CSV header names columns only). The same functions run in the preflight
(schemas from Parquet footers and CSV headers, before a SparkSession starts: ``--schema-changes fail``
and bad ``--rename``/``--tolerance`` are refused there) and in the plan (schemas Spark read), so the
two cannot disagree. Nothing here imports pyspark or pandas.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dqkit.errors import ParameterError, SchemaChangeError, UnknownColumnError

#: What ``--schema-changes`` takes: ``report`` (the default: a schema change is reported and makes the
#: result DIFFERENT, exit 1) or ``fail`` (any schema change is an error, exit 2, before Spark starts).
SCHEMA_CHANGES = ("report", "fail")

_INTEGRAL = ("tinyint", "smallint", "int", "bigint")
_INTEGRAL_DIGITS = {"tinyint": 3, "smallint": 5, "int": 10, "bigint": 20}
_FLOATS = ("float", "double")
_DECIMAL = re.compile(r"^decimal\((\d+),\s*(\d+)\)$")
_SPARK_ALIASES = {"integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint"}


# ------------------------------------------------------------------------------------------ types
def normal_type(name: str | None) -> str | None:
    """A type name in Spark's ``simpleString`` spelling (``integer`` -> ``int``); None stays None."""
    if name is None:
        return None
    text = str(name).strip().lower()
    return _SPARK_ALIASES.get(text, text)


def _decimal(t: str) -> tuple[int, int] | None:
    m = _DECIMAL.match(t)
    return (int(m.group(1)), int(m.group(2))) if m else None


def is_numeric(t: str | None) -> bool:
    """Whether ``t`` is a number type (integral, float, double or decimal)."""
    t = normal_type(t)
    return t is not None and (t in _INTEGRAL or t in _FLOATS or _decimal(t) is not None)


def _numeric_common(a: str, b: str) -> str:
    """The narrowest type holding every value of both numeric types ``a`` and ``b``."""
    if a in _FLOATS or b in _FLOATS:
        return "double" if "double" in (a, b) or _decimal(a) or _decimal(b) or \
            any(t in ("int", "bigint") for t in (a, b)) else "float"
    if a in _INTEGRAL and b in _INTEGRAL:
        return max(a, b, key=_INTEGRAL.index)
    da = _decimal(a) or (_INTEGRAL_DIGITS[a], 0)
    db = _decimal(b) or (_INTEGRAL_DIGITS[b], 0)
    scale = max(da[1], db[1])
    whole = max(da[0] - da[1], db[0] - db[1])
    if whole + scale > 38:
        return "double"  # beyond Spark's widest decimal: compared as doubles
    return f"decimal({whole + scale},{scale})"


def compare_as(old: str | None, new: str | None) -> tuple[str | None, str]:
    """How a common column whose type is ``old`` in the old version and ``new`` in the new one is
    compared: (the type both sides are cast to, the kind) with kind ``same``, ``widened``,
    ``narrowed`` (both numeric: compared by value in the common type) or ``text`` (compared as
    strings). With an unknown type (None): (None, ``unknown``)."""
    old, new = normal_type(old), normal_type(new)
    if old is None or new is None:
        return None, "unknown"
    if old == new:
        return old, "same"
    if old == "void":
        return new, "same"
    if new == "void":
        return old, "same"
    if is_numeric(old) and is_numeric(new):
        common = _numeric_common(old, new)
        return common, "widened" if common == new else "narrowed"
    return "string", "text"


# ------------------------------------------------------------------------------------------ options
def _split_items(value: Any) -> list[str]:
    from dqkit.checks.params import split_list

    if isinstance(value, Mapping):  # {"t.col": v} or {"t": {"col": v}}
        out = []
        for k, v in value.items():
            if isinstance(v, Mapping):
                out += [f"{k}.{c}={x.text() if isinstance(x, Tolerance) else x}" for c, x in v.items()]
            else:
                out.append(f"{k}={v.text() if isinstance(v, Tolerance) else v}")
        return out
    return split_list(value)


def _table_column(item: str, left: str, option: str, example: str) -> tuple[str, str]:
    table, dot, column = left.strip().partition(".")
    if not dot or not table.strip() or not column.strip():
        raise ParameterError(f"{option} {item!r}: expected {example}",
                             hint=f"name the table and the column, e.g. {option} {example}")
    return table.strip(), column.strip()


def parse_renames(value: Any) -> dict[str, dict[str, str]]:
    """``--rename TABLE.OLD=NEW`` items (or a mapping ``{"TABLE.OLD": "NEW"}``) -> {table: {old: new}}.

    Refused (``ParameterError``): a malformed item, a column renamed twice or two columns renamed to
    one name, a name mapped to itself, and a chain or cycle (``a=b`` with ``b=c`` or ``b=a``): a rename
    maps one dropped column to one added column.
    """
    out: dict[str, dict[str, str]] = {}
    for item in _split_items(value):
        left, eq, right = item.partition("=")
        if not eq or not right.strip():
            raise ParameterError(f"--rename {item!r}: expected TABLE.OLD=NEW",
                                 hint="map a column of the old version to its new name, e.g. --rename users.mail=email")
        table, old = _table_column(item, left, "--rename", "TABLE.OLD=NEW")
        new = right.strip()
        if "." in new and new.split(".", 1)[0] == table:
            new = new.split(".", 1)[1]  # TABLE.OLD=TABLE.NEW reads the same
        mapping = out.setdefault(table, {})
        if old == new:
            raise ParameterError(f"--rename {item!r} maps {table}.{old} to itself", hint="drop that --rename")
        if old in mapping:
            raise ParameterError(f"--rename names {table}.{old} twice ({old}={mapping[old]} and {old}={new})",
                                 hint="a column is renamed once: keep one of them")
        if new in mapping.values():
            first = next(o for o, n in mapping.items() if n == new)
            raise ParameterError(f"--rename maps two columns to {table}.{new} ({first}={new} and {old}={new})",
                                 hint="each new name takes one old column: keep one of them")
        mapping[old] = new
    for table, mapping in out.items():
        for old, new in mapping.items():
            if new in mapping:
                kind = "cycle" if mapping[new] == old or _cycles(mapping, old) else "chain"
                raise ParameterError(f"--rename {table}.{old}={new} and {table}.{new}={mapping[new]} form a {kind}",
                                     hint="a rename maps a column of the old version to a column of the new one; "
                                          "give each column's old and new name once")
    return out


def _cycles(mapping: Mapping[str, str], start: str) -> bool:
    seen, at = {start}, mapping.get(start)
    while at is not None and at in mapping:
        if at in seen:
            return True
        seen.add(at)
        at = mapping[at]
    return at == start


@dataclass(frozen=True)
class Tolerance:
    """A per-column tolerance: ``|a-b| <= abs_tol + rel_tol * max(|a|,|b|)`` counts as equal."""

    abs_tol: float = 0.0
    rel_tol: float = 0.0

    def text(self) -> str:
        return f"{self.rel_tol * 100!r}%" if self.rel_tol else repr(self.abs_tol)


def parse_tolerances(value: Any) -> dict[str, dict[str, Tolerance]]:
    """``--tolerance TABLE.COL=ABS`` or ``TABLE.COL=REL%`` items -> {table: {column: Tolerance}}.

    Refused: a malformed item, a number that is negative, NaN or infinite, and a column given twice."""
    out: dict[str, dict[str, Tolerance]] = {}
    for item in _split_items(value):
        left, eq, right = item.partition("=")
        table, column = _table_column(item, left, "--tolerance", "TABLE.COL=0.01 or TABLE.COL=0.5%")
        text = right.strip()
        relative = text.endswith("%")
        try:
            number = float(text[:-1] if relative else text) if eq and text else math.nan
        except ValueError:
            number = math.nan
        if not math.isfinite(number) or number < 0:
            raise ParameterError(f"--tolerance {item!r}: the tolerance must be a finite, non-negative number "
                                 f"(absolute) or percentage (relative)",
                                 hint="e.g. --tolerance orders.amount=0.01 or --tolerance orders.amount=0.5%")
        mapping = out.setdefault(table, {})
        if column in mapping:
            raise ParameterError(f"--tolerance names {table}.{column} twice", hint="give one tolerance per column")
        mapping[column] = Tolerance(0.0, number / 100) if relative else Tolerance(number, 0.0)
    return out


# ------------------------------------------------------------------------------------------ the delta
@dataclass(frozen=True)
class TableSchemaDelta:
    """What changed in one table's schema, old version to new.

    ``status`` is ``same``, ``changed``, ``dropped`` (only in the old version) or ``added``; ``added``
    and ``dropped`` are (column, type) pairs; ``retyped`` (column, old type, new type, kind) with kind
    as ``compare_as``; ``renamed`` (old name, new name) as given with ``--rename``; ``proposed`` the
    renames dqkit found evidence for (filled in after the comparison, never applied)."""

    name: str
    status: str
    added: tuple[tuple[str, str | None], ...] = ()
    dropped: tuple[tuple[str, str | None], ...] = ()
    retyped: tuple[tuple[str, str | None, str | None, str], ...] = ()
    renamed: tuple[tuple[str, str], ...] = ()
    proposed: tuple[dict[str, Any], ...] = ()

    @property
    def changed(self) -> bool:
        return self.status != "same"

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status,
                "added": [{"column": c, "type": t} for c, t in self.added],
                "dropped": [{"column": c, "type": t} for c, t in self.dropped],
                "retyped": [{"column": c, "old": o, "new": n, "compared": k} for c, o, n, k in self.retyped],
                "renamed": [{"old": o, "new": n} for o, n in self.renamed],
                "proposed_renames": [dict(p) for p in self.proposed]}

    def lines(self) -> list[str]:
        """One line per change, as people read it."""
        t = self.name
        if self.status in ("dropped", "added"):
            where = "old" if self.status == "dropped" else "new"
            return [f"table {t} {self.status}: it is only in the {where} version"]
        out = [f"{t}.{c} added ({_ty(ty)})" for c, ty in self.added]
        out += [f"{t}.{c} dropped ({_ty(ty)})" for c, ty in self.dropped]
        how = {"widened": "compared by value", "narrowed": "compared by value", "text": "compared as text",
               "excluded": "excluded", "unknown": "compared as read"}
        out += [f"{t}.{c} retyped {_ty(o)} \u2192 {_ty(n)} ({how.get(k, k)})" for c, o, n, k in self.retyped]
        out += [f"{t}.{o} renamed to {n}" for o, n in self.renamed]
        return out


def _ty(t: str | None) -> str:
    return t if t is not None else "type unknown"


@dataclass(frozen=True)
class SchemaDelta:
    """The schema delta of every selected table (``tables``, by name); empty when nothing changed."""

    tables: Mapping[str, TableSchemaDelta] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return any(t.changed for t in self.tables.values())

    def changed_tables(self) -> list[TableSchemaDelta]:
        return [t for t in self.tables.values() if t.changed]

    def lines(self) -> list[str]:
        return [line for t in self.changed_tables() for line in t.lines()]

    def to_dict(self) -> dict[str, Any]:
        return {"changed": self.changed, "tables": {n: t.to_dict() for n, t in self.tables.items() if t.changed}}


Columns = Mapping[str, "str | None"]


def table_schema_delta(name: str, old: Columns, new: Columns, renames: Mapping[str, str] | None = None,
                       excluded: Iterable[str] = ()) -> TableSchemaDelta:
    """The schema delta of one table from its columns and types in each version (``{col: type}``, a
    type None when unknown); ``renames`` maps old names to new ones, ``excluded`` columns (by either
    name) are left out, so an expected change disappears.

    Refused (``UnknownColumnError``): a rename whose old column is not only in the old version, or
    whose new column is not only in the new one."""
    renames = dict(renames or {})
    skip = set(excluded)
    for o, n in renames.items():
        if o not in old or o in new:
            where = "is not a column of the old version" if o not in old else "is still a column of the new version"
            raise UnknownColumnError(f"--rename {name}.{o}={n}: {name}.{o} {where}",
                                     hint=f"columns of {name} in the old version: {', '.join(old) or 'none'}")
        if n not in new or n in old:
            where = "is not a column of the new version" if n not in new else "is also a column of the old version"
            raise UnknownColumnError(f"--rename {name}.{o}={n}: {name}.{n} {where}",
                                     hint=f"columns of {name} in the new version: {', '.join(new) or 'none'}")
    renamed_new = set(renames.values())
    dropped = tuple((c, normal_type(t)) for c, t in old.items()
                    if c not in new and c not in renames and c not in skip)
    added = tuple((c, normal_type(t)) for c, t in new.items()
                  if c not in old and c not in renamed_new and c not in skip)
    retyped = []
    for c, t_old in old.items():
        target = renames.get(c, c)
        if target not in new or c in skip or target in skip:
            continue
        t_new = new[target]
        as_type, kind = compare_as(t_old, t_new)
        if kind in ("widened", "narrowed", "text"):
            retyped.append((target, normal_type(t_old), normal_type(t_new), kind))
    renamed = tuple((o, n) for o, n in renames.items() if o not in skip and n not in skip)
    status = "changed" if dropped or added or retyped or renamed else "same"
    return TableSchemaDelta(name, status, added, dropped, tuple(retyped), renamed)


def schema_delta(old: Mapping[str, Columns | None], new: Mapping[str, Columns | None],
                 renames: Mapping[str, Mapping[str, str]] | None = None,
                 excluded: Mapping[str, Iterable[str]] | None = None,
                 tables: Sequence[str] | None = None) -> SchemaDelta:
    """The schema delta of two databases (``{table: {col: type}}``; a table's columns None when they
    cannot be read without Spark, which leaves that table out). ``tables`` restricts the tables."""
    renames, excluded = renames or {}, excluded or {}
    names = sorted(set(old) | set(new))
    out: dict[str, TableSchemaDelta] = {}
    for name in names:
        if tables is not None and name not in tables:
            continue
        if name not in new:
            out[name] = TableSchemaDelta(name, "dropped")
        elif name not in old:
            out[name] = TableSchemaDelta(name, "added")
        elif old[name] is not None and new[name] is not None:
            out[name] = table_schema_delta(name, old[name] or {}, new[name] or {}, renames.get(name),
                                           excluded.get(name, ()))
    return SchemaDelta(out)


def refuse_changes(delta: SchemaDelta) -> None:
    """``--schema-changes fail``: raise ``SchemaChangeError`` listing every change, if any."""
    if delta.changed:
        raise SchemaChangeError("the schemas changed between the two versions (--schema-changes fail):\n  "
                                + "\n  ".join(delta.lines()),
                                hint="drop --schema-changes fail to compare the common columns and report the "
                                     "changes, or exclude the changed columns (--exclude TABLE.COL)")


def check_tolerance_columns(table: str, tolerances: Mapping[str, Tolerance], types: Columns) -> None:
    """Every column given a tolerance exists and, where its type is known, is numeric."""
    from dqkit.errors import UnsupportedTypeError

    for column in tolerances:
        if column not in types:
            raise UnknownColumnError(f"--tolerance {table}.{column}: no such column",
                                     hint=f"columns of {table}: {', '.join(types) or 'none'}")
        t = types[column]
        if t is not None and not is_numeric(t):
            raise UnsupportedTypeError(f"--tolerance {table}.{column}: the column is {t}, not a number",
                                       hint="a tolerance applies to numeric columns only; drop it for this column")
