"""Daisy (dqkit.relax): the paper's worked examples (AT-1..AT-13), properties and bad input."""
from __future__ import annotations

import json
from fractions import Fraction as Fr

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dqkit.errors import DqkitError, ParameterError, UnknownColumnError, UnknownTableError
from dqkit.relax import (
    CostModel, Daisy, StateMismatchError, UnsupportedQueryError, full_cost, hypergeometric_extra_iteration,
    incremental_cost, parse_query, relaxed_size_bound, tighten,
)
from dqkit.relax.dc import as_fd
from dqkit.rules import parse_rule

TABLE_2A = [("t1", 9001, "Los Angeles"), ("t2", 9001, "San Francisco"), ("t3", 9001, "Los Angeles"),
            ("t4", 10001, "San Francisco"), ("t5", 10001, "New York")]
LA, SF, NY = "Los Angeles", "San Francisco", "New York"


def cells(daisy: Daisy, table: str) -> dict:
    """{(tid, attr): {world: {candidate: Fraction}}} of every cleaned cell (exact fractions)."""
    out: dict = {}
    t = daisy.tables[table]
    for r in daisy.table(table).collect():
        for c in t.rule_columns:
            cs = r["_dq_cand_" + c]
            if cs is None:
                continue
            for x in cs:
                text = f"{x['op']}{x['value']}" if x["kind"] == "range" else x["value"]
                out.setdefault((r["_dq_tid"], c), {}).setdefault(x["world"], {})[text] = Fr(x["support"], x["n"])
    return out


def cities(spark, rows=TABLE_2A, rule="Zip -> City", **kw) -> Daisy:
    d = Daisy(spark, **kw)
    d.register("cities", spark.createDataFrame(rows, "tid string, Zip int, City string"), key="tid")
    return d.add_rules("cities", rule)


def answer_ids(res, alias="cities") -> set:
    return {r[0] for r in res.answer.select(f"`{alias}._dq_tid`").collect()}


# ------------------------------------------------------------------------------ pure (no Spark job)
def test_cost_model_sides_are_equal_for_one_query_reading_everything():
    # AT-9 / R37: q = 1, q_1 = n, e_1 = 0: n + n + eps*n + 0 - 0 + 0 <= eps*n + 2n with equality
    n, eps, p = 1000, 37, 2.5
    inc = incremental_cost(n, [], d_i=n, eps_i=eps, q_i=n, e_i=0, prev_eps=[], p=p)
    assert inc == full_cost(1, n, df=n, eps=eps, p=p)
    m = CostModel(n, eps, p, units="tuples")
    first = m.decide(q_i=10, e_i=5, eps_i=3)
    assert first["decision"] == "incremental"
    m.record(first, 10, 3)
    assert CostModel(10, 0, 0.0).decide(10, 0, 0)["decision"] in ("incremental", "full")
    assert CostModel.from_dict(m.to_dict()).to_dict() == m.to_dict()


def test_lemma_helpers_and_boundary_pruning_give_the_derived_numbers():
    assert hypergeometric_extra_iteration(5, 2, 3) == pytest.approx(0.9)  # AT-11
    d = {"Zip": {9001: 3, 10001: 2}, "City": {LA: 2, SF: 2, NY: 1}}
    assert relaxed_size_bound(d, {"Zip": {9001: 2}, "City": {LA: 2}}) == 1  # AT-12, City = LA
    assert relaxed_size_bound(d, {"Zip": {9001: 3}, "City": {LA: 2, SF: 1}}) == 1  # AT-12, Zip = 9001
    assert tighten("<", (1500, 1750), (1000, 1750)) == (1500, 1750)  # AT-5
    assert tighten(">", (0.3, 0.4), (0.25, 0.5)) == (0.25, 0.4)  # AT-6
    assert tighten("<", (3000, 4000), (1000, 2000)) is None


def test_fd_and_its_dc_encoding_are_the_same_rule():
    fd = as_fd(parse_rule("phi: not(t1.Zip = t2.Zip and t1.City != t2.City)"))
    assert fd is not None and fd.lhs == ("Zip",) and fd.rhs == ("City",)
    assert as_fd(parse_rule("not(t1.salary < t2.salary and t1.tax > t2.tax)")) is None


