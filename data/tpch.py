"""Two versions of a TPC-H database with Diftong's test-case-2 injections (spec §5).

``generate_tpch(out_dir, scale)`` writes ``out_dir/old/<table>/`` (untouched data) and
``out_dir/new/<table>/`` (the same data with the injections) as Parquet, plus ``out_dir/facts.json``,
and returns the facts the size-independent acceptance formulas need (N_L, N_R, N_O, the duplicated
rows, the new row, the expected row statistics).

Injections in NEW, all disjoint from the lineitem rows whose ``l_returnflag`` is 'R':

* one new lineitem row with a fresh key (an existing order, the next free ``l_linenumber``);
* four existing non-'R' lineitem rows duplicated 1, 2, 3 and 10 extra times;
* every ``l_returnflag`` 'R' turned into 'r';
* every ``o_orderdate`` shifted by +1 day.

Two engines produce OLD: a small deterministic Spark generator (DataFrame API only; every value is a
hash of the seed and the row key, so the data does not depend on partitioning) for tests, and
``tpchgen-cli`` (the real TPC-H generator, Rust) for benchmark scale. Run as
``python -m dqkit.data.tpch OUT --scale 1``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import uuid
from datetime import date
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from dqkit.errors import DqkitError, ParameterError, SourceError

LINEITEM_KEY = ("l_orderkey", "l_linenumber")
#: Extra copies given to the four duplicated lineitem rows (spec §5: duplicated 1x, 2x, 3x, 10x).
EXTRA_COPIES = (1, 2, 3, 10)
TPCH_TABLES = ("customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier")
ENGINES = ("auto", "spark", "tpchgen")

_START = date(1992, 1, 1)
_CURRENT = date(1995, 6, 17)
_ORDER_DATE_SPAN = 2406 - 151  # TPC-H: order dates from STARTDATE to ENDDATE - 151 days
_INSTRUCT = ("DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN")
_MODES = ("REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB")
_PRIORITY = ("1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW")
_WORDS = ("furiously", "carefully", "quickly", "slyly", "blithely", "final", "regular", "express",
          "ironic", "pending", "bold", "even", "special", "silent", "unusual", "deposits", "requests",
          "accounts", "packages", "theodolites", "pinto", "beans", "foxes", "ideas", "platelets")
_DEC = "decimal(15,2)"


# ----------------------------------------------------------------------------------------------
# Spark engine
# ----------------------------------------------------------------------------------------------

def _uniform(seed: int, salt: str, lo: int, hi: int, *cols: Column) -> Column:
    """A deterministic pseudo-random integer in [lo, hi] from the seed, a salt and the row key."""
    return (F.pmod(F.xxhash64(F.lit(seed), F.lit(salt), *cols), F.lit(hi - lo + 1)) + F.lit(lo))


def _pick(seed: int, salt: str, choices: tuple[str, ...], *cols: Column) -> Column:
    idx = _uniform(seed, salt, 1, len(choices), *cols).cast("int")
    return F.element_at(F.array(*[F.lit(c) for c in choices]), idx)


def _comment(seed: int, salt: str, words: int, *cols: Column) -> Column:
    return F.concat_ws(" ", *[_pick(seed, f"{salt}{i}", _WORDS, *cols) for i in range(words)])


def spark_tables(spark: SparkSession, scale: float = 0.001, seed: int = 42,
                 rows: int | None = None) -> dict[str, DataFrame]:
    """Lazy TPC-H-like ``lineitem`` and ``orders`` DataFrames (the OLD version), deterministic in seed.

    ``scale`` follows TPC-H (1 ~ 1.5M orders, ~6M lineitem rows; 0.001 ~ 6000 lineitem rows). ``rows``
    overrides it with an exact lineitem row count (the first ``rows`` lines in key order), for tests.
    """
    if rows is not None:
        if rows < 1:
            raise ParameterError(f"rows must be at least 1, got {rows}")
        n_orders = rows  # every order has 1-7 lines, so this many orders always hold `rows` lines
    else:
        if not scale > 0:
            raise ParameterError(f"scale must be positive, got {scale}")
        n_orders = max(1, round(1_500_000 * scale))
    size = rows / 6_000_000 if rows is not None else scale
    n_part = max(1, round(200_000 * size))
    n_supp = max(1, round(10_000 * size))
    n_cust = max(1, round(150_000 * size))
    n_clerk = max(1, round(1_000 * size))
    parts = max(1, n_orders // 250_000 + 1)

    ok = F.col("o_orderkey")
    base = (spark.range(1, n_orders + 1, numPartitions=parts).select(F.col("id").alias("o_orderkey"))
            .withColumn("o_orderdate",
                        F.date_add(F.lit(_START), _uniform(seed, "odate", 0, _ORDER_DATE_SPAN - 1, ok).cast("int"))))

    lk = (F.col("l_orderkey"), F.col("l_linenumber"))
    partkey = F.col("l_partkey")
    retail = ((F.lit(90000) + F.pmod(F.floor(partkey / 10), F.lit(20001)) + F.pmod(partkey, F.lit(1000)) * 100)
              .cast("decimal(15,0)") / 100)
    lineitem = (
        base.select(F.col("o_orderkey").alias("l_orderkey"), F.col("o_orderdate").alias("_odate"),
                    F.explode(F.sequence(F.lit(1), _uniform(seed, "nlines", 1, 7, ok).cast("int")))
                    .alias("l_linenumber"))
        .withColumn("l_partkey", _uniform(seed, "part", 1, n_part, *lk))
        .withColumn("l_suppkey", _uniform(seed, "supp", 1, n_supp, *lk))
        .withColumn("l_quantity", _uniform(seed, "qty", 1, 50, *lk).cast(_DEC))
        .withColumn("l_extendedprice", (F.col("l_quantity") * retail).cast(_DEC))
        .withColumn("l_discount", (_uniform(seed, "disc", 0, 10, *lk) / 100).cast(_DEC))
        .withColumn("l_tax", (_uniform(seed, "tax", 0, 8, *lk) / 100).cast(_DEC))
        .withColumn("l_shipdate", F.date_add("_odate", _uniform(seed, "ship", 1, 121, *lk).cast("int")))
        .withColumn("l_commitdate", F.date_add("_odate", _uniform(seed, "commit", 30, 90, *lk).cast("int")))
        .withColumn("l_receiptdate", F.date_add("l_shipdate", _uniform(seed, "rcpt", 1, 30, *lk).cast("int")))
        .withColumn("l_returnflag",
                    F.when(F.col("l_receiptdate") <= F.lit(_CURRENT),
                           F.when(_uniform(seed, "flag", 0, 1, *lk) == 0, F.lit("R")).otherwise(F.lit("A")))
                    .otherwise(F.lit("N")))
        .withColumn("l_linestatus", F.when(F.col("l_shipdate") > F.lit(_CURRENT), F.lit("O")).otherwise(F.lit("F")))
        .withColumn("l_shipinstruct", _pick(seed, "instr", _INSTRUCT, *lk))
        .withColumn("l_shipmode", _pick(seed, "mode", _MODES, *lk))
        .withColumn("l_comment", _comment(seed, "lc", 4, *lk))
        .select("l_orderkey", "l_partkey", "l_suppkey", "l_linenumber", "l_quantity", "l_extendedprice",
                "l_discount", "l_tax", "l_returnflag", "l_linestatus", "l_shipdate", "l_commitdate",
                "l_receiptdate", "l_shipinstruct", "l_shipmode", "l_comment")
    )
    if rows is not None:
        lineitem = lineitem.orderBy(*LINEITEM_KEY).limit(rows)

    per_order = lineitem.groupBy(F.col("l_orderkey").alias("o_orderkey")).agg(
        F.sum(F.col("l_extendedprice") * (1 + F.col("l_tax")) * (1 - F.col("l_discount"))).cast(_DEC)
        .alias("o_totalprice"),
        F.min("l_linestatus").alias("_smin"), F.max("l_linestatus").alias("_smax"))
    orders = (
        base.join(per_order, "o_orderkey")
        .select(
            "o_orderkey",
            _uniform(seed, "cust", 1, n_cust, ok).alias("o_custkey"),
            F.when(F.col("_smin") == F.col("_smax"), F.col("_smin")).otherwise(F.lit("P")).alias("o_orderstatus"),
            "o_totalprice",
            "o_orderdate",
            _pick(seed, "prio", _PRIORITY, ok).alias("o_orderpriority"),
            F.format_string("Clerk#%09d", _uniform(seed, "clerk", 1, n_clerk, ok)).alias("o_clerk"),
            F.lit(0).alias("o_shippriority"),
            _comment(seed, "oc", 5, ok).alias("o_comment"),
        )
    )
    return {"lineitem": lineitem, "orders": orders}


# ----------------------------------------------------------------------------------------------
# tpchgen engine
# ----------------------------------------------------------------------------------------------

def tpchgen_path() -> str | None:
    """The ``tpchgen-cli`` executable (beside this Python first, then on PATH), or None."""
    beside = Path(sys.executable).with_name("tpchgen-cli")
    if beside.exists():
        return os.fspath(beside)
    return shutil.which("tpchgen-cli")


def _run_tpchgen(out: Path, scale: float) -> None:
    exe = tpchgen_path()
    if exe is None:
        raise DqkitError("tpchgen-cli is not installed",
                         hint="pip install tpchgen-cli (dqkit's 'bench' extra), or use engine='spark'")
    # Several parts per table give Spark several files to read in parallel; one subfolder per table.
    parts = max(1, min(16, math.ceil(scale * 4)))
    cmd = [exe, "parquet", "-s", repr(float(scale)), "-o", os.fspath(out), "--parts", str(parts), "-q"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise DqkitError(f"tpchgen-cli failed (exit {proc.returncode}): {proc.stderr.strip()[:2000]}",
                         hint="run the command by hand: " + " ".join(cmd))
    missing = [t for t in TPCH_TABLES if not (out / t).is_dir()]
    if missing:
        raise DqkitError(f"tpchgen-cli wrote no folder for {', '.join(missing)} in {out}")


# ----------------------------------------------------------------------------------------------
# Injections
# ----------------------------------------------------------------------------------------------

def inject(spark: SparkSession, lineitem: DataFrame, orders: DataFrame, seed: int = 42
           ) -> tuple[dict[str, DataFrame], dict[str, Any]]:
    """Apply the test-case-2 injections to OLD ``lineitem``/``orders``; return NEW and the facts.

    The four duplicated rows are the non-'R' rows first in the order of a seeded hash of their key
    (ties broken by the key), so the choice is deterministic for a seed. The new row copies the first
    of them with the next free ``l_linenumber`` of its order and a marked comment. Runs three small
    Spark jobs (the pick, the free line number, the counts); the returned DataFrames stay lazy.
    """
    for name, df, need in (("lineitem", lineitem, ("l_orderkey", "l_linenumber", "l_returnflag", "l_comment")),
                           ("orders", orders, ("o_orderdate",))):
        missing = [c for c in need if c not in df.columns]
        if missing:
            raise SourceError(f"{name} lacks the column(s) {', '.join(missing)}")
    cols = lineitem.columns
    flag = F.col("l_returnflag")
    order = F.xxhash64(F.lit(seed), *[F.col(k) for k in LINEITEM_KEY])
    picked = [r.asDict() for r in (lineitem.filter(flag != "R")
                                   .select(*LINEITEM_KEY, order.alias("_h"))
                                   .orderBy("_h", *LINEITEM_KEY).limit(len(EXTRA_COPIES)).collect())]
    if len(picked) < len(EXTRA_COPIES):
        raise ParameterError(f"lineitem has {len(picked)} rows whose l_returnflag is not 'R'; "
                             f"the injections need {len(EXTRA_COPIES)}",
                             hint="generate more rows (a larger scale or rows=)")
    first = picked[0]
    same_order = F.col("l_orderkey") == F.lit(first["l_orderkey"])
    free_line = lineitem.filter(same_order).agg(F.max("l_linenumber")).first()[0] + 1

    dup_keys = spark.createDataFrame(
        [(p["l_orderkey"], p["l_linenumber"], n) for p, n in zip(picked, EXTRA_COPIES)],
        "l_orderkey long, l_linenumber int, _extra int")
    key_types = {f.name: f.dataType for f in lineitem.schema.fields if f.name in LINEITEM_KEY}
    dup_keys = dup_keys.select(*[F.col(k).cast(key_types[k]) for k in LINEITEM_KEY], "_extra")
    duplicates = (lineitem.join(F.broadcast(dup_keys), list(LINEITEM_KEY))
                  .select(*cols, F.explode(F.sequence(F.lit(1), F.col("_extra"))).alias("_copy"))
                  .select(*cols))
    new_row = (lineitem.filter(same_order & (F.col("l_linenumber") == F.lit(first["l_linenumber"])))
               .withColumn("l_linenumber", F.lit(free_line).cast(key_types["l_linenumber"]))
               .withColumn("l_comment", F.lit("dqkit injected row"))
               .select(*cols))
    new_lineitem = (lineitem.withColumn("l_returnflag", F.when(flag == "R", F.lit("r")).otherwise(flag))
                    .select(*cols).unionByName(duplicates).unionByName(new_row))
    new_orders = orders.withColumn("o_orderdate", F.date_add("o_orderdate", 1)).select(*orders.columns)

    counts = lineitem.agg(F.count(F.lit(1)).alias("n"),
                          F.sum(F.when(flag == "R", 1).otherwise(0)).alias("r")).first()
    n_l, n_r = int(counts["n"]), int(counts["r"] or 0)
    n_o = orders.count()
    facts: dict[str, Any] = {
        "N_L": n_l, "N_R": n_r, "N_O": n_o,
        "duplicated": [{"l_orderkey": int(p["l_orderkey"]), "l_linenumber": int(p["l_linenumber"]),
                        "extra_copies": n} for p, n in zip(picked, EXTRA_COPIES)],
        "new_row": {"l_orderkey": int(first["l_orderkey"]), "l_linenumber": int(free_line)},
        "expected_row_stats": expected_row_stats(n_l, n_r, n_o),
    }
    return {"lineitem": new_lineitem, "orders": new_orders}, facts


def expected_row_stats(n_l: int, n_r: int, n_o: int) -> dict[str, dict[str, float]]:
    """Row statistics (1)-(8) the spec's §5 formulas predict for lineitem and orders."""
    extra = sum(EXTRA_COPIES) + 1
    diff_l = 2 * n_r + len(EXTRA_COPIES) * 2 + 1
    return {
        "lineitem": {"rows_old": n_l, "rows_new": n_l + extra, "rows_abs_diff": extra,
                     "dedup_rows_old": n_l, "dedup_rows_new": n_l + 1, "dedup_abs_diff": 1,
                     "differences": diff_l, "percent": round(100 * diff_l / (2 * n_l + 1), 1)},
        "orders": {"rows_old": n_o, "rows_new": n_o, "rows_abs_diff": 0,
                   "dedup_rows_old": n_o, "dedup_rows_new": n_o, "dedup_abs_diff": 0,
                   "differences": 2 * n_o, "percent": 100.0 if n_o else 0.0},
    }


