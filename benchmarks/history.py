"""Quality over time: the self-calibrating gates against Deequ's OnlineNormal on injected incidents,
and what the profile, an append and a long history cost.

Gates (``--gates``, pure Python/numpy, no Spark): per seed, 28 clean nightly versions of a generated
table (numbers, categories, dates, strings; daily noise, a slow trend, a weekly pattern) are profiled,
then night 29 is profiled clean and with each of six incidents, one at a time. Each night's profile
metrics are those of ``dqkit profile`` (same names), computed with pandas on the generated frame so
that 20 seeds x 35 nights run in minutes; ``--check-spark`` compares their names with a real
``dqkit profile`` of one night. Recall: an incident night raising at least one alarm. False alarms:
alarms over clean metric-nights (nights 15-29, every metric judged against its own earlier nights).
The baseline is Deequ's OnlineNormal (running mean and stddev, ``mean +- 3 stddev``, the first 10 % of
the series ignored, anomalies left out of the running moments), written below.

Costs (``--costs``, Spark): ``dqkit profile`` against one scan of the same Parquet table
(``count`` of every column in one job) at ``--rows``; one history append of a profile's metrics; reading
a history of 1,000 runs (read and grouped into series).

    PYTHONPATH=. .venv/bin/python benchmarks/history.py --gates --seeds 20
    PYTHONPATH=. .venv/bin/python benchmarks/history.py --costs --rows 1000000
"""
from __future__ import annotations

import argparse
import math
import os
import shutil
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pandas as pd

START = date(2026, 1, 5)
CATS = np.array(["alpha", "beta", "gamma", "delta", "epsilon"])
SHARES = np.array([0.40, 0.25, 0.20, 0.10, 0.05])
INCIDENTS = ("null_jump", "unit_change", "rows_halved", "relabel", "new_category", "length_shift")
PNAMES = ("p05", "p25", "p50", "p75", "p95")
PROBS = (0.05, 0.25, 0.5, 0.75, 0.95)