@pytest.mark.parametrize("sql, construct", [
    ("SELECT Zip FROM cities ORDER BY Zip", "ORDER BY"),
    ("SELECT Zip FROM cities WHERE City LIKE 'L%'", "LIKE"),
    ("SELECT Zip FROM (SELECT * FROM cities) c", "subquery"),
    ("SELECT c.Zip FROM cities c LEFT JOIN emp e ON c.Zip = e.Zip", "LEFT JOIN"),
    ("SELECT upper(City) FROM cities", "UPPER"),
    ("SELECT Zip FROM cities WHERE Zip + 1 = 3", "arithmetic"),
    ("SELECT Zip FROM cities LIMIT 3", "LIMIT"),
    ("SELECT Zip FROM cities WHERE Zip IN (1, 2)", "IN"),
    ("DELETE FROM cities", "DELETE"),
    ("SELECT c.Zip FROM cities c, emp e", "cartesian"),
])
def test_a_query_outside_the_subset_is_refused_naming_the_construct(sql, construct):
    schemas = {"cities": ["tid", "Zip", "City"], "emp": ["Zip", "Name"]}
    with pytest.raises(UnsupportedQueryError, match=construct):
        parse_query(sql, schemas)


def test_unknown_tables_and_columns_are_named_before_spark():
    schemas = {"cities": ["tid", "Zip", "City"], "emp": ["Zip", "Name"]}
    with pytest.raises(UnknownTableError, match="employees"):
        parse_query("SELECT Zip FROM employees", schemas)
    with pytest.raises(UnknownColumnError, match="(?s)'city'.*did you mean 'City'"):
        parse_query("SELECT city FROM cities", schemas)
    with pytest.raises(UnknownColumnError, match="ambiguous"):
        parse_query("SELECT Zip FROM cities c JOIN emp e ON c.Zip = e.Zip", schemas)
    q = parse_query("SELECT c.Zip, count(*) AS n FROM cities c JOIN emp e ON c.Zip = e.Zip "
                    "WHERE (City = 'LA' OR City = 'SF') AND e.Name != 'x' GROUP BY c.Zip", schemas)
    assert q.aggregated and [str(j) for j in q.joins] == ["c.Zip = e.Zip"] and q.where.op == "and"


# ----------------------------------------------------------------------------------- paper examples
def test_at1_rhs_filter_relaxes_once_and_cleans_table_2b(spark):
    d = cities(spark)
    res = d.query("SELECT Zip FROM cities WHERE City = 'Los Angeles'")
    assert answer_ids(res) == {"t1", "t2", "t3"}
    assert {r[0] for r in res.dirty.collect()} == {"t1", "t3"}
    assert [(t["iteration"], t["added"], t["sample"]) for t in res.trace] == [(1, 1, ["t2"])]
    city = {LA: Fr(2, 3), SF: Fr(1, 3)}
    assert cells(d, "cities") == {
        ("t1", "City"): {"A": city}, ("t3", "City"): {"A": city},
        ("t2", "City"): {"A": city}, ("t2", "Zip"): {"B:Zip": {"9001": Fr(1, 2), "10001": Fr(1, 2)}}}
    # R3: the DC encoding of the FD gives the same table; R10: the originals stay as they were
    d2 = cities(spark, rule="phi: not(t1.Zip = t2.Zip and t1.City != t2.City)")
    d2.query("SELECT Zip FROM cities WHERE City = 'Los Angeles'")
    assert cells(d2, "cities") == cells(d, "cities")
    assert sorted(tuple(r) for r in d.table("cities").select("tid", "Zip", "City").collect()) == sorted(TABLE_2A)
    text = res.to_text()
    assert "9001 ‖ 10001 50%, 9001 50%" in text
    assert "border-top:1px dashed" in res.to_html()  # t2's second world under a dashed line (R42)
    long = {tuple(r) for r in res.long_format().collect()}
    assert ("t2", "Zip", "B:Zip", "10001", 0.5, False) in long and ("t2", "Zip", "A", "9001", 1.0, True) in long


