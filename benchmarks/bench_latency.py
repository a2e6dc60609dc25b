"""Benchmark: tiny-input latency of every command against a bare pyspark script on the same files.

For each system in the registry, its bundled example (``System.example``) is run as a whole process,
``python -m dqkit.cli NAME ARGS --format json``, and paired with a bare script that starts a plain
``SparkSession`` (``local[*]``) in a fresh process, reads the same data files (CSV with a header, or
Parquet) and runs one count per file. The two alternate (dqkit, bare, dqkit, bare, ...) so both see the
same load; the medians, their ratio (goal: at most 1.5) and the load average are printed, one row per
command, plus a Markdown table for docs/performance.md. Not part of ``make test``.

    .venv/bin/python benchmarks/bench_latency.py --repeat 3
    .venv/bin/python benchmarks/bench_latency.py --only delta detect --repeat 2
    .venv/bin/python benchmarks/bench_latency.py --bare data/users/old data/users/new   # the bare script alone
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA_SUFFIXES = (".csv", ".parquet")


def bare(paths: list[str]) -> None:
    """The yardstick: a plain local session, each data file read (CSV header, no inference), one count each."""
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.master("local[*]").appName("bare").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    for p in paths:
        reader = spark.read.parquet if p.endswith(".parquet") else spark.read.option("header", True).csv
        reader(p).count()


def data_files(inputs: list[str]) -> list[str]:
    """The data files among a command's inputs (rule and config files dropped; a folder's files listed)."""
    found: list[str] = []
    for item in inputs:
        path = ROOT / item
        if path.is_dir():
            found += sorted(str(f.relative_to(ROOT)) for f in path.rglob("*") if f.suffix in DATA_SUFFIXES)
        elif path.suffix in DATA_SUFFIXES:
            found.append(item)
    return found


def commands(only: list[str] | None) -> dict[str, tuple[list[str], list[str]]]:
    """``{name: (dqkit argv, bare argv)}`` for every registered system (or ``only`` those)."""
    sys.path.insert(0, str(ROOT))
    from dqkit.systems import all_systems

    out = {}
    for system in all_systems():
        if only and system.name not in only:
            continue
        params = system.params.parse(system.example)
        files = data_files([str(p) for p in params.inputs()])
        out[system.name] = ([sys.executable, "-m", "dqkit.cli", system.name, *params.to_argv(), "--format", "json"],
                            [sys.executable, __file__, "--bare", *files])
    return out


def _timed(cmd: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):  # 1: findings, the expected answer of most examples
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="paired runs of each command (medians kept)")
    parser.add_argument("--only", nargs="*", help="these commands only")
    parser.add_argument("--bare", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.bare is not None:
        bare(args.bare)
        return 0
    rows = []
    for name, (dq, yard) in commands(args.only).items():
        mine, base = [], []
        for _ in range(args.repeat):
            mine.append(_timed(dq))
            base.append(_timed(yard))
            print(f"  {name:7s} dqkit {mine[-1]:6.2f} s   bare {base[-1]:6.2f} s", flush=True)
        m, b = statistics.median(mine), statistics.median(base)
        load = os.getloadavg()[0]
        rows.append((name, m, b, m / b, load, " ".join(dq[1:])))
        print(f"{name}: dqkit {m:.2f} s, bare {b:.2f} s, ratio {m / b:.2f} "
              f"({'MET' if m / b <= 1.5 else 'NOT MET'}), load {load:.1f}", flush=True)
    print("\n| command (bundled example) | dqkit s | bare session + read + count s | ratio | load | command |")
    print("|---|---|---|---|---|---|")
    for name, m, b, r, load, cmd in rows:
        print(f"| {name} | {m:.2f} | {b:.2f} | **{r:.2f}** | {load:.1f} | `{cmd}` |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
