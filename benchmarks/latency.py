"""Benchmark: latency of the Users example end to end against a bare session plus one trivial job.

Each is a fresh process (a session starts once per process), best of ``--repeat`` (default 3),
run alternately in the same run so both see the same machine load:

(a) ``python -c``: start dqkit's session and run ``spark.range(1).count()``;
(b) ``python -m dqkit.cli delta data/users/old data/users/new --key users=id --format json``.

Prints both times, the ratio (b)/(a) (goal: at most 1.5) and the load average. Not part of
``make test``.

    .venv/bin/python benchmarks/latency.py --repeat 3
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BARE = [sys.executable, "-c", "from dqkit.runtime.session import get_spark; get_spark().range(1).count()"]
USERS = [sys.executable, "-m", "dqkit.cli", "delta", "data/users/old", "data/users/new",
         "--key", "users=id", "--format", "json"]


def _timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):  # the Users versions differ: exit 1 is the expected answer
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each; the best is kept")
    args = parser.parse_args(argv)
    bare: list[float] = []
    users: list[float] = []
    for _ in range(args.repeat):
        bare.append(_timed(BARE))
        users.append(_timed(USERS))
        print(f"  bare {bare[-1]:6.2f} s   users delta {users[-1]:6.2f} s", flush=True)
    ratio = min(users) / min(bare)
    print(f"bare session + one job: best {min(bare):.2f} s of {[round(t, 2) for t in bare]}")
    print(f"users delta (CLI, json): best {min(users):.2f} s of {[round(t, 2) for t in users]}")
    print(f"ratio users/bare: {ratio:.2f} (goal <= 1.5: {'MET' if ratio <= 1.5 else 'NOT MET'})")
    print(f"load average at end: {[round(x, 2) for x in os.getloadavg()]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
