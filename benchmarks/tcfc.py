"""TCFC benchmark (spec §6.1): dqkit.tcfc against the relational baselines, side by side in one process.

Workloads
* W1 (exam-like, the paper's exam100M at a size this machine holds): exam(student_id, course_id,
  exam_date, has_passed), ~100 rows per student, PK (student_id, course_id, exam_date); Parquet copies
  "sorted" by student_id (row-group statistics allow skipping) and "shuffled". Strategy as Table 1:
  listX = <{student_id}, {student_id, course_id, exam_date}>, A = {count(has_passed)}.
* W2 (TPC-H lineitem, dqkit's deterministic Spark generator ``data/tpch.py``): <{l_partkey},
  {l_partkey, l_suppkey, l_orderkey}> when that triple is unique in the generated data, else
  <{l_partkey}, {l_partkey, l_orderkey, l_linenumber}> (TPC-H's key under Table 1's level 1; printed).

Injection: d per mille of the rows deleted from the target ("source minus deletions"), spread evenly over
ceil(delta * F) level-1 fragments chosen at random (seeded), at most ceil(d*N / (delta*F)) per fragment.

Baselines, run in the same Spark session: (a) the paper's reference query, a key full outer join keeping
rows missing on either side or differing in a non-key column (null-safe); (b) exceptAll both ways. All are
forced to run fully (``write.format('noop')``). On PostgreSQL <-> PostgreSQL (two databases of one
``pgserver``): TCFC against reladiff (hash bisection), when reladiff and psycopg2 are installed.

Printed per cell: times (median of --reps after one warm-up), ratio = T_tcfc / T_baseline, peer/dqkit
ratios, dqkit / physical floor (one noop scan of both copies), TCFC queries, bytes that crossed, and the
correctness check (TCFC's key-level MISSING set equals the baseline's anti-join set). Then the crossover
d* (per mille where the ratio reaches 100 %, linear interpolation) per layout and dispersion, and the
§6.1 item 5 budget scenario: 10 pairs, 2 with differences, budget = the largest pair's baseline time.

Correctness in every cell: TCFC completes and its key-level MISSING set equals the rows deleted (the
injection's ground truth), with no other key-level difference; ``--check-baseline`` (default below 1M rows)
also compares it with the baseline's own anti-join set. Result reuse is off throughout (U4). The scale runs
the README reports (one at a time, on an otherwise idle machine):
    python benchmarks/tcfc.py --rows 10000000 --d 0,1,5,12,20 --dispersion 20,50,100 --layouts sorted \
        --skip w2,pg --warmup 0 --baselines foj --no-check-baseline
    python benchmarks/tcfc.py --rows 10000000 --d 0,1,5,12,20 --dispersion 20 --layouts shuffled \
        --skip w2,pg --warmup 0 --baselines foj,except --no-check-baseline
    python benchmarks/tcfc.py --skip w1 --tpch-scale 1 --d 0,0.5,1 --dispersion 20,50,100 --warmup 0 \
        --baselines foj --no-check-baseline --pg-rows 1000000 --budget-rows 2000000
Small (a minute): python benchmarks/tcfc.py --rows 100000 --d 0,1,5,20 --dispersion 20,100 --reps 1
"""
from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

KEY = ["student_id", "course_id", "exam_date"]


