"""Seeded generator of the tax tables of BigDansing §6.1 (TaxA, TaxB), with ground truth.

Columns ``tid, name, zipcode, city, state, salary, rate``. In the clean table zipcode -> city and
zipcode -> state hold, and rate is a non-decreasing function of salary, so
``not(t1.salary > t2.salary and t1.rate < t2.rate)`` (φ2) holds.

* TaxA: ``error_rate`` (default 10 %) of the rows get random text in city and state (§6.1); φ1
  (zipcode -> city) is then violated.
* TaxB: ``error_rate`` of the rows get a numerical error on rate: ``rate * (1 + magnitude * u)`` with
  u uniform in ±[0.1, 1] (``magnitude`` default 0.01, i.e. up to ±1 %); φ2 is then violated. The
  number of φ2 violations grows with the magnitude (about 0.0006·n² at 1 %).
* BART (``variant="BART"``, or ``inject_errors`` on any table): cell-level errors a rule can detect,
  in the style of the BART error generator. Error model:

  - each cell ``(tid, attribute)`` of the chosen ``attributes`` (default city and state) is corrupted
    independently with probability ``error_rate``;
  - a corrupted text cell gets, with probability ``typo_share`` (default 0.5), a **typo**: one
    character, at a uniformly chosen position, replaced by another character of its class (a digit by
    a digit, a lower-case letter by a lower-case letter, anything else by an upper-case letter);
    otherwise, and always for non-text columns, an **active-domain value**: another value of the same
    attribute taken uniformly from the clean table's distinct values (another zipcode's city or state;
    the domain is held as one array per attribute, so it suits attributes with a bounded domain);
  - the dirty value always differs from the clean one; a cell that cannot be changed (an empty or
    NULL text with no other domain value) stays clean. So ``errors_of`` lists exactly the corrupted
    cells, and each breaks zipcode -> city / zipcode -> state against the other rows of its zipcode.

Every random choice is a hash of (row id, seed, purpose[, attribute]), so the output does not depend
on Spark's partitioning. ``write_tax`` writes ``dirty/``, ``clean/`` (the ground truth) and
``errors/`` (tid, attribute, clean and dirty value) as Parquet beside each other.

    python data/tax.py --rows 100000 --variant B --out /tmp/taxB_100k
    python data/tax.py --rows 4000 --variant BART --error-rate 0.05 --out /tmp/tax_bart
"""
from __future__ import annotations

import argparse
import os
import sys

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

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
        from dqkit.runtime.session import get_spark
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


VARIANTS = ("A", "B", "BART")
#: Default attributes of the BART-style errors: the right-hand sides of zipcode -> city, zipcode -> state.
BART_ATTRIBUTES = ("city", "state")
_DIGITS = "0123456789"
_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_LOWER = "abcdefghijklmnopqrstuvwxyz"


def _u_cell(seed: int, purpose: int, attr: str, key: str = "tid") -> Column:
    """Uniform [0, 1) from a hash of (row id, seed, purpose, attribute): one draw per cell."""
    h = F.xxhash64(F.col(key), F.lit(seed), F.lit(purpose), F.lit(attr))
    return (F.pmod(h, F.lit(1 << 30)).cast("double") / float(1 << 30))


