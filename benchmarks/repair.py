"""Benchmark: dqkit's detect -> repair loop against detection alone, and its connected components
against networkx on the driver, side by side in one process (not part of ``make test``).

Part 1, the repair loop (BigDansing §5): the tax table of ``data/tax.py`` at ``--rows`` (default
1,000,000) with errors at ``--error-rate`` (default 5 %), read from Parquet, FDs ``zipcode -> city`` and
``zipcode -> state``. The errors (``--error-model``): ``BART`` (default), each city and state cell
corrupted with that probability by a typo or another zipcode's value; ``A``, TaxA's rows with random
text in city and state (§6.1). Contenders, each after a warm-up at ``--warmup-rows``,
best of ``--repeat``:

1. ``floor``:         one scan of the table, ``xxhash64`` of every row XOR-aggregated, and a count;
2. ``detect-count``:  ``detect(mode="count")``: per-rule counts, no violation materialised;
3. ``detect-fixes``:  ``detect()`` with every violation and candidate fix materialised (the fixes
                      written to a noop sink, counted);
4. ``repair-loop``:   ``repair(key="tid")``: detect -> repair rounds until no violation remains, then
                      the repaired table written to a noop sink, its rows counted and checksummed. FD
                      classes come from one groupBy per FD (``fd_route="groupby"``, the default);
5. ``repair-hypergraph``: the same loop with ``fd_route="hypergraph"``: FD classes from the pairwise
                      candidate fixes (the route before issue #25), for comparison.

It prints the ratios repair-loop / detect-count (the goal: at most 3) and repair-loop / detect-fixes,
each against the floor, repair-hypergraph against detect-count and against repair-loop (the two routes
must give the same repaired table: their checksums are compared), the iterations with their
violations, changed cells and seconds, and (untimed) the precision and recall of each route's changes
against the clean table.

Part 2, connected components of the violation graph of TaxB φ2
``not(t1.salary > t2.salary and t1.rate < t2.rate)`` for each size in ``--graph-rows``: the edges
``(t1, t2)`` of φ2's violations (found once by OCJoin, written to Parquet and reused) are the graph.
``dqkit``: ``run_connected_components`` with its result ``(node, component)`` written to Parquet (nodes
and components observed). ``networkx``: the edges collected to the driver (``toPandas``, timed apart),
then ``nx.Graph`` + ``connected_components`` + each node's smallest node, in a child process killed
after ``--timeout`` seconds (default 600); networkx stops going up at the first size it does not finish.
Where both finish, the two partitions are compared in Spark (component count, node -> smallest node).

Part 3, memory, for every stage: the Python driver's peak RSS (``VmHWM`` after a reset at the stage
start through ``/proc/self/clear_refs``, which lowers ``ru_maxrss`` too, so both give the stage's peak;
sampled RSS where the reset is not allowed) and the process's peak so far; the driver JVM's heap in
use (sampled every 0.5 s; with ``local[*]`` the executors live in that JVM too) and what it still holds
after one garbage collection at the stage end (untimed); for networkx, the child's own peak RSS. dqkit
runs all its sizes before the first collect, so the peer's collected edges never count against it.

Data is generated once into ``benchmarks/data/`` (regenerated when ``data/tax.py`` changes or with
``--regenerate``); results go to ``benchmarks/results/repair.json``, rewritten after each part (a run
stopped by SIGTERM keeps what it finished).

    .venv/bin/python benchmarks/repair.py                                   # 1M rows, graphs 10K/30K/100K
    .venv/bin/python benchmarks/repair.py --rows 20000 --graph-rows 2000,5000 --repeat 1
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

FDS = {"fd_city": "zipcode -> city", "fd_state": "zipcode -> state"}
PHI2 = {"phi2": "not(t1.salary > t2.salary and t1.rate < t2.rate)"}
REPAIR_CONTENDERS = ("floor", "detect-count", "detect-fixes", "repair-loop", "repair-hypergraph")
ROUTES = {"repair-loop": "groupby", "repair-hypergraph": "hypergraph"}  # contender -> repair(fd_route=...)
LOOP_GOAL = 3.0  # repair-loop at most this many times detection alone
CHILD = "_networkx-child"  # argv[1] of the networkx child process


# ----------------------------------------------------------------------------------- small helpers
def _load() -> list[float] | None:
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None


def _tag(x: float) -> str:
    return f"{x:g}".replace(".", "_")


def _generator_sha() -> str:
    """A hash of ``data/tax.py``: generated data is reused only while the generator is unchanged."""
    return hashlib.sha256((ROOT / "data" / "tax.py").read_bytes()).hexdigest()[:16]


def _noop(df: Any) -> None:
    df.write.format("noop").mode("overwrite").save()


def _ru_maxrss_mb() -> float:
    """This process's peak RSS so far (``ru_maxrss``: KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1 << 20 if sys.platform == "darwin" else 1 << 10), 1)