# ----------------------------------------------------------------------------- the generated nights
def night(seed: int, i: int, base_rows: int, incident: str | None = None) -> pd.DataFrame:
    """Night ``i`` of seed ``seed``: daily noise, a slow trend (+0.3 %/night rows, +0.2 %/night amounts),
    a weekly pattern (weekends 15 % more rows, 5 % larger amounts, more 'alpha')."""
    rng = np.random.default_rng(seed * 1000 + i)
    day = START + timedelta(i)
    weekend = day.weekday() >= 5
    n = int(base_rows * (1 + 0.003 * i) * (1.15 if weekend else 1.0) * (1 + rng.normal(0, 0.01)))
    if incident == "rows_halved":
        n //= 2
    amount = rng.lognormal(3 + 0.002 * i + (0.05 if weekend else 0), 0.5, n)
    amount[rng.random(n) < 0.02] = np.nan
    shares = SHARES + (np.array([0.03, -0.03, 0, 0, 0]) if weekend else 0)
    cat = CATS[rng.choice(5, n, p=shares / shares.sum())].astype(object)
    days = np.array([np.datetime64(day) - np.timedelta64(int(k), "D") for k in rng.integers(0, 30, n)])
    lengths = np.clip(rng.normal(8, 2, n).round().astype(int), 1, 30)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    pool = rng.choice(letters, (n, 30))
    name = np.array(["".join(r[:k]) for r, k in zip(pool, lengths)], dtype=object)
    code = rng.integers(1000, 9999, n).astype(str).astype(object)
    code[rng.random(n) < 0.01] = "n/a"
    if incident == "null_jump":
        amount[rng.random(n) < 0.05] = np.nan
    elif incident == "unit_change":
        hit = rng.random(n) < 0.10
        amount[hit] *= 100
    elif incident == "relabel":
        beta = np.flatnonzero(cat == "beta")
        cat[rng.choice(beta, len(beta) // 10, replace=False)] = "gamma"
    elif incident == "new_category":
        cat[rng.random(n) < 0.02] = "zeta"
    elif incident == "length_shift":
        hit = rng.random(n) < 0.5
        name[hit] = [s + "xyz" for s in name[hit]]
    return pd.DataFrame({"amount": amount, "category": cat, "day": pd.to_datetime(days).date, "name": name,
                         "code": code})


def pandas_profile(df: pd.DataFrame, top_k: int = 10) -> dict[str, float]:
    """The metrics ``dqkit profile`` names, computed with pandas (exact distinct counts and quantiles)."""
    out = {"rows": float(len(df)), "duplicate_rows": float(len(df) - len(df.drop_duplicates()))}
    for c in df.columns:
        s = df[c]
        nonnull = s.dropna()
        p = f"{c}."
        out[p + "nulls"] = float(len(s) - len(nonnull))
        out[p + "null_share"] = out[p + "nulls"] / len(s) if len(s) else 0.0
        out[p + "distinct"] = float(nonnull.nunique())
        if c == "day":
            x = pd.Series([d.toordinal() - 719163 for d in nonnull], dtype=float)  # days since 1970-01-01
        elif s.dtype.kind == "f":
            x = nonnull.astype(float)
        else:
            x = None
        if x is not None:
            out.update({p + "min": x.min(), p + "max": x.max(), p + "mean": x.mean(), p + "stddev": x.std()})
            out.update({p + k: float(v) for k, v in zip(PNAMES, np.quantile(x, PROBS, method="inverted_cdf"))})
            out[p + "type_share"] = 1.0
        else:
            ln = nonnull.str.len().astype(float)
            out.update({p + "len_min": ln.min(), p + "len_mean": ln.mean(), p + "len_max": ln.max()})
            out.update({p + "len_" + k: float(v) for k, v in zip(PNAMES, np.quantile(ln, PROBS, method="inverted_cdf"))})
            num = pd.to_numeric(nonnull, errors="coerce").notna().mean()
            out[p + "type_share"] = float(num) if num * 2 > 1 else 1.0
        if out[p + "distinct"] <= 1000:
            counts = nonnull.astype(str).value_counts()
            top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top_k]
            out.update({f"{c}.top[{v}]": n / len(nonnull) for v, n in top})
    return {k: float(v) for k, v in out.items() if v is not None and math.isfinite(float(v))}


# ----------------------------------------------------------------------------- Deequ's OnlineNormal
def online_normal(values: list[float], new: float, factor: float = 3.0, ignore_start: float = 0.1) -> bool:
    """Deequ's OnlineNormalStrategy (lower/upper deviation factor 3, ignoreStartPercentage 0.1,
    ignoreAnomalies true): Welford's running mean and variance over the series, a point outside
    mean +- factor * stddev after the ignored start is an anomaly and is not added to the moments."""
    mean, m2, n = 0.0, 0.0, 0
    start = int(len(values) * ignore_start)
    for i, v in enumerate(values):
        if n > 1 and i >= start:
            sd = math.sqrt(m2 / (n - 1))
            if abs(v - mean) > factor * sd:
                continue
        n += 1
        d = v - mean
        mean += d / n
        m2 += d * (v - mean)
    sd = math.sqrt(m2 / (n - 1)) if n > 1 else 0.0
    return abs(new - mean) > factor * sd


# ----------------------------------------------------------------------------- the gate benchmark
def run_gates(seeds: int, rows: int, fpr: float, clean_from: int) -> None:
    from dqkit.history.series import Series, gate

    t0 = time.monotonic()
    detected = {"dqkit": {k: 0 for k in INCIDENTS}, "online_normal": {k: 0 for k in INCIDENTS}}
    alarms = {"dqkit": 0, "online_normal": 0}
    judged = 0
    per_metric_alarms: dict[str, int] = {}
    for seed in range(seeds):
        profiles = [pandas_profile(night(seed, i, rows)) for i in range(29)]  # nights 0..28; 28 = night 29
        days = [START + timedelta(i) for i in range(29)]

        def judged_by_both(upto: int, metrics: dict[str, float]) -> tuple[set[str], set[str], int]:
            s = Series("profile", "t", "d", [(str(i), days[i], None, profiles[i]) for i in range(upto)])
            js = gate(s, metrics, days[upto], fpr)
            ours = {j.metric for j in js if j.anomalous}
            theirs = set()
            for j in js:
                if j.metric.endswith(("drift_psi", "drift_topk")):
                    continue
                past = [profiles[i][j.metric] for i in range(upto) if j.metric in profiles[i]]
                if online_normal(past, metrics[j.metric]):
                    theirs.add(j.metric)
            return ours, theirs, len(js)

        for upto in range(clean_from - 1, 29):  # clean metric-nights
            ours, theirs, n = judged_by_both(upto, profiles[upto])
            alarms["dqkit"] += len(ours)
            alarms["online_normal"] += len(theirs)
            judged += n
            for m in ours:
                per_metric_alarms[m] = per_metric_alarms.get(m, 0) + 1
        for inc in INCIDENTS:
            bad = pandas_profile(night(seed, 28, rows, inc))
            ours, theirs, _ = judged_by_both(28, bad)
            detected["dqkit"][inc] += bool(ours)
            detected["online_normal"][inc] += bool(theirs)
        print(f"seed {seed}: done at {time.monotonic() - t0:.0f} s, load {os.getloadavg()[0]:.1f}", flush=True)
        summary(seed + 1, rows, fpr, detected, alarms, judged, per_metric_alarms, t0)


def summary(seeds, rows, fpr, detected, alarms, judged, per_metric_alarms, t0) -> None:
    """The table so far (printed after every seed, so a cut run still reports what it measured)."""
    print(f"\n{seeds} seeds, {rows} rows a night, fpr {fpr}; clean metric-nights judged: {judged}")
    print(f"{'incident':<14}{'dqkit':>8}{'OnlineNormal':>14}")
    for inc in INCIDENTS:
        print(f"{inc:<14}{detected['dqkit'][inc] / seeds:>8.0%}{detected['online_normal'][inc] / seeds:>14.0%}")
    for who in ("dqkit", "online_normal"):
        rec = sum(detected[who].values()) / (seeds * len(INCIDENTS))
        print(f"{who}: recall {rec:.1%}, false alarms {alarms[who]} / {judged} = {alarms[who] / judged:.2%}")
    worst = sorted(per_metric_alarms.items(), key=lambda kv: -kv[1])[:8]
    print("dqkit's false alarms by metric:", worst)
    print(f"wall {time.monotonic() - t0:.0f} s, load {os.getloadavg()}", flush=True)


# ----------------------------------------------------------------------------- the costs
def run_costs(rows: int, runs: int) -> None:
    from pyspark.sql import functions as F

    from dqkit.history.series import series_of
    from dqkit.history.store import History, new_run
    from dqkit.profile import profile
    from dqkit.runtime.session import get_spark

    spark = get_spark()
    folder = Path(tempfile.mkdtemp(prefix="dqkit-history-bench-"))
    try:
        table = folder / "t.parquet"
        (spark.range(rows).select(
            (F.rand(1) * 1000).alias("amount"),
            F.element_at(F.array(*[F.lit(c) for c in CATS]), (F.col("id") % 5 + 1).cast("int")).alias("category"),
            F.date_add(F.lit("2026-01-01").cast("date"), (F.col("id") % 365).cast("int")).alias("day"),
            F.sha2(F.col("id").cast("string"), 256).substr(1, 12).alias("name"),
            (F.col("id") % 9000 + 1000).cast("string").alias("code"))
         .write.parquet(str(table)))
        df = spark.read.parquet(str(table))
        scan = lambda: df.agg(*[F.count(c) for c in df.columns]).collect()  # noqa: E731
        prof = lambda: profile(str(table), spark=spark)  # noqa: E731
        scan(), prof()  # warm-up
        ts, tp = [], []
        for _ in range(3):
            t = time.monotonic(); scan(); ts.append(time.monotonic() - t)
            t = time.monotonic(); result = prof(); tp.append(time.monotonic() - t)
        s, p = float(np.median(ts)), float(np.median(tp))
        print(f"{rows:,} rows: one scan {s:.2f} s, profile {p:.2f} s (median of 3): profile / scan {p / s:.2f}x; "
              f"load {os.getloadavg()[0]:.1f}")
        metrics = result.metrics()
        h = History(folder / "hist")
        t = time.monotonic()
        for i in range(runs):
            h.append(new_run("profile", "t", "d", metrics, START + timedelta(i)))
        per = (time.monotonic() - t) / runs
        t = time.monotonic()
        series = series_of(h.read())
        read = time.monotonic() - t
        print(f"append of {len(metrics)} metrics: {per * 1000:.1f} ms each; reading {runs} runs "
              f"({runs * len(metrics):,} values, {len(series)} series): {read:.2f} s; load {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gates", action="store_true")
    ap.add_argument("--costs", action="store_true")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--night-rows", type=int, default=5000)
    ap.add_argument("--fpr", type=float, default=0.01)
    ap.add_argument("--clean-from", type=int, default=15, help="first clean night judged (1-based)")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=1000)
    a = ap.parse_args()
    print(f"load at start {os.getloadavg()}")
    if a.gates:
        run_gates(a.seeds, a.night_rows, a.fpr, a.clean_from)
    if a.costs:
        run_costs(a.rows, a.runs)


if __name__ == "__main__":
    main()