def _with_typo(df: DataFrame, attr: str, out: str, seed: int, key: str) -> DataFrame:
    """``df`` plus column ``out``: ``attr`` with one character replaced by another of its class
    (NULL for a NULL or empty text). Built in steps, so no expression is repeated in the plan."""
    p = f"__tax_{attr}_typo"
    value = F.col(attr)
    df = df.withColumn(f"{p}_n", F.length(value))
    df = df.withColumn(f"{p}_pos", (F.floor(_u_cell(seed, 22, attr, key) * F.col(f"{p}_n")) + 1).cast("int"))
    df = df.withColumn(f"{p}_old", value.substr(F.col(f"{p}_pos"), F.lit(1)))
    old = F.col(f"{p}_old")
    df = df.withColumn(f"{p}_abc", F.when(old.rlike("^[0-9]$"), F.lit(_DIGITS))
                       .when(old.rlike("^[a-z]$"), F.lit(_LOWER)).otherwise(F.lit(_UPPER)))
    abc = F.col(f"{p}_abc")
    size = F.length(abc)
    at = F.instr(abc, old)  # 1-based, 0 when the character is not in the alphabet
    u = _u_cell(seed, 23, attr, key)
    # another character of the class: draw among the size - 1 others, skipping the old one
    idx = F.when(at > 0, F.pmod(at + F.floor(u * (size - 1)).cast("int"), size)).otherwise(F.floor(u * size).cast("int"))
    pos, n = F.col(f"{p}_pos"), F.col(f"{p}_n")
    df = df.withColumn(out, F.when(n > 0, F.concat(value.substr(F.lit(1), pos - 1), abc.substr(idx + 1, F.lit(1)),
                                                   value.substr(pos + 1, n))))
    return df.drop(f"{p}_n", f"{p}_pos", f"{p}_old", f"{p}_abc")


def inject_errors(clean: DataFrame, attributes: tuple[str, ...] | list[str] = BART_ATTRIBUTES,
                  error_rate: float = 0.05, seed: int = 42, typo_share: float = 0.5,
                  key: str = "tid") -> DataFrame:
    """``clean`` with BART-style cell errors in ``attributes`` (see the module docstring's error model).

    Each cell is corrupted independently with probability ``error_rate``: a typo (text columns, with
    probability ``typo_share``) or another value of the attribute's active domain. The draws hash
    ``(key, seed, purpose, attribute)``, so the result does not depend on partitioning or row order.
    Columns, their order and types are kept; the input is not modified.
    """
    if not 0.0 <= error_rate <= 1.0:
        raise ValueError(f"error_rate must be in [0, 1], got {error_rate}")
    if not 0.0 <= typo_share <= 1.0:
        raise ValueError(f"typo_share must be in [0, 1], got {typo_share}")
    attributes = list(dict.fromkeys(attributes))
    missing = [a for a in [key, *attributes] if a not in clean.columns]
    if missing:
        raise ValueError(f"unknown column(s) {missing}; the table has {clean.columns}")
    if key in attributes:
        raise ValueError(f"the key {key!r} cannot be corrupted")
    types = {f.name: f.dataType for f in clean.schema.fields}
    if not attributes:
        return clean
    # the active domains: each attribute's distinct non-NULL clean values, sorted, as one array (one
    # aggregation for all attributes, broadcast to every row; the domain of a cell's attribute is small)
    doms = {a: f"__tax_{a}_domain" for a in attributes}
    domains = clean.agg(*[F.array_sort(F.collect_set(F.col(a))).alias(d) for a, d in doms.items()])
    df = clean.crossJoin(F.broadcast(domains))
    new: dict[str, Column] = {}
    for attr in attributes:
        hit = _u_cell(seed, 20, attr, key) < error_rate
        dom, value = F.col(doms[attr]), F.col(attr)
        size = F.size(dom)
        # another domain value, uniformly: draw among the first size - 1 values and, if the draw is the
        # cell's own value, take the last one instead (the own value is in the domain unless NULL)
        u = _u_cell(seed, 21, attr, key)
        draw = F.element_at(dom, (F.floor(u * (size - 1)) + 1).cast("int"))
        other = F.when(value.isNull() & (size > 0), F.element_at(dom, (F.floor(u * size) + 1).cast("int"))) \
            .when(value.isNotNull() & (size > 1),
                  F.when(draw == value, F.element_at(dom, size)).otherwise(draw))
        alt = f"__tax_{attr}_alt"
        df = df.withColumn(alt, F.when(hit, other))
        a = F.col(alt)
        if isinstance(types[attr], T.StringType):
            typo = f"__tax_{attr}_typo"
            df = _with_typo(df, attr, typo, seed, key)
            t = F.when(hit, F.col(typo))
            wants_typo = _u_cell(seed, 24, attr, key) < typo_share
            new[attr] = (F.when(~hit, value).when(wants_typo & t.isNotNull(), t)
                         .when(a.isNotNull(), a).when(t.isNotNull(), t).otherwise(value))
        else:
            new[attr] = F.when(hit & a.isNotNull(), a).otherwise(value)
    return df.select(*[new[c].cast(types[c]).alias(c) if c in new else F.col(c) for c in clean.columns])


