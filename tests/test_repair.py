"""Repair (dqkit.repair): the violation hypergraph, equivalence-class repair and the repair loop."""
from __future__ import annotations

import json

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dqkit.detect import detect
from dqkit.errors import ParameterError
from dqkit.repair import repair, violation_hypergraph

TABLE1 = "data/bigdansing_table1.csv"
RULES1 = "data/bigdansing_table1_rules.yaml"
PHI_F = {"phiF": "zipcode -> city"}


@pytest.fixture(scope="module")
def hypergraph(table1):
    return violation_hypergraph(detect(table1, RULES1, key="tid"))


@pytest.fixture(scope="module")
def repaired1(table1):
    return repair(table1, PHI_F, key="tid")


def rows(df, key="tid"):
    return {r[key]: r.asDict() for r in df.collect()}


# --------------------------------------------------------------------------------- the hypergraph
def test_hyperedges_hold_the_cells_and_fixes_of_each_violation(hypergraph):
    edges = {r["violation_id"]: r for r in hypergraph.hyperedges.collect()}
    assert sorted(edges) == ["phiD|t1|t2", "phiD|t5|t2", "phiF|t2|t4", "phiF|t4|t6"]
    cells = {(c["tid"], c["attr"], c["value"]) for c in edges["phiF|t2|t4"]["cells"]}
    assert cells == {("t2", "city", "LA"), ("t4", "city", "SF"), ("t2", "zipcode", "90210"),
                     ("t4", "zipcode", "90210")}
    assert "t2[city] = t4[city]" in {f["fix"] for f in edges["phiF|t2|t4"]["fixes"]}


def test_violations_sharing_a_cell_form_one_component_as_in_figure_7(hypergraph):
    comps = {r["violation_id"]: tuple(r["component"]) for r in hypergraph.hyperedge_components().collect()}
    # phiF's two violations share t4.city; phiD's two share t2's cells; the rules share no cell
    assert comps["phiF|t2|t4"] == comps["phiF|t4|t6"] == ("t2", "city")
    assert comps["phiD|t1|t2"] == comps["phiD|t5|t2"] == ("t1", "rate")
    sizes = [(tuple(r["component"]), r["cells"], r["violations"]) for r in hypergraph.component_sizes().collect()]
    assert sizes == [(("t1", "rate"), 6, 2), (("t2", "city"), 6, 2)]


def test_one_component_exports_to_networkx_as_its_incidence_graph(hypergraph):
    g = hypergraph.to_networkx(("t2", "city"))
    violations = {n for n, d in g.nodes(data=True) if d["kind"] == "violation"}
    assert violations == {"phiF|t2|t4", "phiF|t4|t6"}
    assert g.nodes[("t4", "city")]["label"] == "t4.city = SF"
    assert g.degree[("t4", "city")] == 2 and g.number_of_nodes() == 8


def test_a_component_larger_than_the_bound_is_refused(hypergraph):
    with pytest.raises(ParameterError, match="max_nodes=5"):
        hypergraph.to_networkx(("t2", "city"), max_nodes=5)
    with pytest.raises(ParameterError, match="no component"):
        hypergraph.to_networkx(("t9", "city"))


# ------------------------------------------------------------------------- equivalence-class repair
def test_phiF_repair_sets_t4_city_to_LA_and_leaves_no_violation(table1, repaired1):
    assert [(r["tid"], r["attr"], r["old"], r["new"], r["rules"], r["iteration"])
            for r in repaired1.changes.collect()] == [("t4", "city", "SF", "LA", ["phiF"], 1)]
    after = rows(repaired1.repaired)
    assert after["t4"]["city"] == "LA"
    assert detect(repaired1.repaired, RULES1, key="tid").counts["phiF"] == 0
    assert repaired1.remaining == 0 and repaired1.iterations == 1 and repaired1.exit_code == 0
    assert repaired1.verdict.label == "REPAIRED"


def test_repair_preserves_rows_and_schema_and_never_modifies_the_input(table1, repaired1):
    before = rows(table1)
    assert repaired1.repaired.columns == table1.columns
    assert [f.dataType for f in repaired1.repaired.schema] == [f.dataType for f in table1.schema]
    after = rows(repaired1.repaired)
    assert set(after) == set(before)
    assert {t: r for t, r in after.items() if t != "t4"} == {t: r for t, r in before.items() if t != "t4"}
    assert rows(table1)["t4"]["city"] == "SF"


def test_ties_are_broken_by_the_smallest_value(spark):
    df = spark.createDataFrame([(1, "a", "Zurich"), (2, "a", "Bern"), (3, "b", "X")], "id int, k string, v string")
    r = repair(df, {"f": "k -> v"}, key="id")
    assert rows(r.repaired, "id")[1]["v"] == "Bern" and r.remaining == 0


def test_numeric_columns_keep_their_type(spark):
    df = spark.createDataFrame([(1, 7, 2.5), (2, 7, 2.5), (3, 7, 9.0)], "id int, k int, v double")
    r = repair(df, {"f": "k -> v"}, key="id")
    assert rows(r.repaired, "id")[3]["v"] == 2.5 and dict(r.repaired.dtypes)["v"] == "double"


def test_without_a_key_rows_keep_content_ids_through_the_rounds(spark):
    df = spark.createDataFrame([("a", "x"), ("a", "x"), ("a", "y"), ("b", "z")], "k string, v string")
    r = repair(df, {"f": "k -> v"})
    assert sorted(tuple(x) for x in r.repaired.collect()) == [("a", "x")] * 3 + [("b", "z")]
    assert r.changes.count() == 1 and r.remaining == 0 and "__dqkit_tid" not in r.repaired.columns


