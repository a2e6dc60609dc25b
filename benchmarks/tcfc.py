"""TCFC benchmark (spec §6.1): dqkit.tcfc against the relational baselines, side by side in one process.

Workloads
* W1 (exam-like, the paper's exam100M at a size this machine holds): exam(student_id, course_id,
  exam_date, has_passed), ~100 rows per student, PK (student_id, course_id, exam_date); Parquet copies
  "sorted" by student_id (row-group statistics allow skipping) and "shuffled". Strategy as Table 1:
  listX = <{student_id}, {student_id, course_id, exam_date}>, A = {count(has_passed)}.
* W2 (TPC-H lineitem, dqkit's deterministic Spark generator ``data/tpch.py``): <{l_partkey},
  {l_partkey, l_suppkey, l_orderkey}> when that triple is unique in the generated data, else
  <{l_orderkey}, {l_orderkey, l_linenumber}> (the variant is printed).

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

Result reuse is off throughout (U4). Example (small, what the README reports):
    python benchmarks/tcfc.py --rows 100000 --d 0,1,5,20 --dispersion 20,100 --reps 1
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


def inject(table: pa.Table, frag_col: str, d_per_mille: float, dispersion: float, seed: int = 11) -> tuple[pa.Table, int]:
    """Delete round(d * N / 1000) rows spread evenly over ceil(dispersion * F) random level-1 fragments."""
    n = table.num_rows
    k = int(round(d_per_mille * n / 1000))
    if k == 0:
        return table, 0
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
    return table.filter(pa.array(mask)), k


def write(table: pa.Table, path: Path, layout: str, sort_col: str, seed: int = 3) -> str:
    if layout == "sorted":
        table = table.sort_by([(sort_col, "ascending")])
    else:
        table = table.take(pa.array(np.random.default_rng(seed).permutation(table.num_rows)))
    path.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path / "part-0.parquet", row_group_size=16384)
    (path / "_SUCCESS").touch()
    return str(path)


def timed(fn, reps: int) -> tuple[float, object]:
    out = fn()  # warm-up (also the value used for checks)
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


def w1(spark, args, work: Path) -> None:
    from dqkit.tcfc import tcfc

    base = make_exam(args.rows)
    levels = [["student_id"], KEY]
    print(f"\n== W1 exam-like: {base.num_rows} rows, {base.num_rows // 100} students (level-1 fragments) ==")
    print("layout   d‰  δ%  deleted  t_tcfc  t_foj  t_except  floor  ratio(tcfc/foj)  foj/tcfc  except/tcfc  "
          "tcfc/floor  queries  bytes  correct")
    for layout in args.layouts:
        src = write(base, work / f"w1_{layout}_src", layout, "student_id")
        curve: dict[float, list[tuple[float, float]]] = {}
        for disp in args.dispersion:
            for d in args.d:
                if d == 0 and disp != args.dispersion[0]:
                    continue
                tgt_tab, k = inject(base, "student_id", d, disp / 100)
                tgt = write(tgt_tab, work / f"w1_{layout}_{d}_{disp}", layout, "student_id")
                spec = tcfc_spec("exam", src, tgt, levels, "has_passed")
                t_tcfc, res = timed(lambda: tcfc(spec, spark=spark), args.reps)
                t_foj, _ = timed(lambda: run_foj(spark, src, tgt, KEY, ["has_passed"]), args.reps)
                t_exc, _ = timed(lambda: run_except(spark, src, tgt), args.reps)
                t_floor, _ = timed(lambda: floor(spark, src, tgt), args.reps)
                got = {d_.values for d_ in res.differences if d_.level == 2 and d_.kind == "MISSING"}
                want = missing_set(spark, src, tgt, KEY, ["has_passed"])
                ok = got == want and res.status == "COMPLETED" and len(want) == k
                ratio = t_tcfc / t_foj
                for dd in ([disp] if d else args.dispersion):
                    curve.setdefault(dd, []).append((d, ratio))
                print(f"{layout:8} {d:3g} {disp:3g} {k:8d} {t_tcfc:7.2f} {t_foj:6.2f} {t_exc:9.2f} {t_floor:6.2f} "
                      f"{ratio * 100:14.0f}% {t_foj / t_tcfc:9.2f} {t_exc / t_tcfc:12.2f} {t_tcfc / t_floor:11.2f} "
                      f"{res.queries:8d} {res.bytes_crossed:6d}  {ok}")
                res.close()
        for disp, pts in sorted(curve.items()):
            print(f"   d*({layout}, δ={disp:g}%) = {crossover(pts)}")


def w2(spark, args, work: Path) -> None:
    from pyspark.sql import functions as F

    from data.tpch import spark_tables
    from dqkit.tcfc import tcfc

    li = spark_tables(spark, scale=args.tpch_scale)["lineitem"]
    n = li.count()
    triple = ["l_partkey", "l_suppkey", "l_orderkey"]
    unique = li.select(*triple).distinct().count() == n
    levels = [["l_partkey"], triple] if unique else [["l_orderkey"], ["l_orderkey", "l_linenumber"]]
    key = levels[1]
    print(f"\n== W2 TPC-H lineitem (dqkit generator, scale {args.tpch_scale}): {n} rows; "
          f"(partkey, suppkey, orderkey) unique: {unique}; levels {levels} ==")
    table = pa.Table.from_pandas(li.select(*key, "l_quantity").withColumn("l_quantity", F.col("l_quantity").cast("double"))
                                 .toPandas(), preserve_index=False)  # bounded: the benchmark's own small table
    src = write(table, work / "w2_src", "sorted", levels[0][0])
    print("d‰  δ%  t_tcfc  t_foj  t_except  ratio  queries  correct")
    for d in [x for x in args.d if x <= 1] or [0]:
        disp = args.dispersion[0]
        tgt_tab, k = inject(table, levels[0][0], d, disp / 100)
        tgt = write(tgt_tab, work / f"w2_{d}", "sorted", levels[0][0])
        spec = tcfc_spec("lineitem", src, tgt, levels, "l_quantity")
        t_tcfc, res = timed(lambda: tcfc(spec, spark=spark), args.reps)
        t_foj, _ = timed(lambda: run_foj(spark, src, tgt, key, ["l_quantity"]), args.reps)
        t_exc, _ = timed(lambda: run_except(spark, src, tgt), args.reps)
        got = {d_.values for d_ in res.differences if d_.level == 2 and d_.kind == "MISSING"}
        ok = got == missing_set(spark, src, tgt, key, ["l_quantity"])
        print(f"{d:3g} {disp:3g} {t_tcfc:7.2f} {t_foj:6.2f} {t_exc:9.2f} {t_tcfc / t_foj * 100:5.0f}% {res.queries:8d}  {ok}")
        res.close()


def postgres(spark, args, work: Path) -> None:
    import psycopg

    try:
        import pgserver
    except ImportError:
        print("\n== PostgreSQL: pgserver not installed; skipped ==")
        return
    from dqkit.tcfc import GRACE_S, tcfc

    folder = Path(tempfile.mkdtemp(prefix="dqkit-bench-pg-"))
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp(prefix="dqkit-xdg-"))
    srv = pgserver.get_server(folder, cleanup_mode="stop")
    try:
        url = srv.get_uri()
        n = args.pg_rows
        base = make_exam(n)
        tgt_tab, k = inject(base, "student_id", 1.0, args.dispersion[0] / 100)
        with psycopg.connect(url, autocommit=True) as c:
            c.execute("CREATE DATABASE src")
            c.execute("CREATE DATABASE tgt")
        urls = {db: url.replace("/postgres?", f"/{db}?") for db in ("src", "tgt")}
        for db, tab in (("src", base), ("tgt", tgt_tab)):
            with psycopg.connect(urls[db], autocommit=True) as c:
                # id: an integer key beside the paper's (reladiff cannot key on a date column)
                c.execute("CREATE TABLE exam (id bigint PRIMARY KEY, student_id bigint, course_id bigint, "
                          "exam_date date, has_passed bigint)")
                ids = [s_ * 1000 + j for s_, j in zip(tab.column(0).to_pylist(),
                                                     [d.toordinal() % 1000 for d in tab.column(2).to_pylist()])]
                with c.cursor().copy("COPY exam FROM STDIN") as cp:
                    for row in zip(ids, *[tab.column(i).to_pylist() for i in range(4)]):
                        cp.write_row(row)
                c.execute("CREATE INDEX ON exam (student_id, id)")
                c.execute("ANALYZE exam")
        print(f"\n== PostgreSQL <-> PostgreSQL (pgserver, two databases): {n} rows, d = 1 per mille ({k} deleted) ==")
        spec = tcfc_spec("exam", "exam", "exam", [["student_id"], ["student_id", "id"]], "has_passed",
                         urls["src"], urls["tgt"])
        t_tcfc, res = timed(lambda: tcfc(spec), args.reps)
        print(f"TCFC: {t_tcfc:.2f} s, {res.queries} queries, {res.bytes_crossed} bytes crossed, "
              f"{sum(1 for d_ in res.differences if d_.level == 2)} key-level differences (expected {k})")
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

            t_rd, diff = timed(rd, args.reps)
            print(f"reladiff (hash bisection): {t_rd:.2f} s, {len(diff)} differences; reladiff/tcfc = {t_rd / t_tcfc:.2f}")
        except Exception as exc:  # noqa: BLE001 - a peer that does not run here is reported, not fatal
            print(f"reladiff: not run ({type(exc).__name__}: {str(exc).splitlines()[0][:160]})")
        # Spark <-> PostgreSQL: bytes that crossed are aggregates only
        src_parquet = write(base, work / "pg_src", "sorted", "student_id")
        cross = {"pairs": [{"name": "exam", "source": {"table": src_parquet}, "target": {"url": urls["tgt"], "table": "exam"},
                            "aggregates": [["count", "has_passed", "recCount"]], "levels": [["student_id"], KEY]}]}
        t_x, res = timed(lambda: tcfc(cross, spark=spark), args.reps)
        raw = base.nbytes
        print(f"Spark <-> PostgreSQL: {t_x:.2f} s, {res.queries} queries, {res.bytes_crossed} bytes crossed "
              f"(aggregates only; the table itself is {raw} bytes in Arrow), {len(res.differences)} differing fragments")
        res.close()
        # §6.1 item 5: 10 pairs, 2 with differences, budget = the largest pair's baseline time.
        # Strategy per §3.4: roots X = [] with COUNT, then student_id, then the key.
        sizes = [args.pg_rows * (i + 1) // 2 for i in range(10)]
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
              f"(both differing pairs flagged: {set(res.differing_pairs()) >= {'p3', 'p8'}}), queries {res.queries}")
        res.close()
    finally:
        srv.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=100_000, help="W1 rows (10M on a dedicated 2-core machine)")
    p.add_argument("--d", default="0,1,5,20", help="per mille deleted, comma-separated")
    p.add_argument("--dispersion", default="20,100", help="percent of level-1 fragments holding the deletions")
    p.add_argument("--layouts", default="sorted,shuffled")
    p.add_argument("--reps", type=int, default=1)
    p.add_argument("--tpch-scale", type=float, default=0.01)
    p.add_argument("--pg-rows", type=int, default=50_000)
    p.add_argument("--skip", default="", help="comma-separated parts to skip: w1,w2,pg")
    args = p.parse_args(argv)
    args.d = [float(x) for x in args.d.split(",")]
    args.dispersion = [float(x) for x in args.dispersion.split(",")]
    args.layouts = args.layouts.split(",")
    skip = set(args.skip.split(","))
    from dqkit.session import get_spark

    spark = get_spark(master="local[2]", config={"spark.sql.shuffle.partitions": "4"})
    print(f"load: {os.getloadavg()}; cores: {os.cpu_count()}; Spark local[2], 4 shuffle partitions; reuse off")
    work = Path(tempfile.mkdtemp(prefix="dqkit-bench-tcfc-"))
    try:
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