def test_at2_lhs_filter_relaxes_to_a_fixpoint_and_returns_table_3(spark):
    d = cities(spark)
    res = d.query("SELECT City FROM cities WHERE Zip = 9001")
    assert answer_ids(res) == {"t1", "t2", "t3", "t4"}  # t5 is context only (R18)
    assert [(t["iteration"], t["added"], t["sample"]) for t in res.trace] == [(1, 1, ["t4"]), (2, 1, ["t5"]), (3, 0, [])]
    c = cells(d, "cities")
    half = {"9001": Fr(1, 2), "10001": Fr(1, 2)}
    assert c[("t4", "City")] == {"A": {SF: Fr(1, 2), NY: Fr(1, 2)}} and c[("t4", "Zip")] == {"B:Zip": half}
    assert c[("t5", "City")] == {"A": {SF: Fr(1, 2), NY: Fr(1, 2)}} and ("t5", "Zip") not in c
    assert c[("t2", "Zip")] == {"B:Zip": half}
    # R43: DaisyP (worlds weighted equally, ties to the original) and the supporting tuples of a candidate
    p = {r["tid"]: (r["Zip"], r["City"]) for r in d.most_probable("cities").collect()}
    assert p == {"t1": (9001, LA), "t2": (9001, SF), "t3": (9001, LA), "t4": (10001, SF), "t5": (10001, NY)}
    assert {r[0] for r in d.supporting_tuples("cities", "t1", "City", SF).collect()} == {"t2"}
    # R19: the next query finds every tuple already checked and changes nothing
    before = cells(d, "cities")
    res2 = d.query("SELECT Zip FROM cities WHERE City = 'New York'")
    assert answer_ids(res2) == {"t4", "t5"} and cells(d, "cities") == before


def test_at3_join_cleans_both_sides_and_returns_table_4e(spark):
    d = Daisy(spark)
    d.register("Cities", spark.createDataFrame([("t1", 9001, LA), ("t2", 9001, SF), ("t3", 10001, SF)],
                                               "tid string, Zip int, City string"), key="tid")
    d.register("Employee", spark.createDataFrame([(9001, "Peter", 23456), (10001, "Mary", 12345), (10002, "Jon", 12345)],
                                                 "Zip int, Name string, Phone int"), key="Name")
    d.add_rules("Cities", "Zip -> City").add_rules("Employee", "Phone -> Zip")
    sql = "SELECT C.Zip, E.Zip, E.Name FROM Cities C JOIN Employee E ON C.Zip = E.Zip WHERE C.City = 'Los Angeles'"
    assert "clean_σ pushed down onto Cities" in d.explain(sql)
    res = d.query(sql)
    assert {(r["C._dq_tid"], r["E._dq_tid"]) for r in res.dirty.collect()} == {("t1", "Peter")}
    assert {(r[0], r[1]) for r in res.answer.select("`C._dq_tid`", "`E._dq_tid`").collect()} == {
        ("t1", "Peter"), ("t2", "Peter"), ("t2", "Mary"), ("t2", "Jon")}
    half = lambda a, b: {a: Fr(1, 2), b: Fr(1, 2)}  # noqa: E731
    c, e = cells(d, "Cities"), cells(d, "Employee")
    assert c[("t2", "Zip")] == {"B:Zip": half("9001", "10001")}
    assert c[("t1", "City")] == {"A": half(LA, SF)} and ("t3", "City") not in c  # derived (R8)
    assert e == {("Mary", "Zip"): {"A": half("10001", "10002")}, ("Jon", "Zip"): {"A": half("10001", "10002")}}