# ----------------------------------------------------------------------------------------------
# Entry point
# ----------------------------------------------------------------------------------------------

def generate_tpch(out_dir: str | os.PathLike, scale: float, seed: int = 42,
                  spark: SparkSession | None = None, engine: str = "auto",
                  rows: int | None = None, overwrite: bool = False) -> dict[str, Any]:
    """Write OLD and NEW TPC-H databases under ``out_dir`` and return the facts (also in facts.json).

    ``engine``: "spark" (small, seeded, lineitem and orders only), "tpchgen" (all 8 tables from
    ``tpchgen-cli``; the seed then only picks the duplicated rows) or "auto" (tpchgen when installed
    and ``scale >= 0.1`` and no ``rows``, else spark). Everything is written to a temporary folder
    beside ``out_dir`` and renamed into place, so a failed run leaves nothing half-written; an
    existing ``out_dir`` is replaced only with ``overwrite=True``.
    """
    if engine not in ENGINES:
        raise ParameterError(f"unknown engine {engine!r}", hint=f"use one of {', '.join(ENGINES)}")
    if rows is None and not scale > 0:
        raise ParameterError(f"scale must be positive, got {scale}")
    if engine == "auto":
        engine = "tpchgen" if rows is None and scale >= 0.1 and tpchgen_path() else "spark"
    if engine == "tpchgen" and rows is not None:
        raise ParameterError("rows= works with the spark engine only", hint="use engine='spark'")
    out = Path(out_dir).resolve()
    if out.exists() and not overwrite:
        raise ParameterError(f"{out} already exists", hint="choose another folder or pass overwrite=True")
    from dqkit.runtime.session import get_spark

    spark = spark or get_spark()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        old, new = tmp / "old", tmp / "new"
        if engine == "tpchgen":
            _run_tpchgen(old, scale)
        else:
            for name, df in spark_tables(spark, scale, seed, rows).items():
                df.write.parquet((old / name).as_posix())
        # NEW is derived from OLD as written, so both engines share one injection path.
        old_li = spark.read.parquet((old / "lineitem").as_posix())
        old_or = spark.read.parquet((old / "orders").as_posix())
        new_tables, facts = inject(spark, old_li, old_or, seed)
        for name, df in new_tables.items():
            df.write.parquet((new / name).as_posix())
        for child in sorted(old.iterdir()):
            if child.is_dir() and child.name not in new_tables:
                shutil.copytree(child, new / child.name)  # untouched tables: byte-identical copies
        facts = {"engine": engine, "scale": scale, "seed": seed, "rows": rows,
                 "tables": sorted(c.name for c in old.iterdir() if c.is_dir()), **facts}
        (tmp / "facts.json").write_text(json.dumps(facts, indent=2) + "\n")
        if out.exists():
            trash = out.parent / f".{out.name}.old-{uuid.uuid4().hex[:8]}"
            out.rename(trash)
            tmp.rename(out)
            shutil.rmtree(trash, ignore_errors=True)
        else:
            tmp.rename(out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    facts["old"] = (out / "old").as_posix()
    facts["new"] = (out / "new").as_posix()
    return facts


def read_facts(out_dir: str | os.PathLike) -> dict[str, Any] | None:
    """The facts of a database pair written by :func:`generate_tpch`, or None if there is none."""
    path = Path(out_dir) / "facts.json"
    if not path.is_file():
        return None
    facts = json.loads(path.read_text())
    facts["old"] = (Path(out_dir).resolve() / "old").as_posix()
    facts["new"] = (Path(out_dir).resolve() / "new").as_posix()
    return facts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dqkit.data.tpch", description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", help="folder to create, holding old/, new/ and facts.json")
    parser.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor (1 ~ 6M lineitem rows)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--engine", choices=ENGINES, default="auto")
    parser.add_argument("--rows", type=int, default=None, help="exact lineitem rows (spark engine)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing out_dir")
    args = parser.parse_args(argv)
    try:
        facts = generate_tpch(args.out_dir, args.scale, seed=args.seed, engine=args.engine,
                              rows=args.rows, overwrite=args.overwrite)
    except DqkitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(facts, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
