"""``dedup NEW --since RUN`` against a full re-run, after adding 1 % of records (issue #26).

Night 1: the seeded FEBRL-like people of ``data/people.py`` (``--entities``, about two records per
entity), deduplicated in full and saved (``dedup --out``: the run ``--since`` reads). Night 2: night 1
plus ``--added`` (default 1 %) records, half of them duplicates (with typos) of existing people, half
new people. Timed in one SparkSession, after a warm-up on a small table:

* ``full re-run``: ``dedup(NIGHT2)`` (blocking, comparisons, EM, clusters): what a user does today;
* ``full, same model``: ``dedup(NIGHT2, model=night 1's)`` (no EM; what the property test compares to);
* ``--since``: ``dedup_since(NIGHT2, RUN)`` (the cost rule off: ``max_change=1``).

Each returns with its clusters computed and counted. Afterwards the ``--since`` clusters are checked
against the same-model full run (equal up to id renaming). Prints one line per measurement with
the ratio and the load average; the machine may be shared.

    PYTHONPATH=. .venv/bin/python benchmarks/dedup_since.py --entities 100000 --keep KEEP_FOLDER --driver-memory 6g
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from data.people import _duplicate, _original, generate_people  # noqa: E402

CONFIG = """\
blocking: [[surname, given_name], [postcode], [date_of_birth], [soc_sec_id]]
comparisons:
  - {column: given_name, method: jaro_winkler}
  - {column: surname, method: jaro_winkler}
  - {column: date_of_birth, method: levenshtein}
  - {column: soc_sec_id, method: levenshtein}
  - {column: street_number, method: exact}
  - {column: postcode, method: exact}
threshold: 0.9
"""


def nights(entities: int, added: float, folder: Path) -> tuple[str, str, int, int]:
    """Night 1 and night 2 as Parquet files; returns their paths and record counts."""
    night1, _ = generate_people(entities, seed=1)
    rnd = random.Random(7)
    n_add = max(1, round(len(night1) * added))
    rows = []
    originals = night1[night1["rec_id"].str.endswith("-org")].to_dict("records")
    for j in range(n_add):
        if j % 2 == 0:
            base = {k: v for k, v in rnd.choice(originals).items() if k != "rec_id"}
            rows.append({"rec_id": f"new-{j}", **_duplicate(rnd, base, 0.2, 0.05)})
        else:
            rows.append({"rec_id": f"new-{j}", **_original(rnd)})
    night2 = pd.concat([night1, pd.DataFrame(rows, columns=night1.columns)], ignore_index=True)
    p1, p2 = folder / "night1.parquet", folder / "night2.parquet"
    night1.to_parquet(p1, index=False)
    night2.to_parquet(p2, index=False)
    return str(p1), str(p2), len(night1), len(night2)


def timed_call(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def _saved_model(run: Path):
    import json

    from dqkit.dedup._since_io import model_from

    return model_from(json.loads((run / "dedup_manifest.json").read_text()))


def partition(rows) -> set[frozenset]:
    groups: dict = {}
    for k, c in rows:
        groups.setdefault(c, set()).add(k)
    return {frozenset(g) for g in groups.values()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--entities", type=int, default=5000)
    ap.add_argument("--added", type=float, default=0.01)
    ap.add_argument("--keep", help="keep the nights and night 1's run in this folder and reuse them")
    ap.add_argument("--since-only", action="store_true", help="time --since alone (profiling)")
    ap.add_argument("--driver-memory", default="6g", help="the Spark driver's heap (the machine may be shared)")
    args = ap.parse_args()
    start_load = os.getloadavg()

    from dqkit.dedup import dedup, load_config, parse_config
    from dqkit.dedup.since import dedup_since
    from dqkit.runtime.session import get_spark

    spark = get_spark(config={"spark.driver.memory": args.driver_memory})
    cfg = parse_config(CONFIG)
    _ = load_config
    with tempfile.TemporaryDirectory(prefix="dqkit-dedup-since-") as tmp:
        folder = Path(args.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        p1, p2, n1, n2 = nights(args.entities, args.added, folder)
        warm, _ = generate_people(200, seed=3)
        dedup(spark.createDataFrame(warm), "rec_id", cfg, spark=spark)  # warm-up (JVM, UDF workers)
        t0 = time.perf_counter()
        if not (folder / "run1").is_dir():
            dedup(p1, "rec_id", cfg, spark=spark).save(folder / "run1")
        setup = time.perf_counter() - t0
        if args.since_only:
            since_s, inc = timed_call(lambda: dedup_since(p2, folder / "run1", "rec_id", cfg, max_change=1.0,
                                                          spark=spark))
            print(f"--since {since_s:.1f} s, pairs compared {inc.pairs_compared:,}, stages {dict(inc.stages)}, "
                  f"load average {start_load[0]:.1f} -> {os.getloadavg()[0]:.1f}")
            return
        first_model = _saved_model(folder / "run1")

        def timed(fn):
            t = time.perf_counter()
            out = fn()
            return time.perf_counter() - t, out

        full_s, full = timed(lambda: dedup(p2, "rec_id", cfg, spark=spark))
        same_s, same = timed(lambda: dedup(p2, "rec_id", cfg, model=first_model, spark=spark))
        since_s, inc = timed(lambda: dedup_since(p2, folder / "run1", "rec_id", cfg, max_change=1.0, spark=spark))
        equal = partition((r["rec_id"], r["cluster_id"]) for r in inc.clusters.collect()) == partition(
            (r["rec_id"], r["cluster_id"]) for r in same.clusters.collect())
        load = os.getloadavg()
        print(f"entities={args.entities} records night1={n1:,} night2={n2:,} (+{n2 - n1:,}, "
              f"{(n2 - n1) / n1:.1%}); night 1 full + save {setup:.1f} s")
        print(f"full re-run        {full_s:8.1f} s  candidate pairs {full.n_pairs:,}  clusters {full.n_clusters:,}")
        print(f"full, same model   {same_s:8.1f} s  candidate pairs {same.n_pairs:,}  clusters {same.n_clusters:,}")
        print(f"--since            {since_s:8.1f} s  pairs compared {inc.pairs_compared:,}  clusters {inc.n_clusters:,}"
              f"  counts {dict((k, v) for k, v in inc.counts.items() if v)}")
        print(f"--since stages (s) {dict(inc.stages)}")
        print(f"ratio full/--since {full_s / since_s:.1f}x, same-model/--since {same_s / since_s:.1f}x; "
              f"--since clusters equal the same-model run's: {equal}; load average at the start "
              f"{start_load[0]:.1f}, at the end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")


if __name__ == "__main__":
    main()
