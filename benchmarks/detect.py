"""Benchmarks of dqkit.detect against peers, side by side in one process (not part of make test).

H1  φ2 not(t1.salary > t2.salary and t1.rate < t2.rate) on TaxB, count-only:
    dqkit (OCJoin) vs the paper's SQL self-join on Spark SQL (timeout) vs DuckDB (IEJoin).
H3  φ1 zipcode -> city on TaxA, count-only: dqkit (Block+UCrossProduct) vs Spark SQL self-join with
    and without a.tid < b.tid vs a group-by formulation.
H5  Levenshtein dedup UDF rule on generated customers: blocked (Block + UCrossProduct) vs Detect-only
    over all pairs.

Prints one line per system with time, violation count and ratio (peer time / dqkit time), and a
JSON document at the end. Usage:

    .venv/bin/python benchmarks/detect.py h1 --sizes 10000 50000 100000
    .venv/bin/python benchmarks/detect.py h3 --sizes 1000000
    .venv/bin/python benchmarks/detect.py h5 --sizes 1000 2000 4000
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import threading
import time

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


from dqkit.detect import detect  # noqa: E402
from dqkit.runtime.session import get_spark  # noqa: E402

PHI2 = "phi2: not(t1.salary > t2.salary and t1.rate < t2.rate)"
PHI1 = "phi1: zipcode -> city"


def timed_spark(spark, fn, timeout: float):
    """Run ``fn`` (a Spark action) with a timeout; interrupts its jobs by tag when it runs out."""
    tag = f"dqkit-bench-{time.monotonic_ns()}"
    out: dict = {}

    def run():
        spark.addTag(tag)
        try:
            out["value"] = fn()
        except Exception as exc:  # interrupted or failed
            out["error"] = repr(exc)[:200]
        finally:
            spark.removeTag(tag)

    t0 = time.perf_counter()
    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(timeout)
    if th.is_alive():
        spark.interruptTag(tag)
        th.join(60)
        return None, time.perf_counter() - t0, "timeout"
    return out.get("value"), time.perf_counter() - t0, out.get("error")


REPEAT = 2  # each measurement is repeated (unless the first run takes over a minute); the best is kept


def best_of(fn):
    """Run ``fn`` -> (value, seconds, error) up to REPEAT times; keep the fastest successful run."""
    best = fn()
    for _ in range(REPEAT - 1):
        if best[2] is not None or best[1] > 60:
            break
        again = fn()
        if again[2] is None and again[1] < best[1]:
            best = again
    return best


def timed(fn):
    t0 = time.perf_counter()
    v = fn()
    return v, time.perf_counter() - t0, None


def report(rows, base="dqkit"):
    base_t = next((r["seconds"] for r in rows if r["system"] == base and r["status"] == "ok"), None)
    for r in rows:
        ratio = (r["seconds"] / base_t) if base_t and r["status"] in ("ok", "timeout") else None
        r["ratio_vs_dqkit"] = None if ratio is None else round(ratio, 2)
        flag = ">" if r["status"] == "timeout" else ""
        if r["seconds"] != r["seconds"]:  # skipped
            print(f"  {r['system']:<34} {'-':>10}  {r['status']}")
            continue
        print(f"  {r['system']:<34} {flag}{r['seconds']:>9.2f}s  violations={r['violations']!s:<14} "
              f"ratio={flag}{r['ratio_vs_dqkit']}  {r['status']}")
    counts = {r["violations"] for r in rows if r["status"] == "ok" and r.get("comparable", True)}
    print(f"  counts agree: {len(counts) <= 1}")
    return rows


def h1(spark, sizes, timeout, nb_parts, magnitude, tmp):
    import duckdb

    from data.tax import generate_tax

    results = []
    sql_timed_out = False
    warm, _ = generate_tax(2000, "B", magnitude=magnitude, seed=1, spark=spark)
    detect(warm, PHI2, key="tid", mode="count", nb_parts=nb_parts)  # warm-up (JVM, Python workers)
    warm.createOrReplaceTempView("taxb_warm")  # and the same for the peers
    spark.sql("SELECT count(*) FROM taxb_warm a JOIN taxb_warm b ON a.salary > b.salary AND a.rate < b.rate").collect()
    for n in sizes:
        path = os.path.join(tmp, f"taxB_{n}")
        dirty, _ = generate_tax(n, "B", magnitude=magnitude, seed=42, spark=spark)
        dirty.write.mode("overwrite").parquet(path)
        df = spark.read.parquet(path)
        df.count()
        print(f"H1 n={n} (TaxB, error rate 10%, magnitude {magnitude})")
        rows = []
        out = {}

        def run_dqkit():
            out["r"] = detect(df, PHI2, key="tid", mode="count", nb_parts=nb_parts)
            return out["r"].counts["phi2"]
        v, s, _ = best_of(lambda: timed(run_dqkit))
        r = out["r"]
        rows.append({"system": "dqkit", "seconds": s,
                     "violations": v, "status": "ok", "operator": r.summary("phi2").operator,
                     "details": r.summary("phi2").details})
        df.createOrReplaceTempView("taxb")
        sql = "SELECT count(*) FROM taxb a JOIN taxb b ON a.salary > b.salary AND a.rate < b.rate"
        if sql_timed_out:
            rows.append({"system": "spark-sql self-join (paper's SQL)", "seconds": float("nan"), "violations": None,
                         "status": "skipped: timed out at a smaller size"})
        else:
            v, s, err = best_of(lambda: timed_spark(spark, lambda: spark.sql(sql).collect()[0][0], timeout))
            rows.append({"system": "spark-sql self-join (paper's SQL)", "seconds": s, "violations": v,
                         "status": "ok" if err is None else err})
            sql_timed_out = err == "timeout"
        con = duckdb.connect()
        q = (f"SELECT count(*) FROM read_parquet('{path}/*.parquet') a JOIN read_parquet('{path}/*.parquet') b "
             f"ON a.salary > b.salary AND a.rate < b.rate")
        v, s, _ = best_of(lambda: timed(lambda: con.execute(q).fetchone()[0]))
        rows.append({"system": "duckdb (IEJoin)", "seconds": s, "violations": v, "status": "ok"})
        con.close()
        results.append({"n": n, "rows": report(rows)})
    return results


def h3(spark, sizes, timeout, tmp):
    from data.tax import generate_tax

    results = []
    warm, _ = generate_tax(2000, "A", seed=1, spark=spark)
    detect(warm, PHI1, key="tid", mode="count")  # warm-up
    for n in sizes:
        path = os.path.join(tmp, f"taxA_{n}")
        dirty, _ = generate_tax(n, "A", seed=42, spark=spark)
        dirty.write.mode("overwrite").parquet(path)
        df = spark.read.parquet(path)
        df.count()
        df.createOrReplaceTempView("taxa")
        print(f"H3 n={n} (TaxA, error rate 10%)")
        rows = []
        v, s, _ = best_of(lambda: timed(lambda: detect(df, PHI1, key="tid", mode="count").counts["phi1"]))
        rows.append({"system": "dqkit", "seconds": s, "violations": v, "status": "ok",
                     "operator": "Block+UCrossProduct"})
        q1 = ("SELECT count(*) FROM taxa a JOIN taxa b ON a.zipcode = b.zipcode "
              "WHERE a.city <> b.city AND a.tid < b.tid")
        q2 = "SELECT count(*) FROM taxa a JOIN taxa b ON a.zipcode = b.zipcode WHERE a.city <> b.city"
        q3 = ("SELECT sum(nn * (nn - 1) / 2 - same) FROM (SELECT zipcode, sum(c) nn, sum(c * (c - 1) / 2) same "
              "FROM (SELECT zipcode, city, count(*) c FROM taxa WHERE city IS NOT NULL GROUP BY zipcode, city) "
              "GROUP BY zipcode)")
        for name, q, comparable in (("spark-sql self-join, a.tid < b.tid", q1, True),
                                    ("spark-sql self-join (as printed)", q2, False),
                                    ("spark-sql group-by formulation", q3, True)):
            v, s, err = best_of(lambda q=q: timed_spark(spark, lambda: spark.sql(q).collect()[0][0], timeout))
            rows.append({"system": name, "seconds": s, "violations": None if v is None else int(v),
                         "status": "ok" if err is None else err, "comparable": comparable})
        results.append({"n": n, "rows": report(rows)})
        dup = rows[2]["violations"]
        if dup is not None:
            print(f"  self-join without tid<: {dup} = {dup / max(1, rows[0]['violations']):.1f}x dqkit "
                  f"(duplicate violations); dqkit reports each unordered pair once")
    return results


_FIRST = ["Annie", "Laure", "John", "Mark", "Robert", "Mary", "Paul", "Sally", "William", "Nora", "Omar", "Ines"]
_LAST = ["Smith", "Jones", "Stone", "Brown", "Garcia", "Miller", "Davis", "Wilson", "Moore", "Taylor"]


def customers(spark, n, seed=7):
    """n customers, 20% of them edited duplicates of another (name typo), ~20 rows per zip."""
    import random

    rng = random.Random(seed)
    rows = []
    base = int(n * 0.8)
    for i in range(base):
        rows.append((i, f"{rng.choice(_FIRST)} {rng.choice(_LAST)} {rng.randint(1, 999)}", f"z{rng.randint(0, base // 20)}"))
    for i in range(base, n):
        j = rng.randrange(base)
        name = list(rows[j][1])
        k = rng.randrange(len(name))
        name[k] = rng.choice("abcdefghij")
        rows.append((i, "".join(name), rows[j][2]))
    return spark.createDataFrame(rows, "id long, name string, zip string")


def h5(spark, sizes, timeout, skip_all_pairs=()):
    from dqkit.primitives.similarity import similarity
    from dqkit.rules import Job

    def similar(c):
        return similarity(c["name_1"], c["name_2"]) >= 0.85

    def blocked(df):
        return Job("dedup").add_input(df, "C", key="id").add_block("zip", "C").add_detect(similar, "C")

    def all_pairs(df):  # the same Detect callable, no Block: UCrossProduct over all pairs
        return Job("dedup").add_input(df, "C", key="id").add_detect(similar, "C")

    warm = customers(spark, 300, seed=1).cache()  # warm-up of both contenders (JVM, Python workers)
    detect(warm, blocked(warm), mode="count")
    detect(warm, all_pairs(warm), mode="count")
    warm.unpersist()
    results = []
    for n in sizes:
        df = customers(spark, n).cache()
        df.count()
        print(f"H5 n={n} customers (20% edited duplicates)")
        rows = []
        v, s, _ = best_of(lambda: timed(lambda: detect(df, blocked(df), mode="count").counts["dedup"]))
        rows.append({"system": "dqkit", "seconds": s, "violations": v,
                     "status": "ok", "operator": "Block+UCrossProduct", "comparable": False})
        if n in skip_all_pairs:
            rows.append({"system": "dqkit Detect-only (all pairs)", "seconds": float("nan"), "violations": None,
                         "status": "skipped (--skip-all-pairs)", "comparable": False})
        else:
            v, s, err = best_of(lambda: timed_spark(
                spark, lambda: detect(df, all_pairs(df), mode="count").counts["dedup"], timeout))
            rows.append({"system": "dqkit Detect-only (all pairs)", "seconds": s, "violations": v,
                         "status": "ok" if err is None else err, "comparable": False})
        results.append({"n": n, "rows": report(rows)})
        df.unpersist()
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("which", choices=("h1", "h3", "h5"))
    ap.add_argument("--sizes", type=int, nargs="+")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per peer run (default 600)")
    ap.add_argument("--nb-parts", type=int, default=None,
                    help="OCJoin range partitions (default: dqkit's automatic choice)")
    ap.add_argument("--magnitude", type=float, default=0.01, help="TaxB rate error magnitude")
    ap.add_argument("--master", default=None)
    ap.add_argument("--json", help="write results to this file")
    ap.add_argument("--repeat", type=int, default=2, help="runs per measurement, best kept (default 2)")
    ap.add_argument("--skip-all-pairs", type=int, nargs="*", default=(),
                    help="H5: sizes at which the Detect-only all-pairs run is skipped")
    a = ap.parse_args(argv)
    global REPEAT
    REPEAT = max(1, a.repeat)
    spark = get_spark(master=a.master)
    meta = {"spark": spark.version, "master": spark.conf.get("spark.master"), "cores": os.cpu_count(),
            "python": platform.python_version(), "seed": 42}
    print(json.dumps(meta))
    tmp = tempfile.mkdtemp(prefix="dqkit-bench-")
    if a.which == "h1":
        res = h1(spark, a.sizes or [10000, 50000, 100000, 200000], a.timeout, a.nb_parts, a.magnitude, tmp)
    elif a.which == "h3":
        res = h3(spark, a.sizes or [1000000, 5000000], a.timeout, tmp)
    else:
        res = h5(spark, a.sizes or [1000, 2000, 4000], a.timeout, set(a.skip_all_pairs))
    doc = {"meta": meta, "benchmark": a.which, "results": res}
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(doc, fh, indent=2, default=str)
    print(json.dumps(doc, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
