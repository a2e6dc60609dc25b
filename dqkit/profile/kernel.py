"""A column profile in one scan: every column's statistics in one aggregation job, with sketches.

One ``agg`` over the table computes, per column, the non-NULL count, distinct values (HyperLogLog++,
``approx_count_distinct`` at relative standard deviation ``rsd``), min, max, mean and stddev, quantiles
(``percentile_approx``: the rank error is at most ``1/accuracy`` of the rows), string lengths, and the
share of text values that parse as the column's apparent type (number, date, boolean); and per table
the rows and the exact duplicate rows (rows minus distinct row fingerprints, ``dqkit.primitives.fingerprint``).
The top-k values need a grouping, so they are a second, small job over the columns whose distinct
count is at most ``top_max_distinct`` (all such columns in one grouping, not one job per column).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.window import Window

from dqkit.primitives.fingerprint import row_fingerprint
from dqkit.runtime.sparkutil import col

PROBS = (0.05, 0.25, 0.5, 0.75, 0.95)
PNAMES = ("p05", "p25", "p50", "p75", "p95")
NUMERIC = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType, T.DecimalType)
#: the apparent types a text column is tried as, with the expression that parses a value as each
APPARENT = ("number", "date", "boolean")


@dataclass
class ColumnProfile:
    """One column's statistics (None where they do not apply) and its top values."""

    name: str
    dtype: str
    kind: str  # numeric, date, timestamp, boolean, string, other
    rows: int = 0
    nulls: int = 0
    distinct: int | None = None
    min: float | None = None
    max: float | None = None
    mean: float | None = None
    stddev: float | None = None
    quantiles: dict[str, float] = field(default_factory=dict)
    len_min: float | None = None
    len_mean: float | None = None
    len_max: float | None = None
    len_quantiles: dict[str, float] = field(default_factory=dict)
    apparent_type: str = ""
    type_share: float | None = None
    top: list[tuple[str, int]] = field(default_factory=list)
    top_skipped: str = ""

    @property
    def null_share(self) -> float:
        return self.nulls / self.rows if self.rows else 0.0


def _kind(dt: T.DataType) -> str:
    if isinstance(dt, NUMERIC):
        return "numeric"
    if isinstance(dt, T.DateType):
        return "date"
    if isinstance(dt, (T.TimestampType, T.TimestampNTZType)):
        return "timestamp"
    if isinstance(dt, T.BooleanType):
        return "boolean"
    if isinstance(dt, T.StringType):
        return "string"
    return "other"


def _as_number(c: Any, kind: str) -> Any:
    """The column as a double the numeric statistics run on: dates as days since 1970-01-01,
    timestamps as seconds since the epoch, booleans as 0/1."""
    if kind == "numeric":
        return c.cast("double")
    if kind == "date":
        return F.unix_date(c).cast("double")
    if kind == "timestamp":
        return (F.unix_micros(c.cast("timestamp")) / 1e6).cast("double")
    if kind == "boolean":
        return c.cast("int").cast("double")
    return None


def _parses(c: Any, apparent: str) -> Any:
    if apparent == "number":
        return c.try_cast("double")
    if apparent == "date":
        return F.try_to_timestamp(c)  # ISO dates and timestamps
    return F.when(F.lower(F.trim(c)).isin("true", "false", "yes", "no", "t", "f", "y", "n"), F.lit(1))


