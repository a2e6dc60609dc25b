"""Where a delta's time goes, stage by stage: Spark jobs, their seconds, and driver-to-JVM calls.

Runs ``delta()`` (all three stages, key ``id``) on ``bench_delta_small.py``'s data (generated there
if missing) and, per stage (dedup, row, column, and the row delta written to a noop sink), counts the
Spark jobs in a job group, times each from Spark's status store, and counts the Py4J calls the driver
made. A stage whose wall time is far above its jobs' time spends it on the driver (planning,
building expressions).

    PYTHONPATH=. .venv/bin/python benchmarks/delta_stage_jobs.py --rows 200000 --scenario 0.1% --repeat 2

Not part of ``make test``; the first round is a warm-up.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

STAGE_OF = {"changed_fingerprints": "dedup", "fetch_changed_rows": "row", "key_groups": "column",
            "pair_by_key": "column"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--scenario", choices=["0.1%", "25%"], default="0.1%")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--data-dir", default=str(HERE / "data"))
    args = parser.parse_args(argv)

    import dqkit.delta as dq
    from bench_delta_small import _tag, ensure_data
    from dqkit.runtime.session import get_spark

    spark = get_spark(config={"spark.driver.memory": "4g"})
    sc = spark.sparkContext
    base = ensure_data(spark, args.rows, Path(args.data_dir))
    calls = {"n": 0}
    client = sc._gateway._gateway_client  # counting only; the call itself is unchanged
    send = client.send_command

    def counted(*a: Any, **k: Any) -> Any:
        calls["n"] += 1
        return send(*a, **k)

    client.send_command = counted
    marks: dict[str, int] = {}

    def wrap(name: str) -> None:
        fn = getattr(dq, name)

        def inner(*a: Any, **k: Any) -> Any:
            stage = STAGE_OF[name]
            sc.setJobGroup(stage, stage)
            marks.setdefault(stage, calls["n"])
            return fn(*a, **k)
        setattr(dq, name, inner)

    for name in STAGE_OF:
        if hasattr(dq, name):
            wrap(name)
    store = sc._jsc.sc().statusStore()

    def jobs() -> dict[int, tuple[str | None, float]]:
        out = {}
        it = store.jobsList(None).iterator()
        while it.hasNext():
            j = it.next()
            group = j.jobGroup().get() if j.jobGroup().isDefined() else None
            start, end = j.submissionTime(), j.completionTime()
            if start.isDefined() and end.isDefined():
                out[j.jobId()] = (group, (end.get().getTime() - start.get().getTime()) / 1000)
        return out

    print(f"{args.rows} rows, {args.scenario}, load {[round(x, 2) for x in os.getloadavg()]}")
    for rnd in range(args.repeat + 1):
        before = set(jobs())
        spark.catalog.clearCache()
        marks.clear()
        n0, start = calls["n"], time.perf_counter()
        res = dq.delta((base / "old").as_posix(), (base / _tag(args.scenario)).as_posix(), keys={"t": ["id"]},
                       spark=spark)
        marks["sink"] = calls["n"]
        sc.setJobGroup("sink", "sink")
        res.row_delta("t").write.format("noop").mode("overwrite").save()
        elapsed = time.perf_counter() - start
        sc.setLocalProperty("spark.jobGroup.id", None)
        per: dict[str | None, list[float]] = {}
        for job, (group, secs) in sorted(jobs().items()):
            if job not in before:
                per.setdefault(group, []).append(round(secs, 2))
        order = [s for s in ("dedup", "row", "column", "sink") if s in marks]
        driver_calls = {s: (marks[order[i + 1]] if i + 1 < len(order) else calls["n"]) - marks[s]
                        for i, s in enumerate(order)}
        print(f"{'warm-up' if rnd == 0 else 'timed'} {elapsed:.2f} s, stages {res.seconds}, "
              f"driver calls {calls['n'] - n0} {driver_calls}, load {os.getloadavg()[0]:.1f}")
        for stage in ("dedup", "row", "column", "sink"):
            if stage in per:
                print(f"  {stage:<6} {len(per[stage])} jobs, {sum(per[stage]):.2f} s in jobs: {per[stage]}")
        res.unpersist()
    return 0


if __name__ == "__main__":
    sys.exit(main())