def make_exam(n: int, seed: int = 7) -> pa.Table:
    """~100 rows per student; (student_id, course_id, exam_date) unique by construction."""
    rng = np.random.default_rng(seed)
    per = 100
    students = max(1, n // per)
    sid = np.repeat(np.arange(1, students + 1, dtype=np.int64), per)[:n]
    j = np.tile(np.arange(per), students)[:n]
    course = rng.integers(1, 400, size=n, dtype=np.int64)
    day0 = np.datetime64("2005-01-01")
    dates = (day0 + (j * 7 + (sid % 7))).astype("datetime64[D]")  # distinct per student
    passed = rng.integers(0, 2, size=n, dtype=np.int64)
    return pa.table({"student_id": sid, "course_id": course, "exam_date": pa.array(dates, pa.date32()),
                     "has_passed": passed})


def inject(table: pa.Table, frag_col: str, d_per_mille: float, dispersion: float, seed: int = 11,
           key: list[str] | None = None) -> tuple[pa.Table, int, set]:
    """Delete round(d * N / 1000) rows spread evenly over ceil(dispersion * F) random level-1 fragments.

    Returns the target table, the number deleted and the deleted rows' ``key`` tuples (the ground truth
    every run's key-level MISSING set is checked against)."""
    n = table.num_rows
    k = int(round(d_per_mille * n / 1000))
    if k == 0:
        return table, 0, set()
    rng = np.random.default_rng(seed)
    frag = table.column(frag_col).to_numpy()
    frags = np.unique(frag)
    chosen = rng.choice(frags, size=min(len(frags), max(1, math.ceil(dispersion * len(frags)))), replace=False)
    per = math.ceil(k / len(chosen))
    order = np.argsort(frag, kind="stable")
    starts = np.searchsorted(frag[order], chosen)
    drop: list[int] = []
    for s in starts:
        drop += list(order[s:s + per])
        if len(drop) >= k:
            break
    mask = np.ones(n, dtype=bool)
    mask[np.array(drop[:k])] = False
    gone = table.filter(pa.array(~mask)).select(key) if key else None
    truth = set(zip(*[c.to_pylist() for c in gone.columns])) if gone is not None else set()
    return table.filter(pa.array(mask)), k, truth


def write(table: pa.Table, path: Path, layout: str, sort_col: str, seed: int = 3) -> str:
    if layout == "sorted":
        table = table.sort_by([(sort_col, "ascending")])
    else:
        table = table.take(pa.array(np.random.default_rng(seed).permutation(table.num_rows)))
    path.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path / "part-0.parquet", row_group_size=16384)
    (path / "_SUCCESS").touch()
    return str(path)


def timed(fn, reps: int, warmup: int = 1) -> tuple[float, object]:
    """Median of ``reps`` timed calls after ``warmup`` untimed ones."""
    out = None
    for _ in range(warmup):
        out = fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def foj(spark, src, tgt, key, nonkey):
    from pyspark.sql import functions as F

    s, t = spark.read.parquet(src), spark.read.parquet(tgt)
    cond = [s[k] == t[k] for k in key]
    j = s.join(t, cond, "full_outer")
    differ = F.lit(False)
    for c in nonkey:
        differ = differ | ~s[c].eqNullSafe(t[c])
    return j.where(s[key[0]].isNull() | t[key[0]].isNull() | differ).select(
        *[F.coalesce(s[k], t[k]).alias(k) for k in key], s[key[0]].isNull().alias("excess"))


def run_foj(spark, src, tgt, key, nonkey):
    foj(spark, src, tgt, key, nonkey).write.format("noop").mode("overwrite").save()


def missing_set(spark, src, tgt, key, nonkey) -> set:
    rows = foj(spark, src, tgt, key, nonkey).where("NOT excess").select(*key).collect()  # bounded by d
    return {tuple(r) for r in rows}


def run_except(spark, src, tgt):
    s, t = spark.read.parquet(src), spark.read.parquet(tgt)
    s.exceptAll(t).write.format("noop").mode("overwrite").save()
    t.exceptAll(s).write.format("noop").mode("overwrite").save()


def floor(spark, src, tgt):
    spark.read.parquet(src).write.format("noop").mode("overwrite").save()
    spark.read.parquet(tgt).write.format("noop").mode("overwrite").save()


def tcfc_spec(name, src, tgt, levels, agg_col, src_url=None, tgt_url=None):
    side = lambda url, t: {"url": url, "table": t} if url else {"table": t}  # noqa: E731
    return {"pairs": [{"name": name, "source": side(src_url, src), "target": side(tgt_url, tgt),
                       "aggregates": [["count", agg_col, "recCount"]], "levels": levels}]}


