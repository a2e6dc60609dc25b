"""Where dqkit's dedup spends its time: one run on the seeded FEBRL-like people (``data/people.py``)
with the speed part's blocking and comparisons (``benchmarks/dedup.py``), timing each stage through
the progress callback (block and compare, estimate, cluster), then ``--repeat`` more runs in the same
session (the first pays for the JVM's warm-up). Not part of ``make test``.

    .venv/bin/python benchmarks/bench_dedup_stages.py --entities 100000 --repeat 1
    .venv/bin/python benchmarks/bench_dedup_stages.py --entities 100000 --repeat 2 --one-thread-too
    cd /tmp && PYTHONPATH=/path/to/main python /path/to/benchmarks/bench_dedup_stages.py   # another tree's dqkit
(run another tree from a neutral folder: Spark's Python workers put the current folder first)
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import dqkit  # first, from PYTHONPATH: benchmarks/dedup.py puts this tree before it

ROOT = Path(__file__).resolve().parents[1]
# appended, not prepended: ``PYTHONPATH=/other/tree`` measures another dqkit (the driver and Spark's
# Python workers both import it from there), e.g. main against a branch in turn
sys.path.append(str(ROOT))
sys.path.append(str(ROOT / "benchmarks"))

from dedup import SPEED_BLOCKING, dqkit_config, people_data  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--entities", type=int, default=100000)
    p.add_argument("--repeat", type=int, default=1, help="timed runs after the first")
    p.add_argument("--driver-memory", default="6g")
    p.add_argument("--jobs", action="store_true", help="also list each stage's Spark jobs (call site, seconds)")
    p.add_argument("--one-thread-too", action="store_true",
                   help="alternate each run with one where the driver route scores on one rapidfuzz thread (the "
                        "default uses every core); prints the pair of times and their ratio")
    a = p.parse_args()
    from dqkit.dedup import dedup
    from dqkit.runtime.session import get_spark

    path, _ = people_data(a.entities)
    spark = get_spark(config={"spark.driver.memory": a.driver_memory})
    cfg = dqkit_config(SPEED_BLOCKING, 0.9)
    from dqkit.primitives import similarity
    from dqkit.dedup import _driver

    every_core = _driver.workers
    runs = [(r, t) for r in range(1 + a.repeat) for t in (("every core", "one thread") if a.one_thread_too else ("",))]
    seconds: dict[str, list[float]] = {}
    for run, threads in runs:
        # the driver route's ``workers(-1)`` block, or a one-thread block in its place
        _driver.workers = (lambda n: similarity.workers(1)) if threads == "one thread" else every_core
        load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.split("load average:")[-1].strip()
        tracker = spark.sparkContext.statusTracker()
        marks = [("start", time.perf_counter(), _last_job(tracker))]
        res = dedup(path.as_posix(), "rec_id", cfg,
                    progress=lambda s, *_: marks.append((s, time.perf_counter(), _last_job(tracker))))
        total = marks[-1][1] - marks[0][1]
        parts = ", ".join(f"{s} {t - marks[i][1]:.1f} s/{j - marks[i][2]} jobs"
                          for i, (s, t, j) in enumerate(marks[1:]))
        if run:
            seconds.setdefault(threads, []).append(total)
        print(f"[{Path(dqkit.__file__).parent.parent}] run {run}{' ' + threads if threads else ''}: {a.entities} entities, {res.n_pairs:,} comparisons, {total:.1f} s "
              f"({res.n_pairs / total:,.0f} cmp/s): {parts}; load {load}", flush=True)
        if a.jobs:
            for i, (s, _, j) in enumerate(marks[1:]):
                for job in range(marks[i][2] + 1, j + 1):
                    print(f"  {s}: job {job} {_describe(tracker, job)}{_seconds(spark, job)}", flush=True)
        res.levelled.unpersist()
    _driver.workers = every_core
    if a.one_thread_too and seconds:
        one, every = sum(seconds["one thread"]), sum(seconds["every core"])
        print(f"timed runs after the first pair: one thread {one:.1f} s, every core {every:.1f} s, "
              f"one thread / every core {one / every:.2f}x", flush=True)


def _last_job(tracker) -> int:  # noqa: ANN001 - pyspark StatusTracker
    """The newest Spark job id (ids count up from 0 in one context; -1 before the first)."""
    return max(tracker.getJobIdsForGroup(None) or [-1])


def _seconds(spark, job: int) -> str:  # noqa: ANN001
    """The job's wall seconds from the JVM's status store (classic Spark), or nothing."""
    try:
        d = spark.sparkContext._jsc.sc().statusStore().job(job)
        return f" {(d.completionTime().get().getTime() - d.submissionTime().get().getTime()) / 1000:.2f} s"
    except Exception:  # noqa: BLE001 - forgotten job, Connect
        return ""


def _describe(tracker, job: int) -> str:  # noqa: ANN001
    """A job's stages: call site, tasks, seconds (the status store keeps the last 1,000 jobs)."""
    info = tracker.getJobInfo(job)
    if info is None:
        return "(forgotten)"
    out = []
    for sid in info.stageIds:
        st = tracker.getStageInfo(sid)
        if st is not None and st.numTasks:
            out.append(f"[{st.name.split(' at ')[0]} {st.numTasks}t {st.numCompletedTasks}done]")
    return f"{info.status} " + " ".join(out)


if __name__ == "__main__":
    main()
