"""Spark: any dqkit table source, a Spark SQL tau^-1 over named table sources, or a DataFrame builder.

pyspark and the Spark-side dqkit modules are imported when an engine is made, not with the package,
so a spec is validated without loading pyspark."""
from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from dqkit.errors import SourceError
from dqkit.tcfc.spec import ALL_COLUMNS, Aggregate, Side
from dqkit.tcfc.engines.base import SMALL_BATCH, Unrepresentable, BoundSide, Engine, _needed, hash_columns, _first_line


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
        from dqkit.runtime.progress import new_tag
        from dqkit.runtime.session import get_spark

        self.spark = spark or get_spark()
        self.tag = new_tag("dqkit-tcfc")
        self.jobs = 0

    def bind(self, side: Side) -> BoundSide:
        from dqkit.io.sources import read_table

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
        from dqkit.runtime.sparkutil import col

        return bound.frame.select(*[col(bound.physical[c]).alias(c) for c in cols])

    def _filtered(self, bound: BoundSide, rel: Any, filter_cols: Sequence[str], filter_values: Sequence[tuple]) -> Any:
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        from dqkit.runtime.sparkutil import col

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

        from dqkit.primitives import fingerprint
        from dqkit.runtime.sparkutil import col

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

        from dqkit.runtime.progress import tagged
        from dqkit.runtime.sparkutil import cancelled_from, scoped_conf

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

        from dqkit.runtime.sparkutil import col

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

        from dqkit.runtime.sparkutil import col

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
        from dqkit.runtime.progress import cancel_tag

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