def crossover(points: list[tuple[float, float]]) -> str:
    """d* where ratio crosses 100 % (linear interpolation); '> max' when it never does."""
    pts = sorted(points)
    for (d0, r0), (d1, r1) in zip(pts, pts[1:]):
        if r0 < 1.0 <= r1:
            return f"{d0 + (1.0 - r0) * (d1 - d0) / (r1 - r0):.2f} per mille"
    if pts and pts[0][1] >= 1.0:
        return f"< {pts[0][0]:g} per mille (TCFC slower everywhere)"
    return f"> {pts[-1][0]:g} per mille" if pts else "n/a"


def levels_profile(res) -> str:
    """Where TCFC's time went (P5): seconds and jobs per level, e.g. 'L1 2.1s/1 L2 4.0s/1'."""
    jobs = res.jobs()
    if jobs.empty:
        return "-"
    g = jobs[jobs.status == "done"].groupby("level").agg(s=("seconds", "sum"), n=("job_id", "count"))
    return " ".join(f"L{lv} {r.s:.1f}s/{int(r.n)}" for lv, r in g.iterrows())


def run_cell(spark, args, src, tgt, key, nonkey, spec, k, truth, floor_s):
    """One (layout, d, dispersion) cell: TCFC and the baselines timed, TCFC checked against the truth."""
    from dqkit.tcfc import tcfc

    out: dict = {"k": k, "floor": floor_s}
    t_tcfc, res = timed(lambda: tcfc(spec, spark=spark), args.reps, args.warmup)
    out["tcfc"] = t_tcfc
    out["foj"] = timed(lambda: run_foj(spark, src, tgt, key, nonkey), args.reps, args.warmup)[0] \
        if "foj" in args.baselines else float("nan")
    out["except"] = timed(lambda: run_except(spark, src, tgt), args.reps, args.warmup)[0] \
        if "except" in args.baselines else float("nan")
    last = len(spec["pairs"][0]["levels"])
    got = {d_.values for d_ in res.differences if d_.level == last and d_.kind == "MISSING"}
    others = [d_ for d_ in res.differences if d_.level == last and d_.kind != "MISSING"]
    ok = got == truth and not others and res.status == "COMPLETED"
    if args.check_baseline:  # the baseline's own anti-join set too (one more full outer join)
        ok = ok and got == missing_set(spark, src, tgt, key, nonkey)
    out.update(ok=ok, queries=res.queries, bytes=res.bytes_crossed, profile=levels_profile(res))
    res.close()
    return out


HEAD = ("layout   d‰  δ%  deleted  t_tcfc  t_foj  t_except  floor  ratio(tcfc/foj)  foj/tcfc  except/tcfc  "
        "tcfc/floor  queries  bytes  correct  profile")


def print_cell(layout, d, disp, c) -> None:
    ratio = c["tcfc"] / c["foj"]
    print(f"{layout:8} {d:3g} {disp:3g} {c['k']:8d} {c['tcfc']:7.2f} {c['foj']:6.2f} {c['except']:9.2f} "
          f"{c['floor']:6.2f} {ratio * 100:14.0f}% {c['foj'] / c['tcfc']:9.2f} {c['except'] / c['tcfc']:12.2f} "
          f"{c['tcfc'] / c['floor']:11.2f} {c['queries']:8d} {c['bytes']:6d}  {c['ok']}  {c['profile']}", flush=True)


def warm_up(spark, work: Path) -> None:
    """One small TCFC run and full outer join first, so the first timed cell does not pay the JVM's warm-up."""
    from dqkit.tcfc import tcfc

    base = make_exam(20_000)
    src = write(base, work / "warm_src", "sorted", "student_id")
    tgt = write(inject(base, "student_id", 5, 0.2)[0], work / "warm_tgt", "sorted", "student_id")
    tcfc(tcfc_spec("exam", src, tgt, [["student_id"], KEY], "has_passed"), spark=spark).close()
    run_foj(spark, src, tgt, KEY, ["has_passed"])
    run_except(spark, src, tgt)