def test_at4_inequality_dc_gives_range_candidates_in_two_worlds(spark):
    d = Daisy(spark)
    d.register("tax", spark.createDataFrame([("t1", 1000, 0.1, 31), ("t2", 3000, 0.2, 32), ("t3", 2000, 0.3, 43)],
                                            "tid string, salary int, tax double, age int"), key="tid")
    d.add_rules("tax", "phi: not(t1.salary < t2.salary and t1.tax > t2.tax)")
    res = d.query("SELECT salary, tax, age FROM tax WHERE salary >= 1000")
    assert answer_ids(res, "tax") == {"t1", "t2", "t3"}
    assert {tuple(r) for r in d.tables["tax"].pairs["phi"].collect()} == {("t3", "t2")}
    h = Fr(1, 2)
    assert cells(d, "tax") == {  # t1 is not flagged
        ("t2", "salary"): {"phi:salary": {"<2000": h, "3000": h}}, ("t2", "tax"): {"phi:tax": {"0.2": h, ">0.3": h}},
        ("t3", "salary"): {"phi:salary": {"2000": h, ">3000": h}}, ("t3", "tax"): {"phi:tax": {"0.3": h, "<0.2": h}}}
    # R12 over ranges: salary < 2000 may hold for t2 now (its range candidate), not for t3
    res2 = d.query("SELECT tax FROM tax WHERE salary < 1500")
    assert answer_ids(res2, "tax") == {"t1", "t2"}
    assert d.tables["tax"].dc_estimates["phi"][1] is not None


def test_at13_example_1_1_and_at8_multi_rule_union(spark):
    d = Daisy(spark)
    d.register("emp", spark.createDataFrame([("Jon", 9001, LA), ("Jim", 9001, SF), ("Mary", 10001, NY), ("Jane", 10002, NY)],
                                            "Name string, Zip int, City string"), key="Name")
    d.add_rules("emp", "Zip -> City")
    res = d.query("SELECT Name, City FROM emp WHERE City = 'Los Angeles'")
    assert answer_ids(res, "emp") == {"Jon", "Jim"}
    h = {LA: Fr(1, 2), SF: Fr(1, 2)}
    assert cells(d, "emp") == {("Jon", "City"): {"A": h}, ("Jim", "City"): {"A": h}}  # Jim's lhs world is trivial
    # AT-8: zip -> state and city -> state; P(state | zip = 9001 OR city = LA), the union counted once
    rows = [("a", 9001, LA, "CA"), ("b", 9001, LA, "CA"), ("c", 9001, "SF", "NV"), ("d", 8000, LA, "WA"),
            ("e", 8000, "SD", "WA"), ("f", 7000, "SF", "NV")]
    schema = "tid string, zip int, city string, state string"
    d1 = Daisy(spark)
    d1.register("s", spark.createDataFrame(rows, schema), key="tid").add_rules("s", "zip -> state\ncity -> state")
    d1.clean_all("s")
    c = cells(d1, "s")
    # a: zip 9001 -> {a, b, c}, city LA -> {a, b, d}; union {a, b, c, d}: CA 2/4, NV 1/4, WA 1/4
    assert c[("a", "state")] == {"A": {"CA": Fr(2, 4), "NV": Fr(1, 4), "WA": Fr(1, 4)}}
    # R28/R29: the other order, and the second rule added after a query, give the same cells
    d2 = Daisy(spark)
    d2.register("s", spark.createDataFrame(rows, schema), key="tid").add_rules("s", "city -> state")
    d2.query("SELECT state FROM s WHERE city = 'Los Angeles'")
    d2.add_rules("s", "zip -> state")
    d2.clean_all("s")
    assert cells(d2, "s") == c



def test_seconds_cost_model_stays_incremental_until_a_cleaning_is_measured():
    m = CostModel(10_000, 500, 2.0)  # seconds are the default units
    d = m.decide(q_i=200, e_i=40, eps_i=30, relax_seconds=0.4)
    assert m.units == "seconds" and d["decision"] == "incremental"
    assert d["tuple_full_cost"] == full_cost(1, 10_000, 10_000, 500, 2.0)  # the paper's costs are kept beside


