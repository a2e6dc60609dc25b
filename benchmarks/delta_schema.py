"""Benchmark: the cost of a delta whose versions changed schema, against the same data without a change.

Two versions of one table of ``--rows`` rows (Parquet, generated once into
``benchmarks/data/delta_schema_<rows>/``), the new one with ``--changed`` of its rows updated:

* ``same``:   the new version has the old schema (id bigint, a int, b double, c string, d int);
* ``schema``: the same rows, but ``a`` widened to bigint, ``c`` renamed to ``c2`` (compared with
  ``renames=["t.c=c2"]``) and a column ``e`` added: the common columns are read with aligned types.

Both run all three stages on the key ``id`` in one Spark session, alternating (same, schema, same,
...) after a warm-up of each, ``--repeat`` times; prints each time, the ratio of the medians
(schema / same, the goal: at most 1.1) and the load average. Not part of ``make test``.

    .venv/bin/python benchmarks/delta_schema.py --rows 1000000 --repeat 5
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def ensure_data(spark, rows: int, changed: float) -> Path:
    """old/t, same/t and schema/t as Parquet under benchmarks/data (written once)."""
    from pyspark.sql import functions as F

    out = HERE / "data" / f"delta_schema_{rows}"
    if (out / "schema" / "t" / "_SUCCESS").exists():
        return out
    base = spark.range(rows).select(
        F.col("id"), (F.col("id") % 1000).cast("int").alias("a"), (F.col("id") / 7).alias("b"),
        F.concat(F.lit("name-"), (F.col("id") % 50000).cast("string")).alias("c"),
        (F.col("id") % 97).cast("int").alias("d"))
    base.write.mode("overwrite").parquet(str(out / "old" / "t"))
    every = max(int(1 / changed), 1)
    new = base.withColumn("d", F.when(F.col("id") % every == 0, F.col("d") + 1).otherwise(F.col("d")))
    new.write.mode("overwrite").parquet(str(out / "same" / "t"))
    (new.withColumn("a", F.col("a").cast("bigint")).withColumnRenamed("c", "c2")
     .withColumn("e", F.col("id") % 3).write.mode("overwrite").parquet(str(out / "schema" / "t")))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--changed", type=float, default=0.01, help="share of rows updated in the new version")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    from dqkit.delta import delta
    from dqkit.runtime.session import get_spark

    spark = get_spark()
    data = ensure_data(spark, args.rows, args.changed)
    runs = {"same": dict(new=data / "same", renames=None), "schema": dict(new=data / "schema", renames=["t.c=c2"])}

    def once(name: str) -> float:
        start = time.perf_counter()
        res = delta(data / "old", runs[name]["new"], keys={"t": "id"}, renames=runs[name]["renames"], spark=spark)
        res.row_delta("t").write.format("noop").mode("overwrite").save()
        took = time.perf_counter() - start
        res.unpersist()
        every = max(int(1 / args.changed), 1)
        assert res.tables["t"].row_stats["differences"] == 2 * ((args.rows + every - 1) // every)  # updated ids
        return took

    for name in runs:  # warm-up
        once(name)
    times: dict[str, list[float]] = {"same": [], "schema": []}
    for _ in range(args.repeat):
        for name in runs:
            times[name].append(once(name))
            print(f"{name:7s} {times[name][-1]:7.2f} s   load {os.getloadavg()[0]:.1f}", flush=True)
    same, schema = statistics.median(times["same"]), statistics.median(times["schema"])
    print(f"rows {args.rows:,}, changed {args.changed:.2%}, repeat {args.repeat}")
    print(f"median same {same:.2f} s, schema {schema:.2f} s, ratio schema/same {schema / same:.3f}")
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
