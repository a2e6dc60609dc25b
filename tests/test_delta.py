"""Diftong's delta: the paper's scenarios as golden tests, oracle properties, and bad input."""
from __future__ import annotations

import datetime as dt
import json
import os
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from dqkit.delta import delta
from dqkit.errors import (
    ParameterError,
    ReservedColumnError,
    SchemaMismatchError,
    SourceError,
    UnknownColumnError,
    UnknownTableError,
    UnsupportedTypeError,
)
from dqkit.runtime.sparkutil import executed_plan

USERS = "data/users"


def _frame(rows):
    return {tuple(r) for r in rows}


# ---------------------------------------------------------------- the paper's running example

@pytest.fixture(scope="module")
def users_result(spark):
    return delta(f"{USERS}/old", f"{USERS}/new", keys={"users": "id"}, spark=spark)


def test_users_example_has_71_4_percent_difference(users_result):
    s = users_result.tables["users"].row_stats
    assert (s["rows_old"], s["rows_new"], s["rows_abs_diff"]) == (3, 5, 2)
    assert (s["dedup_rows_old"], s["dedup_rows_new"], s["dedup_abs_diff"]) == (3, 4, 1)
    assert s["differences"] == 5 and s["percent"] == 71.4
    assert not users_result.identical


def test_the_stage_seconds_account_for_the_whole_total(users_result):
    seconds = users_result.seconds
    assert {"read", "plan", "dedup", "row", "column"} <= set(seconds)
    stages = sum(v for k, v in seconds.items() if k != "total")
    assert abs(stages - seconds["total"]) <= 0.1 * seconds["total"] + 0.5


def test_users_dedup_gives_row_count_2_for_the_duplicated_id(users_result):
    ddb2 = {r.id: r.row_count for r in users_result.dedup("users", "new").collect()}
    assert ddb2 == {1: 1, 2: 2, 3: 1, 4: 1}
    assert {r.row_count for r in users_result.dedup("users", "old").collect()} == {1}


def test_users_row_delta_marks_updates_as_delete_plus_insert(users_result):
    rows = {(r.id, r.row_count, r.validation_status) for r in users_result.row_delta("users").collect()}
    assert rows == {(2, 1, "DELETE"), (2, 2, "INSERT"), (3, 1, "DELETE"), (3, 1, "INSERT"), (4, 1, "INSERT")}


def test_users_column_stats_show_one_difference_per_column_with_equal_statistics(users_result):
    stats = users_result.tables["users"].column_stats
    assert set(stats) == {"name", "salary", "birthday", "row_count"}
    for col, s in stats.items():
        assert s["count"] == 1, col
        assert s["min"] == s["max"] == s["q1"] == s["median"] == s["q3"], col


def test_users_col_delta_excludes_identical_and_one_sided_rows(users_result):
    ids = {r.id for r in users_result.col_delta("users").collect()}
    assert ids == {2, 3}


def test_users_update_view_lists_changed_columns(users_result):
    ups = {r.id: sorted(r.changed_columns) for r in users_result.updates("users").collect()}
    assert ups == {2: ["row_count"], 3: ["birthday", "name", "salary"]}


def test_users_row_delta_patches_ddb1_into_ddb2(users_result):
    ddb1 = _frame(users_result.dedup("users", "old").collect())
    ddb2 = _frame(users_result.dedup("users", "new").collect())
    rd = users_result.row_delta("users").collect()
    deletes = {tuple(r)[:-1] for r in rd if r.validation_status == "DELETE"}
    inserts = {tuple(r)[:-1] for r in rd if r.validation_status == "INSERT"}
    assert (ddb1 - deletes) | inserts == ddb2


def test_calc_diff_units_string_is_edit_distance_date_is_days_row_count_is_absolute(spark):
    old = spark.createDataFrame([(1, "R", dt.date(2020, 1, 1), 1.5, True)],
                                "k int, flag string, d date, x double, b boolean")
    new = spark.createDataFrame([(1, "r", dt.date(2020, 1, 2), 1.0, False)] + [(2, "N", None, None, None)] * 11,
                                "k int, flag string, d date, x double, b boolean")
    old = old.unionByName(spark.createDataFrame([(2, "N", None, None, None)], old.schema))
    res = delta({"t": old}, {"t": new}, keys={"t": "k"}, spark=spark)
    deltas = {r.k: r.asDict() for r in res.col_delta("t").collect()}
    assert deltas[1]["flag"] == 1 and deltas[1]["d"] == 1 and deltas[1]["x"] == 0.5 and deltas[1]["b"] == 1
    assert deltas[2]["row_count"] == 10 and deltas[2]["flag"] is None


# ---------------------------------------------------------------- quartiles