def _status_mb(field: str) -> float | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def _reset_hwm() -> bool:
    """Reset this process's peak RSS (``VmHWM``) on Linux; False where that is not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


class MemoryProbe:
    """Peak driver memory of one stage: Python RSS and the driver JVM's heap in use (sampled).

    The Python peak is ``VmHWM`` reset at the stage start (Linux ``clear_refs``), so each stage shows its
    own peak; where that reset is not allowed it is the sampled RSS. ``ru_maxrss`` at the stage end is
    recorded too (the reset lowers it as well), and the process's peak so far is kept across stages.
    """

    def __init__(self, spark: Any, stage: str, interval: float = 0.5) -> None:
        self.stage = stage
        self.interval = interval
        try:  # classic Spark only; Spark Connect has no driver JVM in this process
            self._runtime: Any = spark._jvm.java.lang.Runtime.getRuntime()
            self._system: Any = spark._jvm.java.lang.System
        except Exception:
            self._runtime = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._hwm_reset = False
        self._jvm_peak = 0
        self._rss_peak = 0.0
        self.result: dict[str, Any] = {}

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self._poll()

    def _poll(self) -> None:
        rss = _status_mb("VmRSS")
        if rss is not None:
            self._rss_peak = max(self._rss_peak, rss)
        if self._runtime is not None:
            try:
                self._jvm_peak = max(self._jvm_peak, int(self._runtime.totalMemory() - self._runtime.freeMemory()))
            except Exception:
                self._runtime = None

    def __enter__(self) -> MemoryProbe:
        _PROCESS_PEAK[0] = max(_PROCESS_PEAK[0], _status_mb("VmHWM") or 0.0, _ru_maxrss_mb())
        self._hwm_reset = _reset_hwm()
        self._poll()
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self._poll()
        hwm = _status_mb("VmHWM") if self._hwm_reset else None
        retained = None
        if self._runtime is not None:  # what the JVM still holds once garbage is collected (untimed)
            try:
                self._system.gc()
                retained = round((self._runtime.totalMemory() - self._runtime.freeMemory()) / (1 << 20), 1)
            except Exception:
                retained = None
        peak = hwm if hwm is not None else round(self._rss_peak, 1)
        _PROCESS_PEAK[0] = max(_PROCESS_PEAK[0], peak)
        self.result = {
            "stage": self.stage,
            "python_peak_rss_mb": peak,
            "python_peak_source": "VmHWM since stage start" if hwm is not None else "sampled VmRSS",
            "ru_maxrss_mb": _ru_maxrss_mb(),
            "process_peak_rss_mb": _PROCESS_PEAK[0],
            "jvm_heap_peak_mb": round(self._jvm_peak / (1 << 20), 1) if self._jvm_peak else None,
            "jvm_heap_after_gc_mb": retained,
            "jvm_heap_max_mb": (round(self._runtime.maxMemory() / (1 << 20), 1)
                                if self._runtime is not None else None),
        }
        MEMORY.append(self.result)


_PROCESS_PEAK = [0.0]  # this process's peak RSS in MB across stages (VmHWM is reset per stage)
MEMORY: list[dict[str, Any]] = []


def run_with_timeout(spark: Any, fn: Callable[[], Any], timeout: float | None) -> tuple[Any, float, str | None]:
    """Run ``fn`` (Spark actions) in a thread; when ``timeout`` runs out, interrupt its jobs by tag
    until it stops. Returns ``(value, seconds, error)`` with error ``"timeout"`` or a short repr."""
    tag = f"dqkit-bench-repair-{time.monotonic_ns()}"
    out: dict[str, Any] = {}

    def run() -> None:
        spark.addTag(tag)
        try:
            out["value"] = fn()
        except Exception as exc:
            out["error"] = repr(exc)[:300]
        finally:
            spark.removeTag(tag)

    start = time.perf_counter()
    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(timeout)
    if th.is_alive():
        elapsed = time.perf_counter() - start
        while th.is_alive():  # a loop of jobs: interrupt each one until the function gives up
            spark.interruptTag(tag)
            th.join(1.0)
        return None, elapsed, "timeout"
    return out.get("value"), time.perf_counter() - start, out.get("error")


# ----------------------------------------------------------------------------------- part 1: TaxA
def default_error_model() -> str:
    """``BART`` (cell-level errors in city and state) where ``data/tax.py`` has it, else TaxA's rows."""
    import data.tax as tax

    return "BART" if "BART" in getattr(tax, "VARIANTS", ()) else "A"


def taxa_data(n: int, variant: str, error_rate: float, seed: int, data_dir: Path, spark: Any,
              regenerate: bool) -> dict[str, Any]:
    """The tax table with ``n`` rows and errors of ``variant`` (``A`` or ``BART``): ``dirty/``, ``clean/``
    and ``errors/`` Parquet, written once and reused."""
    from data.tax import write_tax

    out = data_dir / f"tax{variant}_n{n}_e{_tag(error_rate)}_s{seed}"
    meta = out / "facts.json"
    sha = _generator_sha()
    if meta.is_file() and not regenerate:
        facts = json.loads(meta.read_text())
        if facts.get("generator") == sha:
            print(f"data: reusing {out}", flush=True)
            return facts
    print(f"data: generating tax {variant} n={n:,} error rate {error_rate:g} into {out} ...", flush=True)
    start = time.perf_counter()
    if out.exists():
        shutil.rmtree(out)
    write_tax(str(out), n, variant, error_rate=error_rate, seed=seed, spark=spark)
    errors = spark.read.parquet(str(out / "errors")).groupBy("attribute").count().collect()
    facts = {"rows": n, "variant": variant, "error_rate": error_rate, "seed": seed, "generator": sha,
             "dirty": str(out / "dirty"), "clean": str(out / "clean"),
             "erroneous_cells": {r["attribute"]: int(r["count"]) for r in errors},
             "generated_seconds": round(time.perf_counter() - start, 2)}
    meta.write_text(json.dumps(facts, indent=2) + "\n")
    print(f"data: generated in {facts['generated_seconds']} s; erroneous cells {facts['erroneous_cells']}", flush=True)
    return facts