def test_seconds_cost_model_switches_when_rent_paid_exceeds_the_predicted_full_cleaning():
    # cleanings cost 1 s fixed + 1 ms per row written; relaxation 0.5 s per query
    m = CostModel(10_000, 1_000, 2.0)
    stored = 0
    decisions = []
    for _ in range(6):
        eps_i = 100
        d = m.decide(q_i=200, e_i=50, eps_i=eps_i, relax_seconds=0.5, stored=stored)
        decisions.append(d["decision"])
        if d["decision"] == "full":
            break
        m.record(d, 200, eps_i, relax_seconds=0.5, clean_seconds=1.0 + 0.001 * (eps_i + stored), rows=eps_i + stored)
        stored += eps_i
    a, b = d["fixed_seconds"], d["seconds_per_row"]
    assert a == pytest.approx(1.0) and b == pytest.approx(0.001)
    # full = 1 + 0.001 * (remaining 900 - ... + stored): the cumulative rent passes it at the 3rd query
    assert decisions == ["incremental", "incremental", "full"]
    assert d["cumulative_incremental"] > d["full_cost"]
    assert d["full_cost"] == pytest.approx(1.0 + 0.001 * (1_000 - 200 + 200))


def test_seconds_cost_model_does_not_switch_while_full_cleaning_is_predicted_dearer():
    m = CostModel(10_000_000, 1_000_000, 2.0)
    for k in range(1, 6):  # cleaning is per-row dominated: 0.1 s + 1 ms per row
        d = m.decide(q_i=1000, e_i=0, eps_i=500 * k, relax_seconds=0.1, stored=0)
        assert d["decision"] == "incremental"
        m.record(d, 1000, 500 * k, relax_seconds=0.1, clean_seconds=0.1 + 0.001 * 500 * k, rows=500 * k)
    assert d["full_cost"] > 900 and m.switched_at is None


@settings(max_examples=40, deadline=None)
@given(a=st.floats(0, 5), b=st.floats(0, 0.01), rows=st.lists(st.integers(0, 100_000), min_size=2, max_size=8, unique=True),
       noise=st.lists(st.floats(-3, 3), min_size=8, max_size=8))
def test_cleaning_line_fit_is_exact_on_a_line_and_never_negative(a, b, rows, noise):
    from dqkit.relax.cost import fit_cleaning_seconds

    fa, fb = fit_cleaning_seconds([(r, a + b * r) for r in rows])
    assert fa == pytest.approx(a, abs=1e-6) and fb == pytest.approx(b, abs=1e-9)
    na, nb = fit_cleaning_seconds([(r, max(0.0, a + b * r + e)) for r, e in zip(rows, noise)])
    assert na >= 0 and nb >= 0


def test_cost_model_bad_units_and_old_states():
    with pytest.raises(ParameterError, match="cost units"):
        CostModel(10, 1, 1.0, units="dollars")
    m = CostModel(100, 5, 1.5, units="tuples")
    old = {k: v for k, v in m.to_dict().items() if k not in ("units", "measured")}
    assert CostModel.from_dict(old).units == "tuples"  # a state saved before the seconds units
    s = CostModel(100, 5, 1.5)
    s.record(s.decide(10, 2, 3, 0.2, 0), 10, 3, relax_seconds=0.2, clean_seconds=0.7, rows=3)
    assert CostModel.from_dict(s.to_dict()).to_dict() == s.to_dict()
    assert s.cumulative_incremental == pytest.approx(0.9)  # measured seconds, not a prediction


# ---------------------------------------------------------------------------------------- properties
zips = st.integers(0, 1)
cities_ = st.sampled_from(["a", "b", "c"])


@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(zips, cities_), min_size=3, max_size=7))
def test_at10_r39_a_workload_covering_the_table_equals_offline_cleaning(spark, rows):
    data = [(f"r{i}", z, c) for i, (z, c) in enumerate(rows)]
    offline = cities(spark, data)
    offline.clean_all("cities")
    expected = cells(offline, "cities")
    for strategy in ("incremental", "auto"):
        d = cities(spark, data, strategy=strategy)
        for z in sorted({z for z, _ in rows}):
            d.query(f"SELECT City FROM cities WHERE Zip = {z}")
        assert cells(d, "cities") == expected, strategy
    full = cities(spark, data, strategy="full")
    full.query("SELECT City FROM cities WHERE Zip = 0")
    assert cells(full, "cities") == expected
    # a switch after the first query: the rent paid so far is made to exceed any full cleaning
    switched = cities(spark, data)
    switched.query("SELECT City FROM cities WHERE Zip = 0")
    cm = switched.tables["cities"].cost
    knew = bool(cm.measured)  # the first query cleaned something, so the model can predict a full cleaning
    cm.cumulative_incremental = 1e9
    switched.query("SELECT City FROM cities WHERE Zip = 1")
    assert cells(switched, "cities") == expected
    assert cm.switched_at == (2 if knew else None)
    for (_, _), worlds in expected.items():  # R7: each cell's probabilities sum to 1 in each world
        assert all(sum(ws.values()) == 1 for ws in worlds.values())


