"""The engine interface and what every engine shares: logical types, normalised values, bound sides.

See ``dqkit.tcfc.engines`` for how a side is bound and compared across engines."""
from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from dqkit.errors import SourceError
from dqkit.tcfc.spec import ALL_COLUMNS, Aggregate, Side, mask_url


#: logical types every engine's column types map to
NUMERIC = ("int", "decimal", "float", "bool")
DEFAULT_CONNECT_TIMEOUT = 10.0
#: up to this many parent fragments, a Spark child query filters with literals; above, a broadcast semi-join
SMALL_BATCH = 32
#: default cap on the parent fragments of one batched child job (P1), per engine: Spark takes the parent set
#: as one broadcast semi-join, so a level costs one scan however many fragments differ; a database gets an
#: OR-list of null-safe predicates, which grows the query text (and a cancelled batch loses less work).
#: A pair's cap is the smaller of its two sides'; the spec's ``max_batch`` overrides it.
MAX_BATCH = {"spark": 100_000, "postgresql": 500, "sqlite": 500, "duckdb": 500}
#: PostgreSQL filters on ONE fragmentation column with ``c = ANY(%s)`` (one array parameter), not an OR-list
MAX_BATCH_ONE_COLUMN = {**MAX_BATCH, "postgresql": 100_000}


def max_batch(kind: str, filter_cols: Sequence[str]) -> int:
    """The default batch cap of an engine for a filter on ``filter_cols`` (see ``MAX_BATCH``)."""
    return (MAX_BATCH_ONE_COLUMN if len(filter_cols) == 1 else MAX_BATCH)[kind]


@dataclass(frozen=True, order=True)
class Unrepresentable:
    """A value one engine holds but Python (and so the other engine) cannot: kept as its text (X1)."""

    engine: str
    text: str

    def __str__(self) -> str:
        return f"<{self.engine} value {self.text!r} cannot be represented>"


@dataclass
class BoundSide:
    """A side bound to its engine: the source-named columns with their logical and engine types."""

    side: Side
    engine: Engine
    types: dict[str, str]                     # source attribute name -> logical type
    physical: dict[str, str]                  # source attribute name -> this side's column name
    native: dict[str, Any] = field(default_factory=dict)  # name -> engine type (Spark DataType, SQL name)
    frame: Any = None                         # Spark: the relation's DataFrame

    def label(self) -> str:
        return self.side.describe()


# ------------------------------------------------------------------------------------ normalising
def _parse_date(text: str) -> dt.date | None:
    try:
        return dt.date.fromisoformat(text.strip()[:10]) if re.fullmatch(r"\d{4}-\d\d-\d\d", text.strip()) else None
    except ValueError:
        return None


def _parse_timestamp(text: str) -> dt.datetime | None:
    t = text.strip()
    if not re.match(r"^\d{4}-\d\d-\d\d", t):
        return None
    try:
        v = dt.datetime.fromisoformat(t)
    except ValueError:
        return None
    if v.tzinfo is not None:
        v = v.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return v


def normalise(value: Any, logical: str, engine: str) -> Any:
    """One engine value in the canonical Python form of its logical type (see the module docstring)."""
    if value is None:
        return None
    if logical == "date":
        if isinstance(value, dt.datetime):
            return value.date() if value.time() == dt.time() else value
        if isinstance(value, dt.date):
            return value
        parsed = _parse_date(str(value))
        return parsed if parsed is not None else Unrepresentable(engine, str(value))
    if logical == "timestamp":
        if isinstance(value, dt.datetime):
            return value.astimezone(dt.timezone.utc).replace(tzinfo=None) if value.tzinfo else value
        if isinstance(value, dt.date):
            return dt.datetime(value.year, value.month, value.day)
        parsed = _parse_timestamp(str(value))
        return parsed if parsed is not None else Unrepresentable(engine, str(value))
    if isinstance(value, bool):
        return value
    if isinstance(value, Decimal):
        return value if value.is_finite() else Unrepresentable(engine, str(value))
    if isinstance(value, (int, float, str)):
        if logical == "decimal" and isinstance(value, str):
            try:
                return Decimal(value)
            except InvalidOperation:
                return Unrepresentable(engine, value)
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, dict):  # a Spark struct (hash aggregate)
        return tuple(value.values())
    return value


def family(logical: str) -> str:
    """The comparison family of a logical type: numbers, text, date, timestamp, any (untyped), other."""
    if logical in NUMERIC:
        return "number"
    if logical in ("string", "date", "timestamp", "any"):
        return logical
    return "other"