def test_several_rules_are_repaired_together(spark):
    df = spark.createDataFrame([(1, "z1", "LA", "CA"), (2, "z1", "LA", "CA"), (3, "z1", "SF", "NY"),
                                (4, "z2", "CH", "IL")], "id int, zip string, city string, state string")
    r = repair(df, {"f1": "zip -> city", "f2": "zip -> state"}, key="id")
    assert rows(r.repaired, "id")[3] == {"id": 3, "zip": "z1", "city": "LA", "state": "CA"}
    assert r.remaining == 0 and r.to_dict()["violations_per_rule"][0] == {"f1": 2, "f2": 2}


def test_repair_is_the_same_whatever_the_partitioning(spark):
    data = [(i, i % 5, f"v{(i * 7) % 3}") for i in range(40)]
    df = spark.createDataFrame(data, "id int, k int, v string")
    a = repair(df.repartition(1), {"f": "k -> v"}, key="id")
    b = repair(df.repartition(5, "v"), {"f": "k -> v"}, key="id")
    assert rows(a.repaired, "id") == rows(b.repaired, "id")
    assert sorted(a.changes.collect()) == sorted(b.changes.collect())


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["p", "q", "r", None])), min_size=1, max_size=14))
def test_equivalence_class_repair_leaves_no_fd_violation(spark, data):
    df = spark.createDataFrame([(i, k, v) for i, (k, v) in enumerate(data)], "id int, k int, v string")
    r = repair(df, {"f": "k -> v"}, key="id")
    out = pd.DataFrame([x.asDict() for x in r.repaired.collect()])
    # brute force: within each k, at most one non-NULL value of v
    assert (out.dropna().groupby("k")["v"].nunique() <= 1).all()
    assert len(out) == len(data) and r.remaining == 0


# ------------------------------------------------------------------------------- the repair loop
def test_violations_without_an_equality_fix_are_reported_not_looped_on(table1):
    r = repair(table1, {"phiD": "not(t1.rate > t2.rate and t1.salary < t2.salary)"}, key="tid",
               method="equivalence-class")
    assert r.iterations == 0 and r.remaining == 2 and r.exit_code == 1
    assert r.verdict.label == "VIOLATIONS REMAIN" and "no violation left has a fix" in r.stop_reason
    assert r.changes.count() == 0 and sorted(r.unfixable()) == [("phiD", "t1", "t2"), ("phiD", "t5", "t2")]


def test_an_empty_table_and_an_all_null_column_need_no_repair(spark):
    empty = spark.createDataFrame([], "id int, k int, v string")
    assert repair(empty, {"f": "k -> v"}, key="id").verdict.label == "REPAIRED"
    nulls = spark.createDataFrame([(1, 1, None), (2, 1, None)], "id int, k int, v string")
    r = repair(nulls, {"f": "k -> v"}, key="id")
    assert r.iterations == 0 and r.remaining == 0 and r.repaired.count() == 2


def test_bad_parameters_are_refused_before_any_job(table1):
    with pytest.raises(ParameterError, match="unknown repair method"):
        repair(table1, PHI_F, key="tid", method="magic")
    with pytest.raises(ParameterError, match="max_iterations"):
        repair(table1, PHI_F, key="tid", max_iterations=0)
    with pytest.raises(ParameterError, match="freeze_after"):
        repair(table1, PHI_F, key="tid", freeze_after=0)


def test_the_result_renders_and_saves_repaired_table_and_changes(repaired1, tmp_path):
    text = repaired1.to_text()
    assert "REPAIRED" in text and "SF → LA" in text
    d = json.loads(json.dumps(repaired1.to_dict()))
    assert d["iterations"] == 1 and d["history"][0]["changed"] == 1
    where = repaired1.save(tmp_path / "out", charts=False)
    assert {p.name for p in (tmp_path / "out").iterdir()} >= {"repaired", "changes", "summary.json", "report.html"}
    assert where.endswith("out")
    with pytest.raises(ParameterError, match="exists"):
        repaired1.save(tmp_path / "out")


# ------------------------------------------------------------------------------------------ CLI
def test_cli_repair_saves_the_repaired_table_and_exits_0(spark, tmp_path, capsys):
    from dqkit.cli import main

    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - name: phiF\n    rule: \"zipcode -> city\"\n")
    out = tmp_path / "out"
    assert main(["repair", TABLE1, "--rules", str(rules), "--key", "tid", "--out", str(out),
                 "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["verdict"] == "REPAIRED" and d["iterations"] == 1 and d["violations_per_rule"][0] == {"phiF": 2}
    repaired = {r["tid"]: r["city"] for r in spark.read.parquet(str(out / "repaired")).collect()}
    assert repaired["t4"] == "LA"
    # an existing --out without --overwrite is refused before any work (exit 2)
    assert main(["repair", TABLE1, "--rules", str(rules), "--key", "tid", "--out", str(out)]) == 2
    assert "exists" in capsys.readouterr().err


def test_cli_repair_exits_1_when_violations_without_a_fix_remain(tmp_path, capsys):
    from dqkit.cli import main

    rules = tmp_path / "rules.txt"
    rules.write_text("u: not(t1.zipcode = t2.zipcode and t1.city = t2.city)\n")
    assert main(["repair", TABLE1, "--rules", str(rules), "--key", "tid"]) == 1
    text = capsys.readouterr().out
    assert "VIOLATIONS REMAIN" in text and "u 1" in text and "Violations without a fix" in text