@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["a", "b", "c"]), st.sampled_from([1, 2, None])),
                     min_size=4, max_size=9))
def test_group_lookup_cells_equal_the_tuple_level_candidates(spark, rows):
    """The per-group candidate arrays (one FD per side) give exactly the cells, probabilities and array
    order of the tuple-level computation, with NULLs, chains (y is rhs of one FD and lhs of another)
    and a multi-attribute lhs."""
    from dqkit.relax import fd as fdmod

    data = [(f"r{i}", x, y, z) for i, (x, y, z) in enumerate(rows)]
    general = fdmod.single_side
    for rules in (["x -> y", "y -> z"], ["x, z -> y"]):
        out = []
        for lookup in (True, False):
            fdmod.single_side = general if lookup else (lambda fds: False)
            try:
                d = Daisy(spark)
                d.register("s", spark.createDataFrame(data, "tid string, x int, y string, z int"), key="tid")
                for r in rules:
                    d.add_rules("s", r)
                assert fdmod.single_side(d.tables["s"].fds) is lookup
                d.clean_all("s")
            finally:
                fdmod.single_side = general
            cols = [c for c in d.table("s").columns if c.startswith("_dq_cand_")]
            out.append({r["_dq_tid"]: tuple(None if r[c] is None else tuple(tuple(x) for x in r[c]) for c in cols)
                        for r in d.table("s").collect()})
        assert out[0] == out[1], rules


@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(zips, cities_, st.sampled_from(["X", "Y"])), min_size=3, max_size=6))
def test_at7_merging_two_rules_is_order_independent(spark, rows):
    data = [(f"r{i}", z, c, s) for i, (z, c, s) in enumerate(rows)]
    out = []
    for order in (["zip -> state", "city -> state"], ["city -> state", "zip -> state"]):
        d = Daisy(spark)
        d.register("s", spark.createDataFrame(data, "tid string, zip int, city string, state string"), key="tid")
        for r in order:
            d.add_rules("s", r)
        d.clean_all("s")
        out.append(cells(d, "s"))
    assert out[0] == out[1]


# ----------------------------------------------------------------------------------- bad input, CLI
def test_empty_results_nulls_and_rules_on_unregistered_tables(spark):
    rows = [("t1", 9001, LA), ("t2", 9001, None), ("t3", None, SF), ("t4", 9001, SF)]
    d = cities(spark, rows)
    res = d.query("SELECT Zip FROM cities WHERE City = 'Nowhere'")
    assert res.counts() == {"answer": 0, "dirty": 0, "candidate_cells": 0} and "0 answer tuple" in res.to_text()
    d.query("SELECT City FROM cities WHERE Zip = 9001")
    c = cells(d, "cities")
    assert ("t2", "City") not in c and ("t3", "City") not in c  # NULL never violates nor supports
    assert c[("t1", "City")] == {"A": {LA: Fr(1, 2), SF: Fr(1, 2)}}
    with pytest.raises(UnknownTableError, match="not registered"):
        d.add_rules("people", "a -> b")
    with pytest.raises(UnknownColumnError):
        d.add_rules("cities", "zipcode -> City")


def test_html_escapes_values_and_separates_worlds(spark):
    rows = [("t1", 1, "<script>x</script>"), ("t2", 1, "b&c")]
    d = cities(spark, rows)
    res = d.query("SELECT City FROM cities WHERE Zip = 1")
    html = res.to_html()
    assert "<script>x" not in html and "&lt;script&gt;x" in html
    assert "border-top:1px dashed" not in html  # one world per tuple here: nothing to separate
    assert "b&amp;c 50%" in html
    assert json.dumps(res.to_dict())