def make_repair_contenders(spark: Any, facts: dict[str, Any], keep: dict[str, Any]
                           ) -> dict[str, Callable[[], dict[str, Any]]]:
    """Each contender: the whole job on the dirty tax table, returning what it found. The last repair
    result is kept in ``keep["repair"]`` for the untimed accuracy check."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    from dqkit.detect import detect
    from dqkit.repair import repair
    from dqkit.runtime.sparkutil import observed

    df = spark.read.parquet(facts["dirty"])
    row_hash = F.xxhash64(*[F.col(c) for c in df.columns])

    def floor() -> dict[str, Any]:
        row = df.agg(F.count(F.lit(1)).alias("rows"), F.bit_xor(row_hash).alias("checksum")).first()
        return {"rows": int(row["rows"]), "checksum": int(row["checksum"])}

    def detect_count() -> dict[str, Any]:
        res = detect(df, FDS, key="tid", mode="count", spark=spark)
        try:
            return {"violations": dict(res.counts)}
        finally:
            res.unpersist()

    def detect_fixes() -> dict[str, Any]:
        res = detect(df, FDS, key="tid", spark=spark)
        try:
            seen = Observation("fixes")
            _noop(res.candidate_fixes.observe(seen, F.count(F.lit(1)).alias("fixes")))
            got = observed(seen) or {"fixes": res.candidate_fixes.count()}
            return {"violations": dict(res.counts), "fixes": int(got["fixes"])}
        finally:
            res.unpersist()

    def repair_loop(route: str = "groupby", name: str = "repair-loop") -> dict[str, Any]:
        start = time.perf_counter()
        rounds: list[float] = []

        def progress(stage: str, item: str, done: int, total: int) -> None:
            rounds.append(time.perf_counter() - start)
            print(f"    repair round {done} done at {rounds[-1]:.1f} s", flush=True)

        res = repair(df, FDS, key="tid", spark=spark, progress=progress, fd_route=route)
        loop_s = time.perf_counter() - start
        seen = Observation("repaired")
        _noop(res.repaired.observe(seen, F.count(F.lit(1)).alias("rows"),
                                   F.bit_xor(F.xxhash64(*[F.col(c) for c in df.columns])).alias("checksum")))
        got = observed(seen) or res.repaired.agg(F.count(F.lit(1)).alias("rows")).first().asDict()
        if name in keep:
            _release(keep[name])
        keep[name] = res
        ends = rounds + [loop_s]
        per_round = []
        for i, h in enumerate(res.history):
            entry = {k: h.get(k) for k in ("iteration", "violations", "changed", "classes", "largest_class",
                                           "components_rounds")}
            entry["repair_step_seconds"] = h.get("seconds")
            if i < len(rounds):  # detect + repair step + apply, from the progress callback
                entry["round_seconds"] = round(ends[i] - (ends[i - 1] if i else 0.0), 3)
            per_round.append(entry)
        return {"iterations": res.iterations, "stop_reason": res.stop_reason, "remaining": res.remaining,
                "changed_cells": res.changed_cells, "first_detection": dict(res.detections[0]),
                "rows": int(got["rows"]), "checksum": None if got.get("checksum") is None else int(got["checksum"]),
                "columns": list(res.repaired.columns), "rounds": per_round,
                "loop_seconds": round(loop_s, 3),
                "final_detection_seconds": round(loop_s - (rounds[-1] if rounds else 0.0), 3)}

    return {"floor": floor, "detect-count": detect_count, "detect-fixes": detect_fixes,
            **{n: (lambda n=n, r=r: repair_loop(r, n)) for n, r in ROUTES.items()}}


def _release(res: Any) -> None:
    """Unpersist what a repair result's detections keep cached (their shared scans)."""
    for det in (res.final, getattr(res, "first_detection", None)):
        if det is not None:
            det.unpersist()


def repair_checks(name: str, out: dict[str, Any], facts: dict[str, Any], columns: list[str],
                  counts: dict[str, int] | None) -> list[str]:
    """Problems in a contender's answer: row counts, agreeing violation counts, nothing left to repair."""
    problems: list[str] = []
    n = facts["rows"]
    if "rows" in out and out["rows"] != n:
        problems.append(f"{out['rows']} rows, expected {n}")
    found = out.get("violations") or out.get("first_detection")
    if found is not None:
        if not sum(found.values()):
            problems.append("no violation found in a table with injected errors")
        if counts is not None and found != counts:
            problems.append(f"violations {found} differ from detect-count's {counts}")
    if name == "detect-fixes" and out["fixes"] <= 0:
        problems.append("no candidate fix")
    if name in ROUTES:
        if out["remaining"]:
            problems.append(f"{out['remaining']} violations remain ({out['stop_reason']})")
        if out["columns"] != columns:
            problems.append(f"columns {out['columns']} differ from the input's {columns}")
    return problems


