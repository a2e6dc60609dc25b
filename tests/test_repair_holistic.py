"""Holistic repair of inequality DCs, black-box repair per component, the auto method, file outputs."""
from __future__ import annotations

import datetime as dt
import itertools
import json
import time
from decimal import Decimal

import networkx as nx
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dqkit.detect import detect
from dqkit.errors import CancelledError, ParameterError
from dqkit.repair import COMPONENT_COLUMNS, repair, rule_methods, violation_hypergraph
from dqkit.repair.holistic import _choose, holistic_component_repair, minimum_vertex_cover

TABLE1 = "data/bigdansing_table1.csv"
RULES1 = "data/bigdansing_table1_rules.yaml"
PHI_D = {"phiD": "not(t1.rate > t2.rate and t1.salary < t2.salary)"}
PHI_2 = {"phi2": "not(t1.salary > t2.salary and t1.rate < t2.rate)"}


def rows(df, key="tid"):
    return {r[key]: r.asDict() for r in df.collect()}


def phi2_violations(pdf: pd.DataFrame) -> list[tuple]:
    """Brute force: ordered pairs with t1.salary > t2.salary and t1.rate < t2.rate."""
    recs = pdf.to_dict("records")
    return [(a["id"], b["id"]) for a in recs for b in recs
            if a["salary"] > b["salary"] and a["rate"] < b["rate"]]


# ----------------------------------------------------------------------------- the vertex cover
@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.integers(0, 7), min_size=1, max_size=4), min_size=1, max_size=9))
def test_the_milp_cover_is_as_small_as_the_brute_force_minimum(edges):
    cover, how = minimum_vertex_cover(edges)
    assert how == "milp" and all(set(e) & cover for e in edges)
    nodes = sorted({n for e in edges for n in e})
    best = next(k for k in range(len(nodes) + 1)
                if any(all(set(e) & set(c) for e in edges) for c in itertools.combinations(nodes, k)))
    assert len(cover) == best


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.integers(0, 30), min_size=1, max_size=5), min_size=1, max_size=40))
def test_the_greedy_cover_meets_every_hyperedge(edges):
    cover, how = minimum_vertex_cover(edges, max_milp=0)
    assert how == "greedy" and all(set(e) & cover for e in edges)


def test_among_smallest_covers_the_tie_break_picks_the_cheapest():
    edges = [["a", "b"], ["a", "c"], ["b", "c"]]  # every cover has two nodes
    assert minimum_vertex_cover(edges, tie_break={"a": 1.0, "b": 0.0, "c": 0.0})[0] == {"b", "c"}
    assert minimum_vertex_cover(edges, tie_break={"a": 0.0, "b": 1.0, "c": 0.0})[0] == {"a", "c"}
    # the costs never buy a larger cover
    assert minimum_vertex_cover([["x", "y"]], tie_break={"x": 1.0, "y": 0.9})[0] == {"y"}


# ------------------------------------------------------------------------------ picking values
@pytest.mark.parametrize("value, constraints, kind, expected", [
    (10, [[(">=", 15)]], "int", 15),
    (10, [[(">", 15)]], "int", 16),
    (20, [[("<", 15)]], "int", 14),
    (10, [[(">=", 12)], [("<=", 14)]], "int", 12),
    (10, [[(">=", 15)], [("<=", 14)]], "int", None),  # empty interval: no value
    (1.5, [[(">", 2.0)]], "float", 2.0000000000000004),
    (Decimal("1.50"), [[(">", Decimal("2.00"))]], "decimal", Decimal("2.01")),
    (dt.date(2020, 1, 1), [[(">", dt.date(2020, 3, 1))]], "date", dt.date(2020, 3, 2)),
    ("b", [[(">=", "k")]], "string", "k"),
    (10, [[("=", 7)]], "int", 7),
    (10, [[("=", 7)], [("=", 8)]], "int", None),
    (10, [[(">=", 30), ("<=", 8)]], "int", 8),  # a disjunction: the option needing the smaller change
])
def test_a_chosen_cell_takes_the_closest_value_meeting_its_fixes(value, constraints, kind, expected):
    assert _choose(value, constraints, kind) == expected


def _fixes(rows_: list[tuple]) -> pd.DataFrame:
    cols = list(COMPONENT_COLUMNS)
    return pd.DataFrame([("c", *r) for r in rows_], columns=cols)


def test_the_component_function_changes_the_cover_cell_to_satisfy_every_violation():
    # t2 (salary 25000, rate 10) violates phiD with t1 (24000, 15) and t5 (15000, 15)
    f = []
    for other, sal, rate in (("t1", "24000", "15"), ("t5", "15000", "15")):
        vid = f"phiD|{other}|t2"
        f.append((vid, "phiD", other, "rate", rate, "<=", "t2", "rate", "10", None, "dc", False, False))
        f.append((vid, "phiD", other, "salary", sal, ">=", "t2", "salary", "25000", None, "dc", False, False))
    out = holistic_component_repair({"rate": "int", "salary": "int"})(_fixes(f))
    assert out.to_dict("records") == [{"tid": "t2", "attr": "salary", "new": "15000"}]


