"""Engines behind one interface (P2, X1): Spark, PostgreSQL (psycopg 3), SQLite (stdlib), DuckDB.

Each side of a pair is *bound* to an engine (``bind``): its schema is read without running a query
(Spark: the DataFrame's schema; databases: a ``LIMIT 0`` probe), the columns are mapped to the source's
names (the attribute map of tau^-1) and given a logical type. ``Engine.aggregate`` then runs the
paper's Algorithm 2 *inside that engine*: ``SELECT X, af(A) AS B FROM rel WHERE filter GROUP BY X``,
and only the aggregated rows come back, as normalised Python values (``normalise``), so values from
different engines compare equal when they mean the same thing:

* integers and decimals as ``int``/``Decimal`` (``Decimal('5') == 5``), floats as ``float``;
* dates as ``datetime.date``, timestamps as naive ``datetime`` (aware ones in UTC); databases return
  them as text (``CAST(c AS VARCHAR)``) so that a value Python cannot hold (PostgreSQL's year 20000,
  ``infinity``: the paper's Informix DATE example) becomes an ``Unrepresentable`` value that is
  reported with its fragment instead of failing the query or being dropped;
* strings as ``str``; NULL as ``None``; booleans as ``bool`` (equal to 0/1, as SQLite stores them).

SQL is built from identifiers quoted by the engine's own rules (psycopg's ``sql.Identifier`` on
PostgreSQL; doubled double quotes on SQLite and DuckDB) and values bound as parameters; fragment filters
are null-safe (``c IS NULL`` for a NULL value, ``c = ?`` otherwise), as C3 requires. Every engine can be
cancelled from another thread (``cancel``): Spark through a job tag, PostgreSQL with ``cancel_safe()``
(and a ``statement_timeout`` set from the remaining budget as a backstop), SQLite and DuckDB with
``interrupt()``.
"""
from __future__ import annotations

import datetime as dt
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from dqkit.errors import CancelledError, SourceError, UnknownColumnError, UnsupportedTypeError
from dqkit.tcfc.spec import ALL_COLUMNS, Aggregate, CompareSpec, Side, SpecError, mask_url

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


def parquet_footer_counts(files: Sequence[str], columns: Sequence[str]) -> tuple[int, dict[str, int]] | None:
    """(rows, {column: non-NULL values}) summed over the footers of ``files`` (P4), read with pyarrow; None
    when a file is not Parquet or cannot be read now, or a column's null count is missing from a row group
    (then only a query is exact). Footers are exact: a writer records each row group's row count."""
    import pyarrow.parquet as pq
    from pyarrow import fs as pafs

    total = 0
    non_null = {c: 0 for c in columns}
    for f in files:
        try:
            filesystem, path = pafs.FileSystem.from_uri(f) if "://" in f else (pafs.LocalFileSystem(), f)
            with filesystem.open_input_file(path) as handle:
                meta = pq.ParquetFile(handle).metadata
        except Exception:  # noqa: BLE001 - gone, replaced or not Parquet: the query answers instead
            return None
        index = {meta.schema.column(i).path: i for i in range(meta.num_columns)}
        if any(c not in index for c in columns):  # a partition column, or a nested one
            return None
        for g in range(meta.num_row_groups):
            rg = meta.row_group(g)
            total += rg.num_rows
            for c in columns:
                stats = rg.column(index[c]).statistics
                if stats is None or not stats.has_null_count:
                    return None
                non_null[c] += rg.num_rows - stats.null_count
    return total, non_null


# ------------------------------------------------------------------------------------------- Spark
_SPARK_TYPES = {"ByteType": "int", "ShortType": "int", "IntegerType": "int", "LongType": "int",
                "DecimalType": "decimal", "FloatType": "float", "DoubleType": "float", "StringType": "string",
                "CharType": "string", "VarcharType": "string", "DateType": "date", "TimestampType": "timestamp",
                "TimestampNTZType": "timestamp", "BooleanType": "bool", "NullType": "any"}