def repair_accuracy(spark: Any, res: Any, facts: dict[str, Any]) -> dict[str, Any]:
    """Precision, recall and F1 of the repair's cell changes against the clean table (untimed)."""
    from pyspark.sql import functions as F

    dirty = spark.read.parquet(facts["dirty"])
    clean = spark.read.parquet(facts["clean"])
    attrs = [c for c in dirty.columns if c != "tid"]

    def side(df: Any, p: str) -> Any:
        return df.select("tid", *[F.col(a).cast("string").alias(p + a) for a in attrs])

    j = side(res.repaired, "r_").join(side(dirty, "d_"), "tid").join(side(clean, "c_"), "tid")
    aggs = []
    for a in attrs:
        r, d, c = F.col("r_" + a), F.col("d_" + a), F.col("c_" + a)
        changed = ~r.eqNullSafe(d)
        aggs += [F.count_if(changed).alias(f"changed_{a}"), F.count_if(changed & r.eqNullSafe(c)).alias(f"correct_{a}"),
                 F.count_if(~d.eqNullSafe(c)).alias(f"erroneous_{a}")]
    row = j.agg(*aggs).first().asDict()
    changed = sum(row[f"changed_{a}"] for a in attrs)
    correct = sum(row[f"correct_{a}"] for a in attrs)
    erroneous = sum(row[f"erroneous_{a}"] for a in attrs)
    precision = correct / changed if changed else 1.0
    recall = correct / erroneous if erroneous else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    per_attr = {a: {k: int(row[f"{k}_{a}"]) for k in ("changed", "correct", "erroneous")}
                for a in attrs if row[f"changed_{a}"] or row[f"erroneous_{a}"]}
    return {"changed": changed, "correct": correct, "erroneous": erroneous, "precision": round(precision, 4),
            "recall": round(recall, 4), "f1": round(f1, 4), "per_attribute": per_attr}


def part_repair(spark: Any, args: argparse.Namespace, out: dict[str, Any]) -> dict[str, Any]:
    """Part 1: time the four contenders and check them; ``out`` is filled as they finish (and returned)."""
    data_dir = Path(args.data_dir)
    model = args.error_model or default_error_model()
    facts = taxa_data(args.rows, model, args.error_rate, args.seed, data_dir, spark, args.regenerate)
    warm_facts = (taxa_data(args.warmup_rows, model, args.error_rate, args.seed, data_dir, spark, args.regenerate)
                  if args.warmup and args.warmup_rows != args.rows else facts)
    keep: dict[str, Any] = {}
    contenders = make_repair_contenders(spark, facts, keep)
    warm_contenders = (make_repair_contenders(spark, warm_facts, {}) if warm_facts is not facts else contenders)
    columns = spark.read.parquet(facts["dirty"]).columns
    print(f"\npart 1: tax {facts['rows']:,} rows, errors {model} at rate {facts['error_rate']:g}, erroneous cells "
          f"{facts['erroneous_cells']}, rules {FDS}; "
          + (f"warm-up at {warm_facts['rows']:,} rows" if args.warmup else "no warm-up"), flush=True)
    results: dict[str, Any] = {}
    out.update(data=facts, rules=FDS, warmup_rows=warm_facts["rows"], results=results)
    counts: dict[str, int] | None = None
    for name in [c for c in REPAIR_CONTENDERS if not args.only or c in args.only]:
        for _ in range(args.warmup):
            spark.catalog.clearCache()
            start = time.perf_counter()
            warm_contenders[name]()
            print(f"  {name:<13} warm-up {time.perf_counter() - start:8.2f} s", flush=True)
        times: list[float] = []
        with MemoryProbe(spark, f"repair: {name}") as probe:
            for _ in range(args.repeat):
                spark.catalog.clearCache()
                start = time.perf_counter()
                answer = contenders[name]()
                times.append(time.perf_counter() - start)
                print(f"  {name:<13} timed   {times[-1]:8.2f} s", flush=True)
        if name == "detect-count":
            counts = answer["violations"]
        problems = repair_checks(name, answer, facts, columns, counts)
        for p in problems:
            print(f"  {name}: CHECK FAILED: {p}", flush=True)
        results[name] = {"best_seconds": round(min(times), 3), "seconds": [round(t, 3) for t in times],
                         "answer": answer, "problems": problems, "memory": probe.result, "load_average": _load()}
    accuracy = None
    accuracies = {}
    for n in ROUTES:
        if n in keep:
            accuracies[n] = repair_accuracy(spark, keep[n], facts)
            _release(keep.pop(n))
    accuracy = accuracies.get("repair-loop")
    if "repair-hypergraph" in accuracies:
        out["accuracy_hypergraph"] = accuracies["repair-hypergraph"]
    if all(n in results for n in ROUTES):  # both routes must give the same repaired table
        sums = {n: results[n]["answer"]["checksum"] for n in ROUTES}
        out["routes_same_table"] = len(set(sums.values())) == 1
        if not out["routes_same_table"]:
            print(f"  CHECK FAILED: the two FD routes repaired differently: checksums {sums}", flush=True)
    best = {n: r["best_seconds"] for n, r in results.items()}
    pairs = [("repair-loop", "detect-count"), ("repair-loop", "detect-fixes"), ("detect-count", "floor"),
             ("detect-fixes", "floor"), ("repair-loop", "floor"), ("repair-hypergraph", "detect-count"),
             ("repair-hypergraph", "repair-loop")]
    ratios = {f"{a} / {b}": best[a] / best[b] for a, b in pairs if a in best and b in best}
    goals = {}
    for b, what in (("detect-count", "count-only"), ("detect-fixes", "violations and fixes materialised")):
        if f"repair-loop / {b}" in ratios:
            ratio = ratios[f"repair-loop / {b}"]
            goals[f"repair loop at most {LOOP_GOAL:g}x detection alone ({what})"] = ratio <= LOOP_GOAL
    out.update(ratios={k: round(v, 2) for k, v in ratios.items()}, goals=goals, accuracy=accuracy)
    return out


