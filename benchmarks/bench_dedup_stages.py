"""Where dqkit's dedup spends its time: one run on the seeded FEBRL-like people (``data/people.py``)
with the speed part's blocking and comparisons (``benchmarks/dedup.py``), timing each stage through
the progress callback (block and compare, estimate, cluster), then ``--repeat`` more runs in the same
session (the first pays for the JVM's warm-up). Not part of ``make test``.

    .venv/bin/python benchmarks/bench_dedup_stages.py --entities 100000 --repeat 1
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
    a = p.parse_args()
    from dqkit.dedup import dedup
    from dqkit.session import get_spark

    path, _ = people_data(a.entities)
    spark = get_spark(config={"spark.driver.memory": a.driver_memory})
    cfg = dqkit_config(SPEED_BLOCKING, 0.9)
    for run in range(1 + a.repeat):
        load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.split("load average:")[-1].strip()
        marks = [("start", time.perf_counter())]
        res = dedup(path.as_posix(), "rec_id", cfg, progress=lambda s, *_: marks.append((s, time.perf_counter())))
        total = marks[-1][1] - marks[0][1]
        parts = ", ".join(f"{s} {t - marks[i][1]:.1f}" for i, (s, t) in enumerate(marks[1:]))
        print(f"[{Path(dqkit.__file__).parent.parent}] run {run}: {a.entities} entities, {res.n_pairs:,} comparisons, {total:.1f} s "
              f"({res.n_pairs / total:,.0f} cmp/s): {parts}; load {load}", flush=True)
        res.levelled.unpersist()


if __name__ == "__main__":
    main()
