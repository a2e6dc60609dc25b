"""Violation detection (dqkit.detect): the paper's Example 1, brute-force equivalence, plans, modes."""
from __future__ import annotations

import json
import os
import random
import shutil

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dqkit.cli import main as cli_main
from dqkit.detect import detect, spark_plan
from dqkit.errors import DqkitError, ParameterError, RuleError, UnknownColumnError
from dqkit.rules import Attr, Const, DenialConstraint, Predicate, parse_rule

TABLE1 = "data/bigdansing_table1.csv"
RULES1 = "data/bigdansing_table1_rules.yaml"
OPS = ("=", "!=", "<", "<=", ">", ">=")


def pairs(result, rule):
    return sorted((r["t1"], r["t2"]) for r in result.violations_of(rule).collect())


@pytest.fixture(scope="module")
def example1(spark, table1):
    return detect(table1, RULES1, key="tid")


# ------------------------------------------------------------------------------- Example 1 (Table 1)
def test_phiF_finds_exactly_t2_t4_and_t4_t6(example1):
    assert pairs(example1, "phiF") == [("t2", "t4"), ("t4", "t6")]
    assert example1.summary("phiF").violations == 2
    assert example1.summary("phiF").operator == "Block+UCrossProduct"


def test_phiD_finds_exactly_its_two_violations(example1):
    # binding t1.rate > t2.rate and t1.salary < t2.salary: (t1, t2) and (t5, t2) (R23)
    assert pairs(example1, "phiD") == [("t1", "t2"), ("t5", "t2")]
    assert example1.summary("phiD").operator == "OCJoin"


def test_phi2_is_phiD_with_tuples_swapped(spark, table1):
    r = detect(table1, "phi2: not(t1.salary > t2.salary and t1.rate < t2.rate)", key="tid")
    assert pairs(r, "phi2") == [("t2", "t1"), ("t2", "t5")]


def test_phiF_genfix_emits_the_papers_fixes(example1):
    fixes = example1.fixes_of("phiF").collect()
    rhs = {frozenset([(f["tid"], f["attr"]), (f["rhs_tid"], f["rhs_attr"])]) for f in fixes if f["kind"] == "rhs"}
    # t2[city] = t4[city] and t6[city] = t4[city] (an equality, so either side may come first)
    assert rhs == {frozenset([("t2", "city"), ("t4", "city")]), frozenset([("t6", "city"), ("t4", "city")])}
    assert {f["fix"] for f in fixes if f["kind"] == "rhs"} == {"t2[city] = t4[city]", "t4[city] = t6[city]"}
    lhs = sorted(f["fix"] for f in fixes if f["kind"] == "lhs")
    assert lhs == ["t2[zipcode] != 90210", "t4[zipcode] != 90210", "t4[zipcode] != 90210", "t6[zipcode] != 90210"]


def test_phiD_genfix_negates_each_predicate(example1):
    fixes = sorted(f["fix"] for f in example1.fixes_of("phiD").collect())
    assert fixes == ["t1[rate] <= t2[rate]", "t1[salary] >= t2[salary]",
                     "t5[rate] <= t2[rate]", "t5[salary] >= t2[salary]"]


def test_figure2_data_has_four_candidate_pairs(spark, table1):
    from pyspark.sql import functions as F
    fig2 = table1.withColumn("zipcode", F.when(F.col("tid") == "t5", 60601).otherwise(F.col("zipcode")))
    r = detect(fig2, "phiF: zipcode -> city", key="tid", mode="count")
    assert r.summary("phiF").candidates == 4 and r.summary("phiF").violations == 2
    r1 = detect(table1, "phiF: zipcode -> city", key="tid", mode="count")
    assert r1.summary("phiF").candidates == 3


def test_explain_shows_logical_consolidated_and_physical_plans(example1):
    text = example1.explain()
    for part in ("== Logical plan ==", "== Consolidated plan ==", "== Physical plan ==",
                 "phiF: Block+UCrossProduct", "phiD: OCJoin", "one shared scan"):
        assert part in text
    assert "Block(zipcode)" in text