# ----------------------------------------------------------------------------------- part 2: graphs
def phi2_edges(n: int, error_rate: float, magnitude: float, seed: int, data_dir: Path, spark: Any,
               regenerate: bool) -> dict[str, Any]:
    """The violation graph of φ2 on TaxB with ``n`` rows: edges ``(src=t1, dst=t2)`` as Parquet, once."""
    from pyspark.sql import functions as F

    from data.tax import generate_tax
    from dqkit.detect import detect

    out = data_dir / f"taxB_phi2_n{n}_e{_tag(error_rate)}_m{_tag(magnitude)}_s{seed}"
    meta = out / "facts.json"
    sha = _generator_sha()
    if meta.is_file() and not regenerate:
        facts = json.loads(meta.read_text())
        if facts.get("generator") == sha:
            return facts
    if out.exists():
        shutil.rmtree(out)
    start = time.perf_counter()
    dirty, _ = generate_tax(n, "B", error_rate=error_rate, magnitude=magnitude, seed=seed, spark=spark)
    dirty.write.parquet(str(out / "dirty"))
    res = detect(spark.read.parquet(str(out / "dirty")), PHI2, key="tid", spark=spark)
    res.violations.select(F.col("t1").cast("long").alias("src"), F.col("t2").cast("long").alias("dst")) \
        .write.parquet(str(out / "edges"))
    edges = spark.read.parquet(str(out / "edges"))
    nodes = edges.select(F.col("src").alias("v")).union(edges.select(F.col("dst").alias("v"))).distinct().count()
    facts = {"rows": n, "error_rate": error_rate, "magnitude": magnitude, "seed": seed, "generator": sha,
             "edges_path": str(out / "edges"), "edges": edges.count(), "nodes": nodes,
             "violations_detected": res.counts["phi2"], "built_seconds": round(time.perf_counter() - start, 2)}
    meta.write_text(json.dumps(facts, indent=2) + "\n")
    return facts


def dqkit_components(spark: Any, edges_path: str, out_path: str) -> dict[str, Any]:
    """dqkit's connected components of the edges, written to ``out_path``; nodes and components observed."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    from dqkit.primitives.components import run_connected_components
    from dqkit.runtime.sparkutil import observed

    run = run_connected_components(spark.read.parquet(edges_path), "src", "dst")
    seen = Observation("components")
    comp = run.components.observe(seen, F.count(F.lit(1)).alias("nodes"),
                                  F.count_if(F.col("node") == F.col("component")).alias("components"))
    comp.write.mode("overwrite").parquet(out_path)
    got = observed(seen)
    if got is None:
        written = spark.read.parquet(out_path)
        got = {"nodes": written.count(), "components": written.where(F.col("node") == F.col("component")).count()}
    return {"rounds": run.iterations, "nodes": int(got["nodes"]), "components": int(got["components"])}


def networkx_child(edges_npz: str, out_parquet: str) -> int:
    """The networkx peer in its own process: graph from the collected edges, components, each node's
    smallest node; prints its times and peak RSS as JSON and writes ``(node, component)`` to Parquet."""
    import networkx as nx
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = np.load(edges_npz)
    src, dst = data["src"], data["dst"]
    start = time.perf_counter()
    g = nx.Graph()
    g.add_edges_from(zip(src.tolist(), dst.tolist()))
    built = time.perf_counter()
    comps = list(nx.connected_components(g))
    found = time.perf_counter()
    nodes: list[int] = []
    labels: list[int] = []
    for c in comps:
        m = min(c)
        nodes.extend(c)
        labels.extend([m] * len(c))
    labelled = time.perf_counter()
    pq.write_table(pa.table({"node": pa.array(nodes, pa.int64()), "component": pa.array(labels, pa.int64())}),
                   out_parquet)
    print(json.dumps({"build_seconds": built - start, "components_seconds": found - built,
                      "label_seconds": labelled - found, "seconds": labelled - start,
                      "nodes": g.number_of_nodes(), "edges": g.number_of_edges(), "components": len(comps),
                      "peak_rss_mb": _ru_maxrss_mb()}))
    return 0


def run_networkx(edges_npz: str, out_parquet: str, timeout: float) -> dict[str, Any]:
    """One networkx run in a child process (its own session, killed with its group on timeout)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), CHILD, edges_npz, out_parquet]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"status": "timeout", "wall_seconds": round(time.perf_counter() - start, 2)}
    if proc.returncode != 0:
        return {"status": f"failed ({proc.returncode}): {stderr.strip()[-300:]}",
                "wall_seconds": round(time.perf_counter() - start, 2)}
    out = json.loads(stdout.strip().splitlines()[-1])
    out.update(status="ok", wall_seconds=round(time.perf_counter() - start, 2))
    return out


def compare_partitions(spark: Any, dqkit_path: str, nx_path: str) -> dict[str, Any]:
    """Both labellings name each node's component by its smallest node: equal maps, equal partitions."""
    from pyspark.sql import functions as F

    d = spark.read.parquet(dqkit_path).select("node", F.col("component").alias("d"))
    x = spark.read.parquet(nx_path).select("node", F.col("component").alias("x"))
    row = d.join(x, "node", "full").agg(
        F.count(F.lit(1)).alias("nodes"),
        F.count_if(~F.col("d").eqNullSafe(F.col("x"))).alias("mismatched"),
        F.count_if(F.col("node") == F.col("d")).alias("dqkit_components"),
        F.count_if(F.col("node") == F.col("x")).alias("networkx_components")).first().asDict()
    row = {k: int(v) for k, v in row.items()}
    row["same_partition"] = row["mismatched"] == 0 and row["dqkit_components"] == row["networkx_components"]
    return row