def w1(spark, args, work: Path) -> None:
    base = make_exam(args.rows)
    levels = [["student_id"], KEY]
    print(f"\n== W1 exam-like: {base.num_rows} rows, {base.num_rows // 100} students (level-1 fragments) ==",
          flush=True)
    print(HEAD, flush=True)
    for layout in args.layouts:
        src = write(base, work / f"w1_{layout}_src", layout, "student_id")
        t_floor = timed(lambda: floor(spark, src, src), args.reps, args.warmup)[0]
        curve: dict[float, list[tuple[float, float]]] = {}
        for disp in args.dispersion:
            for d in args.d:
                if d == 0 and disp != args.dispersion[0]:
                    continue
                tgt_tab, k, truth = inject(base, "student_id", d, disp / 100, key=KEY)
                tgt = write(tgt_tab, work / f"w1_{layout}_{d}_{disp}", layout, "student_id")
                del tgt_tab
                spec = tcfc_spec("exam", src, tgt, levels, "has_passed")
                c = run_cell(spark, args, src, tgt, KEY, ["has_passed"], spec, k, truth, t_floor)
                ok = c["ok"] and len(truth) == k
                c["ok"] = ok
                for dd in ([disp] if d else args.dispersion):
                    curve.setdefault(dd, []).append((d, c["tcfc"] / c["foj"]))
                print_cell(layout, d, disp, c)
                shutil.rmtree(tgt, ignore_errors=True)
        for disp, pts in sorted(curve.items()):
            print(f"   d*({layout}, δ={disp:g}%) = {crossover(pts)}", flush=True)
        shutil.rmtree(src, ignore_errors=True)


_LINEITEM: dict = {}


def lineitem_table(spark, scale: float) -> tuple[pa.Table, list[list[str]]]:
    """dqkit's deterministic TPC-H lineitem (key columns and l_quantity) as Arrow, and Table 1's levels
    (generated once per run: W2 and the Spark <-> PostgreSQL pair share it)."""
    if scale in _LINEITEM:
        return _LINEITEM[scale]
    from pyspark.sql import functions as F

    from data.tpch import spark_tables

    li = spark_tables(spark, scale=scale)["lineitem"]
    triple = ["l_partkey", "l_suppkey", "l_orderkey"]
    li = li.select("l_orderkey", "l_linenumber", *triple[:2], F.col("l_quantity").cast("double").alias("l_quantity"))
    stats = li.agg(F.count(F.lit(1)).alias("n"), F.count_distinct(*triple).alias("u")).first()
    unique = stats["n"] == stats["u"]
    # Table 1's strategy when its key is unique; else the same level 1 with TPC-H's own key below it
    levels = [["l_partkey"], triple] if unique else [["l_partkey"], ["l_partkey", "l_orderkey", "l_linenumber"]]
    table = li.select(*levels[1], "l_quantity").toArrow()  # the benchmark's own table (SF 1: 6M rows, ~190 MB)
    print(f"TPC-H lineitem (dqkit generator, scale {scale}): {table.num_rows} rows; "
          f"(partkey, suppkey, orderkey) unique: {unique}; levels {levels}", flush=True)
    _LINEITEM[scale] = table, levels
    return table, levels


def w2(spark, args, work: Path) -> None:
    table, levels = lineitem_table(spark, args.tpch_scale)
    key = levels[1]
    print(f"\n== W2 TPC-H lineitem: {table.num_rows} rows, layout sorted by {levels[0][0]} ==", flush=True)
    print(HEAD, flush=True)
    src = write(table, work / "w2_src", "sorted", levels[0][0])
    t_floor = timed(lambda: floor(spark, src, src), args.reps, args.warmup)[0]
    curve: dict[float, list[tuple[float, float]]] = {}
    for disp in args.dispersion:
        for d in [x for x in args.d if x <= args.w2_max_d] or [0]:
            if d == 0 and disp != args.dispersion[0]:
                continue
            tgt_tab, k, truth = inject(table, levels[0][0], d, disp / 100, key=key)
            tgt = write(tgt_tab, work / f"w2_{d}_{disp}", "sorted", levels[0][0])
            del tgt_tab
            spec = tcfc_spec("lineitem", src, tgt, levels, "l_quantity")
            c = run_cell(spark, args, src, tgt, key, ["l_quantity"], spec, k, truth, t_floor)
            for dd in ([disp] if d else args.dispersion):
                curve.setdefault(dd, []).append((d, c["tcfc"] / c["foj"]))
            print_cell("sorted", d, disp, c)
            shutil.rmtree(tgt, ignore_errors=True)
    for disp, pts in sorted(curve.items()):
        print(f"   d*(W2, δ={disp:g}%) = {crossover(pts)}", flush=True)