def test_no_cartesian_product_in_any_plan(example1):
    plan = spark_plan(example1.violations)
    assert "CartesianProduct" not in plan and "BroadcastNestedLoopJoin" not in plan
    assert "FlatMapGroupsInPandas" in plan  # the OCJoin merge, per partition pair


def test_multi_rule_run_reads_the_table_once(spark, tmp_path):
    src = tmp_path / "t1.csv"
    shutil.copy(TABLE1, src)
    df = spark.read.option("header", True).option("inferSchema", True).csv(str(src))
    rules = ["f: zipcode -> city", "g: zipcode -> state", "d: not(t1.rate > t2.rate and t1.salary < t2.salary)"]
    r = detect(df, rules, key="tid")
    plan = spark_plan(r.violations)
    scans = {line.strip().split("+- ")[-1] for line in plan.splitlines() if "FileScan" in line}
    assert len(scans) == 1 and "InMemoryRelation" in plan
    # the source is not read again: remove it and the violations still come back
    os.remove(src)
    assert sorted(r.counts.values()) == [0, 2, 2]
    assert len(r.violations.collect()) == 4
    r.unpersist()


# ------------------------------------------------------------------------------- brute force
def _holds(p: Predicate, rows: dict[int, dict]) -> bool:
    left = rows[p.left.tuple][p.left.column]
    right = p.right.value if isinstance(p.right, Const) else rows[p.right.tuple][p.right.column]
    if left is None or right is None:
        return False
    return {"=": left == right, "!=": left != right, "<": left < right, "<=": left <= right,
            ">": left > right, ">=": left >= right}[p.op]


def brute_force(records: list[dict], rule) -> list[tuple]:
    """Nested loop over all tuples / ordered pairs of distinct tuples, SQL NULL semantics."""
    if rule.kind == "fd":
        rule = rule.as_denial_constraints()[0]
    if rule.arity == 1:
        return sorted((r["tid"], None) for r in records if all(_holds(p, {1: r}) for p in rule.predicates))
    out = set()
    for a in records:
        for b in records:
            if a["tid"] != b["tid"] and all(_holds(p, {1: a, 2: b}) for p in rule.predicates):
                out.add((a["tid"], b["tid"]) if not rule.symmetric else tuple(sorted((a["tid"], b["tid"]))))
    return sorted(out)


NUM = ("a", "b", "c")


def random_table(rng: random.Random) -> list[dict]:
    n = rng.randint(0, 24)
    skew = rng.random() < 0.4
    rows = []
    for i in range(n):
        rows.append({
            "tid": i,
            "a": None if rng.random() < 0.1 else rng.randint(0, 4),
            "b": 1 if skew and rng.random() < 0.7 else (None if rng.random() < 0.1 else rng.randint(-2, 3)),
            "c": None if rng.random() < 0.1 else rng.choice([0.5, 1.0, 1.5, 2.25, -3.0]),
            "s": rng.choice(["x", "y", "z", "x", None]),
        })
    return rows


def random_predicate(rng: random.Random, cross: bool, ops=OPS) -> Predicate:
    op = rng.choice(ops)
    if rng.random() < 0.2:
        col1 = col2 = "s"
    else:
        col1, col2 = rng.choice(NUM), rng.choice(NUM)
    if cross:
        return Predicate(Attr(1, col1), op, Attr(2, col2))
    t = rng.choice((1, 2))
    const = rng.choice(["x", "y"]) if col1 == "s" else rng.choice([0, 1, 2, 1.5])
    if rng.random() < 0.3:
        return Predicate(Attr(t, col1), op, Attr(t, col2))
    return Predicate(Attr(t, col1), op, Const(const))