def part_components(spark: Any, args: argparse.Namespace, tmp: Path, out: dict[str, Any]) -> dict[str, Any]:
    """Part 2: dqkit at every size first, then the networkx peer (collect, child process), then checks;
    ``out`` is filled as sizes finish (and returned)."""
    import numpy as np

    data_dir = Path(args.data_dir)
    print(f"\npart 2: connected components of the phi2 violation graph on TaxB (error rate "
          f"{args.graph_error_rate:g}, magnitude {args.magnitude:g}); networkx timeout {args.timeout:g} s", flush=True)
    sizes: list[dict[str, Any]] = []
    out.update(error_rate=args.graph_error_rate, magnitude=args.magnitude, networkx_timeout=args.timeout,
               dqkit_timeout=args.dqkit_timeout, warmup_rows=args.warmup_graph_rows, sizes=sizes)
    for n in args.graph_rows:
        start = time.perf_counter()
        facts = phi2_edges(n, args.graph_error_rate, args.magnitude, args.seed, data_dir, spark, args.regenerate)
        print(f"  n={n:,}: {facts['edges']:,} edges, {facts['nodes']:,} nodes "
              f"(graph ready in {time.perf_counter() - start:.1f} s; built in {facts['built_seconds']} s)", flush=True)
        sizes.append({"rows": n, "edges": facts["edges"], "nodes": facts["nodes"], "graph": facts})
    if args.warmup:
        warm = phi2_edges(args.warmup_graph_rows, args.graph_error_rate, args.magnitude, args.seed, data_dir,
                          spark, args.regenerate)
        for _ in range(args.warmup):
            spark.catalog.clearCache()
            start = time.perf_counter()
            dqkit_components(spark, warm["edges_path"], str(tmp / "cc_warm"))
            print(f"  dqkit  n={warm['rows']:,} warm-up {time.perf_counter() - start:8.2f} s "
                  f"({warm['edges']:,} edges)", flush=True)

    dqkit_stopped = False
    for s in sizes:
        n, path = s["rows"], s["graph"]["edges_path"]
        out_path = str(tmp / f"cc_dqkit_{n}")
        if dqkit_stopped:
            s["dqkit"] = {"status": "skipped: a smaller size did not finish"}
            continue
        times: list[float] = []
        status, answer = "ok", None
        with MemoryProbe(spark, f"components: dqkit n={n}") as probe:
            for _ in range(args.repeat):
                spark.catalog.clearCache()
                value, secs, err = run_with_timeout(spark, lambda: dqkit_components(spark, path, out_path),
                                                    args.dqkit_timeout)
                print(f"  dqkit  n={n:,} timed {secs:8.2f} s" + (f"  {err}" if err else ""), flush=True)
                if err is not None:
                    status = err
                    break
                times.append(secs)
                answer = value
        s["dqkit"] = {"status": status, "best_seconds": round(min(times), 3) if times else None,
                      "seconds": [round(t, 3) for t in times], "answer": answer, "memory": probe.result,
                      "output": out_path}
        dqkit_stopped = status != "ok"

    nx_stopped = False
    for s in sizes:
        n, path = s["rows"], s["graph"]["edges_path"]
        if nx_stopped:
            s["networkx"] = {"status": "skipped: a smaller size did not finish in time"}
            continue
        collect_times: list[float] = []
        npz = str(tmp / f"edges_{n}.npz")
        with MemoryProbe(spark, f"components: networkx collect n={n}") as probe:
            for _ in range(args.repeat):
                start = time.perf_counter()
                pdf = spark.read.parquet(path).toPandas()
                collect_times.append(time.perf_counter() - start)
            np.savez(npz, src=pdf["src"].to_numpy(np.int64), dst=pdf["dst"].to_numpy(np.int64))
            del pdf
        runs: list[dict[str, Any]] = []
        nx_out = str(tmp / f"cc_networkx_{n}.parquet")
        for _ in range(args.repeat):
            r = run_networkx(npz, nx_out, args.timeout)
            print(f"  networkx n={n:,} collect {collect_times[-1]:7.2f} s, "
                  + (f"graph+components {r['seconds']:8.2f} s (child peak RSS {r['peak_rss_mb']} MB)"
                     if r["status"] == "ok" else f"{r['status']} after {r['wall_seconds']} s"), flush=True)
            runs.append(r)
            if r["status"] != "ok":
                break
        os.remove(npz)
        ok = [r for r in runs if r["status"] == "ok"]
        best = min(ok, key=lambda r: r["seconds"]) if ok else None
        s["networkx"] = {"status": "ok" if ok and len(ok) == len(runs) else runs[-1]["status"],
                         "best_seconds": round(best["seconds"], 3) if best else None,
                         "collect_best_seconds": round(min(collect_times), 3),
                         "runs": runs, "collect_memory": probe.result}
        MEMORY.append({"stage": f"components: networkx child n={n}",
                       "python_peak_rss_mb": max((r["peak_rss_mb"] for r in ok), default=None),
                       "python_peak_source": "child ru_maxrss", "ru_maxrss_mb": None, "process_peak_rss_mb": None,
                       "jvm_heap_peak_mb": None, "jvm_heap_after_gc_mb": None, "jvm_heap_max_mb": None})
        if not ok:
            nx_stopped = True
        if ok and s["dqkit"]["status"] == "ok":
            s["check"] = compare_partitions(spark, s["dqkit"]["output"], nx_out)
            if not s["check"]["same_partition"]:
                print(f"  n={n:,}: CHECK FAILED: partitions differ {s['check']}", flush=True)

    for s in sizes:
        d, x = s["dqkit"].get("best_seconds"), s["networkx"].get("best_seconds")
        c = s["networkx"].get("collect_best_seconds")
        s["ratio_networkx_vs_dqkit"] = round(x / d, 2) if d and x else None
        s["ratio_collect_networkx_vs_dqkit"] = round((x + c) / d, 2) if d and x and c is not None else None
    done_nx = [s["rows"] for s in sizes if s["networkx"].get("status") == "ok"]
    done_dq = [s["rows"] for s in sizes if s["dqkit"].get("status") == "ok"]
    out.update(largest_networkx_within_timeout=max(done_nx) if done_nx else None,
               largest_dqkit=max(done_dq) if done_dq else None)
    return out