def pg_load(url: str, name: str, table: pa.Table, ddl: str, index: str | None = None) -> None:
    """Create ``name`` and bulk-load ``table`` with COPY (CSV written by Arrow), then index and ANALYZE."""
    import io

    import psycopg
    import pyarrow.csv as pacsv

    with psycopg.connect(url, autocommit=True) as c:
        c.execute(f"CREATE TABLE {name} ({ddl})")
        with c.cursor().copy(f"COPY {name} FROM STDIN WITH (FORMAT csv, HEADER true)") as cp:
            for start in range(0, table.num_rows, 500_000):
                buf = io.BytesIO()  # one header, on the first chunk
                pacsv.write_csv(table.slice(start, 500_000), buf, pacsv.WriteOptions(include_header=start == 0))
                cp.write(buf.getvalue())
        if index:
            c.execute(f"CREATE INDEX ON {name} ({index})")
        c.execute(f"ANALYZE {name}")


def with_id(tab: pa.Table) -> pa.Table:
    """exam with an integer key ``id`` = student_id * 1000 + (day number mod 1000), unique because a student's
    exam dates span fewer than 1000 days (reladiff cannot key on a date column)."""
    import pyarrow.compute as pc

    days = pc.cast(tab.column("exam_date"), pa.int32()).to_numpy().astype(np.int64)
    return tab.add_column(0, "id", pa.array(tab.column("student_id").to_numpy() * 1000 + days % 1000))