class SparkEngine(Engine):
    """Spark: any dqkit table source, a Spark SQL tau^-1 over named table sources, or a DataFrame builder."""

    kind = "spark"

    def __init__(self, spark: Any = None) -> None:
        super().__init__()
        from dqkit.progress import new_tag
        from dqkit.session import get_spark

        self.spark = spark or get_spark()
        self.tag = new_tag("dqkit-tcfc")
        self.jobs = 0

    def bind(self, side: Side) -> BoundSide:
        from dqkit.sources import read_table

        if side.frame is not None:
            df = side.frame() if callable(side.frame) and not hasattr(side.frame, "schema") else side.frame
        elif side.query is not None:
            for name, source in side.tables.items():
                read_table(source, self.spark).createOrReplaceTempView(name)
            try:
                df = self.spark.sql(side.query)
            except Exception as exc:
                raise SourceError(f"the Spark query of {side.describe()} does not run: {_first_line(exc)}",
                                  hint="check the tau^-1 query and the view names in 'tables'") from exc
        else:
            df = read_table(side.table, self.spark)
        reverse = {phys: name for name, phys in side.columns.items()}
        types, physical, native = {}, {}, {}
        for f in df.schema.fields:
            name = reverse.get(f.name, f.name)
            types[name] = _SPARK_TYPES.get(type(f.dataType).__name__, "other")
            physical[name] = f.name
            native[name] = f.dataType
        return BoundSide(side, self, types, physical, native, df)

    def _relation(self, bound: BoundSide, cols: Sequence[str]) -> Any:
        from dqkit.sparkutil import col

        return bound.frame.select(*[col(bound.physical[c]).alias(c) for c in cols])

    def _filtered(self, bound: BoundSide, rel: Any, filter_cols: Sequence[str], filter_values: Sequence[tuple]) -> Any:
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        from dqkit.sparkutil import col

        if not filter_cols:
            return rel
        schema = T.StructType([T.StructField(f"_dq_p{i}", bound.native[c], True) for i, c in enumerate(filter_cols)])
        rows = []
        for tup in filter_values:
            conv = [_to_spark(v, bound.native[c]) for v, c in zip(tup, filter_cols)]
            if all(ok for ok, _ in conv):  # a value Spark cannot hold matches no Spark row
                rows.append(tuple(v for _, v in conv))
        if len(rows) <= SMALL_BATCH:  # a null-safe predicate of typed literals: no broadcast job
            from functools import reduce

            if not rows:
                return rel.where(F.lit(False))
            preds = [reduce(lambda a, b: a & b, [col(c).eqNullSafe(F.lit(v).cast(bound.native[c]))
                                                 for c, v in zip(filter_cols, r)]) for r in rows]
            return rel.where(reduce(lambda a, b: a | b, preds))
        parents = self.spark.createDataFrame(rows, schema)
        cond = [col(c).eqNullSafe(F.col(f"_dq_p{i}")) for i, c in enumerate(filter_cols)]
        return rel.join(F.broadcast(parents), on=cond, how="left_semi")

    def aggregate_frame(self, bound: BoundSide, X: Sequence[str], aggs: Sequence[Aggregate],
                        filter_cols: Sequence[str], filter_values: Sequence[tuple]) -> Any:
        """Algorithm 2 as a Spark DataFrame (not yet run)."""
        from pyspark.sql import functions as F

        from dqkit import fingerprint
        from dqkit.sparkutil import col

        rel = self._filtered(bound, self._relation(bound, _needed(X, aggs, bound, filter_cols)), filter_cols,
                             filter_values)
        exprs = []
        for a in aggs:
            if a.function == "count":
                e = F.count(F.lit(1)) if a.attribute == ALL_COLUMNS else F.count(col(a.attribute))
            elif a.function == "hash":
                cols = hash_columns(bound, X) if a.attribute == ALL_COLUMNS else [a.attribute]
                e = fingerprint.group_fingerprint(*fingerprint.row_fingerprint(rel, cols))
            else:
                e = getattr(F, {"avg": "avg", "sum": "sum", "min": "min", "max": "max"}[a.function])(col(a.attribute))
            exprs.append(e.alias(a.alias))
        return rel.groupBy(*[col(c) for c in X]).agg(*exprs) if X else rel.agg(*exprs)

    #: at a key level (groups of about one row) the pre-shuffle partial aggregation reduces nothing
    NEAR_DISTINCT_CONF = {"spark.sql.execution.bypassPartialAggregation": "true"}

    def _fetch(self, out: Any, near_distinct: bool = False) -> Any:
        import contextlib

        from dqkit.progress import tagged
        from dqkit.sparkutil import cancelled_from, scoped_conf

        self.queries += 1
        conf = scoped_conf(self.spark, self.NEAR_DISTINCT_CONF) if near_distinct else contextlib.nullcontext()
        with tagged(self.spark, self.tag), conf:
            try:
                table = out.toArrow()
            except Exception as exc:
                err = cancelled_from(exc, "the aggregate query")
                if err is not None:
                    raise err from exc
                raise
        self.jobs += 1
        return table

    def aggregate(self, bound, X, aggs, filter_cols, filter_values, deadline=None, near_distinct=False):
        table = self._fetch(self.aggregate_frame(bound, X, aggs, filter_cols, filter_values), near_distinct)
        cols = [table.column(i).to_pylist() for i in range(table.num_columns)]
        return (list(zip(*cols)) if cols else []), int(table.nbytes)

    def compare_in_spark(self, src: BoundSide, tgt: BoundSide, X: Sequence[str], aggs: Sequence[Aggregate],
                         filter_cols: Sequence[str], filter_values: Sequence[tuple], abs_tol: float, rel_tol: float,
                         near_distinct: bool = False) -> tuple[list[tuple], list[tuple], int]:
        """Both sides in this one Spark session: compare the two aggregates in Spark and fetch only the
        fragments that differ (exactly the ones ``classify`` would keep), so equal fragments never reach the
        driver. Returns (source rows, target rows, bytes fetched) of the differing fragments.

        When both sides give the used columns the same Spark types (and no hash aggregate is asked for), the
        sides are stacked (``unionByName``, tagged) and aggregated in ONE ``GROUP BY X`` with each aggregate
        computed per side (``af(CASE WHEN side THEN A END)``): one shuffle of the level's (filtered) rows,
        where aggregating each side and joining the aggregates shuffles twice more. GROUP BY is null-safe
        by nature (NULL is one group). Otherwise the two aggregates are joined null-safely on X."""
        from functools import reduce

        from pyspark.sql import functions as F

        from dqkit.sparkutil import col

        n = len(aggs)
        stacked = self._stacked_compare(src, tgt, X, aggs, filter_cols, filter_values)
        if stacked is not None:
            j = stacked
        else:
            j = self._joined_compare(src, tgt, X, aggs, filter_cols, filter_values)

        def same(i: int) -> Any:
            s, t = F.col(f"_dq_s{i}"), F.col(f"_dq_t{i}")
            floaty = aggs[i].function == "avg" or src.types.get(aggs[i].attribute) == "float" \
                or tgt.types.get(aggs[i].attribute) == "float"
            if aggs[i].function in ("sum", "min", "max", "avg") and floaty:
                fs, ft = s.cast("double"), t.cast("double")
                close = F.abs(fs - ft) <= F.lit(abs_tol) + F.lit(rel_tol) * F.greatest(F.abs(fs), F.abs(ft))
                return (s.isNull() & t.isNull()) | F.coalesce(close, F.lit(False))
            return s.eqNullSafe(t)

        equal = F.col("_dq_in_s").isNotNull() & F.col("_dq_in_t").isNotNull()
        if n:
            equal = equal & reduce(lambda p, q: p & q, [same(i) for i in range(n)])
        table = self._fetch(j.where(~equal), near_distinct)
        data = {name: table.column(name).to_pylist() for name in table.column_names}
        y = "_dq_y" if stacked is None else "_dq_x"  # stacked: one X for both sides
        src_rows, tgt_rows = [], []
        for r in range(table.num_rows):
            if data["_dq_in_s"][r] is not None:
                src_rows.append(tuple(data[f"_dq_x{i}"][r] for i in range(len(X)))
                                + tuple(data[f"_dq_s{i}"][r] for i in range(n)))
            if data["_dq_in_t"][r] is not None:
                tgt_rows.append(tuple(data[f"{y}{i}"][r] for i in range(len(X)))
                                + tuple(data[f"_dq_t{i}"][r] for i in range(n)))
        return src_rows, tgt_rows, int(table.nbytes)

    def _joined_compare(self, src: BoundSide, tgt: BoundSide, X: Sequence[str], aggs: Sequence[Aggregate],
                        filter_cols: Sequence[str], filter_values: Sequence[tuple]) -> Any:
        """Each side aggregated on its own, then the aggregates full-outer-joined null-safely on X."""
        from functools import reduce

        from pyspark.sql import functions as F

        from dqkit.sparkutil import col

        a = self.aggregate_frame(src, X, aggs, filter_cols, filter_values)
        b = self.aggregate_frame(tgt, X, aggs, filter_cols, filter_values)
        a = a.select(*[col(c).alias(f"_dq_x{i}") for i, c in enumerate(X)],
                     *[col(g.alias).alias(f"_dq_s{i}") for i, g in enumerate(aggs)], F.lit(1).alias("_dq_in_s"))
        b = b.select(*[col(c).alias(f"_dq_y{i}") for i, c in enumerate(X)],
                     *[col(g.alias).alias(f"_dq_t{i}") for i, g in enumerate(aggs)], F.lit(1).alias("_dq_in_t"))
        if not X:
            return a.crossJoin(b)
        cond = reduce(lambda p, q: p & q, [F.col(f"_dq_x{i}").eqNullSafe(F.col(f"_dq_y{i}")) for i in range(len(X))])
        return a.join(b, cond, "full_outer")

    def _stacked_compare(self, src: BoundSide, tgt: BoundSide, X: Sequence[str], aggs: Sequence[Aggregate],
                         filter_cols: Sequence[str], filter_values: Sequence[tuple]) -> Any:
        """Both sides stacked and aggregated in one GROUP BY X (see ``compare_in_spark``); None when the sides'
        column types differ or a hash aggregate is asked for (then the aggregates are joined)."""
        from pyspark.sql import functions as F

        from dqkit.sparkutil import col

        if any(a.function == "hash" for a in aggs):
            return None
        names = list(dict.fromkeys([*_needed(X, aggs, src, filter_cols), *_needed(X, aggs, tgt, filter_cols)]))
        if any(src.native.get(c) != tgt.native.get(c) for c in names):
            return None
        side = "_dq_side"
        parts = [self._filtered(b, self._relation(b, names), filter_cols, filter_values).withColumn(side, F.lit(k))
                 for k, b in ((0, src), (1, tgt))]
        rel = parts[0].unionByName(parts[1])
        exprs = []
        for k, tag in ((0, "s"), (1, "t")):
            on = F.col(side) == F.lit(k)
            for i, a in enumerate(aggs):
                if a.function == "count":
                    e = F.count(F.when(on, F.lit(1) if a.attribute == ALL_COLUMNS else col(a.attribute)))
                else:
                    e = getattr(F, a.function)(F.when(on, col(a.attribute)))
                exprs.append(e.alias(f"_dq_{tag}{i}"))
            present = F.lit(1) if not X else F.when(F.max(on.cast("int")) == 1, F.lit(1))
            exprs.append(present.alias(f"_dq_in_{tag}"))
        g = rel.groupBy(*[col(c) for c in X]).agg(*exprs) if X else rel.agg(*exprs)
        keys = [col(c) for c in X]
        return g.select(*[k.alias(f"_dq_x{i}") for i, k in enumerate(keys)],
                        *[F.col(f"_dq_{t}{i}") for t in ("s", "t") for i in range(len(aggs))],
                        F.col("_dq_in_s"), F.col("_dq_in_t"))

    def rows(self, bound, filter_cols, values, limit):
        rel = self._filtered(bound, self._relation(bound, list(bound.types)), filter_cols, [values])
        return rel.limit(limit).toPandas()

    def distinct_count(self, bound, cols):
        return int(self._relation(bound, list(cols)).distinct().count())

    def exact_statistics(self, bound, aggs):
        """Row and non-NULL counts from the Parquet footers of exactly the files this side's scan reads
        (``DataFrame.inputFiles()``), when the side is a plain Parquet table source (a file or folder path).

        Not used: a tau^-1 query or a DataFrame builder (filters and joins change the count); CSV/JSON (no
        footer); Spark catalog tables, whose ``ANALYZE``d ``rowCount`` is not kept current when another
        writer adds files to the table's location, and whose files may carry Delta/Iceberg deletes the
        footers do not show. ``count(c)`` needs the footer's null count of ``c`` in every row group."""
        side = bound.side
        if side.query is not None or side.frame is not None or not isinstance(side.table, str):
            return None, "not a plain table source (a tau^-1 query or a DataFrame)"
        if side.table.startswith("catalog:"):
            return None, "a Spark catalog table (its rowCount statistic may be stale)"
        try:
            files = list(bound.frame.inputFiles())
        except Exception as exc:  # noqa: BLE001 - no listing: answer with the query
            return None, f"the scan's files are unknown ({_first_line(exc)})"
        columns = {a.attribute: bound.physical[a.attribute] for a in aggs if a.attribute != ALL_COLUMNS}
        counts = parquet_footer_counts(files, list(columns.values()))
        if counts is None:
            return None, "not every file has a readable Parquet footer with the counts"
        rows, non_null = counts
        return tuple(rows if a.attribute == ALL_COLUMNS else non_null[columns[a.attribute]] for a in aggs), \
            f"Parquet footers of {len(files)} file(s)"

    def cancel(self) -> None:
        from dqkit.progress import cancel_tag

        try:
            cancel_tag(self.spark, self.tag)
        except Exception:  # the session may be gone
            pass

    def running_jobs(self) -> list[int]:
        """Ids of this engine's Spark jobs still running (classic Spark; [] when unknown)."""
        try:
            tracker = self.spark.sparkContext.statusTracker()
            active = set(tracker.getActiveJobsIds())
            tagged_ids = set(self.spark.sparkContext._jsc.sc().statusTracker().getJobIdsForTag(self.tag))
            return sorted(active & tagged_ids)
        except Exception:
            return []