def dirty_tax(clean: DataFrame, variant: str = "A", error_rate: float = 0.1, magnitude: float = 0.01,
              seed: int = 42, *, attributes: tuple[str, ...] | list[str] = BART_ATTRIBUTES,
              typo_share: float = 0.5) -> DataFrame:
    """TaxA (random text in city/state), TaxB (numerical error on rate) or BART-style cell errors in
    ``attributes`` (``variant="BART"``, see ``inject_errors``) from a clean table."""
    variant = variant.upper()
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}")
    if variant == "BART":
        return inject_errors(clean, attributes, error_rate, seed, typo_share)
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
                 spark: SparkSession | None = None, *, attributes: tuple[str, ...] | list[str] = BART_ATTRIBUTES,
                 typo_share: float = 0.5, zip_size: int = 50) -> tuple[DataFrame, DataFrame]:
    """``(dirty, clean)`` tax tables; ``clean`` is the ground truth. ``attributes`` and ``typo_share``
    apply to ``variant="BART"``; ``zip_size`` is the mean number of rows per zipcode."""
    clean = clean_tax(n, seed, spark, zip_size=zip_size)
    return dirty_tax(clean, variant, error_rate, magnitude, seed, attributes=attributes,
                     typo_share=typo_share), clean


def errors_of(dirty: DataFrame, clean: DataFrame, key: str = "tid") -> DataFrame:
    """The ground-truth errors: ``tid, attribute, clean_value, dirty_value`` for every changed cell."""
    d = dirty.alias("d")
    c = clean.alias("c")
    j = d.join(c, key)
    parts = []
    for col in [x for x in clean.columns if x != key and x in dirty.columns]:
        parts.append(j.where(~F.col(f"d.{col}").eqNullSafe(F.col(f"c.{col}"))).select(
            F.col(key).alias("tid"), F.lit(col).alias("attribute"), F.col(f"c.{col}").cast("string").alias("clean_value"),
            F.col(f"d.{col}").cast("string").alias("dirty_value")))
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


def write_tax(path: str, n: int, variant: str = "A", error_rate: float = 0.1, magnitude: float = 0.01,
              seed: int = 42, spark: SparkSession | None = None, *,
              attributes: tuple[str, ...] | list[str] = BART_ATTRIBUTES, typo_share: float = 0.5,
              zip_size: int = 50) -> str:
    """Write ``dirty/``, ``clean/`` and ``errors/`` under ``path`` (Parquet); returns the dirty path."""
    dirty, clean = generate_tax(n, variant, error_rate, magnitude, seed, spark, attributes=attributes,
                                typo_share=typo_share, zip_size=zip_size)
    os.makedirs(path, exist_ok=True)
    dirty.write.mode("overwrite").parquet(os.path.join(path, "dirty"))
    clean.write.mode("overwrite").parquet(os.path.join(path, "clean"))
    errors_of(dirty, clean).write.mode("overwrite").parquet(os.path.join(path, "errors"))
    return os.path.join(path, "dirty")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Generate TaxA/TaxB tables with ground truth (BigDansing §6.1)")
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--variant", type=str.upper, choices=VARIANTS, default="A")
    ap.add_argument("--error-rate", type=float, default=0.1)
    ap.add_argument("--magnitude", type=float, default=0.01)
    ap.add_argument("--attributes", default=",".join(BART_ATTRIBUTES),
                    help="attributes to corrupt, comma-separated (variant BART)")
    ap.add_argument("--typo-share", type=float, default=0.5, help="share of typos among BART errors")
    ap.add_argument("--zip-size", type=int, default=50, help="mean rows per zipcode")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    attrs = [x.strip() for x in a.attributes.split(",") if x.strip()]
    print(write_tax(a.out, a.rows, a.variant, a.error_rate, a.magnitude, a.seed, attributes=attrs,
                    typo_share=a.typo_share, zip_size=a.zip_size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