def random_rules(rng: random.Random) -> list[DenialConstraint]:
    rules = []
    # OCJoin: cross predicates are orderings / !=, 1-3 predicates
    k = rng.randint(1, 3)
    preds = [random_predicate(rng, True, ("<", "<=", ">", ">="))]
    preds += [random_predicate(rng, rng.random() < 0.6, ("<", "<=", ">", ">=", "!=")) for _ in range(k - 1)]
    rules.append(DenialConstraint("oc", tuple(dict.fromkeys(preds))))
    # blocked: one cross equality plus anything
    preds = [random_predicate(rng, True, ("=",))]
    preds += [random_predicate(rng, rng.random() < 0.5) for _ in range(rng.randint(0, 2))]
    rules.append(DenialConstraint("blk", tuple(dict.fromkeys(preds))))
    # symmetric FD-like rule and a one-tuple rule
    col = rng.choice(NUM)
    rules.append(parse_rule(f"fd: {col} -> s"))
    rules.append(DenialConstraint("one", tuple(dict.fromkeys(
        random_predicate(rng, False) for _ in range(rng.randint(1, 3)))), arity=1))
    # normalise one-tuple rules to t1 only
    one = rules[-1]
    rules[-1] = DenialConstraint("one", tuple(
        Predicate(Attr(1, p.left.column), p.op, Attr(1, p.right.column) if isinstance(p.right, Attr) else p.right)
        for p in one.predicates), arity=1)
    return rules


def _frame(spark, records):
    pdf = pd.DataFrame(records, columns=["tid", "a", "b", "c", "s"])
    return spark.createDataFrame(pdf.astype(object).where(pdf.notna(), None),
                                 "tid int, a int, b int, c double, s string")


def _check(spark, seed, nb_parts):
    rng = random.Random(seed)
    records = random_table(rng)
    rules = random_rules(rng)
    r = detect(_frame(spark, records), rules, key="tid", nb_parts=nb_parts)
    got: dict[str, list] = {rule.name: [] for rule in rules}
    for row in r.violations.collect():
        got[row["rule"]].append((row["t1"], row["t2"]))
    for rule in rules:
        expected = brute_force(records, rule)
        assert sorted(got[rule.name]) == expected, (seed, str(rule), r.summary(rule.name).operator)
        assert r.summary(rule.name).violations == len(expected), (seed, str(rule))
    assert r.summary("oc").operator == "OCJoin"
    assert r.summary("blk").operator.startswith("Block+")


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), nb_parts=st.sampled_from([1, 2, 3, 7]))
def test_detection_equals_brute_force_nested_loop(spark, seed, nb_parts):
    _check(spark, seed, nb_parts)


def _skewed_case(seed: int, n: int):
    """Skewed random rows (many ties on ``b``) and three OCJoin rules mixing types and operators."""
    rng = random.Random(seed)
    records = [{"tid": i, "a": rng.randint(0, 30), "b": rng.choice([1, 1, 1, 2, rng.randint(0, 50)]),
                "c": float(rng.randint(0, 9)), "s": rng.choice("pqr")} for i in range(n)]
    rules = [parse_rule("p2: not(t1.a > t2.a and t1.b < t2.b)"),
             parse_rule("p3: not(t1.a >= t2.b and t1.c < t2.c and t1.b != t2.b)"),
             parse_rule("ps: not(t1.s < t2.s and t1.a <= t2.a)")]
    return records, rules


def test_ocjoin_equals_brute_force_on_larger_skewed_data(spark):
    """Enough rows for several partitions and the chunked merge inside partition pairs."""
    records, rules = _skewed_case(seed=5, n=400)
    r = detect(_frame(spark, records), rules, key="tid", nb_parts=5, mode="count")
    for rule in rules:
        assert r.summary(rule.name).violations == len(brute_force(records, rule)), rule.name
    v = detect(_frame(spark, records), rules[:1], key="tid", nb_parts=5)
    assert pairs(v, "p2") == brute_force(records, rules[0])


# ------------------------------------------------------------------------------- one-partition count
def test_dominance_counting_kernels_equal_brute_force():
    import itertools

    import numpy as np

    from dqkit.detect import _merge

    rng = np.random.default_rng(11)
    ords = ("<", "<=", ">", ">=")
    for _ in range(60):
        nl, nr, k = rng.integers(0, 25), rng.integers(0, 25), rng.integers(1, 5)  # few values: many ties
        lx, ly = rng.integers(0, k, nl).astype(float), rng.integers(-k, k, nl)
        rx, ry = rng.integers(0, k, nr).astype(float), rng.integers(-k, k, nr)
        for ox, oy in itertools.product(ords, ords):
            m = _merge._CMP[ox](lx[:, None], rx[None, :]) & _merge._CMP[oy](ly[:, None], ry[None, :])
            assert _merge.dominance_count(lx, ly, rx, ry, ox, oy) == int(m.sum()), (ox, oy)
            assert _merge.count_pairs([lx, ly], [rx, ry], [(0, ox), (1, oy)]) == int(m.sum())
            s = _merge._CMP[ox](lx[:, None], lx[None, :]) & _merge._CMP[oy](ly[:, None], ly[None, :])
            np.fill_diagonal(s, False)
            assert _merge.self_dominance_count(lx, ly, ox, oy) == int(s.sum()), (ox, oy)
    words = np.array(["b", "a", "c", "a", "b"], dtype=object)  # strings order like Spark's
    # (i, j) with words[i] < words[j] and i > j: (a1,b0) (a3,b0) (a3,c2) (b4,c2)
    assert _merge.self_dominance_count(words, np.arange(5), "<", ">") == 4
    assert _merge.dominance_count(words, np.arange(5), words, np.arange(5), "<", ">") == 4