def test_not_equal_fixes_never_invent_a_value():
    f = [("v", "r", "t1", "name", "ann", "!=", "t2", "name", "ann", None, "dc", False, False)]
    assert holistic_component_repair({"name": "string"})(_fixes(f)).empty


def test_frozen_cells_are_never_chosen():
    f = [("v", "r", "t1", "x", "5", ">=", "t2", "x", "9", None, "dc", True, False)]
    out = holistic_component_repair({"x": "int"})(_fixes(f))
    assert out.to_dict("records") == [{"tid": "t2", "attr": "x", "new": "5"}]


# ----------------------------------------------------------------------------- repair on Spark
def test_auto_sends_inequality_dcs_to_holistic_and_the_rest_to_equivalence_classes():
    rules = {"f": "zip -> city", "d": "not(t1.zip = t2.zip and t1.city != t2.city)", "i": PHI_D["phiD"]}
    assert rule_methods(rules) == {"f": "equivalence-class", "d": "equivalence-class", "i": "holistic"}
    assert set(rule_methods(rules, "holistic").values()) == {"holistic"}


def test_table1_is_repaired_to_zero_violations_with_phiD_holistically(table1):
    r = repair(table1, RULES1, key="tid")
    assert r.remaining == 0 and r.exit_code == 0 and r.method == "equivalence-class + holistic"
    changes = {(c["tid"], c["attr"]): (c["old"], c["new"], c["rules"]) for c in r.changes.collect()}
    # phiF: the majority LA; phiD: one cell (t2, in both violations) by the smallest relative change
    assert changes == {("t4", "city"): ("SF", "LA", ["phiF"]), ("t2", "salary"): ("25000", "15000", ["phiD"])}
    assert detect(r.repaired, RULES1, key="tid").total_violations == 0
    assert r.repaired.columns == table1.columns and r.repaired.dtypes == table1.dtypes
    assert [x["tid"] for x in r.repaired.collect()] == [f"t{i}" for i in range(1, 7)]  # input order
    assert rows(table1)["t2"]["salary"] == 25000  # the input is untouched
    assert r.to_dict()["rule_methods"] == {"phiF": "equivalence-class", "phiD": "holistic"}
    assert r.per_iteration()["components"].tolist() == [1]


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(1, 9), st.integers(1, 9)), min_size=2, max_size=8))
def test_holistic_repair_leaves_no_violation_of_the_inequality_dc(spark, data):
    df = spark.createDataFrame([(i, s, r) for i, (s, r) in enumerate(data)], "id int, salary int, rate int")
    r = repair(df, PHI_2, key="id", method="holistic", max_iterations=20, freeze_after=20)
    out = pd.DataFrame([x.asDict() for x in r.repaired.collect()])
    assert len(out) == len(data) and phi2_violations(out) == [] and r.remaining == 0
    # minimal change: never more changed cells in the first round than the violating tuples
    first = phi2_violations(pd.DataFrame([{"id": i, "salary": s, "rate": t} for i, (s, t) in enumerate(data)]))
    if first:
        assert r.history[0]["changed"] <= len({t for p in first for t in p})


def test_holistic_repair_is_the_same_whatever_the_partitioning(spark):
    data = [(i, 1000 + 37 * ((i * 7) % 23), 5 + (i * 11) % 13) for i in range(12)]
    df = spark.createDataFrame(data, "id int, salary int, rate int")
    a = repair(df.repartition(1), PHI_2, key="id", method="holistic")
    b = repair(df.repartition(4, "rate"), PHI_2, key="id", method="holistic")
    assert rows(a.repaired, "id") == rows(b.repaired, "id") and a.remaining == 0
    assert sorted(a.changes.collect()) == sorted(b.changes.collect())


def test_rules_that_conflict_stop_by_freezing_and_are_reported(spark):
    df = spark.createDataFrame([(1, 3)], "id int, x int")
    r = repair(df, {"low": "not(t1.x > 5)", "high": "not(t1.x < 10)"}, key="id", freeze_after=2)
    assert r.exit_code == 1 and r.remaining == 1
    assert [c["new"] for c in r.changes.orderBy("iteration").collect()] == ["10", "5"]
    assert "no violation left has a fix" in r.stop_reason


def test_a_violation_with_only_not_equal_fixes_is_unfixable_not_looped_on(table1):
    r = repair(table1, {"u": "not(t1.zipcode = t2.zipcode and t1.city = t2.city)"}, key="tid")
    assert r.iterations == 0 and r.exit_code == 1 and r.unfixable() == [("u", "t2", "t6")]