def _to_spark(value: Any, dtype: Any) -> tuple[bool, Any]:
    """(can Spark hold it, the value as Spark's Python type for ``dtype``)."""
    from pyspark.sql import types as T

    if value is None:
        return True, None
    if isinstance(value, Unrepresentable):
        return False, None
    try:
        if isinstance(dtype, T.DecimalType):
            return True, Decimal(str(value))
        if isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
            return (True, int(value)) if int(value) == value else (False, None)
        if isinstance(dtype, (T.FloatType, T.DoubleType)):
            return True, float(value)
        if isinstance(dtype, T.StringType):
            return True, str(value)
        if isinstance(dtype, T.BooleanType):
            return True, bool(value)
        if isinstance(dtype, T.DateType):
            if isinstance(value, dt.datetime):
                return (True, value.date()) if value.time() == dt.time() else (False, None)
            return True, value if isinstance(value, dt.date) else dt.date.fromisoformat(str(value))
        if isinstance(dtype, (T.TimestampType, T.TimestampNTZType)):
            return True, value if isinstance(value, dt.datetime) else dt.datetime.fromisoformat(str(value))
    except (ValueError, TypeError, InvalidOperation):
        return False, None
    return True, value


# ------------------------------------------------------------------------------------ DB-API engines
class DbApiEngine(Engine):
    """Shared SQL generation for the DB-API engines; subclasses connect, quote and describe types."""

    placeholder = "?"

    def __init__(self, url: str, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT) -> None:
        super().__init__()
        self.url = url
        self.connect_timeout = connect_timeout
        self._lock = threading.Lock()
        self.conn = self._connect()

    # --- per engine
    def _connect(self) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def quote(self, name: str) -> str:
        return '"' + name.replace('"', '""') + '"'

    def _column_types(self, base: str, side: Side) -> dict[str, tuple[str, str]]:  # pragma: no cover
        raise NotImplementedError

    def _text(self, expr: str) -> str:
        """``expr`` cast to text (dates and timestamps cross as text, see ``normalise``)."""
        return f"CAST({expr} AS VARCHAR)"

    def _param_for(self, value: Any, logical: str) -> tuple[str, Any]:
        """(placeholder expression, bound value) for a filter value of a column of type ``logical``."""
        if isinstance(value, Unrepresentable):
            value = value.text
        if logical in ("date", "timestamp"):
            text = value.isoformat(sep=" ") if isinstance(value, dt.datetime) else (
                value.isoformat() if isinstance(value, dt.date) else str(value))
            return f"CAST({self.placeholder} AS {'DATE' if logical == 'date' else 'TIMESTAMP'})", text
        return self.placeholder, value

    def _execute(self, sql: str, params: Sequence[Any], deadline: float | None) -> tuple[list[tuple], int]:
        with self._lock:
            cur = self.conn.cursor()
            try:
                if params or self.placeholder == "%s":  # psycopg: '%%' in a query text needs params
                    cur.execute(sql, list(params))
                else:
                    cur.execute(sql)
                rows = [tuple(r) for r in cur.fetchall()]
            except Exception as exc:
                raise self._failure(exc, sql) from exc
            finally:
                try:
                    cur.close()
                except Exception:
                    pass
        self.queries += 1
        return rows, rows_bytes(rows)

    def _failure(self, exc: Exception, sql: str) -> Exception:
        text = str(exc).lower()
        if "interrupt" in text or "cancel" in text or "statement timeout" in text:
            return CancelledError(f"the query on {mask_url(self.url)} was cancelled")
        return SourceError(f"the query on {mask_url(self.url)} failed: {_first_line(exc)}",
                           hint="check the table, the tau^-1 query and the column names of the spec")

    # --- shared
    def _base(self, side: Side) -> str:
        if side.query is not None:
            q = side.query.strip().rstrip(";")
            if self.placeholder == "%s":
                q = q.replace("%", "%%")
            return f"({q}) AS {self.quote('_dq_src')}"
        if side.table is None:
            raise SpecError(f"{side.describe()}: a database side needs a table or a query")
        return ".".join(self.quote(p) for p in side.table.split("."))

    def bind(self, side: Side) -> BoundSide:
        base = self._base(side)
        described = self._column_types(base, side)
        reverse = {phys: name for name, phys in side.columns.items()}
        types, physical, native = {}, {}, {}
        for phys, (logical, native_name) in described.items():
            name = reverse.get(phys, phys)
            types[name], physical[name], native[name] = logical, phys, native_name
        return BoundSide(side, self, types, physical, native, base)

    def _inner(self, bound: BoundSide, cols: Sequence[str]) -> str:
        items = [f"{self.quote(bound.physical[c])} AS {self.quote(c)}" for c in cols] or ["1 AS " + self.quote("_dq_one")]
        base = self._base(bound.side)
        return f"(SELECT {', '.join(items)} FROM {base}) AS {self.quote('_dq_t')}"

    def _where(self, bound: BoundSide, filter_cols: Sequence[str], filter_values: Sequence[tuple]
               ) -> tuple[str, list[Any]]:
        if not filter_cols:
            return "", []
        params: list[Any] = []
        ors = []
        for tup in filter_values:
            ands = []
            for c, v in zip(filter_cols, tup):
                if v is None:
                    ands.append(f"{self.quote(c)} IS NULL")
                else:
                    ph, pv = self._param_for(v, bound.types.get(c, "any"))
                    ands.append(f"{self.quote(c)} = {ph}")
                    params.append(pv)
            ors.append("(" + " AND ".join(ands) + ")")
        return " WHERE " + (" OR ".join(ors) if ors else "1 = 0"), params

    def _agg_sql(self, bound: BoundSide, a: Aggregate) -> str:
        if a.function == "count":
            return "COUNT(*)" if a.attribute == ALL_COLUMNS else f"COUNT({self.quote(a.attribute)})"
        if a.function == "hash":
            return self._hash_sql(bound, a)
        expr = f"{a.function.upper()}({self.quote(a.attribute)})"
        if a.function in ("min", "max") and bound.types.get(a.attribute) in ("date", "timestamp"):
            return self._text(expr)
        if a.function == "avg":
            return f"AVG(CAST({self.quote(a.attribute)} AS DOUBLE PRECISION))"
        return expr

    _current_x: Sequence[str] = ()

    def aggregate(self, bound, X, aggs, filter_cols, filter_values, deadline=None, near_distinct=False):
        self._current_x = tuple(X)
        sel = [self._text(self.quote(c)) if bound.types.get(c) in ("date", "timestamp") else self.quote(c) for c in X]
        sel += [f"{self._agg_sql(bound, a)} AS {self.quote(a.alias)}" for a in aggs]
        where, params = self._where(bound, filter_cols, filter_values)
        sql = f"SELECT {', '.join(sel)} FROM {self._inner(bound, _needed(X, aggs, bound, filter_cols))}{where}"
        if X:
            sql += " GROUP BY " + ", ".join(self.quote(c) for c in X)
        self.last_sql = sql
        self._before(deadline)
        return self._execute(sql, params, deadline)

    def _hash_sql(self, bound: BoundSide, a: Aggregate) -> str:
        raise UnsupportedTypeError(f"the hash aggregate does not run on {self.kind}",  # refused by the spec (H3)
                                   hint="use count, sum, min and max")

    def _before(self, deadline: float | None) -> None:
        """Engine-specific set-up before a query (PostgreSQL: a statement_timeout from the budget)."""

    def rows(self, bound, filter_cols, values, limit):
        import pandas as pd

        cols = list(bound.types)
        where, params = self._where(bound, filter_cols, [values])
        sql = f"SELECT * FROM {self._inner(bound, cols)}{where} LIMIT {int(limit)}"
        rows, _ = self._execute(sql, params, None)
        return pd.DataFrame(rows, columns=cols)

    def distinct_count(self, bound, cols):
        inner = self._inner(bound, list(cols))
        sel = ", ".join(self.quote(c) for c in cols) or "1"
        rows, _ = self._execute(f"SELECT COUNT(*) FROM (SELECT DISTINCT {sel} FROM {inner}) AS {self.quote('_dq_d')}",
                                [], None)
        return int(rows[0][0])

    def close(self) -> None:
        try:
            self.conn.close()
        except Exception:
            pass