@pytest.mark.parametrize("seed", [3, 17, 29, 101, 4242])
def test_one_partition_count_equals_brute_force(spark, seed):
    """No nb_parts: a small input's OCJoin count runs in one task (both kernels, side predicates, NULLs)."""
    rng = random.Random(seed)
    records = random_table(rng)
    rules = [r for r in random_rules(rng) if r.name == "oc"]
    rules += [parse_rule("self2: not(t1.a > t2.a and t1.b < t2.b)"),
              parse_rule("selfeq: not(t1.a >= t2.a and t1.c <= t2.c)"),
              parse_rule("sided: not(t1.a <= t2.b and t1.c > t2.c and t2.s = 'x')"),
              parse_rule("one: not(t1.c < t2.c)")]
    r = detect(_frame(spark, records), rules, key="tid", mode="count")
    for rule in rules:
        assert r.summary(rule.name).violations == len(brute_force(records, rule)), (seed, str(rule))
        assert r.summary(rule.name).details.get("counted_in") == "one partition", rule.name


def test_one_partition_and_range_partitions_agree_on_skewed_data(spark, monkeypatch):
    import dqkit.detect.ocjoin as dd

    records, rules = _skewed_case(seed=8, n=300)
    expected = {rule.name: len(brute_force(records, rule)) for rule in rules}
    one = detect(_frame(spark, records), rules, key="tid", mode="count")
    assert one.counts == expected
    assert {one.summary(n).details.get("counted_in") for n in expected} == {"one partition"}
    assert "one partition" in one.physical_plan
    # more rows than the one-partition limit: the task gives up, range partitioning takes over
    monkeypatch.setattr(dd, "ONE_PART_ROWS", 100)
    monkeypatch.setattr(dd, "ONE_PART_ROWS_GENERAL", 100)
    monkeypatch.setattr(dd, "ROWS_PER_PART", 60)
    ranged = detect(_frame(spark, records), rules, key="tid", mode="count")
    assert ranged.counts == expected
    for n in expected:
        assert ranged.summary(n).details.get("counted_in") is None and ranged.summary(n).details["nb_parts"] > 1
    assert "range-partition on" in ranged.physical_plan


def test_one_partition_count_with_content_ids_counts_duplicate_rows(spark):
    """Without a key, exact duplicate rows are distinct tuples (content ids with #k) in every path."""
    rows = [(1, 5), (1, 5), (2, 3), (0, 9), (2, 3), (None, 1)]
    df = spark.createDataFrame(rows, "a int, b int")
    records = [{"tid": i, "a": a, "b": b} for i, (a, b) in enumerate(rows)]
    for text in ("not(t1.a >= t2.a and t1.b <= t2.b)", "not(t1.a > t2.a and t1.b < t2.b)"):
        rule = parse_rule("d: " + text)
        want = len(brute_force(records, rule))
        assert detect(df, [rule], mode="count").counts["d"] == want
        assert detect(df, [rule], mode="count", nb_parts=2).counts["d"] == want
        assert len(detect(df, [rule]).violations.collect()) == want