def postgres(spark, args, work: Path) -> None:
    import psycopg

    try:
        import pgserver
    except ImportError:
        print("\n== PostgreSQL: pgserver not installed; skipped ==")
        return
    from dqkit.tcfc import tcfc

    folder = Path(tempfile.mkdtemp(prefix="dqkit-bench-pg-"))
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="dqkit-xdg-"))
    srv = pgserver.get_server(folder, cleanup_mode="stop")
    try:
        url = srv.get_uri()
        with psycopg.connect(url, autocommit=True) as c:
            c.execute("CREATE DATABASE src")
            c.execute("CREATE DATABASE tgt")
        urls = {db: url.replace("/postgres?", f"/{db}?") for db in ("src", "tgt")}
        if "pgpg" not in args.skip:
            n = args.pg_rows
            base = make_exam(n)
            tgt_tab, k, _ = inject(base, "student_id", 1.0, args.dispersion[0] / 100)
            t = time.perf_counter()
            ddl = "id bigint PRIMARY KEY, student_id bigint, course_id bigint, exam_date date, has_passed bigint"
            pg_load(urls["src"], "exam", with_id(base), ddl, "student_id, id")
            pg_load(urls["tgt"], "exam", with_id(tgt_tab), ddl, "student_id, id")
            print(f"\n== PostgreSQL <-> PostgreSQL (pgserver, two databases): {n} rows, d = 1 per mille "
                  f"({k} deleted), δ = {args.dispersion[0]:g} %; loaded in {time.perf_counter() - t:.1f} s ==",
                  flush=True)
            spec = tcfc_spec("exam", "exam", "exam", [["student_id"], ["student_id", "id"]], "has_passed",
                             urls["src"], urls["tgt"])
            t_tcfc, res = timed(lambda: tcfc(spec), args.reps, args.warmup)
            print(f"TCFC: {t_tcfc:.2f} s, {res.queries} queries, {res.bytes_crossed} bytes crossed, "
                  f"{sum(1 for d_ in res.differences if d_.level == 2)} key-level differences (expected {k}); "
                  f"{levels_profile(res)}", flush=True)
            res.close()
            try:
                from reladiff import connect_to_table, diff_tables

                sock = url.split("host=")[1]

                def rd():
                    t1 = connect_to_table({"driver": "postgresql", "host": sock, "user": "postgres", "database": "src"},
                                          "exam", "id", extra_columns=("has_passed",))
                    t2 = connect_to_table({"driver": "postgresql", "host": sock, "user": "postgres", "database": "tgt"},
                                          "exam", "id", extra_columns=("has_passed",))
                    return list(diff_tables(t1, t2))

                t_rd, diff = timed(rd, args.reps, args.warmup)
                print(f"reladiff (hash bisection): {t_rd:.2f} s, {len(diff)} differences; "
                      f"reladiff/tcfc = {t_rd / t_tcfc:.2f}", flush=True)
            except Exception as exc:  # noqa: BLE001 - a peer that does not run here is reported, not fatal
                print(f"reladiff: not run ({type(exc).__name__}: {str(exc).splitlines()[0][:160]})")
        if "cross" not in args.skip:
            # Spark <-> PostgreSQL at TPC-H scale: only aggregated rows cross between the engines
            table, levels = lineitem_table(spark, args.tpch_scale)
            tgt_tab, k, truth = inject(table, levels[0][0], 1.0, args.dispersion[0] / 100, key=levels[1])
            src_parquet = write(table, work / "cross_src", "sorted", levels[0][0])
            t = time.perf_counter()
            ddl = ", ".join(f"{c} bigint" if c != "l_quantity" else f"{c} double precision" for c in table.column_names)
            pg_load(urls["tgt"], "lineitem", tgt_tab, ddl, levels[0][0])
            print(f"\n== Spark <-> PostgreSQL: lineitem {table.num_rows} rows (Parquet in Spark, PostgreSQL), "
                  f"d = 1 per mille ({k} deleted), δ = {args.dispersion[0]:g} %; loaded in "
                  f"{time.perf_counter() - t:.1f} s ==", flush=True)
            cross = tcfc_spec("lineitem", src_parquet, "lineitem", levels, "l_quantity", None, urls["tgt"])
            t_x, res = timed(lambda: tcfc(cross, spark=spark), args.reps, args.warmup)
            got = {d_.values for d_ in res.differences if d_.level == 2 and d_.kind == "MISSING"}
            print(f"TCFC Spark <-> PostgreSQL: {t_x:.2f} s, {res.queries} queries, {res.bytes_crossed} bytes crossed "
                  f"(aggregates only; the table itself is {table.nbytes} bytes in Arrow), "
                  f"{len(res.differences)} differing fragments, key level equals the deletions: {got == truth}; "
                  f"{levels_profile(res)}", flush=True)
            res.close()
            del tgt_tab
        if "budget" not in args.skip:
            budget_scenario(urls, args)
    finally:
        srv.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