def _logical_from_name(name: str) -> str:
    n = name.lower()
    if n.startswith(("bool",)):
        return "bool"
    if any(k in n for k in ("int", "serial")) and "interval" not in n and "point" not in n:
        return "int"
    if n.startswith(("numeric", "decimal", "hugeint", "uhugeint")) or n == "number":
        return "decimal"
    if any(k in n for k in ("real", "float", "double")):
        return "float"
    if n.startswith(("char", "varchar", "text", "string", "bpchar", "character", "name", "clob", "uuid")):
        return "string"
    if n == "date":
        return "date"
    if n.startswith(("timestamp", "datetime")):
        return "timestamp"
    return "other"


class PostgresEngine(DbApiEngine):
    """PostgreSQL through psycopg 3 (a real server; ``pgserver`` starts one for tests and tutorials)."""

    kind = "postgresql"
    placeholder = "%s"

    def _connect(self) -> Any:
        import psycopg

        url = self.url.replace("postgres://", "postgresql://", 1)
        try:
            conn = psycopg.connect(url, connect_timeout=max(1, int(round(self.connect_timeout))), autocommit=True)
        except Exception as exc:
            raise SourceError(f"cannot connect to {mask_url(self.url)} within {self.connect_timeout:g} s: "
                              f"{_mask_text(_first_line(exc), self.url)}",
                              hint="check the host, port, database and credentials, and that the server runs") from None
        conn.execute("SET default_transaction_read_only = on")  # inputs are never modified
        conn.execute("SET DateStyle = 'ISO, YMD'")
        return conn

    def quote(self, name: str) -> str:
        from psycopg import sql

        return sql.Identifier(name).as_string(self.conn)

    def _text(self, expr: str) -> str:
        return f"CAST({expr} AS TEXT)"

    def _column_types(self, base: str, side: Side) -> dict[str, tuple[str, str]]:
        cur = self.conn.cursor()
        try:
            cur.execute(f"SELECT * FROM {base} LIMIT 0", [])
        except Exception as exc:
            raise SourceError(f"cannot read {side.describe()}: {_first_line(exc)}",
                              hint="check the table name or the tau^-1 query") from None
        out = {}
        for d in cur.description:
            info = self.conn.adapters.types.get(d.type_code)
            name = info.name if info is not None else str(d.type_code)
            out[d.name] = (_logical_from_name(name), name)
        cur.close()
        return out

    _ARRAY_TYPES = {"int": (int,), "string": (str,), "float": (float,), "decimal": (int, Decimal),
                    "date": (dt.date,), "timestamp": (dt.datetime,)}

    def _where(self, bound, filter_cols, filter_values):
        """One fragmentation column: ``c = ANY(%s)`` with the values as one array parameter (plus ``OR c IS
        NULL`` for a NULL fragment), which PostgreSQL plans as one index or hash lookup however many parents;
        otherwise (several columns, values of mixed types) the null-safe OR-list of the other engines."""
        if len(filter_cols) != 1:
            return super()._where(bound, filter_cols, filter_values)
        c = filter_cols[0]
        logical = bound.types.get(c, "any")
        values = [t[0] for t in filter_values]
        present = [v for v in values if v is not None]
        kinds = self._ARRAY_TYPES.get(logical)
        if kinds is None or not present or not all(isinstance(v, kinds) and not isinstance(v, bool) for v in present) \
                or (logical == "date" and any(isinstance(v, dt.datetime) for v in present)):
            return super()._where(bound, filter_cols, filter_values)
        q = self.quote(c)
        if logical in ("date", "timestamp"):
            cast = "DATE[]" if logical == "date" else "TIMESTAMP[]"
            arr, param = f"CAST(%s AS {cast})", [v.isoformat(sep=" ") if isinstance(v, dt.datetime) else v.isoformat()
                                                 for v in present]
        elif logical == "decimal":
            arr, param = "CAST(%s AS NUMERIC[])", [str(v) for v in present]
        elif logical == "float":
            arr, param = "CAST(%s AS DOUBLE PRECISION[])", [float(v) for v in present]
        elif logical == "int":
            arr, param = "CAST(%s AS NUMERIC[])" if any(abs(v) >= 2 ** 63 for v in present) else "CAST(%s AS BIGINT[])", \
                present
        else:
            arr, param = "CAST(%s AS TEXT[])", present
        cond = f"{q} = ANY({arr})"
        if len(present) < len(values):
            cond = f"({cond} OR {q} IS NULL)"
        return f" WHERE {cond}", [param]

    def _before(self, deadline: float | None) -> None:
        ms = 0 if deadline is None else max(1, int((deadline - time.monotonic()) * 1000) + 200)
        with self._lock:
            self.conn.execute("SELECT set_config('statement_timeout', %s, false)", [str(ms)])

    def cancel(self) -> None:
        try:
            if hasattr(self.conn, "cancel_safe"):
                self.conn.cancel_safe(timeout=1.0)
            else:  # pragma: no cover - psycopg < 3.2
                self.conn.cancel()
        except Exception:
            pass

    def backend_pid(self) -> int:
        return int(self.conn.info.backend_pid)