def test_quartiles_of_row_count_deltas_1_2_3_10_are_exact_interpolated(spark):
    base = spark.createDataFrame([(i, f"v{i}") for i in range(6)], "k int, v string")
    extra = [(0, "v0")] * 1 + [(1, "v1")] * 2 + [(2, "v2")] * 3 + [(3, "v3")] * 10
    new = base.unionByName(spark.createDataFrame(extra, base.schema))
    res = delta({"t": base}, {"t": new}, keys={"t": "k"}, spark=spark)
    s = res.tables["t"].column_stats["row_count"]
    assert (s["count"], s["min"], s["max"]) == (4, 1, 10)
    assert (s["q1"], s["median"], s["q3"]) == (1.75, 2.5, 4.75)
    assert res.tables["t"].column_stats["v"] == {"count": 0, "max": None, "min": None, "q1": None,
                                                 "median": None, "q3": None, "null_changes": 0}


# ---------------------------------------------------------------- TPC-H test cases 1 and 2

def _tpch_like(spark, n_l=30, n_r=10):
    """Test case 2 at small scale: N_L lineitem rows of which N_R have flag 'R', plus orders."""
    flags = ["R"] * n_r + ["A", "N"] * ((n_l - n_r) // 2) + ["A"] * ((n_l - n_r) % 2)
    lineitem = spark.createDataFrame(
        [(i // 3 + 1, i % 3 + 1, float(i), flags[i], dt.date(1995, 1, 1) + dt.timedelta(days=i)) for i in range(n_l)],
        "l_orderkey long, l_linenumber int, l_price double, l_returnflag string, l_shipdate date")
    orders = spark.createDataFrame([(k, dt.date(1994, 1, 1) + dt.timedelta(days=k), "x") for k in range(1, 11)],
                                   "o_orderkey long, o_orderdate date, o_comment string")
    non_r = lineitem.filter("l_returnflag != 'R'").orderBy("l_orderkey", "l_linenumber").limit(4).collect()
    dups = []
    for row, times in zip(non_r, (1, 2, 3, 10)):
        dups += [tuple(row)] * times
    new_row = [(10_000, 1, 1.0, "A", dt.date(1999, 1, 1))]
    li_new = (lineitem.withColumn("l_returnflag", F.when(F.col("l_returnflag") == "R", "r")
                                  .otherwise(F.col("l_returnflag")))
              .unionByName(spark.createDataFrame(dups + new_row, lineitem.schema)))
    or_new = orders.withColumn("o_orderdate", F.date_add("o_orderdate", 1))
    return {"lineitem": lineitem, "orders": orders}, {"lineitem": li_new, "orders": or_new}


def test_case_1_an_identical_copy_has_no_differences_and_column_validation_stops(spark):
    old, _ = _tpch_like(spark)
    copy = {n: df.select("*") for n, df in old.items()}
    res = delta(old, copy, keys={"lineitem": ["l_orderkey", "l_linenumber"], "orders": "o_orderkey"}, spark=spark)
    assert res.identical
    for s in res.row_stats.to_dict("records"):
        assert (s["rows_abs_diff"], s["dedup_abs_diff"], s["differences"], s["percent"]) == (0, 0, 0, 0.0)
    assert all(t.column_stats is None for t in res.tables.values())
    assert any("column validation stopped" in m for m in res.messages)


def test_case_2_small_scale_meets_every_formula(spark):
    n_l, n_r = 30, 10
    old, new = _tpch_like(spark, n_l, n_r)
    res = delta(old, new, keys={"lineitem": ["l_orderkey", "l_linenumber"], "orders": "o_orderkey"}, spark=spark)
    li = res.tables["lineitem"].row_stats
    assert (li["rows_old"], li["rows_new"], li["rows_abs_diff"]) == (n_l, n_l + 17, 17)
    assert (li["dedup_rows_old"], li["dedup_rows_new"], li["dedup_abs_diff"]) == (n_l, n_l + 1, 1)
    assert li["differences"] == 2 * n_r + 9
    assert li["percent"] == round(100 * (2 * n_r + 9) / (2 * n_l + 1), 1)
    cs = res.tables["lineitem"].column_stats
    assert cs["l_returnflag"]["count"] == n_r
    assert cs["l_returnflag"]["min"] == cs["l_returnflag"]["max"] == cs["l_returnflag"]["median"] == 1
    assert (cs["row_count"]["count"], cs["row_count"]["min"], cs["row_count"]["max"]) == (4, 1, 10)
    assert (cs["row_count"]["q1"], cs["row_count"]["median"], cs["row_count"]["q3"]) == (1.75, 2.5, 4.75)
    assert cs["l_price"]["count"] == cs["l_shipdate"]["count"] == 0
    inserts_only = res.row_delta("lineitem").filter("l_orderkey = 10000").collect()
    assert [r.validation_status for r in inserts_only] == ["INSERT"]
    assert res.col_delta("lineitem").filter("l_orderkey = 10000").count() == 0
    o = res.tables["orders"].row_stats
    assert (o["rows_abs_diff"], o["dedup_abs_diff"], o["differences"], o["percent"]) == (0, 0, 20, 100.0)
    od = res.tables["orders"].column_stats["o_orderdate"]
    assert od["count"] == 10 and od["min"] == od["max"] == 1


def test_excluding_o_orderdate_makes_the_orders_difference_disappear(spark):
    old, new = _tpch_like(spark)
    res = delta(old, new, tables=["orders"], exclude=["orders.o_orderdate"], spark=spark)
    o = res.tables["orders"].row_stats
    assert (o["differences"], o["percent"]) == (0, 0.0)
    assert res.identical


def test_stages_run_separately_and_the_column_stage_reuses_the_row_stage(spark):
    old, new = _tpch_like(spark)
    keys = {"orders": "o_orderkey"}
    dedup_only = delta(old, new, tables=["orders"], stages="dedup", spark=spark)
    assert "differences" not in dedup_only.tables["orders"].row_stats
    assert dedup_only.tables["orders"].row_stats["dedup_rows_old"] == 10
    row = delta(old, new, tables=["orders"], stages=["dedup", "row"], keys=keys, spark=spark)
    col = delta(old, new, tables=["orders"], stages="column", keys=keys, previous=row, spark=spark)
    assert col.tables["orders"].row_delta is row.tables["orders"].row_delta
    assert col.tables["orders"].column_stats["o_orderdate"]["count"] == 10


# ---------------------------------------------------------------- properties against an oracle

ROW = st.tuples(st.one_of(st.none(), st.integers(0, 3)), st.one_of(st.none(), st.sampled_from(["a", "b", ""])))


# Spark-backed: a handful of examples per run (DQKIT_DELTA_EXAMPLES=N runs N of each property)
@settings(max_examples=int(os.environ.get("DQKIT_DELTA_EXAMPLES", "8")), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(ROW, max_size=10), st.lists(ROW, max_size=10), st.integers(1, 5))
def test_row_statistics_and_patch_property_match_a_brute_force_oracle(spark, old_rows, new_rows, parts):
    schema = "k int, v string"
    old = spark.createDataFrame(old_rows, schema).repartition(parts)
    new = spark.createDataFrame(new_rows, schema).coalesce(1)
    res = delta({"t": old}, {"t": new}, stages="dedup,row", spark=spark)
    co, cn = Counter(old_rows), Counter(new_rows)
    differ = [r for r in set(co) | set(cn) if co[r] != cn[r]]
    s = res.tables["t"].row_stats
    assert (s["rows_old"], s["rows_new"]) == (len(old_rows), len(new_rows))
    assert (s["dedup_rows_old"], s["dedup_rows_new"]) == (len(co), len(cn))
    assert s["differences"] == sum((co[r] > 0) + (cn[r] > 0) for r in differ)
    total = len(co) + len(cn)
    assert s["percent"] == (0.0 if total == 0 else round(100 * s["differences"] / total + 1e-9, 1))
    ddb1 = {(*r, c) for r, c in co.items()}
    ddb2 = {(*r, c) for r, c in cn.items()}
    rd = res.row_delta("t").collect()
    deletes = {(r.k, r.v, r.row_count) for r in rd if r.validation_status == "DELETE"}
    inserts = {(r.k, r.v, r.row_count) for r in rd if r.validation_status == "INSERT"}
    assert (ddb1 - deletes) | inserts == ddb2 and deletes <= ddb1 and not (inserts & ddb1)


@settings(max_examples=int(os.environ.get("DQKIT_DELTA_EXAMPLES", "4")), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(ROW, min_size=1, max_size=12), st.lists(ROW, min_size=1, max_size=12))
def test_results_do_not_depend_on_row_order_or_partition_count(spark, old_rows, new_rows):
    schema = "k int, v string"
    a = delta({"t": spark.createDataFrame(old_rows, schema).repartition(4)},
              {"t": spark.createDataFrame(new_rows, schema)}, keys={"t": "k"}, spark=spark)
    b = delta({"t": spark.createDataFrame(old_rows[::-1], schema).coalesce(1)},
              {"t": spark.createDataFrame(new_rows[::-1], schema).repartition(3)}, keys={"t": "k"}, spark=spark)
    assert a.to_dict()["tables"]["t"]["row_stats"] == b.to_dict()["tables"]["t"]["row_stats"]
    assert a.tables["t"].column_stats == b.tables["t"].column_stats
    assert sorted(map(tuple, a.row_delta("t").collect()), key=repr) == sorted(
        map(tuple, b.row_delta("t").collect()), key=repr)


# ---------------------------------------------------------------- beyond the paper

def test_float_tolerance_treats_close_values_as_equal_in_column_validation(spark):
    old = spark.createDataFrame([(1, 100.0, "a"), (2, 5.0, "b")], "k int, x double, s string")
    new = spark.createDataFrame([(1, 100.0000001, "a"), (2, 6.0, "b")], "k int, x double, s string")
    exact = delta({"t": old}, {"t": new}, keys={"t": "k"}, spark=spark)
    loose = delta({"t": old}, {"t": new}, keys={"t": "k"}, abs_tol=1e-3, spark=spark)
    assert exact.tables["t"].column_stats["x"]["count"] == 2
    assert loose.tables["t"].column_stats["x"]["count"] == 1
    assert loose.tables["t"].column_stats["x"]["max"] == pytest.approx(1.0)
    rel = delta({"t": old}, {"t": new}, keys={"t": "k"}, rel_tol=0.5, spark=spark)
    assert rel.tables["t"].column_stats["x"]["count"] == 0


def test_composite_keys_pair_rows_and_null_to_value_changes_are_counted(spark):
    old = spark.createDataFrame([(1, 1, "a"), (1, 2, None)], "a int, b int, v string")
    new = spark.createDataFrame([(1, 1, "z"), (1, 2, "q")], "a int, b int, v string")
    res = delta({"t": old}, {"t": new}, keys={"t": ["a", "b"]}, spark=spark)
    s = res.tables["t"].column_stats["v"]
    assert s["count"] == 2 and s["null_changes"] == 1 and s["min"] == s["max"] == 1
    nulls = {(r.a, r.b): r.null_changes for r in res.col_delta("t").collect()}
    assert nulls == {(1, 1): [], (1, 2): ["v"]}


def test_a_non_unique_key_is_warned_about_and_never_cross_joined(spark):
    old = spark.createDataFrame([(1, "a"), (1, "b"), (2, "c")], "k int, v string")
    new = spark.createDataFrame([(1, "x"), (1, "y"), (2, "d")], "k int, v string")
    res = delta({"t": old}, {"t": new}, keys={"t": "k"}, spark=spark)
    p = res.tables["t"].pairing
    assert p["paired"] == 1 and p["ambiguous_key_rows"] == 4
    assert res.col_delta("t").count() == 1
    assert any("not unique" in m for m in res.messages)


def test_no_answer_rests_on_observed_metrics(spark, monkeypatch):
    """Spark's observed metrics (``Dataset.observe``) can come back partial after a lost executor
    (a cluster run once reported 150,185 of 300,000 rows with exit 1 as usual); every count delta
    reports must come from ordinary query results, which Spark recomputes exactly."""
    from pyspark.sql import DataFrame

    def refuse(*args, **kwargs):
        raise AssertionError("delta must not use observed metrics")

    monkeypatch.setattr(DataFrame, "observe", refuse)
    old = spark.createDataFrame([(1, "a"), (1, "b"), (2, "c"), (5, "e")], "k int, v string")
    new = spark.createDataFrame([(1, "x"), (1, "y"), (2, "d"), (5, "e"), (6, "f")], "k int, v string")
    res = delta({"t": old}, {"t": new}, keys={"t": "k"}, spark=spark)
    t = res.tables["t"]
    assert t.row_stats["differences"] == 7 and t.row_stats["dedup_rows_new"] == 5
    assert t.row_stats["rows_old"] == 4 and t.row_stats["rows_new"] == 5
    assert t.pairing == {"paired": 1, "deletes": 3, "inserts": 4, "ambiguous_key_rows": 4,
                         "unpaired_deletes": 2, "unpaired_inserts": 3}


def test_the_row_statistics_share_the_fingerprint_shuffle_with_the_changed_set(spark):
    """One job, one shuffle: the statistics branch reuses the changed set's exchange."""
    import dqkit.delta as dq

    old, new = _tpch_like(spark)
    plan = dq.plan_tables(old, new, ["lineitem"], [], None, {})[0][0]
    changed, stats, cache = dq.changed_fingerprints(old["lineitem"], new["lineitem"], plan)
    try:
        assert "ReusedExchange" in executed_plan(cache)
        assert stats["rows_old"] == old["lineitem"].count() and stats["rows_new"] == new["lineitem"].count()
        assert changed.count() == stats["deletes"] + stats["inserts"] - _both_sides(changed)
    finally:
        cache.unpersist()


def _both_sides(changed) -> int:
    from pyspark.sql import functions as F

    return changed.filter((F.col("_dq_c_old") > 0) & (F.col("_dq_c_new") > 0)).count()


def test_a_table_without_a_key_skips_column_validation_with_a_message(spark):
    old, new = _tpch_like(spark)
    res = delta(old, new, tables=["orders"], spark=spark)
    assert res.tables["orders"].column_stats is None
    assert any("orders has no key" in m for m in res.messages)
    with pytest.raises(ParameterError, match="no key"):
        res.col_delta("orders")


def test_save_writes_the_validation_namespace_atomically(spark, tmp_path, users_result):
    out = users_result.save(tmp_path / "validation", include_dedup=True)
    names = {p.name for p in (tmp_path / "validation").iterdir()}
    assert {"summary.json", "row_stats.csv", "column_stats.csv", "report.html", "users_row_delta",
            "users_col_delta", "users_updates", "ddb_old", "quartiles.png" if False else "users_quartiles.png"} <= names
    summary = json.loads((tmp_path / "validation" / "summary.json").read_text())
    assert summary["tables"]["users"]["row_stats"]["percent"] == 71.4
    assert spark.read.parquet(f"{out}/users_row_delta").count() == 5
    assert [p.name for p in tmp_path.iterdir()] == ["validation"]


def test_a_failed_save_leaves_no_half_written_output(spark, tmp_path, users_result, monkeypatch):
    from dqkit.contract.result import Chart

    def boom(self, *a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(Chart, "png", boom)  # after the frames and summary.json are in the temporary folder
    with pytest.raises(RuntimeError, match="disk full"):
        users_result.save(tmp_path / "validation")
    assert list(tmp_path.iterdir()) == []


def test_save_to_a_catalog_database(spark, users_result):
    where = users_result.save("catalog:dq_validation_test")
    assert where == "catalog:dq_validation_test"
    assert spark.table("dq_validation_test.users_row_delta").count() == 5
    assert spark.table("dq_validation_test.users_col_delta").count() == 2


def test_samples_are_deterministic_whatever_the_partitioning_even_without_a_key(spark):
    rows_old = [(i % 7, f"v{i}") for i in range(40)]
    rows_new = [(i % 7, f"w{i}") for i in range(40)]
    schema = "k int, v string"
    a = delta({"t": spark.createDataFrame(rows_old, schema).repartition(5)},
              {"t": spark.createDataFrame(rows_new, schema).repartition(3)}, stages="dedup,row", spark=spark)
    b = delta({"t": spark.createDataFrame(rows_old[::-1], schema).coalesce(1)},
              {"t": spark.createDataFrame(rows_new[::-1], schema).coalesce(1)}, stages="dedup,row", spark=spark)
    sa, sb = a.sample("t", "row_delta", 6), b.sample("t", "row_delta", 6)
    assert sa.equals(sb) and len(sa) == 6
    assert list(sa.itertuples(index=False, name=None))[:2] == [(0, "v0", 1, "DELETE"), (0, "v14", 1, "DELETE")]


def test_html_escapes_data_values(spark):
    evil = "<script>alert(1)</script>"
    old = spark.createDataFrame([(1, "a")], "k int, v string")
    new = spark.createDataFrame([(1, evil)], "k int, v string")
    html = delta({"t": old}, {"t": new}, keys={"t": "k"}, spark=spark).to_html()
    assert evil not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


# ---------------------------------------------------------------- bad input

def test_differing_schemas_are_compared_over_common_columns_or_refused_with_schema_changes_fail(spark):
    old = spark.createDataFrame([(1, "a")], "id int, v string")
    new = spark.createDataFrame([(1, 2)], "id int, v int")
    extra = spark.createDataFrame([(1, "a", 1)], "id int, v string, w int")
    with pytest.raises(SchemaMismatchError, match=r"t\.v retyped string \u2192 int \(compared as text\)"):
        delta({"t": old}, {"t": new}, schema_changes="fail", spark=spark)
    with pytest.raises(SchemaMismatchError, match=r"t\.w added \(int\)"):
        delta({"t": old}, {"t": extra}, schema_changes="fail", spark=spark)
    res = delta({"t": old}, {"t": extra}, spark=spark)
    assert not res.identical and res.tables["t"].row_stats["differences"] == 0
    assert delta({"t": old}, {"t": extra}, exclude=["t.w"], spark=spark).identical


def test_unknown_key_excluded_column_or_table_are_clear_errors(spark):
    df = spark.createDataFrame([(1, "a")], "id int, v string")
    with pytest.raises(UnknownColumnError, match=r"key column t\.nope does not exist"):
        delta({"t": df}, {"t": df}, keys={"t": "nope"}, spark=spark)
    with pytest.raises(UnknownColumnError, match=r"key column t\.v is excluded"):
        delta({"t": df}, {"t": df}, keys={"t": "v"}, exclude=["t.v"], spark=spark)
    with pytest.raises(UnknownColumnError, match=r"column t\.nope does not exist"):
        delta({"t": df}, {"t": df}, exclude=["t.nope"], spark=spark)
    with pytest.raises(UnknownTableError, match="'x'"):
        delta({"t": df}, {"t": df}, keys={"x": "id"}, spark=spark)
    with pytest.raises(ParameterError, match="unknown stage"):
        delta({"t": df}, {"t": df}, stages="rows", spark=spark)


def test_a_user_column_named_row_count_is_refused(spark):
    df = spark.createDataFrame([(1, 5)], "id int, row_count int")
    with pytest.raises(ReservedColumnError, match="row_count"):
        delta({"t": df}, {"t": df}, spark=spark)


def test_empty_tables_give_zero_percent_without_division_errors(spark):
    empty = spark.createDataFrame([], "id int, v string")
    res = delta({"t": empty}, {"t": empty}, keys={"t": "id"}, spark=spark)
    s = res.tables["t"].row_stats
    assert (s["rows_old"], s["dedup_rows_old"], s["differences"], s["percent"]) == (0, 0, 0, 0.0)
    one = spark.createDataFrame([(1, "a")], "id int, v string")
    s2 = delta({"t": empty}, {"t": one}, keys={"t": "id"}, spark=spark).tables["t"].row_stats
    assert (s2["differences"], s2["percent"]) == (1, 100.0)


def test_all_null_columns_are_compared_and_their_changes_counted(spark):
    old = spark.createDataFrame([(1, None), (2, None)], "id int, v string")
    new = spark.createDataFrame([(1, None), (2, "x")], "id int, v string")
    res = delta({"t": old}, {"t": new}, keys={"t": "id"}, spark=spark)
    assert res.tables["t"].row_stats["differences"] == 2
    s = res.tables["t"].column_stats["v"]
    assert s["count"] == 1 and s["null_changes"] == 1 and s["median"] is None


def test_types_calc_diff_does_not_cover_are_refused_before_column_validation(spark):
    df = spark.createDataFrame([(1, {"a": 1})], "id int, m map<string,int>")
    with pytest.raises(UnsupportedTypeError, match=r"t\.m has type map<string,int>"):
        delta({"t": df}, {"t": df}, keys={"t": "id"}, spark=spark)
    # Row validation still covers the map column.
    other = spark.createDataFrame([(1, {"a": 2})], df.schema)
    assert delta({"t": df}, {"t": other}, stages="dedup,row", spark=spark).tables["t"].row_stats["differences"] == 2


def test_a_missing_path_is_a_clear_error(spark, tmp_path):
    with pytest.raises(SourceError, match="no such"):
        delta(tmp_path / "missing", f"{USERS}/new", spark=spark)


def test_a_table_on_one_side_only_is_reported_not_a_crash(spark):
    df = spark.createDataFrame([(1,)], "id int")
    res = delta({"t": df, "gone": df}, {"t": df, "fresh": df}, spark=spark)
    assert res.only_in_old == ["gone"] and res.only_in_new == ["fresh"]
    assert not res.identical and list(res.tables) == ["t"]
    d = res.to_dict()
    assert d["only_in_old"] == ["gone"] and d["only_in_new"] == ["fresh"]


def test_inputs_are_never_modified(spark, tmp_path):
    import shutil

    shutil.copytree(USERS, tmp_path / "u")
    before = {p: p.read_bytes() for p in (tmp_path / "u").rglob("*") if p.is_file()}
    delta(tmp_path / "u" / "old", tmp_path / "u" / "new", keys={"users": "id"}, spark=spark).save(tmp_path / "out")
    after = {p: p.read_bytes() for p in (tmp_path / "u").rglob("*") if p.is_file()}
    assert before == after


# ---------------------------------------------------------------- caching and planner scope

def _persistent_rdds(spark) -> int:
    return spark.sparkContext._jsc.sc().getPersistentRDDs().size()


def test_the_row_delta_is_served_from_the_cache_not_by_rescanning_the_inputs(spark, tmp_path):
    import shutil

    shutil.copytree(USERS, tmp_path / "u")
    res = delta(tmp_path / "u" / "old", tmp_path / "u" / "new", keys={"users": "id"}, spark=spark)
    try:
        shutil.rmtree(tmp_path / "u")  # the sources are gone: only the cache can answer
        rows = {(r.id, r.validation_status) for r in res.row_delta("users").collect()}
        assert rows == {(2, "DELETE"), (2, "INSERT"), (3, "DELETE"), (3, "INSERT"), (4, "INSERT")}
        assert res.updates("users").count() == 2
    finally:
        res.unpersist()
    assert all(not f.is_cached for f in res.tables["users"].cached)


def test_a_run_that_fails_in_the_column_stage_keeps_nothing_cached(spark, monkeypatch):
    import dqkit.delta.api as dq

    old, new = _tpch_like(spark)
    before = _persistent_rdds(spark)

    def broken(*args, **kwargs):
        raise RuntimeError("column stage failed")

    monkeypatch.setattr(dq, "column_statistics", broken)
    with pytest.raises(RuntimeError, match="column stage failed"):
        delta(old, new, keys={"lineitem": ["l_orderkey", "l_linenumber"]}, spark=spark)
    assert _persistent_rdds(spark) == before


def test_repeated_changed_rows_appear_once_with_their_row_count(spark):
    old = spark.createDataFrame([(1, "a"), (2, "b")], "k int, v string")
    new = spark.createDataFrame([(1, "a"), (1, "a"), (1, "a"), (2, "c"), (2, "c")], "k int, v string")
    res = delta({"t": old}, {"t": new}, spark=spark)
    rows = sorted((r.k, r.v, r.row_count, r.validation_status) for r in res.row_delta("t").collect())
    assert rows == [(1, "a", 1, "DELETE"), (1, "a", 3, "INSERT"), (2, "b", 1, "DELETE"), (2, "c", 2, "INSERT")]


def test_planner_options_are_scoped_to_dqkit_queries_and_restored(spark):
    from dqkit.runtime.sparkutil import scoped_conf

    key = "spark.sql.execution.bypassPartialAggregation"
    spark.conf.set("spark.sql.shuffle.partitions", "4")
    with scoped_conf(spark, {key: "true", "spark.sql.shuffle.partitions": "3"}):
        assert spark.conf.get(key) == "true" and spark.conf.get("spark.sql.shuffle.partitions") == "3"
    assert spark.conf.get("spark.sql.shuffle.partitions") == "4"
    assert spark.conf.get(key, "false") == "false"
    old, new = _tpch_like(spark)
    delta(old, new, tables=["lineitem"], spark=spark).unpersist()
    assert spark.conf.get(key, "false") == "false"


def test_the_row_fetch_joins_on_one_64_bit_fingerprint_half(spark):
    import re

    import dqkit.delta as dq

    old, new = _tpch_like(spark)
    plan = dq.plan_tables(old, new, ["lineitem"], [], None, {})[0][0]
    changed, stats, cache = dq.changed_fingerprints(old["lineitem"], new["lineitem"], plan)
    try:
        fetch = dq.build_row_delta(old["lineitem"], new["lineitem"], plan, changed, stats)
        joins = re.findall(r"BroadcastHashJoin \[([^\]]*)\]", executed_plan(fetch))
        assert len(joins) == 2 and all("," not in keys for keys in joins)  # one key each: a long-keyed table
        assert fetch.select(dq.STATUS, dq.FP_HI, dq.FP_LO).distinct().count() == stats["differences"]
    finally:
        cache.unpersist()


def test_the_cached_fingerprint_aggregate_is_planned_without_partial_aggregation(spark):
    import re

    import dqkit.delta as dq

    old, new = _tpch_like(spark)
    plan = dq.plan_tables(old, new, ["lineitem"], [], None, {})[0][0]
    changed, _, cache = dq.changed_fingerprints(old["lineitem"], new["lineitem"], plan)
    try:
        cached_plan = executed_plan(changed)
        assert "InMemoryTableScan" in cached_plan or "InMemoryRelation" in cached_plan
        # the per-fingerprint group-by has no partial step (the one-row statistics total may)
        assert re.search(r"HashAggregate\(keys=\[_dq_fp_hi[^\]]*\], functions=\[partial_", cached_plan) is None
        assert re.search(r"HashAggregate\(keys=\[_dq_fp_hi[^\]]*\], functions=\[count", cached_plan)
    finally:
        cache.unpersist()


# ---------------------------------------------------------------- sources as users write them

def _write_pandas(path, frame):
    import pandas as pd

    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(frame).to_parquet(path, index=False)


def test_folders_of_one_parquet_file_per_table_compare_table_by_table(spark, tmp_path):
    _write_pandas(tmp_path / "old" / "users.parquet", {"id": [1, 2], "name": ["a", "b"]})
    _write_pandas(tmp_path / "old" / "orders.parquet", {"oid": [1], "id": [1]})
    _write_pandas(tmp_path / "new" / "users.parquet", {"id": [1, 2], "name": ["a", "B"]})
    _write_pandas(tmp_path / "new" / "orders.parquet", {"oid": [1], "id": [1]})
    res = delta(tmp_path / "old", tmp_path / "new", keys={"users": "id"}, spark=spark)
    assert sorted(res.tables) == ["orders", "users"]
    assert res.tables["users"].row_stats["differences"] == 2
    assert res.tables["orders"].row_stats["differences"] == 0
    assert res.tables["users"].column_stats["name"]["count"] == 1


def test_file_names_with_glob_characters_or_a_colon_compare_end_to_end(spark, tmp_path):
    for side, second in (("old", "b"), ("new", "c")):
        (tmp_path / side).mkdir()
        (tmp_path / side / "users[1].csv").write_text(f"id,v\n1,a\n2,{second}\n")
        (tmp_path / side / "a:b.csv").write_text(f"id,v\n1,{second}\n")
    res = delta(tmp_path / "old", tmp_path / "new", keys={"users[1]": "id", "a:b": "id"}, spark=spark)
    assert res.tables["users[1]"].row_stats["differences"] == 2
    assert res.tables["a:b"].row_stats["differences"] == 2
    assert res.tables["a:b"].column_stats["v"]["count"] == 1


def test_a_ragged_csv_row_fails_with_the_file_and_line_instead_of_being_dropped(spark, tmp_path):
    for side in ("old", "new"):
        (tmp_path / side).mkdir()
    (tmp_path / "old" / "t.csv").write_text("id,v\n1,a\n2,b\n")
    (tmp_path / "new" / "t.csv").write_text("id,v\n1,a\n2,b,EXTRA\n")
    with pytest.raises(SourceError, match=r"t\.csv has a malformed row, line 3: 3 fields where the header has 2"):
        delta(tmp_path / "old", tmp_path / "new", spark=spark)


def test_a_corrupt_parquet_file_found_by_a_job_is_a_source_error_naming_it(spark, tmp_path):
    df = spark.createDataFrame([(i,) for i in range(4)], "id int")
    df.write.parquet(str(tmp_path / "old" / "t"))
    df.repartition(2).write.parquet(str(tmp_path / "new" / "t"))
    parts = sorted((tmp_path / "new" / "t").glob("part-*.parquet"))
    data = parts[-1].read_bytes()
    parts[-1].write_bytes(data[:4] + b"\0" * (len(data) - 12) + data[-8:])  # footer intact, pages zeroed
    (tmp_path / "new" / "t" / f".{parts[-1].name}.crc").unlink()
    with pytest.raises(SourceError, match=parts[-1].name):
        delta(tmp_path / "old", tmp_path / "new", spark=spark)


@pytest.mark.parametrize("tolerances", [{"abs_tol": float("nan")}, {"abs_tol": float("inf")},
                                        {"rel_tol": float("nan")}, {"abs_tol": "a lot"}])
def test_a_non_finite_tolerance_is_refused(spark, tolerances):
    df = spark.createDataFrame([(1, 1.5)], "id int, x double")
    with pytest.raises(ParameterError, match="finite"):
        delta({"t": df}, {"t": df}, keys={"t": "id"}, spark=spark, **tolerances)


def test_excluding_a_table_that_does_not_exist_is_an_error(spark):
    df = spark.createDataFrame([(1,)], "id int")
    with pytest.raises(UnknownTableError, match="'userz'") as info:
        delta({"users": df}, {"users": df}, exclude=["userz"], spark=spark)
    assert "users" in info.value.hint


def test_a_header_only_csv_beside_a_populated_one_is_zero_rows_against_n(spark, tmp_path):
    for side in ("old", "new"):
        (tmp_path / side).mkdir()
    (tmp_path / "old" / "t.csv").write_text("id,v,d\n")
    (tmp_path / "new" / "t.csv").write_text("id,v,d\n1,a,2020-01-01\n2,b,2020-01-02\n3,c,2020-01-03\n")
    res = delta(tmp_path / "old", tmp_path / "new", keys={"t": "id"}, spark=spark)
    s = res.tables["t"].row_stats
    assert (s["rows_old"], s["rows_new"], s["differences"]) == (0, 3, 3)
    assert any("old version has no rows" in m for m in res.messages)
    assert res.row_delta("t").schema["id"].dataType.typeName() == "integer"


def test_a_parquet_null_typed_column_is_compatible_with_any_type(spark, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    for side in ("old", "new"):
        (tmp_path / side).mkdir()
    pq.write_table(pa.table({"id": [1, 2], "x": pa.array([None, None], pa.null())}), tmp_path / "old" / "t.parquet")
    pq.write_table(pa.table({"id": [1, 2], "x": pa.array([None, 5], pa.int64())}), tmp_path / "new" / "t.parquet")
    res = delta(tmp_path / "old", tmp_path / "new", keys={"t": "id"}, spark=spark)
    assert res.tables["t"].row_stats["differences"] == 2
    assert res.tables["t"].column_stats["x"]["null_changes"] == 1
    assert res.tables["t"].plan.types["x"].typeName() == "long"