# ----------------------------------------------------------------------------------- report
def print_repair(rep: dict[str, Any], repeat: int) -> None:
    """Part 1's summary: times, the loop's rounds, ratios, goals and accuracy."""
    d = rep["data"]
    print(f"\npart 1: repair loop on tax {d['rows']:,} rows, errors {d['variant']} at rate {d['error_rate']:g}, FDs "
          f"{', '.join(FDS.values())} (best of {repeat})")
    print(f"{'contender':<18} {'best s':>9}   {'load after':<20} runs")
    for n, r in rep["results"].items():
        print(f"{n:<18} {r['best_seconds']:9.2f}   {str(r.get('load_average')):<20} {r['seconds']}"
              + ("   CHECK FAILED" if r["problems"] else ""))
    for name in ROUTES:
        loop = rep["results"].get(name, {}).get("answer")
        if not loop:
            continue
        print(f"{name} (fd_route={ROUTES[name]}): {loop['iterations']} iteration(s), "
              f"{loop['changed_cells']:,} cells changed, "
              f"{loop['remaining']} violations remaining ({loop['stop_reason']}); first detection "
              f"{loop['first_detection']}")
        for r in loop["rounds"]:
            print(f"  round {r['iteration']}: violations {r['violations']:,}, changed {r['changed']:,}, classes "
                  f"{r.get('classes')}, largest class {r.get('largest_class')}, repair step "
                  f"{r['repair_step_seconds']} s, round {r.get('round_seconds', '-')} s")
        print(f"  final detection (0 violations): {loop['final_detection_seconds']} s; repaired table "
              f"{loop['rows']:,} rows written to noop")
    if "routes_same_table" in rep:
        print(f"the two FD routes repaired to the same table (checksum): {rep['routes_same_table']}")
    print("ratios (>1 means the left side is slower):")
    for k, v in rep["ratios"].items():
        print(f"  {k:<34} {v:6.2f}")
    for g, ok in rep["goals"].items():
        print(f"goal: {g}: {'MET' if ok else 'NOT MET'}")
    for label, key in (("repair-loop", "accuracy"), ("repair-hypergraph", "accuracy_hypergraph")):
        acc = rep.get(key)
        if acc:
            print(f"accuracy of {label} against the clean table: precision {acc['precision']}, recall "
                  f"{acc['recall']}, F1 {acc['f1']} ({acc['correct']:,} correct of {acc['changed']:,} changes, "
                  f"{acc['erroneous']:,} erroneous cells)")


def print_components(comp: dict[str, Any]) -> None:
    """Part 2's summary: one line per size, the largest sizes each side handled."""
    print(f"\npart 2: connected components of the phi2 violation graph (TaxB, error rate {comp['error_rate']:g}, "
          f"magnitude {comp['magnitude']:g}); networkx on the driver, timeout {comp['networkx_timeout']:g} s")
    print(f"{'rows':>9} {'edges':>11} {'nodes':>9} {'rounds':>6} {'dqkit s':>9} {'collect s':>9} "
          f"{'networkx s':>10} {'nx/dq':>6} {'(c+nx)/dq':>9}  same partition")
    for s in comp["sizes"]:
        dq, nx_ = s["dqkit"], s["networkx"]
        rounds = (dq.get("answer") or {}).get("rounds", "-")
        check = s.get("check")
        same = "-" if check is None else ("yes" if check["same_partition"] else f"NO {check}")
        print(f"{s['rows']:>9,} {s['edges']:>11,} {s['nodes']:>9,} {rounds!s:>6} "
              f"{_cell(dq.get('best_seconds'), 9, dq['status'])} "
              f"{_cell(nx_.get('collect_best_seconds'), 9, '-')} "
              f"{_cell(nx_.get('best_seconds'), 10, nx_['status'])} "
              f"{_cell(s['ratio_networkx_vs_dqkit'], 6, '-')} "
              f"{_cell(s['ratio_collect_networkx_vs_dqkit'], 9, '-')}  {same}")
    print(f"largest size networkx finished within {comp['networkx_timeout']:g} s: "
          f"{comp['largest_networkx_within_timeout']}; largest size dqkit handled: {comp['largest_dqkit']}")


def print_memory(memory: list[dict[str, Any]]) -> None:
    """Part 3: peak driver memory of every stage so far."""
    print("\npeak driver memory per stage (MB): Python = this stage's peak RSS of the driver process "
          "(networkx child: its own peak), process = the driver's peak so far, JVM = driver heap in use "
          "(sampled every 0.5 s; local mode: executors included), after GC = what it still held at the stage end")
    print(f"{'stage':<44} {'python':>8} {'process':>8} {'jvm heap':>9} {'after GC':>9} {'jvm max':>8}")
    for m in memory:
        print(f"{m['stage']:<44} {_mb(m['python_peak_rss_mb']):>8} {_mb(m['process_peak_rss_mb']):>8} "
              f"{_mb(m['jvm_heap_peak_mb']):>9} {_mb(m['jvm_heap_after_gc_mb']):>9} {_mb(m['jvm_heap_max_mb']):>8}")