class SqliteEngine(DbApiEngine):
    """SQLite (stdlib), opened read-only; declared column types give the logical types."""

    kind = "sqlite"

    def _connect(self) -> Any:
        import sqlite3
        from pathlib import Path

        path = _file_of(self.url)
        if path != ":memory:" and not Path(path).is_file():
            raise SourceError(f"no such SQLite database: {path}", hint="sqlite:///relative.db or sqlite:////abs/path.db")
        uri = "file::memory:" if path == ":memory:" else f"file:{Path(path).resolve().as_posix()}?mode=ro"
        return sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=self.connect_timeout)

    def _text(self, expr: str) -> str:
        return f"CAST({expr} AS TEXT)"

    def _param_for(self, value: Any, logical: str) -> tuple[str, Any]:
        if isinstance(value, Unrepresentable):
            return "?", value.text
        if isinstance(value, dt.datetime):
            return "?", value.isoformat(sep=" ")
        if isinstance(value, dt.date):
            return "?", value.isoformat()
        if isinstance(value, Decimal):
            return "?", int(value) if value == value.to_integral_value() else float(value)
        return "?", value

    def _column_types(self, base: str, side: Side) -> dict[str, tuple[str, str]]:
        cur = self.conn.cursor()
        try:
            cur.execute(f"SELECT * FROM {base} LIMIT 0")
            names = [d[0] for d in cur.description]
            declared: dict[str, str] = {}
            if side.table is not None and "." not in side.table:
                for row in self.conn.execute("SELECT name, type FROM pragma_table_info(?)", [side.table]):
                    declared[row[0]] = row[1] or ""
        except Exception as exc:
            raise SourceError(f"cannot read {side.describe()}: {_first_line(exc)}",
                              hint="check the table name or the tau^-1 query") from None
        finally:
            cur.close()
        out = {}
        for n in names:
            decl = declared.get(n, "")
            logical = _sqlite_affinity(decl) if decl else "any"
            out[n] = (logical, decl or "untyped")
        return out

    def _agg_sql(self, bound: BoundSide, a: Aggregate) -> str:
        if a.function == "avg":
            return f"AVG({self.quote(a.attribute)})"
        return super()._agg_sql(bound, a)

    def cancel(self) -> None:
        try:
            self.conn.interrupt()
        except Exception:
            pass