def test_cli_query_state_is_incremental_atomic_and_tied_to_the_table_version(spark, tmp_path, capsys):
    from dqkit.cli import main

    src = tmp_path / "cities.csv"
    src.write_text("tid,Zip,City\n" + "\n".join(f"{t},{z},{c}" for t, z, c in TABLE_2A) + "\n")
    rules = tmp_path / "rules.txt"
    rules.write_text("Zip -> City\n")
    state = tmp_path / "state"
    base = ["query", "--table", f"cities={src}", "--rules", f"cities={rules}", "--key", "cities=tid",
            "--state", str(state)]
    # candidates found: exit 1, and the JSON keeps the long-format answer
    assert main(base + ["--format", "json", "SELECT Zip FROM cities WHERE City = 'Los Angeles'"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "CANDIDATES" and out["candidate_cells"] >= 1
    assert {r["tid"] for r in out["answer"]} == {"t1", "t2", "t3"}
    assert {"tid": "t2", "attr": "Zip", "world_id": "B:Zip", "candidate": "10001", "prob": 0.5,
            "is_original": False} in out["answer"]
    assert (state / "state.json").exists()
    saved = (state / "state.json").read_text()
    # a failed query leaves the state as it was
    assert main(base + ["SELECT nope FROM cities"]) == 2
    assert (state / "state.json").read_text() == saved
    # the next call starts from the saved table: t2 is already checked (its candidates are kept)
    assert main(base + ["--format", "json", "SELECT City FROM cities WHERE Zip = 10001"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert {r["tid"] for r in out["answer"]} == {"t2", "t4", "t5"} and out["state"] == str(state)
    # another version of the table: refused with a hint
    src.write_text("tid,Zip,City\nt1,9001,Los Angeles\n")
    assert main(base + ["SELECT Zip FROM cities"]) == 2
    err = capsys.readouterr().err
    assert "another version of table 'cities'" in err and "Hint" in err
    assert main(["query", "--table", f"cities={src}", "--rules", f"people={rules}", "SELECT Zip FROM cities"]) == 2
    assert "'people' is not registered" in capsys.readouterr().err


def test_query_cleaner_widget_runs_headless_and_the_query_report_is_registered(spark, tmp_path):
    from dqkit.systems import get
    from dqkit.widgets import QueryCleaner

    w = QueryCleaner(spark)
    w.name.value, w.source.value, w.key.value = "cities", "", ""
    w.add()
    assert "Error" in w.message.value  # an empty source is refused in the widget, not raised
    w.controller.add_table("cities", spark.createDataFrame(TABLE_2A, "tid string, Zip int, City string"), "tid",
                           "Zip -> City")
    w.query.value = "SELECT Zip FROM cities WHERE City = 'Los Angeles'"
    w.run(timeout=600)
    assert w.status == "done", w.error
    assert "10001 50%" in w.answers.value and "Answer over the dirty data" in w.answers.value
    assert "cumulative incremental cost" in w.cost.value
    assert "Relaxation trace" in w.view.children[1].value
    assert get("query").template == "system_report"  # derived from the declaration
    src = tmp_path / "t.csv"
    src.write_text("a,b\n1,2\n")
    rules = tmp_path / "r.txt"
    rules.write_text("a -> b\n")
    with pytest.raises(DqkitError, match="holds no query"):
        get("query").prepare({"table": [f"t={src}"], "rules": [f"t={rules}"], "workload": " ; "})


def test_the_query_report_runs_a_workload_through_the_registry(tmp_path, capsys):
    from dqkit.cli import main

    src = tmp_path / "cities.csv"
    src.write_text("tid,Zip,City\n" + "\n".join(f"{t},{z},{c}" for t, z, c in TABLE_2A[:-1]) + "\nt5,10001,<b>NY</b>\n")
    rules = tmp_path / "rules.txt"
    rules.write_text("Zip -> City\n")
    out = tmp_path / "report"
    code = main(["report", "query", "-p", "table", f"cities={src}", "-p", "rules", f"cities={rules}",
                 "-p", "key", "cities=tid", "-p", "workload",
                 "SELECT Zip FROM cities WHERE City = 'Los Angeles'; SELECT City FROM cities WHERE Zip = 10001",
                 "-o", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    html = (out / "query_report.html").read_text()
    assert "Per query" in html and "switch point" in html and "2 queries in" in html
    assert "2 needed cleaning" in html and "CANDIDATES" in html
    assert "<script" not in html.lower() and "<b>NY" not in html


# ------------------------------------------------------------------ the query system (dqkit/systems/query.py)
def test_cli_query_exits_0_when_nothing_needed_cleaning_and_explain_goes_through_the_same_emit_path(
        spark, tmp_path, capsys):
    from dqkit.cli import main

    src = tmp_path / "cities.csv"
    src.write_text("tid,Zip,City\nt1,9001,Los Angeles\nt2,9001,Los Angeles\nt3,10001,New York\n")
    rules = tmp_path / "rules.txt"
    rules.write_text("Zip -> City\n")
    base = ["query", "--table", f"cities={src}", "--rules", f"cities={rules}", "--key", "cities=tid"]
    assert main(base + ["--format", "json", "SELECT City FROM cities WHERE Zip = 9001"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "CLEAN" and out["candidate_cells"] == 0
    assert {(r["tid"], r["candidate"], r["is_original"]) for r in out["answer"]} == {
        ("t1", LA, True), ("t2", LA, True)}
    assert main(base + ["--explain", "SELECT City FROM cities WHERE Zip = 9001"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("dqkit query: PLAN") and "clean_σ pushed down onto cities" in text
    workload = tmp_path / "queries.sql"
    workload.write_text("# two queries\nSELECT City FROM cities WHERE Zip = 9001\nSELECT Zip FROM cities\n")
    assert main(base + ["--workload", str(workload), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["queries"] == 2 and out["cleaned_queries"] == 0 and out["verdict"] == "CLEAN"


@pytest.mark.parametrize("extra,message", [
    ([], "no query given"),
    (["--workload", "SELECT Zip FROM t; SELECT City FROM t", "SELECT Zip FROM t"], "both given"),
    (["--workload", "SELECT Zip FROM t; SELECT City FROM t", "--explain"], "plan of one query"),
    (["--workload", "no-such-queries.sql"], "workload file no-such-queries.sql does not exist"),
    (["--workload", " ; "], "holds no query"),
    (["--workload", "SELECT Zip FROM t; DROP TABLE t"], "read-only SELECT"),
    (["--table", "t2", "SELECT Zip FROM t"], "expected NAME=VALUE"),
])
def test_query_refuses_a_missing_doubled_or_bad_workload_before_spark(tmp_path, capsys, monkeypatch, extra, message):
    from dqkit.cli import main

    def no_spark(*args, **kwargs):
        raise AssertionError("Spark must not start here")

    monkeypatch.setattr("dqkit.runtime.session.get_spark", no_spark)

    src = tmp_path / "t.csv"
    src.write_text("tid,Zip,City\nt1,9001,LA\n")
    code = main(["query", "--table", f"t={src}", *extra])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err, err


def test_the_query_params_round_trip_with_name_value_pairs_and_absolute_paths(tmp_path):
    import os

    from dqkit.systems import get

    (tmp_path / "t.csv").write_text("tid,Zip,City\nt1,9001,LA\n")
    (tmp_path / "r.txt").write_text("Zip -> City\n")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        p = get("query").prepare({"table": ["t=t.csv"], "rules": ["t=r.txt"], "query": "SELECT Zip FROM t"})
        absolute = p.absolute()
    finally:
        os.chdir(cwd)
    assert absolute.table == (f"t={tmp_path / 't.csv'}",) and absolute.rules == (f"t={tmp_path / 'r.txt'}",)
    assert get("query").params.parse(p.to_parameters()) == p
    assert [str(x) for x in p.inputs()] == ["t.csv", "r.txt"]