def common_type(a: str, b: str) -> str | None:
    """The logical type two sides' columns are compared in, or None when they cannot be compared."""
    fa, fb = family(a), family(b)
    if fa == "any":
        return b
    if fb == "any":
        return a
    if fa != fb or fa == "other":
        return None
    if fa == "number":
        for t in ("float", "decimal", "int", "bool"):
            if t in (a, b):
                return t
    return a


# ------------------------------------------------------------------------------------------ engines
class Engine:
    """One engine reachable from dqkit; subclasses run Algorithm 2 in their own engine."""

    kind = "engine"

    def __init__(self) -> None:
        self.queries = 0
        self.last_sql = ""

    def bind(self, side: Side) -> BoundSide:  # pragma: no cover - abstract
        raise NotImplementedError

    def aggregate(self, bound: BoundSide, X: Sequence[str], aggs: Sequence[Aggregate],
                  filter_cols: Sequence[str], filter_values: Sequence[tuple], deadline: float | None = None,
                  near_distinct: bool = False) -> tuple[list[tuple], int]:  # pragma: no cover - abstract
        """Rows (X values, aggregate values) for the fragments of ``X`` whose ``filter_cols`` values are
        one of ``filter_values`` (no filter when ``filter_cols`` is empty), and the bytes fetched.
        ``near_distinct``: the groups are expected to hold about one row each (a key level)."""
        raise NotImplementedError

    def rows(self, bound: BoundSide, filter_cols: Sequence[str], values: tuple, limit: int) -> Any:
        """At most ``limit`` rows of one fragment, as a pandas DataFrame (for drill-down views)."""
        raise NotImplementedError  # pragma: no cover

    def exact_statistics(self, bound: BoundSide, aggs: Sequence[Aggregate]) -> tuple[tuple | None, str]:
        """P4: the X = ∅ row of ``aggs`` (all counts) from *exact* table statistics, without a query, and
        where it came from; ``(None, why not)`` when this side has none, so the caller runs the query.

        Only statistics that are exact by construction are used. A database's catalog counts are not:
        PostgreSQL's ``pg_class.reltuples`` and ``pg_stat_user_tables.n_live_tup`` are estimates refreshed
        by ANALYZE/VACUUM, SQLite's ``sqlite_stat1`` is a planner hint, DuckDB's ``estimated_size`` says
        what it is; so the database engines always answer with a query."""
        return None, f"{self.kind} keeps no exact row count (its catalog counts are estimates)"

    def distinct_count(self, bound: BoundSide, cols: Sequence[str]) -> int:
        """The number of distinct ``cols`` values (M4 checks)."""
        raise NotImplementedError  # pragma: no cover

    def cancel(self) -> None:
        """Stop the running query, from any thread."""

    def close(self) -> None:
        """Release the connection."""


def _needed(X: Sequence[str], aggs: Sequence[Aggregate], bound: BoundSide, filter_cols: Sequence[str]) -> list[str]:
    names = list(dict.fromkeys([*X, *filter_cols]))
    for a in aggs:
        if a.attribute == ALL_COLUMNS:
            if a.function == "hash":
                names += [c for c in hash_columns(bound, X) if c not in names]
        elif a.attribute not in names:
            names.append(a.attribute)
    return names


def hash_columns(bound: BoundSide, X: Sequence[str]) -> list[str]:
    """The columns ``hash(*)`` covers: R minus X, in name order (so both sides hash them alike)."""
    return sorted(c for c in bound.types if c not in X)


def _value_bytes(v: Any) -> int:
    if v is None:
        return 1
    if isinstance(v, (int, float, bool)):
        return 8
    if isinstance(v, str):
        return len(v.encode("utf-8"))
    if isinstance(v, (dt.date, dt.datetime)):
        return 8
    return len(str(v))


def rows_bytes(rows: Sequence[Sequence[Any]]) -> int:
    """An estimate of the bytes a set of fetched rows holds (what crossed from an engine)."""
    return sum(_value_bytes(v) for r in rows for v in r)


# ------------------------------------------------------------------------------------------ helpers
def _file_of(url: str) -> str:
    m = re.match(r"^[a-z]+:///(.*)$", url)
    if not m:
        raise SourceError(f"cannot read the database URL {mask_url(url)}",
                          hint="write sqlite:///relative.db, sqlite:////absolute/path.db (duckdb:/// the same)")
    return m.group(1) or ":memory:"


def _first_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return (lines[0] if lines else type(exc).__name__)[:300]


def _mask_text(text: str, url: str) -> str:
    from urllib.parse import unquote, urlsplit

    try:
        pw = urlsplit(url).password
    except ValueError:
        pw = None
    return text.replace(unquote(pw), "***").replace(pw, "***") if pw else text