def _sqlite_affinity(decl: str) -> str:
    d = decl.upper()
    if "BOOL" in d:
        return "bool"
    if "INT" in d:
        return "int"
    if any(k in d for k in ("CHAR", "CLOB", "TEXT")):
        return "string"
    if any(k in d for k in ("REAL", "FLOA", "DOUB")):
        return "float"
    if "TIMESTAMP" in d or "DATETIME" in d:
        return "timestamp"
    if "DATE" in d:
        return "date"
    if "DEC" in d or "NUMERIC" in d:
        return "decimal"
    return "any"


class DuckDbEngine(DbApiEngine):
    """DuckDB, opened read-only."""

    kind = "duckdb"

    def _connect(self) -> Any:
        from pathlib import Path

        import duckdb

        path = _file_of(self.url)
        if path != ":memory:" and not Path(path).is_file():
            raise SourceError(f"no such DuckDB database: {path}", hint="duckdb:///relative.duckdb or duckdb:////abs/path")
        try:
            return duckdb.connect(path, read_only=path != ":memory:")
        except Exception as exc:
            raise SourceError(f"cannot open {path}: {_first_line(exc)}") from None

    def _column_types(self, base: str, side: Side) -> dict[str, tuple[str, str]]:
        try:
            cur = self.conn.cursor()
            cur.execute(f"SELECT * FROM {base} LIMIT 0")
            desc = cur.description
            cur.close()
        except Exception as exc:
            raise SourceError(f"cannot read {side.describe()}: {_first_line(exc)}",
                              hint="check the table name or the tau^-1 query") from None
        return {d[0]: (_logical_from_name(str(d[1])), str(d[1])) for d in desc}

    def _hash_sql(self, bound: BoundSide, a: Aggregate) -> str:
        """The commutative row-hash aggregate in DuckDB (H1, H3): count and the sum, in HUGEINT (no overflow),
        of a 64-bit hash of each row's columns, each preceded by a NULL marker so NULL and '' differ. A
        sum, unlike XOR, does not cancel a row that appears twice. Used only when both sides are DuckDB."""
        cols = hash_columns(bound, self._current_x) if a.attribute == ALL_COLUMNS else [a.attribute]
        parts = ", ".join(f"{self.quote(c)} IS NULL, CAST({self.quote(c)} AS VARCHAR)" for c in cols) or "1"
        return (f"CAST(COUNT(*) AS VARCHAR) || ':' || CAST(SUM(CAST(hash({parts}) AS HUGEINT)) AS VARCHAR)")

    def _execute(self, sql: str, params: Sequence[Any], deadline: float | None) -> tuple[list[tuple], int]:
        with self._lock:
            try:
                rel = self.conn.execute(sql, list(params)) if params else self.conn.execute(sql)
                rows = [tuple(r) for r in rel.fetchall()]
            except Exception as exc:
                raise self._failure(exc, sql) from exc
        self.queries += 1
        return rows, rows_bytes(rows)

    def cancel(self) -> None:
        try:
            self.conn.interrupt()
        except Exception:
            pass


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