def budget_scenario(urls: dict, args) -> None:
    """§6.1 item 5: 10 pairs, 2 with differences, budget = the largest pair's baseline (full outer join) time.
    Strategy per §3.4: roots X = [] with COUNT, then student_id, then the key."""
    import psycopg

    from dqkit.tcfc import GRACE_S, tcfc

    sizes = [args.budget_rows * (i + 1) // 10 for i in range(10)]
    with psycopg.connect(urls["src"], autocommit=True) as c:
        for i, m in enumerate(sizes):
            c.execute(f"CREATE TABLE p{i} AS SELECT g / 100 AS student_id, g AS id, g % 2 AS has_passed "
                      f"FROM generate_series(1, {int(m)}) AS g")
            c.execute(f"CREATE TABLE q{i} AS SELECT * FROM p{i}")
            if i in (3, 8):
                c.execute(f"DELETE FROM q{i} WHERE id IN (17, 4242, 99999)")
            c.execute(f"ANALYZE p{i}")
            c.execute(f"ANALYZE q{i}")
        big = len(sizes) - 1
        t = time.perf_counter()
        c.execute(f"SELECT count(*) FROM p{big} s FULL OUTER JOIN q{big} d ON s.id = d.id "
                  f"WHERE s.id IS NULL OR d.id IS NULL OR s.has_passed IS DISTINCT FROM d.has_passed").fetchone()
        budget = time.perf_counter() - t
    pairs = [{"name": f"p{i}", "source": {"url": urls["src"], "table": f"p{i}"},
              "target": {"url": urls["src"], "table": f"q{i}"}, "aggregates": [["count", "*", "n"]],
              "levels": [[], ["student_id"], ["student_id", "id"]]} for i in range(10)]
    t = time.perf_counter()
    res = tcfc({"pairs": pairs}, budget=budget)
    wall = time.perf_counter() - t
    cov = res.coverage()
    examined = int((cov.state != "not examined").sum())
    print(f"\n== Budget scenario: 10 pairs of {sizes[0]}..{sizes[-1]} rows, 2 differing, budget {budget:.2f} s "
          f"(the largest pair's full outer join) ==\n"
          f"status {res.status}, wall {wall:.2f} s (<= budget + grace {budget + GRACE_S:.2f}: "
          f"{wall <= budget + GRACE_S}), pairs examined {examined}/10, flagged {res.differing_pairs()} "
          f"(both differing pairs flagged: {set(res.differing_pairs()) >= {'p3', 'p8'}}), queries {res.queries}; "
          f"{levels_profile(res)}", flush=True)
    res.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=100_000, help="W1 rows (10M on a dedicated 2-core machine)")
    p.add_argument("--d", default="0,1,5,20", help="per mille deleted, comma-separated")
    p.add_argument("--dispersion", default="20,100", help="percent of level-1 fragments holding the deletions")
    p.add_argument("--layouts", default="sorted,shuffled")
    p.add_argument("--reps", type=int, default=1)
    p.add_argument("--tpch-scale", type=float, default=0.01)
    p.add_argument("--pg-rows", type=int, default=50_000, help="rows of the PostgreSQL <-> PostgreSQL pair")
    p.add_argument("--budget-rows", type=int, default=500_000, help="rows of the largest of the 10 budget pairs")
    p.add_argument("--w2-max-d", type=float, default=1.0, help="W2 runs the --d values up to this per mille")
    p.add_argument("--baselines", default="foj,except", help="baselines to time: foj (ratio) and except")
    p.add_argument("--warmup", type=int, default=1, help="untimed runs before the timed ones, per cell")
    p.add_argument("--check-baseline", action=argparse.BooleanOptionalAction, default=None,
                   help="also check TCFC against the baseline's anti-join set (default: when --rows <= 1M)")
    p.add_argument("--driver-memory", default="6g", help="Spark driver (local executor) heap")
    p.add_argument("--skip", default="",
                   help="comma-separated parts to skip: w1, w2, pg (all PostgreSQL), pgpg, cross, budget")
    args = p.parse_args(argv)
    args.baselines = set(args.baselines.split(","))
    if args.check_baseline is None:
        args.check_baseline = args.rows <= 1_000_000
    if "foj" not in args.baselines:
        p.error("--baselines must include foj (the ratio's denominator)")
    args.d = [float(x) for x in args.d.split(",")]
    args.dispersion = [float(x) for x in args.dispersion.split(",")]
    args.layouts = args.layouts.split(",")
    skip = args.skip = set(args.skip.split(","))
    from dqkit.runtime.session import get_spark

    spark = get_spark(master="local[2]", config={"spark.sql.shuffle.partitions": "4",
                                                 "spark.driver.memory": args.driver_memory})
    print(f"load: {os.getloadavg()}; cores: {os.cpu_count()}; Spark local[2], 4 shuffle partitions, driver memory "
          f"{args.driver_memory}; reuse off; baselines {sorted(args.baselines)}; warm-up {args.warmup}, reps {args.reps}",
          flush=True)
    work = Path(tempfile.mkdtemp(prefix="dqkit-bench-tcfc-"))
    try:
        warm_up(spark, work)
        if "w1" not in skip:
            w1(spark, args, work)
        if "w2" not in skip:
            w2(spark, args, work)
        if "pg" not in skip:
            postgres(spark, args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
