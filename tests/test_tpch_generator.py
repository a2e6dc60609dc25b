"""The two-version TPC-H generator: deterministic per seed, test-case-2 injections exact, OLD untouched."""
from __future__ import annotations

import json

import pytest
from pyspark.sql import functions as F

from dqkit.data import tpch
from dqkit.errors import ParameterError

ROWS = 800
KEY = list(tpch.LINEITEM_KEY)


@pytest.fixture(scope="module")
def pair(spark, tmp_path_factory):
    out = tmp_path_factory.mktemp("tpch") / "db"
    facts = tpch.generate_tpch(out, scale=0.001, seed=7, spark=spark, engine="spark", rows=ROWS)
    return out, facts


def _read(spark, out, version, table):
    return spark.read.parquet((out / version / table).as_posix())


def _rows(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())  # small test tables only


def _same_rows(a, b) -> bool:
    return _rows(a) == _rows(b)


def test_facts_describe_old_and_are_saved(pair, spark):
    out, facts = pair
    old_li = _read(spark, out, "old", "lineitem")
    assert facts["N_L"] == ROWS == old_li.count()
    assert facts["N_R"] == old_li.filter(F.col("l_returnflag") == "R").count() > 0
    assert facts["N_O"] == _read(spark, out, "old", "orders").count() > 0
    assert [d["extra_copies"] for d in facts["duplicated"]] == [1, 2, 3, 10]
    saved = json.loads((out / "facts.json").read_text())
    assert saved["N_L"] == facts["N_L"] and saved["duplicated"] == facts["duplicated"]
    assert sorted(p.name for p in (out / "old").iterdir()) == ["lineitem", "orders"]
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no temp folder left


def test_new_lineitem_has_17_more_rows_and_one_more_distinct_row(pair, spark):
    out, facts = pair
    new_li = _read(spark, out, "new", "lineitem")
    assert new_li.count() == facts["N_L"] + 17
    assert new_li.distinct().count() == facts["N_L"] + 1
    counts = {(r["l_orderkey"], r["l_linenumber"]): r["count"]
              for r in new_li.groupBy(*KEY).count().filter("count > 1").collect()}
    assert counts == {(d["l_orderkey"], d["l_linenumber"]): 1 + d["extra_copies"] for d in facts["duplicated"]}


def test_new_row_has_a_fresh_key_and_no_R_flag(pair, spark):
    out, facts = pair
    key = facts["new_row"]
    cond = (F.col("l_orderkey") == key["l_orderkey"]) & (F.col("l_linenumber") == key["l_linenumber"])
    assert _read(spark, out, "old", "lineitem").filter(cond).count() == 0
    rows = _read(spark, out, "new", "lineitem").filter(cond).collect()
    assert len(rows) == 1 and rows[0]["l_returnflag"] in ("A", "N")


def test_every_R_flag_becomes_r_and_nothing_else_changes(pair, spark):
    out, facts = pair
    old_li = _read(spark, out, "old", "lineitem")
    new_li = _read(spark, out, "new", "lineitem")
    flags = dict(new_li.groupBy("l_returnflag").count().collect())
    assert "R" not in flags and flags["r"] == facts["N_R"]
    # Undo the flag change and the added rows: exactly OLD again.
    undone = (new_li.dropDuplicates()
              .withColumn("l_returnflag", F.when(F.col("l_returnflag") == "r", "R").otherwise(F.col("l_returnflag")))
              .join(old_li.select(*KEY), KEY, "left_semi").select(*old_li.columns))
    assert _same_rows(undone, old_li)
    dups = {(d["l_orderkey"], d["l_linenumber"]) for d in facts["duplicated"]}
    r_keys = {tuple(r) for r in old_li.filter(F.col("l_returnflag") == "R").select(*KEY).collect()}
    assert not dups & r_keys  # spec §5 precondition: duplicated rows are disjoint from the 'R' rows


def test_every_order_date_moves_by_exactly_one_day(pair, spark):
    out, facts = pair
    old_o = _read(spark, out, "old", "orders").alias("o")
    new_o = _read(spark, out, "new", "orders").alias("n")
    joined = old_o.join(new_o, "o_orderkey")
    assert joined.count() == facts["N_O"] == new_o.count()
    shifts = joined.select(F.datediff("n.o_orderdate", "o.o_orderdate").alias("d")).distinct().collect()
    assert [r["d"] for r in shifts] == [1]
    others = [c for c in old_o.columns if c != "o_orderdate"]
    assert _same_rows(old_o.select(*others), new_o.select(*others))


def test_old_is_exactly_the_generator_output_for_its_seed(pair, spark):
    out, _ = pair
    again = tpch.spark_tables(spark, seed=7, rows=ROWS)
    other = tpch.spark_tables(spark, seed=8, rows=ROWS)
    old_li = _rows(_read(spark, out, "old", "lineitem"))
    assert old_li == _rows(again["lineitem"].repartition(3))  # deterministic whatever the partitioning
    assert old_li != _rows(other["lineitem"])
    assert _same_rows(_read(spark, out, "old", "orders"), again["orders"])


def test_lineitem_schema_is_tpch_like(pair, spark):
    out, _ = pair
    types = dict(_read(spark, out, "old", "lineitem").dtypes)
    assert types["l_orderkey"] == "bigint" and types["l_linenumber"] == "int"
    assert types["l_quantity"] == "decimal(15,2)" and types["l_shipdate"] == "date"
    assert set(dict(_read(spark, out, "old", "lineitem").groupBy("l_returnflag").count().collect())) <= {"R", "A", "N"}


def test_existing_output_is_refused_without_overwrite(pair, spark):
    out, _ = pair
    with pytest.raises(ParameterError, match="already exists"):
        tpch.generate_tpch(out, scale=0.001, spark=spark, engine="spark", rows=ROWS)
    with pytest.raises(ParameterError, match="engine"):
        tpch.generate_tpch(out.parent / "x", scale=0.001, spark=spark, engine="duckdb")
    assert not (out.parent / "x").exists()


def test_expected_row_stats_follow_the_spec_formulas():
    # Spec §5 worked example: 30 rows, 10 'R' rows -> (2) 47, (5) 31, (7) 29.
    stats = tpch.expected_row_stats(30, 10, 5)["lineitem"]
    assert (stats["rows_new"], stats["dedup_rows_new"], stats["differences"]) == (47, 31, 29)
    assert stats["percent"] == round(100 * 29 / 61, 1)


@pytest.mark.skipif(tpch.tpchgen_path() is None, reason="tpchgen-cli not installed")
def test_tpchgen_engine_writes_all_eight_tables(spark, tmp_path):
    facts = tpch.generate_tpch(tmp_path / "db", scale=0.001, spark=spark, engine="tpchgen")
    assert facts["tables"] == list(tpch.TPCH_TABLES)
    new_li = spark.read.parquet(facts["new"] + "/lineitem")
    assert new_li.count() == facts["N_L"] + 17
    region_old = spark.read.parquet(facts["old"] + "/region")
    assert _same_rows(region_old, spark.read.parquet(facts["new"] + "/region"))