def aggregate_exprs(df: DataFrame, columns: list[str], *, rsd: float, accuracy: int) -> tuple[list[Any], dict]:
    """The one aggregation's expressions and, per column, the aliases its statistics come back under."""
    fields = {f.name: f for f in df.schema.fields}
    hi, lo = row_fingerprint(df)
    exprs = [F.count(F.lit(1)).alias("_rows"), F.count_distinct(hi, lo).alias("_distinct_rows")]
    plan: dict[str, dict[str, Any]] = {}
    for i, name in enumerate(columns):
        c, kind = col(name), _kind(fields[name].dataType)
        a = f"_c{i}_"
        plan[name] = {"kind": kind, "alias": a, "dtype": fields[name].dataType.simpleString()}
        exprs += [F.count(c).alias(a + "n")]
        if kind != "other":
            exprs.append(F.approx_count_distinct(c, rsd).alias(a + "distinct"))
        x = _as_number(c, kind)
        if x is not None:
            exprs += [F.min(x).alias(a + "min"), F.max(x).alias(a + "max"), F.avg(x).alias(a + "mean"),
                      F.stddev_samp(x).alias(a + "stddev")]
            if kind != "boolean":
                exprs.append(F.percentile_approx(x, list(PROBS), accuracy).alias(a + "q"))
        if kind == "string":
            ln = F.char_length(c).cast("double")
            exprs += [F.min(ln).alias(a + "len_min"), F.avg(ln).alias(a + "len_mean"), F.max(ln).alias(a + "len_max"),
                      F.percentile_approx(ln, list(PROBS), accuracy).alias(a + "len_q")]
            exprs += [F.count(_parses(c, t)).alias(a + "parse_" + t) for t in APPARENT]
    return exprs, plan


def read_profiles(row: Any, plan: dict[str, dict[str, Any]]) -> tuple[int, int, list[ColumnProfile]]:
    """(rows, exact duplicate rows, column profiles) from the aggregation's one row."""
    rows = int(row["_rows"])
    dups = rows - int(row["_distinct_rows"])
    out = []
    for name, p in plan.items():
        a, kind = p["alias"], p["kind"]
        g = lambda key: row[a + key] if (a + key) in row.__fields__ else None  # noqa: E731
        n = int(g("n") or 0)
        cp = ColumnProfile(name, p["dtype"], kind, rows=rows, nulls=rows - n)
        cp.distinct = None if g("distinct") is None else int(g("distinct"))
        for key in ("min", "max", "mean", "stddev", "len_min", "len_mean", "len_max"):
            v = g(key)
            setattr(cp, key, None if v is None else float(v))
        if g("q") is not None:
            cp.quantiles = {k: float(v) for k, v in zip(PNAMES, g("q")) if v is not None}
        if g("len_q") is not None:
            cp.len_quantiles = {k: float(v) for k, v in zip(PNAMES, g("len_q")) if v is not None}
        if kind == "string":
            parsed = {t: int(g("parse_" + t) or 0) for t in APPARENT}
            best = max(APPARENT, key=lambda t: parsed[t])
            if n and parsed[best] * 2 > n:
                cp.apparent_type, cp.type_share = best, parsed[best] / n
            else:
                cp.apparent_type, cp.type_share = "text", 1.0 if n else None
        else:
            cp.apparent_type, cp.type_share = kind, (1.0 if n else None)
        out.append(cp)
    return rows, dups, out


def top_values(df: DataFrame, profiles: list[ColumnProfile], k: int, max_distinct: int) -> None:
    """Fill each profile's ``top`` (the ``k`` most frequent non-NULL values with their counts, ties by
    value) for the columns with at most ``max_distinct`` distinct values, in one grouping job."""
    chosen = []
    for i, p in enumerate(profiles):
        if p.kind == "other" or p.distinct is None:
            p.top_skipped = "no top values for this type"
        elif p.distinct > max_distinct:
            p.top_skipped = f"about {p.distinct:,} distinct values (more than {max_distinct:,}): no top values"
        elif p.rows - p.nulls > 0:
            chosen.append((i, p))
    if not chosen or k <= 0:
        return
    pairs = F.array(*[F.struct(F.lit(i).alias("i"), col(p.name).cast("string").alias("v")) for i, p in chosen])
    counted = (df.select(F.explode(pairs).alias("p")).select("p.i", "p.v").where(F.col("v").isNotNull())
               .groupBy("i", "v").count())
    rank = F.row_number().over(Window.partitionBy("i").orderBy(F.col("count").desc(), F.col("v")))
    rows = counted.withColumn("r", rank).where(F.col("r") <= k).collect()
    for r in sorted(rows, key=lambda r: (r["i"], r["r"])):
        profiles[r["i"]].top.append((r["v"], int(r["count"])))