# ------------------------------------------------------------------------------------------ binding
class EnginePool:
    """One engine per (URL, role): a side's queries never share a connection with the other side's."""

    def __init__(self, spark: Any = None, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT) -> None:
        self.spark = spark
        self.connect_timeout = connect_timeout
        self.engines: dict[tuple[str, str], Engine] = {}

    def engine(self, side: Side, role: str) -> Engine:
        kind = side.engine_kind
        key = (side.url or "spark", role)
        if key not in self.engines:
            if kind == "spark":
                self.engines[key] = SparkEngine(self.spark)
            elif kind == "postgresql":
                self.engines[key] = PostgresEngine(side.url, self.connect_timeout)
            elif kind == "sqlite":
                self.engines[key] = SqliteEngine(side.url, self.connect_timeout)
            else:
                self.engines[key] = DuckDbEngine(side.url, self.connect_timeout)
        return self.engines[key]

    def cancel_all(self) -> None:
        for e in list(self.engines.values()):  # a list: a binding worker may still be adding engines
            e.cancel()

    def close(self) -> None:
        for e in list(self.engines.values()):
            e.close()
        self.engines.clear()

    @property
    def queries(self) -> int:
        return sum(e.queries for e in self.engines.values())


@dataclass
class BoundPair:
    """A pair with both sides bound and the comparison type of every column it uses."""

    spec: CompareSpec
    source: BoundSide
    target: BoundSide
    types: dict[str, str]                     # column -> common logical type


