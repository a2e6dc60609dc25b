"""dqkit discover beside Desbordante (HyFD, Tane with g3, FastADC), in one run.

    PYTHONPATH=. .venv/bin/python benchmarks/discover.py --rows 100000            # timing + set equality
    PYTHONPATH=. .venv/bin/python benchmarks/discover.py --rows 100000 1000000 --repair

Desbordante is a benchmark peer only (``pip install desbordante``, the ``bench`` extra), never a
dependency. Tables: BigDansing's Table 1 and seeded tables of ``--cols`` columns from
``data/planted.py`` (planted FDs, 5 % BART-style errors). For each:

* exact FDs: dqkit's set against HyFD's (set equality);
* g3 AFDs at ``--error``: dqkit's set against Tane(afd_error_measure="g3") at the same error;
* DCs of at most 2 predicates: dqkit ``--dc`` against FastADC(allow_cross_columns=False,
  evidence_threshold=E) cut to 2 predicates, a DC and its mirror counted as one (on tables of at most
  2,000 rows, where dqkit builds the evidence from every row);
* time: dqkit's driver route on the table in memory (encode + search) against HyFD on the same pandas
  frame, best of ``--repeat``; ratios printed with the load average.

``--repair``: end to end on a 2,000-row planted table (Spark): repair with the top-K discovered FDs
against repair with the true rules, F1 from ``dqkit.repair.accuracy.repair_accuracy``.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time

import pandas as pd
import pyarrow as pa

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from data.planted import planted_table  # noqa: E402
from dqkit.discover.dc import MIRROR, discover_dcs  # noqa: E402
from dqkit.discover.driver import DriverMeasure, encode  # noqa: E402
from dqkit.discover.lattice import search_fds  # noqa: E402

OPS = {"==": "=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def load() -> str:
    return "load %.1f %.1f %.1f" % os.getloadavg()


def dqkit_fds(df: pd.DataFrame, error: float) -> tuple[set, float]:
    t0 = time.perf_counter()
    cols = list(df.columns)
    t = pa.Table.from_pandas(df, preserve_index=False)
    search = search_fds(cols, len(df), DriverMeasure(encode(t, cols)), error=error)
    return {(frozenset(f.lhs), f.rhs) for f in search.fds}, time.perf_counter() - t0


def hyfd(df: pd.DataFrame) -> tuple[set, float]:
    import desbordante

    t0 = time.perf_counter()
    a = desbordante.fd.algorithms.HyFD()
    a.load_data(table=df)
    a.execute()
    out = {(frozenset(l), r) for l, r in (f.to_name_tuple() for f in a.get_fds())}
    return out, time.perf_counter() - t0


def tane_g3(df: pd.DataFrame, error: float) -> tuple[set, float]:
    import desbordante

    t0 = time.perf_counter()
    a = desbordante.afd.algorithms.Tane()
    a.load_data(table=df)
    a.execute(error=error, afd_error_measure="g3")
    out = {(frozenset(l), r) for l, r in (f.to_name_tuple() for f in a.get_fds())}
    return out, time.perf_counter() - t0


def canonical(preds: frozenset) -> frozenset:
    mirror = frozenset((c, MIRROR[op]) for c, op in preds)
    return min(preds, mirror, key=lambda s: sorted(s))


def fastadc(df: pd.DataFrame, error: float) -> set:
    import desbordante

    a = desbordante.dc.algorithms.FastADC()
    a.load_data(table=df)
    a.execute(shard_length=min(350, len(df)), allow_cross_columns=False, evidence_threshold=error)
    out = set()
    for dc in a.get_dcs():
        preds = frozenset((c, OPS[op]) for c, op, c2 in re.findall(r"t\.(\w+) (==|!=|<=|>=|<|>) s\.(\w+)", str(dc)))
        if len(preds) <= 2:
            out.add(canonical(preds))
    return out


def dqkit_dcs(df: pd.DataFrame, error: float) -> set:
    t = pa.Table.from_pandas(df, preserve_index=False)
    found = discover_dcs(t, list(df.columns), rows=len(df), error=error, max_predicates=2)
    return {canonical(frozenset(dc.predicates)) for dc in found.dcs}


def compare(name: str, ours: set, theirs: set) -> str:
    same = ours == theirs
    return f"{name}: dqkit {len(ours)}, peer {len(theirs)}, " + ("set-equal" if same else
                                                                   f"DIFFER (only dqkit {len(ours - theirs)}, only peer {len(theirs - ours)})")


def table(rows: int, cols: int, seed: int) -> pd.DataFrame:
    fds = max(1, (cols - 2) // 2)
    p = planted_table(rows, fds=fds, noise=cols - 2 * fds, error_rate=0.05, seed=seed)
    return p.dirty.drop(columns="tid")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[100_000])
    ap.add_argument("--cols", type=int, default=12)
    ap.add_argument("--error", type=float, default=0.05)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repair", action="store_true")
    a = ap.parse_args()

    t1 = pd.read_csv(os.path.join(os.path.dirname(__file__), "..", "data", "bigdansing_table1.csv")).drop(columns="tid")
    print("== Table 1", load())
    print(" ", compare("exact FDs vs HyFD", dqkit_fds(t1, 0)[0], hyfd(t1)[0]))
    print(" ", compare("g3 FDs (E=0.2) vs Tane", dqkit_fds(t1, 0.2)[0], tane_g3(t1, 0.2)[0]))
    print(" ", compare("DCs <= 2 predicates vs FastADC", dqkit_dcs(t1, 0), fastadc(t1, 0)))
    small = table(2000, a.cols, a.seed)
    print(f"== planted {len(small)} x {small.shape[1]}", load())
    print(" ", compare("exact FDs vs HyFD", dqkit_fds(small, 0)[0], hyfd(small)[0]))
    print(" ", compare(f"g3 FDs (E={a.error}) vs Tane", dqkit_fds(small, a.error)[0], tane_g3(small, a.error)[0]))
    print(" ", compare(f"DCs <= 2 predicates (E={a.error / 100}) vs FastADC", dqkit_dcs(small, a.error / 100),
                       fastadc(small, a.error / 100)))
    for rows in a.rows:
        df = table(rows, a.cols, a.seed)
        print(f"== planted {rows:,} x {df.shape[1]}", load())
        ours_t, theirs_t = [], []
        for _ in range(a.repeat):
            ours, t_ours = dqkit_fds(df, 0)
            theirs, t_theirs = hyfd(df)
            ours_t.append(t_ours)
            theirs_t.append(t_theirs)
        print(" ", compare("exact FDs vs HyFD", ours, theirs))
        print(f"  time exact FDs: dqkit driver {min(ours_t):.2f} s, HyFD {min(theirs_t):.2f} s, "
              f"ratio {min(ours_t) / min(theirs_t):.2f}x  ({load()})")
        ours, t_ours = dqkit_fds(df, a.error)
        theirs, t_theirs = tane_g3(df, a.error)
        print(" ", compare(f"g3 FDs (E={a.error}) vs Tane", ours, theirs))
        print(f"  time g3 FDs: dqkit driver {t_ours:.2f} s, Tane {t_theirs:.2f} s, ratio {t_ours / t_theirs:.2f}x  ({load()})")
    if a.repair:
        repair_f1(a.seed)


def repair_f1(seed: int) -> None:
    import tempfile

    from dqkit.discover import discover
    from dqkit.repair import repair
    from dqkit.repair.accuracy import repair_accuracy
    from dqkit.runtime.session import get_spark

    spark = get_spark()
    p = planted_table(2000, fds=3, noise=2, error_rate=0.05, seed=seed)
    work = tempfile.mkdtemp(prefix="dqkit-bench-discover-")
    dirty, clean = os.path.join(work, "dirty.csv"), os.path.join(work, "clean.csv")
    p.dirty.to_csv(dirty, index=False)
    p.clean.to_csv(clean, index=False)
    found = discover(dirty, key="tid", error=0.05, top=len(p.fds), spark=spark)
    rules = found.save(os.path.join(work, "rules.yaml"))
    truth = os.path.join(work, "truth.yaml")
    with open(truth, "w", encoding="utf-8") as fh:
        fh.write(p.truth_yaml())
    f1 = {}
    for name, path in (("discovered", rules), ("true", truth)):
        f1[name] = repair_accuracy(dirty, repair(dirty, path, key="tid", spark=spark), clean, key="tid", spark=spark).f1
    print(f"== repair F1 (2,000 rows, 3 planted FDs, 5 % errors): discovered top-3 {sorted(r.text for r in found.rules)}")
    print(f"  F1 discovered {f1['discovered']:.3f}, true rules {f1['true']:.3f}, "
          f"ratio {f1['discovered'] / f1['true']:.3f}  ({load()})")


if __name__ == "__main__":
    main()
