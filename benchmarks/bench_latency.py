"""Benchmark: tiny-input latency of every command against a bare pyspark script on the same files.

For each system in the registry, its bundled example (``System.example``) is run as a whole process,
``python -m dqkit.cli NAME ARGS --format json``, and paired with a bare script that starts a plain
``SparkSession`` (``local[*]``) in a fresh process, reads the same data files (CSV with a header, or
Parquet) and runs one count per file. The two alternate (dqkit, bare, dqkit, bare, ...) so both see the
same load; the medians, their ratio (goal: at most 1.5) and the load average are printed, one row per
command, plus a Markdown table for docs/performance.md. Each run's CPU seconds (user + system of the
whole process tree, the driver JVM included: this process becomes the reaper of orphans) are printed
too: on a shared machine they move far less with the load than wall time. Not part of ``make test``.

    .venv/bin/python benchmarks/bench_latency.py --repeat 3
    .venv/bin/python benchmarks/bench_latency.py --only delta detect --repeat 2
    .venv/bin/python benchmarks/bench_latency.py --also DQKIT_SMALL_INPUT_JVM=0   # + dqkit without the tiny-input JVM
    .venv/bin/python benchmarks/bench_latency.py --bare data/users/old/users.csv    # the bare script alone
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


def _subreaper() -> bool:
    """Become the reaper of orphaned descendants (Linux), so the driver JVM that a finished Python leaves
    behind is waited for here and its CPU counted; False where that is not available."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


CPU: dict[str, list[float]] = {}  # CPU seconds (user + system) of each timed process tree, by label


def _timed(cmd: list[str], extra_env: dict[str, str] | None = None, label: str = "") -> float:
    """Wall seconds of ``cmd`` (its whole process); its tree's CPU seconds go to ``CPU[label]``."""
    import resource

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           **(extra_env or {})}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    elapsed = time.perf_counter() - start
    while True:  # the orphaned JVM (see _subreaper) exits once its Python is gone: reap it
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.setdefault(label, []).append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    if done.returncode not in (0, 1):  # 1: findings, the expected answer of most examples
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="paired runs of each command (medians kept)")
    parser.add_argument("--only", nargs="*", help="these commands only")
    parser.add_argument("--also", metavar="VAR=VALUE", help="also time dqkit with this environment variable set "
                        "(e.g. DQKIT_SMALL_INPUT_JVM=0: before the tiny-input JVM)")
    parser.add_argument("--bare", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.bare is not None:
        bare(args.bare)
        return 0
    also = dict([args.also.split("=", 1)]) if args.also else None
    print(f"CPU of whole process trees (JVM included): {'yes' if _subreaper() else 'no, Python only'}")
    rows = []
    for name, (dq, yard) in commands(args.only).items():
        mine, base, other = [], [], []
        for _ in range(args.repeat):
            mine.append(_timed(dq, label=f"{name} dqkit"))
            base.append(_timed(yard, label=f"{name} bare"))
            if also:
                other.append(_timed(dq, also, label=f"{name} also"))
            print(f"  {name:7s} dqkit {mine[-1]:6.2f} s (cpu {CPU[name + ' dqkit'][-1]:.1f})   bare {base[-1]:6.2f} s "
                  f"(cpu {CPU[name + ' bare'][-1]:.1f})"
                  + (f"   dqkit {args.also} {other[-1]:6.2f} s (cpu {CPU[name + ' also'][-1]:.1f})" if also else ""),
                  flush=True)
        m, b = statistics.median(mine), statistics.median(base)
        o = statistics.median(other) if other else None
        load = os.getloadavg()[0]
        rows.append((name, m, b, o, load, " ".join(dq[1:])))
        cpu = {k: statistics.median(CPU[f"{name} {k}"]) for k in ("dqkit", "bare", "also") if f"{name} {k}" in CPU}
        print(f"{name}: cpu s {', '.join(f'{k} {v:.1f}' for k, v in cpu.items())}", flush=True)
        print(f"{name}: dqkit {m:.2f} s, bare {b:.2f} s, ratio {m / b:.2f} "
              f"({'MET' if m / b <= 1.5 else 'NOT MET'})"
              + (f", with {args.also}: {o:.2f} s = {o / b:.2f}" if o else "") + f", load {load:.1f}", flush=True)
    extra = f" dqkit with {args.also} s (ratio) |" if also else ""
    print(f"\n| command (bundled example) | dqkit s | bare session + read + count s | ratio |{extra} load | command |")
    print("|---|---|---|---|" + ("---|" if also else "") + "---|---|")
    for name, m, b, o, load, cmd in rows:
        cell = f" {o:.2f} ({o / b:.2f}) |" if o else ""
        print(f"| {name} | {m:.2f} | {b:.2f} | **{m / b:.2f}** |{cell} {load:.1f} | `{cmd}` |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