# ------------------------------------------------------------------------------ black-box repair
def test_a_black_box_function_repairs_each_component_of_the_hypergraph(spark, table1):
    def majority_city(component: pd.DataFrame) -> pd.DataFrame:
        eq = component[(component["op"] == "=") & (component["attr"] == "city")]
        vals = pd.concat([eq[["tid", "value"]], eq[["rhs_tid", "rhs_value"]].set_axis(["tid", "value"], axis=1)])
        top = vals["value"].value_counts().sort_index().idxmax()
        return vals.assign(new=top)[["tid"]].drop_duplicates().assign(attr="city", new=top)

    r = repair(table1, {"phiF": "zipcode -> city"}, key="tid", method=majority_city)
    assert r.method == "black-box (majority_city)" and r.remaining == 0
    assert {(c["tid"], c["new"]) for c in r.changes.collect()} == {("t4", "LA")}
    hg = violation_hypergraph(detect(table1, {"phiF": "zipcode -> city"}, key="tid"))
    g = nx.Graph()
    for e in hg.hyperedges.collect():
        cells = [(c["tid"], c["attr"]) for c in e["cells"]]
        g.add_edges_from(zip(cells, cells[1:]))
    assert hg.component_sizes().count() == nx.number_connected_components(g) == 1


def test_a_black_box_function_cannot_change_cells_outside_its_component(table1):
    def rogue(component: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame({"tid": ["t1", "t2"], "attr": ["name", "city"], "new": ["Eve", "SF"]})

    r = repair(table1, {"phiF": "zipcode -> city"}, key="tid", method=rogue, max_iterations=1)
    assert {(c["tid"], c["attr"]) for c in r.changes.collect()} == {("t2", "city")}  # t1.name dropped


def test_a_black_box_function_returning_other_columns_fails_clearly(table1):
    with pytest.raises(Exception, match="must return a DataFrame with columns tid, attr, new"):
        repair(table1, {"phiF": "zipcode -> city"}, key="tid", method=lambda c: pd.DataFrame({"x": [1]}))


def test_a_cancelled_repair_writes_nothing(spark, tmp_path):
    from dqkit.runtime.progress import BackgroundRun

    df = spark.createDataFrame([(i, i % 3, f"v{i % 4}") for i in range(24)], "id int, k int, v string")

    def slow(component: pd.DataFrame) -> pd.DataFrame:
        time.sleep(3)
        return pd.DataFrame(columns=["tid", "attr", "new"])

    target = tmp_path / "out"
    run = BackgroundRun(lambda: repair(df, {"f": "k -> v"}, key="id", method=slow).save(target), spark=spark)
    run.start()
    deadline = time.monotonic() + 120
    while not run.progress.running and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1)
    run.cancel()
    assert run.wait(120)
    assert run.status == "cancelled" and isinstance(run.error, CancelledError)
    assert "was cancelled; nothing was written" in str(run.error)
    assert not target.exists() and list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------------- file outputs
def test_cli_repair_to_a_csv_file_keeps_columns_and_input_order_and_writes_changes_beside(spark, tmp_path,
                                                                                            capsys):
    from dqkit.cli import main

    out = tmp_path / "repaired.csv"
    assert main(["repair", TABLE1, "--rules", RULES1, "--key", "tid", "--out", str(out), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["remaining_violations"] == 0 and d["violations_per_rule"][0] == {"phiF": 2, "phiD": 2}
    text = out.read_text().splitlines()
    assert text[0] == open(TABLE1).readline().strip()
    assert [line.split(",")[0] for line in text[1:]] == [f"t{i}" for i in range(1, 7)]
    assert "t4,Mark,90210,LA,CA,88000,28" in text
    changes = pd.read_csv(tmp_path / "repaired.changes.csv")
    assert sorted(changes["tid"]) == ["t2", "t4"] and set(changes["rules"]) == {"phiF", "phiD"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["repaired.changes.csv", "repaired.csv"]
    # an existing file is refused without --overwrite, and replaced with it
    assert main(["repair", TABLE1, "--rules", RULES1, "--key", "tid", "--out", str(out)]) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["repair", TABLE1, "--rules", RULES1, "--key", "tid", "--out", str(out), "--overwrite"]) == 0


def test_repair_to_a_parquet_file_keeps_the_types(spark, table1, tmp_path):
    r = repair(table1, RULES1, key="tid")
    r.save(tmp_path / "t.parquet")
    back = spark.read.parquet(str(tmp_path / "t.parquet"))
    assert back.dtypes == table1.dtypes and back.count() == 6
    assert spark.read.parquet(str(tmp_path / "t.changes.parquet")).count() == 2
    with pytest.raises(ParameterError, match="overwrite the input"):
        repair(TABLE1, RULES1, key="tid").save(TABLE1, overwrite=True)
