"""``detect NEW --since OLD`` against what a user does today: detect OLD, detect NEW, diff the two.

Two versions of a generated table (``id, zip, city, state, salary, rate``; about 20 rows per zip) differ
in a share of rows (updates of city or salary, a few inserts and deletes). Workloads, timed in one
SparkSession after a warm-up:

* ``table``: baseline = full detection of OLD and of NEW (violations materialised as identities) and
  the diff (new, resolved, persisting counted); dqkit = ``detect_since(NEW, OLD)``.
* ``saved``: OLD's detection saved beforehand (``detect --out``); baseline = detect NEW + diff against
  the saved violations; dqkit = ``detect_since(NEW, SAVED)``.

Rules: ``fd`` (``zip -> city``) or ``dc`` (that FD plus ``not(t1.zip = t2.zip and t1.salary > t2.salary
and t1.rate < t2.rate)``). ``--changes`` lists the change shares; the cost rule is switched off
(``max_change=1``) so the crossover of the restricted path shows; ``--paths changed,full`` also times
the cost rule's full path (``max_change=0``: with FDs, one aggregation of NEW diffed against OLD's
violations) in the same window, so the two ways of computing ``--since`` are compared on one load.
(Since FDs are always detected in full, both paths are the same for ``--rules fd``; they differ for DCs.)
Prints one line per measurement with the ratio baseline/dqkit, the Spark jobs the timed ``--since`` started
and the load average before the baseline and after the last ``--since``. With ``--repeat N`` the baseline
and ``--since`` alternate N times and the line gives the medians, their ratio and every time.

    python benchmarks/bench_since.py --rows 200000 --changes 0.001,0.01,0.05,0.2
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

RULES = {"fd": {"zip_city": "zip -> city"},
         "dc": {"zip_city": "zip -> city",
                "pay": "not(t1.zip = t2.zip and t1.salary > t2.salary and t1.rate < t2.rate)"}}


def tables(spark, rows: int, share: float, folder: str) -> tuple[str, str]:
    from pyspark.sql import functions as F

    base = (spark.range(rows).select(
        F.col("id"), (F.col("id") % (rows // 20)).cast("string").alias("zip"),
        F.when(F.rand(1) < 0.002, F.lit("Elsewhere")).otherwise(
            F.concat(F.lit("c"), (F.col("id") % (rows // 20)).cast("string"))).alias("city"),
        (F.col("id") % 50).cast("string").alias("state"),
        (F.rand(2) * 100000).cast("int").alias("salary"),
        (F.rand(3) * 40).cast("int").alias("rate")))
    old = os.path.join(folder, f"old_{rows}_{share}.parquet")
    new = os.path.join(folder, f"new_{rows}_{share}.parquet")
    base.write.mode("overwrite").parquet(old)
    o = spark.read.parquet(old)
    pick = F.rand(4) < share
    changed = o.select(
        "id", "zip",
        F.when(pick & (F.rand(5) < 0.5), F.lit("Changed")).otherwise(F.col("city")).alias("city"), "state",
        F.when(pick, (F.rand(6) * 100000).cast("int")).otherwise(F.col("salary")).alias("salary"), "rate")
    gone = F.rand(7) < share / 10  # a tenth as many deletes (and as many inserts)
    ins = o.where(F.rand(8) < share / 10).select((F.col("id") + rows).alias("id"), "zip", "city", "state",
                                                 "salary", "rate")
    changed.where(~gone).unionByName(ins).write.mode("overwrite").parquet(new)
    return old, new


def baseline(spark, old, new, rules, saved=None) -> dict[str, int]:
    from pyspark.sql import functions as F

    from dqkit.detect import detect
    from dqkit.detect.since import identities

    o = identities(spark.read.parquet(os.path.join(saved, "violations")) if saved else
                   detect(old, rules, key="id", spark=spark).violations).persist()
    n = identities(detect(new, rules, key="id", spark=spark).violations).persist()
    out = {"new": n.subtract(o).count(), "resolved": o.subtract(n).count(), "persisting": n.intersect(o).count()}
    o.unpersist()
    n.unpersist()
    _ = F
    return out


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def counted_jobs(spark, group: str, fn):
    """``fn()`` under a Spark job group, and the number of Spark jobs it started (classic Spark only)."""
    sc = spark.sparkContext
    sc.setJobGroup(group, group)
    try:
        out = fn()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return out, len(sc.statusTracker().getJobIdsForGroup(group))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--changes", default="0.001")
    ap.add_argument("--rules", default="dc,fd")
    ap.add_argument("--modes", default="table,saved")
    ap.add_argument("--paths", default="changed,full", help="changed (cost rule off), full (cost rule forced)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="baseline and --since this many times, alternating; the medians and their ratio are printed")
    args = ap.parse_args()
    from dqkit.detect import detect
    from dqkit.detect.since import detect_since
    from dqkit.rules import as_rules
    from dqkit.runtime.session import get_spark

    spark = get_spark()
    folder = tempfile.mkdtemp(prefix="bench_since_")
    try:
        for share in [float(s) for s in args.changes.split(",")]:
            old, new = tables(spark, args.rows, share, folder)
            for rk in args.rules.split(","):
                rules = as_rules(RULES[rk])
                saved = os.path.join(folder, f"saved_{rk}_{share}")
                detect(old, rules, key="id", spark=spark).save(saved, overwrite=True, charts=False)
                for mode in args.modes.split(","):
                    src = saved if mode == "saved" else old
                    detect_since(new, src, rules, key="id", spark=spark, max_change=1.0).unpersist()  # warm-up
                    load0 = os.getloadavg()[0]
                    tbs: list[float] = []
                    times: dict[str, list[float]] = {}
                    jobs: dict[str, int] = {}
                    for rep in range(args.repeat):  # baseline and --since alternate, so both see the same load
                        tb, want = timed(lambda: baseline(spark, old, new, rules, saved if mode == "saved" else None))
                        tbs.append(tb)
                        for path in args.paths.split(","):
                            mc = 1.0 if path == "changed" else 0.0
                            group = f"bench-since-{rk}-{mode}-{share}-{path}-{rep}"
                            (ts, res), jobs[path] = counted_jobs(spark, group, lambda: timed(
                                lambda: detect_since(new, src, rules, key="id", spark=spark, max_change=mc)))
                            got = {k: res.to_dict()[k] for k in ("new", "resolved", "persisting")}
                            res.unpersist()
                            assert got == want, (path, got, want)
                            times.setdefault(path, []).append(ts)
                    load = os.getloadavg()[0]
                    tb = statistics.median(tbs)
                    shown = " ".join(f"{'since' if p == 'changed' else 'since_full'}={statistics.median(t):.1f}s "
                                     f"ratio{'' if p == 'changed' else '_full'}={tb / statistics.median(t):.2f}x "
                                     f"jobs{'' if p == 'changed' else '_full'}={jobs[p]}" for p, t in times.items())
                    each = (f" each: baseline {'/'.join(f'{t:.1f}' for t in tbs)}; " + "; ".join(
                        f"{p} {'/'.join(f'{x:.1f}' for x in t)}" for p, t in times.items())) if args.repeat > 1 else ""
                    print(f"rows={args.rows} change={share:.3%} rules={rk} mode={mode} baseline={tb:.1f}s "
                          f"{shown} counts={want} load={load0:.1f}->{load:.1f}{each}", flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