def test_one_partition_count_on_dates_timestamps_decimals_and_booleans(spark):
    import datetime as dt
    from decimal import Decimal

    rng = random.Random(9)
    records = [{"tid": i, "d": dt.date(2024, 1, 1) + dt.timedelta(days=rng.randint(0, 5)),
                "ts": dt.datetime(2024, 1, 1, rng.randint(0, 3)), "m": Decimal(rng.randint(0, 6)) / 4,
                "f": rng.random() < 0.5, "x": rng.choice([None, 1.5, 2.5, -1.0])} for i in range(40)]
    df = spark.createDataFrame([tuple(r.values()) for r in records],
                               "tid int, d date, ts timestamp, m decimal(10,2), f boolean, x double")
    rules = [parse_rule("dd: not(t1.d > t2.d and t1.ts <= t2.ts)"),
             parse_rule("dm: not(t1.m >= t2.m and t1.f != t2.f)"),
             parse_rule("dx: not(t1.d < t2.d and t1.x > t2.x and t1.m != t2.m)"),
             parse_rule("dt1: not(t1.ts < t2.ts)")]
    one = detect(df, rules, key="tid", mode="count")
    ranged = detect(df, rules, key="tid", mode="count", nb_parts=3)
    for rule in rules:
        want = len(brute_force(records, rule))
        assert one.counts[rule.name] == want == ranged.counts[rule.name], rule.name
        assert one.summary(rule.name).details.get("counted_in") == "one partition"


def test_count_mode_of_a_small_ocjoin_runs_one_spark_job(spark):
    rng = random.Random(4)
    records = [{"tid": i, "a": rng.randint(0, 50), "b": rng.randint(0, 50), "c": 1.0, "s": "x"} for i in range(500)]
    df = _frame(spark, records)
    rule = parse_rule("p: not(t1.a > t2.a and t1.b < t2.b)")
    detect(df, [rule], key="tid", mode="count", trust_key=True)  # warm
    before = set(spark.sparkContext.statusTracker().getJobIdsForGroup(None))
    r = detect(df, [rule], key="tid", mode="count", trust_key=True)
    after = set(spark.sparkContext.statusTracker().getJobIdsForGroup(None))
    assert r.counts["p"] == len(brute_force(records, rule))
    assert len(after - before) == 1
    # checking the key (unique, non-NULL) costs what dqkit.primitives.keys.check_key's one aggregation costs, no more
    from dqkit.primitives.keys import check_key

    check_key(df, "tid", table="t", command="detect")
    checked = set(spark.sparkContext.statusTracker().getJobIdsForGroup(None))
    detect(df, [rule], key="tid", mode="count")
    final = set(spark.sparkContext.statusTracker().getJobIdsForGroup(None))
    assert len(final - checked) == 1 + len(checked - after)


# ------------------------------------------------------------------------------- NULLs, ids, modes
def test_predicate_on_null_is_false(spark):
    df = spark.createDataFrame([(1, 10, "a"), (2, 10, None), (3, None, "b"), (4, 10, "c")],
                               "tid int, zip int, city string")
    r = detect(df, ["f: zip -> city", "d: not(t1.zip = t2.zip and t1.city != t2.city)",
                    "o: not(t1.city = 'a')", "n: not(t1.zip < t2.zip)"], key="tid")
    assert pairs(r, "f") == [(1, 4)] and pairs(r, "d") == [(1, 4)]
    assert pairs(r, "o") == [(1, None)] and r.counts["n"] == 0


def test_candidate_fixes_of_rules_over_a_column_named_t(spark):
    # the fixes' self-join once named its row ids _a_t / _b_t, as it names a rule column t: ambiguous
    df = spark.createDataFrame([(1, "k", "x"), (2, "k", "y")], "id int, t string, v string")
    r = detect(df, ["f: t -> v", "d: not(t1.t = t2.t and t1.v != t2.v)"], key="id")
    assert {(x["tid"], x["fix"]) for x in r.fixes_of("f").collect() if x["kind"] == "rhs"} == {(1, "1[v] = 2[v]")}
    assert sorted(x["fix"] for x in r.fixes_of("d").collect()) == ["1[t] != 2[t]", "1[v] = 2[v]"]


