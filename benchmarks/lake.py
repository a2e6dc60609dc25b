"""R2D2 benchmark (spec §7.4): dqkit.lake against the ground truths and a column-level peer, in one process.

    python benchmarks/lake.py --roots 6 --derived 40 --rows 2000        # a modest run
    python data/lake.py --roots 30 --derived 270 --rows 64000 --out /tmp/tu    # the TU-like tier (~300 tables)
    python benchmarks/lake.py --lake /tmp/tu --parts lake,literal,peer
    python benchmarks/lake.py --parts theorem,optret,chains           # no lake needed

Prints, on one generated lake:
* edges per stage against the exact ground truth (Tables 1–2 layout), precision and recall;
* seconds per stage (Table 5 layout) and the speed-up of the pipeline (SGB+MMP+CLP, and with exact
  verification) over (i) the literal pairwise-hash ground truth — every child row hash compared with
  every parent row hash, measured on a sample of schema edges and extrapolated by Σ M_i·M_j — and
  (ii) dqkit's anti-join ground truth (much faster than the paper's brute force: say so when quoting);
* Table 3's operation counts;
* the peer users would pick instead: datasketch's MinHash LSH Ensemble, one index over every column's
  distinct values; a child is guessed contained in a parent when each child column is found (containment
  ≥ threshold) in some column of that parent; its precision, recall and time on the same lake;
* Opt-Ret: HiGHS ILP seconds against n on Erdős–Rényi graphs (p fixed), and Dyn-Lin against the ILP on chains.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import tempfile
import time
from pathlib import Path

import networkx as nx


def peer_lsh_ensemble(lake, threshold: float, num_perm: int = 128) -> tuple[set[tuple[str, str]], float]:
    """datasketch MinHash LSH Ensemble, column by column, combined into table-level guesses."""
    from datasketch import MinHash, MinHashLSHEnsemble

    t0 = time.perf_counter()
    entries, sizes, cols_of = [], {}, {}
    for name, t in lake.tables.items():
        pdf = t.df.toPandas()  # the peer works on the driver: every value is hashed in Python
        cols_of[name] = []
        for c in pdf.columns:
            values = {str(v) for v in pdf[c].dropna().tolist()} or {"<null>"}
            m = MinHash(num_perm=num_perm)
            m.update_batch([v.encode("utf-8") for v in values])  # the peer's vectorised update
            key = f"{name}\x1f{c}"
            entries.append((key, m, len(values)))
            sizes[key] = (m, len(values))
            cols_of[name].append(key)
    index = MinHashLSHEnsemble(threshold=threshold, num_perm=num_perm, num_part=16)
    index.index(entries)
    guesses: set[tuple[str, str]] = set()
    for child, keys in cols_of.items():
        found: dict[str, int] = {}
        for key in keys:
            m, n = sizes[key]
            parents = {k.split("\x1f", 1)[0] for k in index.query(m, n)}
            for p in parents - {child}:
                found[p] = found.get(p, 0) + 1
        guesses |= {(p, child) for p, hits in found.items() if hits == len(keys)}
    return guesses, time.perf_counter() - t0


def literal_ground_truth_estimate(lake, edges, sample: int, seed: int, targets: list[float] | None = None
                                  ) -> tuple[float, float, int, int, int]:
    """Seconds of the literal pairwise-hash ground truth (every child row hash against every parent row
    hash), measured on ``sample`` schema edges drawn (seeded) from the quarter of edges with the most
    comparisons — where Spark's fixed per-query cost weighs least, so the per-comparison rate is the
    most favourable to the ground truth — and extrapolated to all schema edges by Σ M_child·M_parent.
    Returns (estimated seconds, measured seconds, edges measured, comparisons measured, all comparisons)."""
    from dqkit.lake import pairwise_hash_containment

    def ops(e):
        return (lake.tables[e[1]].rows or 0) * (lake.tables[e[0]].rows or 0)

    ranked = sorted(edges, key=lambda e: (-ops(e), e))
    if targets:  # the pairs whose comparison counts are closest to the targets (a documented sample)
        picked = [min(ranked, key=lambda e: (abs(ops(e) - x), e)) for x in targets]
    else:
        top = ranked[:max(sample, len(ranked) // 4)]
        picked = random.Random(seed).sample(top, min(sample, len(top)))
    measured = done = 0
    best = 0.0
    for p, c in picked:
        t0 = time.perf_counter()
        n = pairwise_hash_containment(lake.tables[p], lake.tables[c])[2]
        dt = time.perf_counter() - t0
        print(f"  literal pair {p} -> {c}: {n:.3g} comparisons in {dt:.1f}s ({n / dt:.3g}/s)", flush=True)
        measured, done, best = measured + dt, done + n, max(best, n / dt)
    total_ops = sum(ops(e) for e in edges)
    print(f"  at the fastest pair's rate: {total_ops / best:.0f}s")
    return measured / max(done, 1) * total_ops, measured, len(picked), done, total_ops


def clp_grid(lake, truth: set[tuple[str, str]], seed: int, ss=(1, 4, 8), ts=(5, 10, 30),
             modes=("paper", "strict")) -> list[tuple[str, int, int, int, int, float]]:
    """Table 6: incorrect edges left after CLP (and true edges lost: must be 0) for each s, t and mode."""
    from dqkit.lake import build_graph

    out = []
    for mode in modes:
        for s in ss:
            for t in ts:
                g = build_graph(lake, s=s, t=t, seed=seed, mode=mode)
                kept = g.stage_edges("CLP")
                out.append((mode, s, t, len(kept - truth), len(truth - kept), g.timings["CLP"]))
    return out


def theorem_42(eps_list: list[float], ns_list: list[int], trials: int, rows: int, seed: int
               ) -> list[tuple[float, int, float, float, float]]:
    """Theorem 4.2 check (spec §7.4 item 6): a parent P and a child C with CM(C, P) = 1−ε exactly (ε·rows
    rows have one value changed). C's sample pool is all its rows (a constant column is a search column),
    so CLP's sample is t = n_s rows in seeded hash order: a uniform draw without replacement. ``trials``
    seeds per (ε, n_s); returns (ε, n_s, empirical prune rate, 1−(1−ε)^n_s, the without-replacement rate)."""
    import numpy as np
    import pandas as pd
    from dataclasses import replace

    from dqkit.lake import load_lake
    from dqkit.lake.stages import clp_keeps_many, clp_samples

    out = []
    for eps in eps_list:
        folder = Path(tempfile.mkdtemp()) / "thm"
        folder.mkdir()
        rng = np.random.default_rng(seed)
        x = np.round(rng.normal(50, 20, size=rows), 2)
        pd.DataFrame({"id": np.arange(rows), "k": "a", "x": x}).to_parquet(folder / "P.parquet", index=False)
        bad = int(round(eps * rows))
        y = x.copy()
        y[rng.choice(rows, size=bad, replace=False)] += 0.005  # not a value P holds in that row
        pd.DataFrame({"id": np.arange(rows), "k": "a", "x": y}).to_parquet(folder / "C.parquet", index=False)
        lk = load_lake(str(folder))
        P, C = lk.tables["P"], lk.tables["C"]
        for ns in ns_list:
            kids = [replace(C, name=f"C{r}") for r in range(trials)]
            samples = clp_samples(kids, s=3, t=ns, seed=seed, chunk=trials)
            kept = clp_keeps_many([(samples[k.name], P, k) for k in kids], "strict")
            pruned = 1 - sum(kept) / trials
            wor = 1 - math.comb(rows - bad, ns) / math.comb(rows, ns)
            out.append((eps, ns, pruned, 1 - (1 - eps) ** ns, wor))
    return out


def bench_opt_ret(ns: list[int], p: float, seed: int) -> list[tuple[int, int, float]]:
    from dqkit.lake import opt_ret
    from dqkit.lake.optret import CostModel

    out = []
    for n in ns:
        g = nx.gnp_random_graph(n, p, seed=seed, directed=True)
        sizes = {f"n{v}": float(1 + (v * 7919) % 97) * 1e9 for v in g.nodes}
        edges = [(f"n{u}", f"n{v}") for u, v in g.edges]
        t0 = time.perf_counter()
        opt_ret(sizes, edges, CostModel(), use_dyn_lin=False)
        out.append((n, len(edges), time.perf_counter() - t0))
    return out


def bench_chains(ns: list[int], seed: int) -> list[tuple[int, float, float, float, float]]:
    from dqkit.lake import dyn_lin, ilp

    rng = random.Random(seed)
    out = []
    for n in ns:
        names = [f"v{i}" for i in range(n)]
        node = {v: rng.uniform(0.1, 10) for v in names}
        edge = {(names[i - 1], names[i]): rng.uniform(0, 10) for i in range(1, n)}
        t0 = time.perf_counter()
        _, _, c1 = dyn_lin(names, node, edge)
        t1 = time.perf_counter()
        _, _, c2 = ilp(names, list(edge), node, edge)
        t2 = time.perf_counter()
        out.append((n, t1 - t0, t2 - t1, c1, c2))
    return out


def lake_plan(graph, scans_per_week: tuple[int, ...] = (1, 5)) -> dict:
    """Opt-Ret on the lake's verified graph (spec §7.4 item 8, Table 7 / Figure 5 style): retained and
    deleted tables and edges, costs and savings, and the row scans a privacy scan no longer makes per
    month (the deleted tables' rows, at 1 and 5 scans a week; 52/12 weeks a month)."""
    from dqkit.lake import plan_for

    t0 = time.perf_counter()
    plan = plan_for(graph)
    secs = time.perf_counter() - t0
    rows = {n: graph.tables[n].rows or 0 for n in graph.tables}
    deleted = set(plan.delete)
    kept_edges = sum(1 for p, c in graph.contained if p not in deleted and c not in deleted)
    return {"seconds": secs, "tables": len(graph.tables), "retain": len(plan.retain), "delete": len(plan.delete),
            "edges_in": plan.edges_in, "edges_between_retained": kept_edges,
            "dropped_unknown": len(plan.dropped_unknown), "cost": plan.total, "retain_all": plan.retain_all,
            "savings": plan.savings, "bytes_deleted": sum(graph.tables[n].bytes for n in deleted),
            "scans_saved": {k: sum(rows[n] for n in deleted) * k * 52 / 12 for k in scans_per_week}}


def dynamic_updates(lake, k: int, seed: int, mode: str) -> list[tuple[str, str, float, float, bool]]:
    """Spec §7.4 item 9: remove, re-add and update ``k`` tables (seeded) one at a time on a built graph,
    each against a full recompute of the same lake; returns (operation, table, incremental seconds,
    recompute seconds, equal graphs)."""
    from dqkit.lake import build_graph
    from dqkit.lake._lake import Lake

    def edges(g):
        return {e: (s.kept_by, s.removed_by) for e, s in g.edges.items()}

    g = build_graph(lake, seed=seed, mode=mode)
    names = sorted(lake.tables)
    picked = random.Random(seed).sample(names, min(k, len(names)))
    out = []
    for name in picked:
        table = lake.tables[name]
        rest = Lake(lake.label, {n: t for n, t in lake.tables.items() if n != name}, lake.skipped, lake.source)
        for op in ("remove", "add", "update"):
            t0 = time.perf_counter()
            if op == "remove":
                g.remove_dataset(name)
            elif op == "add":
                g.add_dataset(name, table.path)
            else:
                g.update_dataset(name, table.path)
            inc = time.perf_counter() - t0
            t0 = time.perf_counter()
            full = build_graph(rest if op == "remove" else lake, seed=seed, mode=mode)
            rec = time.perf_counter() - t0
            out.append((op, name, inc, rec, edges(g) == edges(full)))
    return out


def scaling_curve(lake, thresholds: list[float], seed: int, mode: str) -> list[tuple[float, int, int, float]]:
    """Spec §7.4 item 10 (Figure 4 style): the pipeline (profile + SGB + MMP + CLP) on the tables of at
    most each size threshold (bytes); returns (threshold, tables, bytes, seconds)."""
    from dataclasses import replace

    from dqkit.lake import build_graph
    from dqkit.lake._lake import Lake, profile_lake

    out = []
    for th in thresholds:
        sub = {n: replace(t, rows=None, stats={}) for n, t in lake.tables.items() if t.bytes <= th}  # re-profiled
        if len(sub) < 2:
            continue
        t0 = time.perf_counter()
        part = profile_lake(Lake(lake.label, sub, lake.skipped, lake.source))
        build_graph(part, seed=seed, mode=mode)
        out.append((th, len(sub), sum(t.bytes for t in sub.values()), time.perf_counter() - t0))
    return out


def partition_clp(lake, seed: int, mode: str) -> tuple[int, float, float, bool]:
    """Spec §7.4 item 5: CLP on the edges whose parent is partitioned, with the sampled partition values
    filtering the parent scan (dqkit's default) and with that filter switched off (every file read: what
    sampling without partition predicates costs), alternated and the best of two runs each. Returns
    (edges, seconds with, seconds without, same decisions). The switch is a benchmark-only patch of
    ``dqkit.lake.stages._partition_filter``."""
    from dqkit.lake import build_graph
    from dqkit.lake import stages

    g = build_graph(lake, seed=seed, mode=mode)
    edges = sorted(e for e in g.stage_edges("MMP") if lake.tables[e[0]].partition_columns)
    samples = stages.clp_samples([lake.tables[c] for c in sorted({c for _, c in edges})], 4, 10, seed)
    tasks = [(samples[c], lake.tables[p], lake.tables[c]) for p, c in edges]
    original = stages._partition_filter

    def run(filtered: bool) -> tuple[float, list[bool]]:
        stages._partition_filter = original if filtered else (lambda *args, **kw: None)
        try:
            t0 = time.perf_counter()
            got = stages.clp_keeps_many(tasks, mode)
            return time.perf_counter() - t0, got
        finally:
            stages._partition_filter = original

    times: dict[bool, list[float]] = {True: [], False: []}
    decisions = {}
    for filtered in (False, True, False, True):  # alternated, the best of two each: no order effect
        sec, decisions[filtered] = run(filtered)
        times[filtered].append(sec)
    return len(edges), min(times[True]), min(times[False]), decisions[True] == decisions[False]


PARTS = ("lake", "literal", "peer", "grid", "theorem", "optret", "chains", "plan", "dynamic", "scaling", "partition")


def _load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--roots", type=int, default=6)
    ap.add_argument("--derived", type=int, default=40)
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--s", type=int, default=4)
    ap.add_argument("--t", type=int, default=10)
    ap.add_argument("--modes", default="paper,strict", help="CLP modes to run the pipeline in")
    ap.add_argument("--lake", help="use this lake folder (generated with data/lake.py) instead of generating one")
    ap.add_argument("--parts", default="lake,literal,peer,optret,chains",
                    help="comma list of " + ",".join(PARTS) + " (grid: Table 6; theorem: Theorem 4.2 prune rates)")
    ap.add_argument("--truth-cache", help="JSON file: read the anti-join ground truth from it, or write it there")
    ap.add_argument("--literal-sample", type=int, default=4, help="schema edges the literal ground truth measures")
    ap.add_argument("--literal-targets", help="comma list of comparison counts: measure the pairs closest to them")
    ap.add_argument("--peer-threshold", type=float, default=0.95)
    ap.add_argument("--ilp-n", default="50,100,250,500,1000")
    ap.add_argument("--ilp-p", type=float, default=0.005)
    ap.add_argument("--ilp-p-sweep", help="comma list of p: Opt-Ret ILP time against p at n = --ilp-sweep-n")
    ap.add_argument("--ilp-sweep-n", type=int, default=250)
    ap.add_argument("--dynamic-tables", type=int, default=3, help="tables removed, re-added and updated")
    ap.add_argument("--scaling-thresholds", default="250e3,500e3,1e6,2e6,4e6",
                    help="comma list of table-size thresholds in bytes for the scaling curve")
    ap.add_argument("--chains", default="10,100,1000")
    ap.add_argument("--theorem-trials", type=int, default=200)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="4g", help="Spark's default 1g cannot hold a TU-like lake's broadcasts")
    ap.add_argument("--grid", action="store_true", help="same as adding grid to --parts")
    a = ap.parse_args(argv)
    parts = set(a.parts.split(",")) | ({"grid"} if a.grid else set())
    if parts - set(PARTS):
        ap.error(f"unknown parts {sorted(parts - set(PARTS))}")
    print(f"start: {_load()}", flush=True)

    lake_needed = {"lake", "literal", "peer", "grid", "plan", "dynamic", "scaling", "partition"}
    if parts & (lake_needed | {"theorem"}):
        from dqkit.runtime.session import get_spark

        get_spark(master=a.master, config={"spark.sql.shuffle.partitions": "4", "spark.driver.memory": a.driver_memory})
    if parts & lake_needed:
        lake_parts(a, parts)
    if "theorem" in parts:
        print("\nTheorem 4.2: empirical prune rate of CLP (strict) on a pair with CM = 1-eps, "
              f"{a.theorem_trials} seeds each, 2,000-row tables")
        print("   eps  n_s  pruned  1-(1-eps)^n_s  without replacement")
        for eps, ns, got, bound, wor in theorem_42([0.05, 0.1, 0.25], [1, 5, 10, 29], a.theorem_trials, 2000,
                                                   a.seed):
            print(f"  {eps:4.2f} {ns:4d}  {got:6.3f}  {bound:13.3f}  {wor:19.3f}", flush=True)
    if "optret" in parts:
        print("\nOpt-Ret ILP (HiGHS) on Erdős–Rényi graphs, p =", a.ilp_p)
        for n, m, s in bench_opt_ret([int(x) for x in a.ilp_n.split(",")], a.ilp_p, a.seed):
            print(f"  n={n:5d} edges={m:6d} {s:.3f}s  ({_load()})", flush=True)
        for p in [float(x) for x in a.ilp_p_sweep.split(",")] if a.ilp_p_sweep else []:
            for n, m, s in bench_opt_ret([a.ilp_sweep_n], p, a.seed):
                print(f"  p={p:.4f} n={n:5d} edges={m:6d} {s:.3f}s  ({_load()})", flush=True)
    if "chains" in parts:
        print("\nDyn-Lin vs the ILP on chains")
        for n, t_dl, t_ilp, c1, c2 in bench_chains([int(x) for x in a.chains.split(",")], a.seed):
            print(f"  n={n:5d} dyn-lin {t_dl * 1e3:.2f} ms, ilp {t_ilp * 1e3:.1f} ms ({t_ilp / max(t_dl, 1e-9):.0f}x), "
                  f"same cost: {math.isclose(c1, c2, rel_tol=1e-7)}")
    print(f"\nend: {_load()}")
    return 0


