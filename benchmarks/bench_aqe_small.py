"""Benchmark: adaptive query execution on or off for a tiny input, in one warm session, interleaved.

dqkit's small-input mode (``dqkit.runtime.inputsize``) turns adaptive execution off: on a few rows it only
splits each query into one Spark job per shuffle stage. This times a 3-rule ``detect --since`` plus a
full ``detect`` on 8 rows with it on and off, alternating (on, off, off, on, ...), and prints the job
counts, every time, the median ratio on/off and the load average. Not part of ``make test``.

    .venv/bin/python benchmarks/bench_aqe_small.py --repeat 4
"""
from __future__ import annotations

import argparse
import os
import statistics
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=4)
    args = ap.parse_args()
    from dqkit.detect import detect
    from dqkit.detect.since import detect_since
    from dqkit.rules import as_rules
    from dqkit.runtime.session import get_spark

    spark = get_spark(master="local[2]", config={"spark.sql.shuffle.partitions": "4"})
    sched = spark.sparkContext._jsc.sc().dagScheduler()
    schema = "id long, a long, b long, c long, x long"
    old = [(i, i % 3, i % 2, i % 4, 0) for i in range(8)]
    new = [r if r[0] != 2 else (2, 2, 0, 1, 1) for r in old if r[0] != 5] + [(100, 1, 1, 1, 0)]
    o, n = spark.createDataFrame(old, schema), spark.createDataFrame(new, schema)
    rules = as_rules({"fd1": "a -> b", "fd2": "c -> b", "dc": "not(t1.a = t2.a and t1.c > t2.c and t1.x < t2.x)"})

    def work() -> int:
        j0 = sched.nextJobId()
        res = detect_since(n, o, rules, key="id", spark=spark, max_change=1.0)
        res.to_dict()
        res.unpersist()
        detect(n, rules, key="id", spark=spark, trust_key=True).violations.count()
        return sched.nextJobId() - j0

    work()  # warm-up
    times: dict[str, list[float]] = {"true": [], "false": []}
    jobs: dict[str, int] = {}
    for rep in range(args.repeat):
        for aqe in ("true", "false") if rep % 2 == 0 else ("false", "true"):
            spark.conf.set("spark.sql.adaptive.enabled", aqe)
            t0 = time.perf_counter()
            jobs[aqe] = work()
            times[aqe].append(time.perf_counter() - t0)
    ratio = statistics.median(times["true"]) / statistics.median(times["false"])
    print(f"adaptive on : {jobs['true']} jobs, seconds {[round(t, 1) for t in times['true']]}")
    print(f"adaptive off: {jobs['false']} jobs, seconds {[round(t, 1) for t in times['false']]}")
    print(f"median on / off = {ratio:.2f}   load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