def test_content_tuple_ids_are_deterministic_and_distinguish_duplicates(spark):
    rows = [("a", 1), ("a", 1), ("a", 2), ("b", 1)]
    d1 = spark.createDataFrame(rows, "k string, v int")
    d2 = spark.createDataFrame(list(reversed(rows)), "k string, v int").repartition(3)
    r1 = detect(d1, "f: k -> v")
    r2 = detect(d2, "f: k -> v")
    v1, v2 = pairs(r1, "f"), pairs(r2, "f")
    assert v1 == v2 and len(v1) == 2
    ids = {t for p in v1 for t in p}
    assert len(ids) == 3 and all(len(t) >= 32 for t in ids)


def test_count_and_sample_modes(spark, table1):
    c = detect(table1, RULES1, key="tid", mode="count")
    assert c.counts == {"phiF": 2, "phiD": 2}
    s = detect(table1, RULES1, key="tid", sample=1)
    assert s.mode == "sample" and s.counts == {"phiF": 2, "phiD": 2}
    assert sorted(map(tuple, s.violations.collect())) == [("phiD", "t1", "t2"), ("phiF", "t2", "t4")]
    with pytest.raises(ParameterError):
        detect(table1, RULES1, mode="sample")
    with pytest.raises(ParameterError):
        detect(table1, RULES1, mode="everything")


# ------------------------------------------------------------------------------- bad input
def _jobs(spark):
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(None))


@pytest.mark.parametrize("rules, error, cause", [
    ("not(t1.rate > t2.rate", RuleError, "column 22"),
    ("zip -> city", UnknownColumnError, "unknown column 'zip'"),
    ("not(t1.city < t2.salary)", RuleError, "cannot be compared"),
    ("t1&t2&EQ(t1.zipcode,t1.zipcode)", RuleError, "no predicate reads t2"),
    ("not(t1.state = 'NY' and t2.state = 'CA')", RuleError, "no predicate relates t1 to t2"),
])
def test_bad_rules_fail_before_any_spark_job(spark, table1, rules, error, cause):
    before = _jobs(spark)
    with pytest.raises(error, match=cause):
        detect(table1, rules, key="tid")
    assert _jobs(spark) == before


def test_unknown_key_column(spark, table1):
    with pytest.raises(UnknownColumnError, match="key"):
        detect(table1, "zipcode -> city", key="id")


# ------------------------------------------------------------------------------- result object
def test_result_to_dict_save_html_and_plot(example1, tmp_path):
    d = example1.to_dict()
    assert d["rules"]["phiF"]["violations"] == 2 and d["rules"]["phiD"]["operator"] == "OCJoin"
    assert set(d["rules"]["phiF"]) >= {"violations", "operator", "seconds"}
    json.dumps(d)
    out = example1.save(tmp_path / "run")
    assert sorted(os.listdir(out)) == ["candidate_fixes", "manifest.json", "plan.txt", "report.html",
                                       "row_fingerprints", "summary.json", "violations", "violations_per_rule.png"]
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".dqkit")]
    with pytest.raises(ParameterError):
        example1.save(tmp_path / "run")
    html = example1.to_html()
    assert "phiF" in html and "<script" not in html
    fig = example1.plot_violation_graph()
    assert fig.axes


def test_html_escapes_values(spark):
    df = spark.createDataFrame([("<b>x</b>", 1, "a"), ("<i>y</i>", 1, "b")], "k string, zip int, city string")
    r = detect(df, "f: zip -> city", key="k")
    html = r.to_html()
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html