def lake_parts(a: argparse.Namespace, parts: set[str]) -> None:
    from dqkit.data.lake import generate_lake
    from dqkit.lake import build_graph, ground_truth, load_lake, result_from_graph
    from dqkit.lake._lake import profile_lake
    from dqkit.lake.sgb import schema_containment_brute_force

    folder = Path(a.lake) if a.lake else generate_lake(Path(tempfile.mkdtemp()) / "lake", a.roots, a.derived, a.rows,
                                                       a.seed)
    t0 = time.perf_counter()
    lake = load_lake(str(folder), profile=False)
    read_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    lake = profile_lake(lake)
    profile_s = time.perf_counter() - t0
    total_bytes = sum(t.bytes for t in lake.tables.values())
    rows = sum(t.rows or 0 for t in lake.tables.values())
    print(f"lake: {folder}  tables={len(lake.tables)}  rows={rows:,}  bytes={total_bytes:,}  "
          f"read (schemas)={read_s:.1f}s  profile (MMP's statistics: footers + one aggregate per table)="
          f"{profile_s:.1f}s  {_load()}", flush=True)
    schema_edges = schema_containment_brute_force({n: t.tokens for n, t in lake.tables.items()})
    truth: set[tuple[str, str]] = set()
    ours_by_mode: dict[str, float] = {}
    gt_s = None
    if "lake" in parts or "grid" in parts:
        cache = Path(a.truth_cache) if a.truth_cache else None
        if cache is not None and cache.exists():  # a ground truth an earlier run of the same lake computed
            saved = json.loads(cache.read_text())
            gt = {tuple(e[:2]): (e[2], e[3]) for e in saved["edges"]}
            gt_s = saved["seconds"]
            print(f"anti-join ground truth read from {cache} (computed in {gt_s:.1f}s at {saved['load']})")
        else:
            t0 = time.perf_counter()
            gt = ground_truth(lake)
            gt_s = time.perf_counter() - t0
            if cache is not None:
                cache.write_text(json.dumps({"seconds": gt_s, "load": _load(),
                                             "edges": [[p, c, cm, n] for (p, c), (cm, n) in sorted(gt.items())]}))
        truth = {e for e, (cm, _) in gt.items() if cm == 1.0}
        print(f"anti-join ground truth: {len(schema_edges)} schema edges, {len(truth)} contained, {gt_s:.1f}s  "
              f"{_load()}", flush=True)
    if "lake" in parts:
        for mode in a.modes.split(","):
            g = build_graph(lake, s=a.s, t=a.t, seed=a.seed, mode=mode, verify=True)
            r = result_from_graph(g, truth=gt, truth_seconds=gt_s)
            print(f"\n=== CLP mode {mode}, s={a.s}, t={a.t} ({_load()})")
            print("Edges per stage against the exact ground truth (Tables 1-2 layout)")
            print(r.accuracy().to_string())
            print("Seconds per stage (Table 5 layout; MMP's statistics were gathered in the profile above)")
            print(r.time_table().to_string(index=False))
            print("Operation counts (Table 3)")
            print(r.operation_counts().to_string(index=False))
            ours = sum(r.timings[s] for s in ("SGB", "MMP", "CLP")) + profile_s  # Table 5's "Ours (total)"
            ours_by_mode[mode] = ours
            print(f"ours = SGB+MMP+CLP+profile = {ours:.1f}s; with exact verification {ours + r.timings['verify']:.1f}s"
                  f"; speed-up over the anti-join ground truth {gt_s / ours:.2f}x "
                  f"({gt_s / (ours + r.timings['verify']):.2f}x with verification)", flush=True)
            ours_by_mode[mode + "+verify"] = ours + r.timings["verify"]
    if "literal" in parts:
        targets = [float(x) for x in a.literal_targets.split(",")] if a.literal_targets else None
        est, measured, k, done, total_ops = literal_ground_truth_estimate(lake, schema_edges, a.literal_sample,
                                                                          a.seed, targets)
        print(f"\nliteral pairwise-hash ground truth: {measured:.1f}s measured on {k} of {len(schema_edges)} schema "
              f"edges ({done:.3g} of Σ M_i·M_j = {total_ops:.3g} comparisons, {done / max(measured, 1e-9):.3g}/s), "
              f"{est:.0f}s = {est / 3600:.2f} h estimated for all  {_load()}")
        for mode, ours in ours_by_mode.items():
            print(f"  speed-up over the literal ground truth, {mode}: {est / ours:.1f}x")
    if "peer" in parts:
        guesses, peer_s = peer_lsh_ensemble(lake, a.peer_threshold)
        tp = len(guesses & truth) if truth else None
        print(f"\npeer datasketch MinHashLSHEnsemble (threshold {a.peer_threshold}): {len(guesses)} guesses, "
              + (f"precision {tp / len(guesses) if guesses else 1.0:.3f}, recall {tp / len(truth) if truth else 1.0:.3f}, "
                 if tp is not None else "") + f"{peer_s:.1f}s  {_load()}")
        for mode, ours in ours_by_mode.items():
            print(f"  time ratio peer/dqkit, {mode}: {peer_s / ours:.2f}")
    mode = a.modes.split(",")[0]
    if "plan" in parts:
        from dqkit.lake import build_graph

        g = build_graph(lake, s=a.s, t=a.t, seed=a.seed, mode=mode, verify=True)
        r = lake_plan(g)
        print(f"\nOpt-Ret on the lake (verified graph, lineage provider, default costs): {r['tables']} tables, "
              f"{r['edges_in']} containment edges in; retain {r['retain']}, delete {r['delete']} "
              f"({r['bytes_deleted']:,} bytes), {r['edges_between_retained']} edges between retained tables, "
              f"{r['dropped_unknown']} edges without a known transformation dropped; cost {r['cost']:.4g} against "
              f"{r['retain_all']:.4g} retaining all (savings {r['savings']:.4g}); row scans saved per month: "
              + ", ".join(f"{v:,.0f} at {k}/week" for k, v in r["scans_saved"].items())
              + f"; solved in {r['seconds']:.2f}s  {_load()}", flush=True)
    if "dynamic" in parts:
        print(f"\nDynamic updates ({mode}): incremental against a full recompute")
        for op, name, inc, rec, same in dynamic_updates(lake, a.dynamic_tables, a.seed, mode):
            print(f"  {op:6s} {name:24s} {inc:7.2f}s vs {rec:7.2f}s ({rec / max(inc, 1e-9):5.1f}x), "
                  f"equal graphs: {same}  {_load()}", flush=True)
    if "scaling" in parts:
        print(f"\nScaling (Figure 4 style, {mode}): profile+SGB+MMP+CLP on the tables up to each size")
        for th, n, b, sec in scaling_curve(lake, [float(x) for x in a.scaling_thresholds.split(",")], a.seed, mode):
            print(f"  tables <= {th:12,.0f} B: {n:4d} tables, {b:13,d} B, {sec:7.1f}s  {_load()}", flush=True)
    if "partition" in parts:
        n, with_f, without, same = partition_clp(lake, a.seed, mode)
        print(f"\nPartition-aware CLP ({mode}): {n} edges with a partitioned parent; probes {with_f:.1f}s with the "
              f"partition filter, {without:.1f}s reading every file ({without / max(with_f, 1e-9):.2f}x); "
              f"same decisions: {same}  {_load()}", flush=True)
    if "grid" in parts:
        print("\nCLP grid (Table 6): incorrect edges left after CLP, true edges lost (must be 0), CLP seconds")
        for mode, s, t, wrong, lost, sec in clp_grid(lake, truth, a.seed):
            print(f"  {mode:6s} s={s} t={t:2d}: incorrect {wrong:4d}, lost {lost}, {sec:.1f}s", flush=True)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
