"""Benchmark: dqkit's delta at small and large change rates against the physical floor and peers.

Data (generated once into ``benchmarks/data/delta_small_<rows>/``): one table ``t`` of ``--rows``
rows (default 1M) x 5 columns (id bigint, a int, b double, c string, d date) as Parquet, and two new
versions in which the string ``c`` of the rows with ``pmod(xxhash64(id), 1000) = 0`` (0.1 %) or
``pmod(xxhash64(id), 4) = 0`` (25 %) is changed. All contenders run in one process on one Spark session
(``dqkit.runtime.session.get_spark``), after one warm-up each, interleaved round by round so that load
changes hit every contender alike; the median of ``--repeat`` runs is reported:

* ``dqkit-full``: ``delta()`` with all three stages on key ``id``, the row delta written to a noop sink;
* ``dqkit-row``:  ``delta(stages=dedup,row)``, the row delta written to a noop sink;
* ``exceptall``:  ``old.exceptAll(new)`` and ``new.exceptAll(old)``, both counted;
* ``spark-ext``:  G-Research spark-extension's ``diff`` on ``id`` (only when importable, see ``--spark-ext``);
* ``floor``:      one scan of both versions hashing every row (``xxhash64``), XOR-aggregated;
* ``probe-buckets``: the first pass of a per-bucket signature design (reladiff's): both versions
  scanned once, every row's 128-bit fingerprint summed into 65,536 buckets per side (partial
  aggregation), the differing buckets counted;
* ``probe-distinct``: what exact deduplicated counts (statistics (4)-(5)) add to it: the distinct
  fingerprints of one version counted, a shuffle of that version's fingerprints.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_delta_small.py --rows 1000000 --repeat 3

Not part of ``make test``. Prints times, ratios, the load average and correctness checks.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SCENARIOS = {"0.1%": 1000, "25%": 4}
CONTENDERS = ("dqkit-full", "dqkit-row", "exceptall", "spark-ext", "floor", "probe-buckets", "probe-distinct")


def ensure_data(spark: Any, rows: int, data_dir: Path) -> Path:
    """Old and new versions of ``t`` (generated once, then reused)."""
    from pyspark.sql import functions as F

    base = data_dir / f"delta_small_{rows}"
    if (base / "done").is_file():
        return base
    old = spark.range(rows).select(
        F.col("id"), (F.col("id") * 7 % 1000).cast("int").alias("a"), (F.col("id") * 0.5).alias("b"),
        F.concat(F.lit("s"), (F.col("id") % 9973).cast("string")).alias("c"),
        F.date_add(F.lit("2020-01-01").cast("date"), (F.col("id") % 3650).cast("int")).alias("d"))
    old.write.mode("overwrite").parquet((base / "old" / "t").as_posix())
    old = spark.read.parquet((base / "old" / "t").as_posix())
    for name, every in SCENARIOS.items():
        hit = F.pmod(F.xxhash64("id"), F.lit(every)) == 0
        new = old.withColumn("c", F.when(hit, F.concat(F.col("c"), F.lit("x"))).otherwise(F.col("c")))
        new.write.mode("overwrite").parquet((base / _tag(name) / "t").as_posix())
    (base / "done").write_text("ok\n")
    return base


def _tag(scenario: str) -> str:
    return "new_" + scenario.replace("%", "pct").replace(".", "_")


def make_contenders(spark: Any, base: Path, scenario: str, spark_ext: bool) -> dict[str, Callable[[], Any]]:
    from pyspark.sql import functions as F

    from dqkit.delta import delta

    old_db, new_db = (base / "old").as_posix(), (base / _tag(scenario)).as_posix()
    old_t, new_t = spark.read.parquet(old_db + "/t"), spark.read.parquet(new_db + "/t")

    def full() -> Callable[[], Any]:
        def run() -> Any:
            res = delta(old_db, new_db, keys={"t": ["id"]}, spark=spark)
            try:
                res.row_delta("t").write.format("noop").mode("overwrite").save()
                return {"differences": res.tables["t"].row_stats["differences"],
                        "c": res.tables["t"].column_stats["c"]["count"], "seconds": res.seconds}
            finally:
                res.unpersist()
        return run

    def row() -> Callable[[], Any]:
        def run() -> Any:
            res = delta(old_db, new_db, stages=("dedup", "row"), spark=spark)
            try:
                res.row_delta("t").write.format("noop").mode("overwrite").save()
                return {"differences": res.tables["t"].row_stats["differences"], "seconds": res.seconds}
            finally:
                res.unpersist()
        return run

    def exceptall() -> Any:
        return {"differences": old_t.exceptAll(new_t).count() + new_t.exceptAll(old_t).count()}

    def floor() -> Any:
        def h(df: Any) -> Any:
            return df.select(F.xxhash64(*[F.col(c) for c in df.columns]).alias("h"))
        return {"rows": h(old_t).unionByName(h(new_t)).agg(F.bit_xor("h"), F.count(F.lit(1))).first()[1]}

    def fingerprints(df: Any) -> Any:
        from dqkit.primitives.fingerprint import row_fingerprint

        hi, lo = row_fingerprint(df, df.columns)
        return df.select(hi.alias("hi"), lo.alias("lo"))

    def lanes(prefix: str) -> list[Any]:
        parts = []
        for c in ("hi", "lo"):
            parts.append(F.sum(F.col(c).bitwiseAND(0xFFFFFFFF)).alias(f"{prefix}{c}_l"))
            parts.append(F.sum(F.shiftrightunsigned(F.col(c), 32)).alias(f"{prefix}{c}_h"))
        return [F.count(F.lit(1)).alias(f"{prefix}n"), *parts]

    def probe_buckets() -> Any:
        def side(df: Any, prefix: str) -> Any:
            fp = fingerprints(df)
            return fp.groupBy(F.pmod(F.col("hi"), F.lit(65536)).alias("b")).agg(*lanes(prefix))
        joined = side(old_t, "o_").join(side(new_t, "n_"), "b", "full_outer")
        names = ["n", "hi_l", "hi_h", "lo_l", "lo_h"]
        same = None
        for n in names:
            eq = F.col(f"o_{n}").eqNullSafe(F.col(f"n_{n}"))
            same = eq if same is None else same & eq
        row_ = joined.agg(F.count_if(~same).alias("differing"), F.count(F.lit(1)).alias("buckets")).first()
        return {"differing_buckets": row_["differing"], "buckets": row_["buckets"]}

    def probe_distinct() -> Any:
        return {"distinct_old": fingerprints(old_t).distinct().count()}

    def sparkext() -> Any:
        from gresearch.spark.diff import diff  # noqa: F401 - adds DataFrame.diff

        d = old_t.diff(new_t, "id")
        row_ = d.groupBy().agg(*[F.count_if(F.col("diff") == k).alias(k) for k in "CIDN"]).first()
        return {"differences": 2 * row_["C"] + row_["I"] + row_["D"]}

    out = {"dqkit-full": full(), "dqkit-row": row(), "exceptall": exceptall, "floor": floor,
           "probe-buckets": probe_buckets, "probe-distinct": probe_distinct}
    if spark_ext:
        out["spark-ext"] = sparkext
    return out


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds first (default 1)")
    parser.add_argument("--scenarios", nargs="+", choices=list(SCENARIOS), default=list(SCENARIOS))
    parser.add_argument("--only", nargs="+", choices=CONTENDERS)
    parser.add_argument("--spark-ext", action="store_true", help="add spark-extension's diff (JAR via --jars)")
    parser.add_argument("--jars", default=None, help="spark.jars for the session (spark-extension's JAR)")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--data-dir", default=str(HERE / "data"))
    parser.add_argument("--results", default=str(HERE / "results" / "delta_small.json"))
    args = parser.parse_args(argv)

    from dqkit.runtime.session import get_spark

    config = {"spark.driver.memory": "4g"}
    if args.jars:
        config["spark.jars"] = args.jars
    spark = get_spark(master=args.master, config=config)
    base = ensure_data(spark, args.rows, Path(args.data_dir))
    print(f"Spark {spark.version}, master {spark.conf.get('spark.master')}, shuffle partitions "
          f"{spark.conf.get('spark.sql.shuffle.partitions')}, {os.cpu_count()} cores, load at start {_load()}",
          flush=True)
    report: dict[str, Any] = {"command": " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv]),
                              "rows": args.rows, "scenarios": {}}
    for scenario in args.scenarios:
        contenders = make_contenders(spark, base, scenario, args.spark_ext)
        chosen = [c for c in CONTENDERS if c in contenders and (not args.only or c in args.only)]
        times: dict[str, list[float]] = {c: [] for c in chosen}
        answers: dict[str, Any] = {}
        loads = []
        for rnd in range(args.repeat + args.warmup):
            for name in chosen:
                spark.catalog.clearCache()
                start = time.perf_counter()
                answers[name] = contenders[name]()
                elapsed = time.perf_counter() - start
                timed = rnd >= args.warmup
                if timed:
                    times[name].append(elapsed)
                print(f"  {scenario} {name:<16} {'timed' if timed else 'warm-up'} {elapsed:7.2f} s  "
                      f"{json.dumps(answers[name], default=str)}", flush=True)
            loads.append(_load())
        med = {n: statistics.median(t) for n, t in times.items()}
        ratios = {}
        if "floor" in med:
            ratios.update({f"{n} / floor": round(med[n] / med["floor"], 2) for n in med if n != "floor"})
        if "exceptall" in med:
            ratios.update({f"exceptall / {n}": round(med["exceptall"] / med[n], 2)
                           for n in med if n.startswith("dqkit-row")})
        if "spark-ext" in med:
            ratios.update({f"spark-ext / {n}": round(med["spark-ext"] / med[n], 2)
                           for n in med if n.startswith("dqkit-full")})
        diffs = {n: a.get("differences") for n, a in answers.items() if "differences" in a}
        report["scenarios"][scenario] = {"median_seconds": {n: round(v, 3) for n, v in med.items()},
                                         "runs": {n: [round(x, 3) for x in t] for n, t in times.items()},
                                         "ratios": ratios, "differences": diffs, "load": loads}
        print(f"scenario {scenario}: medians {report['scenarios'][scenario]['median_seconds']}")
        print(f"  ratios {ratios}\n  differences {diffs}\n  load {loads}", flush=True)
    out = Path(args.results)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(f"command: {report['command']}\nresults: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
