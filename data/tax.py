"""Seeded generator of the tax tables of BigDansing §6.1 (TaxA, TaxB), with ground truth.

Columns ``tid, name, zipcode, city, state, salary, rate``. In the clean table zipcode -> city and
zipcode -> state hold, and rate is a non-decreasing function of salary, so
``not(t1.salary > t2.salary and t1.rate < t2.rate)`` (φ2) holds.

* TaxA: ``error_rate`` (default 10 %) of the rows get random text in city and state (§6.1); φ1
  (zipcode -> city) is then violated.
* TaxB: ``error_rate`` of the rows get a numerical error on rate: ``rate * (1 + magnitude * u)`` with
  u uniform in ±[0.1, 1] (``magnitude`` default 0.01, i.e. up to ±1 %); φ2 is then violated. The
  number of φ2 violations grows with the magnitude (about 0.0006·n² at 1 %).

Every random choice is a hash of (row id, seed, purpose), so the output does not depend on Spark's
partitioning. ``write_tax`` writes ``dirty/``, ``clean/`` (the ground truth) and ``errors/``
(tid, attribute, clean and dirty value) as Parquet beside each other.

    python data/tax.py --rows 100000 --variant B --out /tmp/taxB_100k
"""
from __future__ import annotations

import argparse
import os
import sys

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

_STATES = ["AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "FL", "GA", "HI", "ID", "IL", "IN", "IA", "KS",
           "KY", "LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ", "NM", "NY",
           "NC", "ND", "OH", "OK", "OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VT", "VA", "WA", "WV",
           "WI", "WY"]
_NAMES = ["Annie", "Laure", "John", "Mark", "Robert", "Mary", "Paul", "Sally", "William", "Nora", "Omar",
          "Ines", "Kenji", "Lena", "Tariq", "Zoe"]


def _u(seed: int, purpose: int, col: str = "tid") -> Column:
    """Uniform [0, 1) from a hash of (row id, seed, purpose): independent of partitioning."""
    h = F.xxhash64(F.col(col), F.lit(seed), F.lit(purpose))
    return (F.pmod(h, F.lit(1 << 30)).cast("double") / float(1 << 30))


def clean_tax(n: int, seed: int = 42, spark: SparkSession | None = None, zip_size: int = 50) -> DataFrame:
    """The clean tax table with ``n`` rows (about ``zip_size`` rows per zipcode)."""
    if spark is None:
        from dqkit.session import get_spark
        spark = get_spark()
    nzip = max(1, n // zip_size)
    df = spark.range(n).withColumnRenamed("id", "tid")
    z = F.floor(_u(seed, 1) * nzip).cast("long")
    salary = (F.lit(10000) + F.floor(_u(seed, 2) * 190000)).cast("long")
    names = F.array(*[F.lit(x) for x in _NAMES])
    states = F.array(*[F.lit(x) for x in _STATES])
    return df.select(
        "tid",
        F.concat(F.element_at(names, (F.floor(_u(seed, 3) * len(_NAMES)) + 1).cast("int")),
                 F.lit(" "), F.col("tid").cast("string")).alias("name"),
        (F.lit(10000) + z).alias("zipcode"),
        F.concat(F.lit("City"), (z % 5000).cast("string")).alias("city"),
        F.element_at(states, ((z % len(_STATES)) + 1).cast("int")).alias("state"),
        salary.alias("salary"),
        F.round(F.lit(5.0) + F.lit(30.0) * (salary - 10000) / 190000.0, 2).alias("rate"))


def dirty_tax(clean: DataFrame, variant: str = "A", error_rate: float = 0.1, magnitude: float = 0.01,
              seed: int = 42) -> DataFrame:
    """TaxA (random text in city/state) or TaxB (numerical error on rate) from a clean table."""
    variant = variant.upper()
    if variant not in ("A", "B"):
        raise ValueError("variant must be 'A' or 'B'")
    hit = _u(seed, 10) < error_rate
    if variant == "A":
        text = F.upper(F.substring(F.sha2(F.concat_ws("/", F.col("tid").cast("string"), F.lit(seed)), 256), 1, 6))
        st = F.upper(F.substring(F.sha2(F.concat_ws("/", F.col("tid").cast("string"), F.lit(seed), F.lit("s")), 256), 1, 2))
        return clean.withColumns({"city": F.when(hit, text).otherwise(F.col("city")),
                                  "state": F.when(hit, st).otherwise(F.col("state"))})
    sign = F.when(_u(seed, 11) < 0.5, -1.0).otherwise(1.0)
    u = F.lit(0.1) + F.lit(0.9) * _u(seed, 12)
    return clean.withColumn("rate", F.when(hit, F.round(F.col("rate") * (1 + F.lit(magnitude) * sign * u), 4))
                            .otherwise(F.col("rate")))


def generate_tax(n: int, variant: str = "A", error_rate: float = 0.1, magnitude: float = 0.01, seed: int = 42,
                 spark: SparkSession | None = None) -> tuple[DataFrame, DataFrame]:
    """``(dirty, clean)`` tax tables; ``clean`` is the ground truth."""
    clean = clean_tax(n, seed, spark)
    return dirty_tax(clean, variant, error_rate, magnitude, seed), clean


def errors_of(dirty: DataFrame, clean: DataFrame) -> DataFrame:
    """The ground-truth errors: ``tid, attribute, clean_value, dirty_value`` for every changed cell."""
    d = dirty.alias("d")
    c = clean.alias("c")
    j = d.join(c, "tid")
    parts = []
    for col in ("name", "zipcode", "city", "state", "salary", "rate"):
        parts.append(j.where(~F.col(f"d.{col}").eqNullSafe(F.col(f"c.{col}"))).select(
            "tid", F.lit(col).alias("attribute"), F.col(f"c.{col}").cast("string").alias("clean_value"),
            F.col(f"d.{col}").cast("string").alias("dirty_value")))
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


def write_tax(path: str, n: int, variant: str = "A", error_rate: float = 0.1, magnitude: float = 0.01,
              seed: int = 42, spark: SparkSession | None = None) -> str:
    """Write ``dirty/``, ``clean/`` and ``errors/`` under ``path`` (Parquet); returns the dirty path."""
    dirty, clean = generate_tax(n, variant, error_rate, magnitude, seed, spark)
    os.makedirs(path, exist_ok=True)
    dirty.write.mode("overwrite").parquet(os.path.join(path, "dirty"))
    clean.write.mode("overwrite").parquet(os.path.join(path, "clean"))
    errors_of(dirty, clean).write.mode("overwrite").parquet(os.path.join(path, "errors"))
    return os.path.join(path, "dirty")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Generate TaxA/TaxB tables with ground truth (BigDansing §6.1)")
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--variant", choices=("A", "B"), default="A")
    ap.add_argument("--error-rate", type=float, default=0.1)
    ap.add_argument("--magnitude", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    print(write_tax(a.out, a.rows, a.variant, a.error_rate, a.magnitude, a.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