def _cell(value: Any, width: int, status: str) -> str:
    """A seconds or ratio cell: the number, or a short status (timeout, skipped) where there is none."""
    if isinstance(value, float):
        return f"{value:>{width}.2f}"
    return f"{('-' if status == 'ok' else status)[:width]:>{width}}"


def _mb(value: Any) -> str:
    return "-" if value is None else f"{value:.0f}"


def run(args: argparse.Namespace) -> dict[str, Any]:
    from dqkit.runtime.session import get_spark

    spark = get_spark(master=args.master, config={"spark.driver.memory": args.driver_memory})
    cores = os.cpu_count()
    print(f"machine: {platform.machine()} {cores} cores, {platform.system()} {platform.release()}; "
          f"Python {platform.python_version()}; Spark {spark.version}; master {spark.conf.get('spark.master')}; "
          f"driver memory {spark.conf.get('spark.driver.memory', 'default')}; "
          f"shuffle partitions {spark.conf.get('spark.sql.shuffle.partitions')}; "
          f"load average at start {_load()}", flush=True)
    command = " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv])
    report: dict[str, Any] = {
        "command": command, "complete": False, "rows": args.rows, "error_rate": args.error_rate,
        "graph_rows": args.graph_rows, "seed": args.seed, "warmup": args.warmup, "repeat": args.repeat,
        "machine": {"cores": cores, "platform": platform.platform(), "python": platform.python_version(),
                    "load_average_at_start": _load()},
        "spark": {"version": spark.version, "master": spark.conf.get("spark.master"),
                  "driver_memory": spark.conf.get("spark.driver.memory", None),
                  "shuffle_partitions": spark.conf.get("spark.sql.shuffle.partitions")},
        "memory": MEMORY,
    }
    out_path = Path(args.results)
    out_path.parent.mkdir(parents=True, exist_ok=True)

    def write() -> None:
        report["machine"]["load_average_at_end"] = _load()
        out_path.write_text(json.dumps(report, indent=2, default=str) + "\n")

    # a stopped run (SIGTERM) still leaves what it finished in the JSON
    stopped = threading.Event()

    def on_term(*_: Any) -> None:
        stopped.set()
        raise SystemExit(143)

    signal.signal(signal.SIGTERM, on_term)
    tmp = Path(tempfile.mkdtemp(prefix="dqkit-bench-repair-"))
    try:
        if "repair" in args.parts:
            part_repair(spark, args, report.setdefault("repair", {}))
            print_repair(report["repair"], args.repeat)
            write()
        if "components" in args.parts:
            part_components(spark, args, tmp, report.setdefault("components", {}))
            print_components(report["components"])
            write()
        report["complete"] = True
    except BaseException:
        if not stopped.is_set():
            raise
        print(f"\nstopped (SIGTERM): what finished is in {out_path}", flush=True)
        raise SystemExit(143) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        write()
    print()
    print(f"command: {command}")
    print(f"load average at end: {report['machine']['load_average_at_end']}")
    print_memory(MEMORY)
    print(f"results: {out_path}")
    return report


def _sizes(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == CHILD:
        return networkx_child(argv[1], argv[2])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="tax table rows for the repair loop (default 1M)")
    parser.add_argument("--error-model", type=str.upper, choices=("A", "BART"), default=None,
                        help="A: TaxA, random text in city and state of error-rate of the rows; BART: each city "
                             "and state cell corrupted with probability error-rate by a typo or another "
                             "zipcode's value (default BART where data/tax.py has it)")
    parser.add_argument("--error-rate", type=float, default=0.05, help="rate of the tax errors (default 0.05)")
    parser.add_argument("--graph-rows", type=_sizes, default=[10_000, 30_000, 100_000],
                        help="TaxB sizes for connected components, comma-separated (default 10000,30000,100000)")
    parser.add_argument("--graph-error-rate", type=float, default=0.1, help="TaxB rows with a rate error (default 0.1)")
    parser.add_argument("--magnitude", type=float, default=0.01, help="TaxB rate error magnitude (default 0.01)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--repeat", type=int, default=1, help="timed runs per contender; the best is kept")
    parser.add_argument("--warmup", type=int, default=1, help="untimed runs per contender before timing")
    parser.add_argument("--warmup-rows", type=int, default=5_000, help="tax table rows of the warm-up runs (default 5000)")
    parser.add_argument("--warmup-graph-rows", type=int, default=2_000, help="TaxB rows of the warm-up graph")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per networkx run (default 600)")
    parser.add_argument("--dqkit-timeout", type=float, default=3600.0,
                        help="seconds per dqkit components run before it counts as not handled (default 3600)")
    parser.add_argument("--parts", nargs="+", choices=("repair", "components"), default=["repair", "components"],
                        help="which parts to run (default both; memory is reported for either)")
    parser.add_argument("--only", nargs="+", choices=REPAIR_CONTENDERS,
                        help="part 1: run only these contenders (ratios need both sides)")
    parser.add_argument("--regenerate", action="store_true", help="generate the data again even if present")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--driver-memory", default="8g")
    parser.add_argument("--data-dir", default=str(HERE / "data"))
    parser.add_argument("--results", default=str(HERE / "results" / "repair.json"))
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.warmup < 0:
        parser.error("--repeat must be >= 1 and --warmup >= 0")
    run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