def bind_pair(pair: CompareSpec, pool: EnginePool) -> BoundPair:
    """Bind both sides and check, before any aggregate query: every column exists on both sides (with the
    attribute map), aggregates apply to their column types, and the types compare across engines (X1)."""
    src = pool.engine(pair.source, "source").bind(pair.source)
    tgt = pool.engine(pair.target, "target").bind(pair.target)
    used: list[str] = []
    for lv in pair.levels:
        used += [c for c in lv.X if c not in used]
        used += [a.attribute for a in lv.A if a.attribute != ALL_COLUMNS and a.attribute not in used]
    for bound, role in ((src, "source"), (tgt, "target")):
        missing = [c for c in used if c not in bound.types]
        if missing:
            mapped = f" (after the attribute map {dict(bound.side.columns)})" if bound.side.columns else ""
            raise UnknownColumnError(
                f"pair {pair.name!r}: the {role} {bound.label()} has no column {', '.join(map(repr, missing))}{mapped}",
                hint=f"its columns are {', '.join(bound.physical.values())}; on a side whose names differ, map "
                     f"them with columns: {{source_name: {role}_name}}")
    if any(a.function == "hash" and a.attribute == ALL_COLUMNS for lv in pair.levels for a in lv.A) \
            and set(src.types) != set(tgt.types):
        raise UnknownColumnError(
            f"pair {pair.name!r}: hash(*) covers every column, but the sides' columns differ: "
            f"{sorted(set(src.types) ^ set(tgt.types))}", hint="name the column of the hash, or map the columns")
    used += [c for c in src.types if c not in used and any(a.function == "hash" and a.attribute == ALL_COLUMNS
                                                            for lv in pair.levels for a in lv.A)]
    types: dict[str, str] = {}
    cross = not pair.same_engine
    for c in used:
        t = common_type(src.types[c], tgt.types[c])
        if t is None and not cross and src.types[c] == tgt.types[c]:
            t = src.types[c]  # one engine compares its own types (e.g. a struct under hash)
        if t is None or (cross and family(t) == "other"):
            raise UnsupportedTypeError(
                f"pair {pair.name!r}: column {c!r} cannot be compared across engines: {src.types[c]} "
                f"({src.native.get(c)}) in {src.label()} vs {tgt.types[c]} ({tgt.native.get(c)}) in {tgt.label()}",
                hint="cast it in a tau^-1 query to a type both engines share (number, text, date, timestamp)")
        types[c] = t
    for i, lv in enumerate(pair.levels):
        for a in lv.A:
            if a.function in ("sum", "avg") and family(types[a.attribute]) not in ("number", "any"):
                raise UnsupportedTypeError(
                    f"pair {pair.name!r}, level {i + 1}: {a.function}({a.attribute}) does not apply to its type "
                    f"{types[a.attribute]}", hint="use count, min or max on non-numeric columns")
    return BoundPair(pair, src, tgt, types)