# ------------------------------------------------------------------------------- CLI
def test_cli_exit_codes_and_json(capsys, tmp_path):
    rc = cli_main(["detect", TABLE1, "--rules", RULES1, "--key", "tid", "--format", "json", "--count-only"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1 and out["rules"]["phiF"] == {**out["rules"]["phiF"], "violations": 2, "operator": "Block+UCrossProduct"}
    assert isinstance(out["rules"]["phiD"]["seconds"], float)
    clean = tmp_path / "clean.txt"
    clean.write_text("c: tid -> name\n")
    assert cli_main(["detect", TABLE1, "--rules", str(clean), "--key", "tid"]) == 0
    bad = tmp_path / "bad.txt"
    bad.write_text("c: not(t1.nope > t2.nope)\n")
    assert cli_main(["detect", TABLE1, "--rules", str(bad)]) == 2
    assert "unknown column 'nope'" in capsys.readouterr().err
    rc = cli_main(["detect", TABLE1, "--rules", RULES1, "--key", "tid", "--sample", "1", "--explain",
                   "--out", str(tmp_path / "o")])
    text = capsys.readouterr().out
    assert rc == 1 and "== Physical plan ==" in text and (tmp_path / "o" / "summary.json").exists()


def test_cli_explain_adds_the_plans_to_the_json_output_and_nothing_without_it(capsys):
    rc = cli_main(["detect", TABLE1, "--rules", RULES1, "--key", "tid", "--count-only", "--explain",
                   "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1 and "== Physical plan ==" in out["explain"]
    assert cli_main(["detect", TABLE1, "--rules", RULES1, "--key", "tid", "--count-only", "--format", "json"]) == 1
    assert "explain" not in json.loads(capsys.readouterr().out)


# ------------------------------------------------------------------------------- tax generator
def test_tax_generator_is_seeded_and_has_ground_truth(spark, tmp_path):
    from data.tax import errors_of, generate_tax, write_tax

    dirty, clean = generate_tax(400, "B", seed=3, magnitude=0.05, spark=spark)
    rules = ["phi1: zipcode -> city", "phi2: not(t1.salary > t2.salary and t1.rate < t2.rate)"]
    rc = detect(clean, rules, key="tid", mode="count")
    assert rc.counts == {"phi1": 0, "phi2": 0}
    rd = detect(dirty, rules, key="tid", mode="count")
    assert rd.counts["phi1"] == 0 and rd.counts["phi2"] > 0
    errs = errors_of(dirty, clean)
    assert 10 < errs.count() < 80 and {r["attribute"] for r in errs.collect()} == {"rate"}
    a, _ = generate_tax(400, "A", seed=3, spark=spark)
    assert detect(a, rules[:1], key="tid", mode="count").counts["phi1"] > 0
    again, _ = generate_tax(400, "B", seed=3, magnitude=0.05, spark=spark)
    assert sorted(again.collect()) == sorted(dirty.collect())
    path = write_tax(str(tmp_path / "taxA"), 100, "A", spark=spark)
    assert sorted(os.listdir(tmp_path / "taxA")) == ["clean", "dirty", "errors"] and path.endswith("dirty")


def test_dqkit_error_hierarchy():
    assert issubclass(RuleError, DqkitError)


def test_a_column_named_with_a_backtick_in_an_fd(spark):
    from dqkit.rules import FunctionalDependency

    df = spark.createDataFrame([("a", 1, "x"), ("b", 1, "y"), ("c", 2, "z"), ("d", 1, "x")],
                               "tid string, `zip``code` int, `ci``ty` string")
    r = detect(df, [FunctionalDependency("fd", ("zip`code",), ("ci`ty",))], key="tid")
    assert pairs(r, "fd") == [("a", "b"), ("b", "d")]
    fixes = {f["fix"] for f in r.fixes_of("fd").collect() if f["kind"] == "rhs"}
    assert fixes == {"a[ci`ty] = b[ci`ty]", "b[ci`ty] = d[ci`ty]"}
    assert detect(df, "`zip``code` -> `ci``ty`", key="tid", mode="count").counts == {"`zip``code` -> `ci``ty`": 2}


def test_a_rule_of_300_predicates_compiles_and_runs(spark):
    rows = [(i, i % 2, v) for i, v in enumerate([5, 300, 310, 299, 400, 320, 1])]
    df = spark.createDataFrame(rows, "tid int, k int, v int")
    preds = ["t1.k = t2.k", "t1.v > t2.v"] + [f"t1.v > {i}" for i in range(298)]
    r = detect(df, "big: not(" + " and ".join(preds) + ")", key="tid")
    want = sorted((a[0], b[0]) for a in rows for b in rows if a[0] != b[0] and a[1] == b[1] and a[2] > b[2]
                  and a[2] > 297)
    assert pairs(r, "big") == want and r.counts["big"] == len(want) > 0


def test_progress_is_called_once_per_rule(spark, table1):
    seen = []
    detect(table1, RULES1, key="tid", mode="count", progress=lambda *a: seen.append(a))
    assert seen == [("detect", "phiF", 1, 2), ("detect", "phiD", 2, 2)]
