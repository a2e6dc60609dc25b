"""Daisy benchmark (spec §4.3 shapes): query-driven cleaning against offline full cleaning.

An SSB-like ``lineorder`` (seeded): ``orderkey`` with 1-7 lines per order, ``suppkey`` a function of the
order (so ``orderkey -> suppkey`` holds), quantity and price. BART-style errors (``data/tax.py``'s
``inject_errors``: active-domain values) go into ``suppkey``. The workload: ``--queries`` non-overlapping
range queries on ``orderkey`` covering the table (50 at 2 % by default).

Three runs, one kernel (``dqkit.relax``), one process:

* **daisy**: incremental cleaning with the cost model (``strategy="auto"``);
* **incremental**: incremental cleaning without the cost model;
* **offline**: ``clean_all`` first (the full cleaning), then the same queries over the cleaned table.

Printed: cumulative seconds, the ratios offline/daisy and incremental/daisy (the paper's goal: daisy >= 2x
faster than offline), whether the three final probabilistic tables have identical candidate sets (they
must), the switch point, and the storage blow-up of the probabilistic table against the base table
(Parquet bytes).

    python benchmarks/query_cleaning.py --rows 20000 --queries 50 --error-rate 0.05
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))


def lineorder(spark, rows: int, seed: int):
    from pyspark.sql import functions as F

    orders = max(1, rows // 4)
    df = spark.range(rows).select(
        (F.col("id") + 1).alias("tid"),
        (F.pmod(F.xxhash64(F.col("id"), F.lit(seed)), F.lit(orders)) + 1).alias("orderkey"),
        (F.pmod(F.xxhash64(F.col("id"), F.lit(seed + 1)), F.lit(50)) + 1).alias("quantity"),
        (F.pmod(F.xxhash64(F.col("id"), F.lit(seed + 2)), F.lit(100000)) / 100.0).alias("price"))
    suppliers = max(2, orders // 20)
    return df.withColumn("suppkey", F.pmod(F.xxhash64(F.col("orderkey"), F.lit(seed + 3)), F.lit(suppliers)) + 1)


def bytes_of(df, folder: str) -> int:
    df.write.mode("overwrite").parquet(folder)
    return sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(folder) for f in fs if f.endswith(".parquet"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--error-rate", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args(argv)

    from data.tax import inject_errors
    from dqkit.relax import Daisy
    from dqkit.relax.workload import run_workload
    from dqkit.session import get_spark

    spark = get_spark()
    clean = lineorder(spark, a.rows, a.seed).localCheckpoint(eager=True)
    dirty = inject_errors(clean, ["suppkey"], error_rate=a.error_rate, seed=a.seed).localCheckpoint(eager=True)
    orders = clean.agg({"orderkey": "max"}).collect()[0][0]
    step = max(1, -(-orders // a.queries))
    queries = [f"SELECT orderkey, suppkey FROM lineorder WHERE orderkey >= {lo} AND orderkey < {lo + step}"
               for lo in range(1, orders + 1, step)][:a.queries]
    print(f"lineorder: {a.rows} rows, {orders} orders, {len(queries)} queries, error rate {a.error_rate}, "
          f"load {os.getloadavg()[0]:.1f}", flush=True)

    def fresh(strategy: str) -> Daisy:
        d = Daisy(spark, strategy=strategy)
        d.register("lineorder", dirty, key="tid").add_rules("lineorder", "orderkey -> suppkey")
        return d

    runs = {}
    for label, strategy in (("daisy", "auto"), ("incremental", "incremental")):
        d = fresh(strategy)
        t0 = time.perf_counter()
        wl = run_workload(d, "lineorder", queries)
        runs[label] = (time.perf_counter() - t0, d, wl)
        print(f"{label:12s} {runs[label][0]:8.2f}s  switch point: {wl.switch_point}", flush=True)
    d = fresh("incremental")
    t0 = time.perf_counter()
    d.clean_all("lineorder")
    t_clean = time.perf_counter() - t0
    wl = run_workload(d, "lineorder", queries)
    runs["offline"] = (time.perf_counter() - t0, d, wl)
    print(f"{'offline':12s} {runs['offline'][0]:8.2f}s  (full cleaning {t_clean:.2f}s, then the queries)", flush=True)

    ref = runs["offline"][1].long_format("lineorder").cache()
    same = {}
    for label in ("daisy", "incremental"):
        other = runs[label][1].long_format("lineorder")
        same[label] = ref.exceptAll(other).isEmpty() and other.exceptAll(ref).isEmpty()
    tmp = tempfile.mkdtemp(prefix="dqkit-bench-daisy-")
    try:
        base_b = bytes_of(dirty, os.path.join(tmp, "base"))
        prob_b = bytes_of(runs["offline"][1].table("lineorder"), os.path.join(tmp, "prob"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    td = runs["daisy"][0]
    print(f"offline / daisy      = {runs['offline'][0] / td:.2f}x (goal >= 2x)")
    print(f"incremental / daisy  = {runs['incremental'][0] / td:.2f}x")
    print(f"identical final candidate sets: daisy {same['daisy']}, incremental {same['incremental']}")
    print(f"storage: base {base_b} B, probabilistic {prob_b} B, blow-up {prob_b / max(1, base_b):.2f}x "
          f"(the paper reports up to 43x)")
    print(f"load after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
