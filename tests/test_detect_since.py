"""``detect NEW --since OLD``: new, resolved and persisting violations equal two full detections diffed."""
from __future__ import annotations

import json

import pytest

from dqkit.errors import ParameterError
from dqkit.detect.since_manifest import MANIFEST, make_manifest
from dqkit.systems.detect import DETECT
from support.sparkjobs import spark_jobs

COLS = ["id", "zip", "city", "state", "salary", "rate"]
OLD = [(1, "10001", "NY", "NY", 100, 10), (2, "10001", "NY", "NY", 200, 20), (3, "90210", "LA", "CA", 100, 5),
       (4, "90210", "LA", "CA", 300, 2), (5, "60601", "CH", "IL", 50, 50), (7, "60601", "Chicago", "IL", 500, 1),
       (8, "60602", "CH", "IL", 100, 9)]
# 2 updated (city), 4 deleted, 6 inserted; 7 and 8 change only a column no rule reads... none here
NEW = [(1, "10001", "NY", "NY", 100, 10), (2, "10001", "NYC", "NY", 200, 20), (3, "90210", "LA", "CA", 100, 5),
       (5, "60601", "CH", "IL", 50, 50), (6, "90210", "SF", "CA", 400, 1), (7, "60601", "Chicago", "IL", 500, 1),
       (8, "60602", "CH", "IL", 100, 9)]
RULES = {"zip_city": "zip -> city",
         "pay": "not(t1.state = t2.state and t1.salary > t2.salary and t1.rate < t2.rate)"}
GOLDEN = {"new": {("pay", 3, 6), ("zip_city", 1, 2), ("zip_city", 3, 6)},
          "resolved": {("pay", 3, 4)},
          "persisting": {("pay", 5, 7), ("pay", 5, 8), ("pay", 7, 8), ("zip_city", 5, 7)}}


def _lists(result) -> dict[str, set]:
    return {w: {tuple(r) for r in result.violations(w).collect()} for w in ("new", "resolved", "persisting")}


def _rules():
    from dqkit.rules import as_rules

    return as_rules(RULES)


@pytest.mark.parametrize("max_change", [1.0, 0.0], ids=["changed-rows-only", "cost-rule-full"])
def test_since_lists_new_resolved_and_persisting_violations_of_a_hand_made_pair(spark, max_change):
    from dqkit.detect.since import detect_since

    old, new = spark.createDataFrame(OLD, COLS), spark.createDataFrame(NEW, COLS)
    res = detect_since(new, old, _rules(), key="id", spark=spark, max_change=max_change)
    assert _lists(res) == GOLDEN
    d = res.to_dict()
    assert (d["new"], d["resolved"], d["persisting"]) == (3, 1, 4)
    assert d["rules"]["pay"]["new"] == 1 and d["rules"]["zip_city"]["persisting"] == 1
    assert d["changes"] == {"inserted": 1, "deleted": 1, "updated": 1}
    assert d["full_detection"] is (max_change == 0.0)
    assert res.exit_code == 1 and "3 new" in res.verdict.summary
    titles = [getattr(b, "title", "") for b in res.sections()]
    assert {"Since the last run", "New violations", "Resolved violations", "Persisting violations"} <= set(titles)
    res.unpersist()


def test_since_reuses_a_saved_detection_and_its_own_output_serves_the_next_night(spark, tmp_path):
    from dqkit.detect import detect
    from dqkit.detect.since import detect_since

    old, new = spark.createDataFrame(OLD, COLS), spark.createDataFrame(NEW, COLS)
    saved = tmp_path / "old_run"
    detect(old, _rules(), key="id", spark=spark).save(saved)
    manifest = json.loads((saved / MANIFEST).read_text())
    assert manifest["key"] == "id" and manifest["fingerprints"] == "row_fingerprints"
    res = detect_since(new, str(saved), _rules(), key="id", spark=spark, max_change=1.0)
    assert _lists(res) == GOLDEN and res.reused
    night2 = tmp_path / "new_run"
    res.save(night2)
    for name in ("new", "resolved", "persisting", "violations", MANIFEST):
        assert (night2 / name).exists()
    # its identities per rule (new + persisting): the next night's persisting counts start from them
    assert json.loads((night2 / MANIFEST).read_text())["identities"] == {"zip_city": 3, "pay": 4}
    again = detect_since(new, str(night2), _rules(), key="id", spark=spark)  # nothing changed since
    assert _lists(again) == {"new": set(), "resolved": set(), "persisting": GOLDEN["new"] | GOLDEN["persisting"]}


@pytest.mark.parametrize("bad_side", ["new", "old"])
def test_since_refuses_a_repeated_or_null_key_with_the_key_checks_own_message(spark, bad_side):
    # the key checks ride on the change join; the refusal must read exactly as dqkit.primitives.keys.check_key's
    from dqkit.detect.since import detect_since
    from dqkit.errors import InvalidKeyError
    from dqkit.primitives.keys import check_key

    good = spark.createDataFrame(NEW, COLS)
    bad = spark.createDataFrame(NEW + [(2, "1", "x", "y", 1, 1), (2, "1", "z", "y", 1, 1), (None, "1", "x", "y", 1, 1)],
                                COLS)
    new, old, label = (bad, good, "new.parquet") if bad_side == "new" else (good, bad, "old.parquet")
    with pytest.raises(InvalidKeyError) as since_err:
        detect_since(new, old, _rules(), key="id", spark=spark, name="new.parquet")
    with pytest.raises(InvalidKeyError) as own:
        check_key(bad, "id", table=label if bad_side == "new" else str(old), command="detect --since",
                  without="give a key column")
    assert str(since_err.value) == str(own.value) and since_err.value.hint == own.value.hint
    assert "1 key value(s) repeat, on 3 rows, for example 2 (3 rows); the key is NULL in 1 row(s)" in str(own.value)


def test_since_fd_with_null_values_equals_two_full_detections_diffed(spark):
    # NULL on the left-hand side blocks nothing, NULL on the right differs from nothing (as in detect)
    from dqkit.detect import detect
    from dqkit.detect.since import detect_since, identities
    from dqkit.rules import as_rules

    schema = "id long, a string, b string, c string"
    old = spark.createDataFrame([(1, "x", "p", "u"), (2, "x", None, "u"), (3, "x", "p", None), (4, None, "q", "u"),
                                 (5, None, "r", "u"), (6, "y", "p", "u"), (7, "y", "p", "v"), (9, "z", "p", "u"),
                                 (10, "z", "q", None)], schema)
    new = spark.createDataFrame([(1, "x", "q", "u"), (2, "x", None, "u"), (3, "x", "p", None), (4, None, "s", "u"),
                                 (5, "y", "r", "u"), (6, "y", "p", "u"), (8, "x", "t", "w"), (9, "z", "p", "u"),
                                 (10, "z", "q", None)], schema)
    rules = as_rules({"ab": "a -> b", "abc": "a -> b, c"})

    def full(df):
        return {tuple(r) for r in identities(detect(df, rules, key="id", spark=spark).violations).collect()}

    v_old, v_new = full(old), full(new)
    want = {"new": v_new - v_old, "resolved": v_old - v_new, "persisting": v_new & v_old}
    for max_change in (1.0, 0.0):
        res = detect_since(new, old, rules, key="id", spark=spark, max_change=max_change)
        assert _lists(res) == want, max_change
        assert res.to_dict()["persisting"] == len(want["persisting"])
        res.unpersist()
    assert want["new"] and want["resolved"] and want["persisting"]


@pytest.mark.parametrize("text", ["a -> b", "a -> b, c", "a, d -> c"])
def test_since_fd_pairs_equal_the_join_based_fd_detection_on_random_rows_with_nulls(spark, text):
    # fd_pairs (rhs groups crossed inside a block, no join) lists exactly what _fd_plan's self join lists
    import random

    from dqkit.detect import fd_pairs, lazy_violations
    from dqkit.detect.since import identities
    from dqkit.rules import as_rules

    rnd = random.Random(3)
    rows = [(i, *[rnd.choice([None, 0, 1, 2]) for _ in range(4)]) for i in range(60)]
    df = spark.createDataFrame(rows, "id long, a long, b long, c long, d long")
    rule = as_rules({"f": text})[0]
    got = [tuple(r) for r in fd_pairs(df, rule, "id").collect()]
    want = {tuple(r) for r in identities(lazy_violations(df, [rule], "id")).collect()}
    assert len(got) == len(set(got)) and set(got) == want and want


# ------------------------------------------------------------------ refusals, before any Spark
def _files(tmp_path):
    (tmp_path / "new.csv").write_text("id,zip,city\n1,1,a\n")
    (tmp_path / "old.csv").write_text("id,zip,city\n1,1,a\n")
    (tmp_path / "r.yaml").write_text('rules:\n  - name: f\n    rule: "zip -> city"\n')
    return tmp_path


def test_since_without_a_key_is_refused_before_spark(tmp_path):
    d = _files(tmp_path)
    with pytest.raises(ParameterError, match="--since needs --key"):
        DETECT.prepare(table=str(d / "new.csv"), rules=[str(d / "r.yaml")], since=str(d / "old.csv"))


def test_since_refuses_a_saved_result_made_with_other_rules_or_another_key(tmp_path):
    from dqkit.rules import as_rules

    d = _files(tmp_path)
    saved = d / "saved"
    saved.mkdir()
    other = make_manifest(as_rules({"f": "zip -> id"}), "id", "old.csv", "violations", {})
    (saved / MANIFEST).write_text(json.dumps(other))
    args = dict(table=str(d / "new.csv"), rules=[str(d / "r.yaml")], since=str(saved))
    with pytest.raises(ParameterError, match="other rules"):
        DETECT.prepare(key="id", **args)
    same = make_manifest(as_rules({"f": "zip -> city"}), "zip", "old.csv", "violations", {})
    (saved / MANIFEST).write_text(json.dumps(same))
    with pytest.raises(ParameterError, match="key 'zip', not 'id'"):
        DETECT.prepare(key="id", **args)
    counted = make_manifest(as_rules({"f": "zip -> city"}), "id", "old.csv", "count", {})
    (saved / MANIFEST).write_text(json.dumps(counted))
    with pytest.raises(ParameterError, match="does not hold every violation"):
        DETECT.prepare(key="id", **args)


# ------------------------------------------------------------------ property: equals two detections diffed
import operator  # noqa: E402
import os  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_OPS = {"=": operator.eq, "<": operator.lt, ">": operator.gt}
# (rule text, python oracle over rows {id,a,b,c,x}); x is read by no rule
POOL = {
    "fd": ("a -> b", None),
    "fd2": ("a, c -> b", None),
    "eq": ("not(t1.a = t2.a and t1.c > t2.c and t1.b < t2.b)", [("a", "=", "a"), ("c", ">", "c"), ("b", "<", "b")]),
    "cross": ("not(t1.a = t2.c and t1.b > t2.b)", [("a", "=", "c"), ("b", ">", "b")]),
    "noeq": ("not(t1.b > t2.b and t1.c < t2.c)", [("b", ">", "b"), ("c", "<", "c")]),
    "one": ("not(t1.c > 2)", None),
    # asymmetric, both orders may violate: saved without an identity count, so its rest is recounted
    "twice": ("not(t1.a = t2.a and t1.b < t2.c)", [("a", "=", "a"), ("b", "<", "c")]),
}


def _oracle(name: str, rows: list[dict]) -> set:
    """A full detection by brute force: every pair (or row) checked, identities (rule, k1, k2)."""
    out = set()
    if name == "one":
        return {(name, r["id"], None) for r in rows if r["c"] > 2}
    for x in rows:
        for y in rows:
            if x["id"] == y["id"]:
                continue
            if name.startswith("fd"):
                lhs = ["a"] if name == "fd" else ["a", "c"]
                bad = all(x[c] == y[c] for c in lhs) and x["b"] != y["b"]
            else:
                bad = all(_OPS[op](x[l], y[r]) for l, op, r in POOL[name][1])
            if bad:
                out.add((name, min(x["id"], y["id"]), max(x["id"], y["id"])))
    return out


_row = st.fixed_dictionaries({"a": st.integers(0, 2), "b": st.integers(0, 2), "c": st.integers(0, 3),
                              "x": st.integers(0, 1)})


@st.composite
def _versions(draw):
    old = [dict(r, id=i) for i, r in enumerate(draw(st.lists(_row, min_size=0, max_size=7)))]
    new = []
    for r in old:
        edit = draw(st.sampled_from(["keep", "keep", "delete", "a", "b", "c", "x"]))
        if edit == "delete":
            continue
        new.append(r if edit == "keep" else dict(r, **{edit: draw(_row)[edit]}))
    new += [dict(r, id=100 + i) for i, r in enumerate(draw(st.lists(_row, max_size=3)))]
    rules = draw(st.lists(st.sampled_from(sorted(POOL)), min_size=1, max_size=3, unique=True))
    return old, new, rules


def _case_frames(spark, case):
    """OLD and NEW of a generated case as DataFrames, its rules, and the oracle's violations of each side."""
    from dqkit.rules import as_rules

    old, new, names = case
    schema = "id long, a long, b long, c long, x long"
    o = spark.createDataFrame([(r["id"], r["a"], r["b"], r["c"], r["x"]) for r in old], schema)
    n = spark.createDataFrame([(r["id"], r["a"], r["b"], r["c"], r["x"]) for r in new], schema)
    v_old = set().union(*[_oracle(k, old) for k in names])
    v_new = set().union(*[_oracle(k, new) for k in names])
    return o, n, as_rules({k: POOL[k][0] for k in names}), v_old, v_new


# Each example is a few dozen small Spark jobs (about 30 s in the full suite on a 2-core machine), so make
# test runs 4; DQKIT_SINCE_EXAMPLES=100 for a deeper search.
@settings(max_examples=int(os.environ.get("DQKIT_SINCE_EXAMPLES", "3")), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(case=_versions())
def test_since_lists_equal_two_full_detections_diffed(spark, case):
    from dqkit.detect.since import detect_since

    o, n, rules, v_old, v_new = _case_frames(spark, case)
    res = detect_since(n, o, rules, key="id", spark=spark, max_change=1.0)
    assert _lists(res) == {"new": v_new - v_old, "resolved": v_old - v_new, "persisting": v_new & v_old}
    assert res.to_dict()["persisting"] == len(v_new & v_old)
    res.unpersist()


@settings(max_examples=int(os.environ.get("DQKIT_SINCE_EXAMPLES", "3")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=_versions())
def test_since_with_a_saved_old_lists_equal_two_full_detections_diffed(spark, case):
    # the saved path: touched saved violations diffed, the rest streamed, persisting = saved count - resolved
    import tempfile

    from dqkit.detect import detect
    from dqkit.detect.since import detect_since

    names = case[2]
    o, n, rules, v_old, v_new = _case_frames(spark, case)
    with tempfile.TemporaryDirectory() as tmp:
        detect(o, rules, key="id", spark=spark).save(f"{tmp}/old", charts=False)
        res = detect_since(n, f"{tmp}/old", rules, key="id", spark=spark, max_change=1.0)
        assert _lists(res) == {"new": v_new - v_old, "resolved": v_old - v_new, "persisting": v_new & v_old}
        d = res.to_dict()
        assert d["persisting"] == len(v_new & v_old)
        assert {k: d["rules"][k]["persisting"] for k in names} == {
            k: len({v for v in v_new & v_old if v[0] == k}) for k in names}
        res.unpersist()


def test_since_with_a_saved_old_counts_persisting_as_the_saved_count_minus_resolved_not_by_recounting(
        spark, tmp_path):
    # the saved result's identity count of a restricted DC stands for its persisting violations: a run
    # never recounts the saved list (proportional to the violations, not to the change). Tampering with
    # the count shows which number is used; without it (an older dqkit's result) the list is recounted.
    from dqkit.detect import detect
    from dqkit.detect.since import detect_since

    old, new = spark.createDataFrame(OLD, COLS), spark.createDataFrame(NEW, COLS)
    saved = tmp_path / "old_run"
    detect(old, _rules(), key="id", spark=spark).save(saved, charts=False)
    manifest = json.loads((saved / MANIFEST).read_text())
    assert manifest["identities"] == {"zip_city": 1, "pay": 4}
    manifest["identities"]["pay"] = 104
    (saved / MANIFEST).write_text(json.dumps(manifest))
    res = detect_since(new, str(saved), _rules(), key="id", spark=spark, max_change=1.0)
    assert res.to_dict()["rules"]["pay"]["persisting"] == 103 and _lists(res) == GOLDEN
    res.unpersist()
    del manifest["identities"]
    (saved / MANIFEST).write_text(json.dumps(manifest))
    res = detect_since(new, str(saved), _rules(), key="id", spark=spark, max_change=1.0)
    assert res.to_dict()["rules"]["pay"]["persisting"] == 3 and _lists(res) == GOLDEN
    res.unpersist()


def test_pairs_unique_holds_only_for_rules_whose_detection_lists_each_identity_once():
    from dqkit.rules import as_rules
    from dqkit.detect.since_manifest import pairs_unique

    rules = as_rules({"fd": "a -> b", "sym": "not(t1.a = t2.a and t1.b != t2.b)", "one": "not(t1.c > 2)",
                      "strict": "not(t1.a = t2.a and t1.b > t2.b and t1.c < t2.c)",
                      "cross": "not(t1.a = t2.c and t1.b > t2.b)", "twice": POOL["twice"][0],
                      "weak": "not(t1.a = t2.a and t1.b >= t2.b)"})
    assert {r.name: pairs_unique(r) for r in rules} == {
        "fd": True, "sym": True, "one": True, "strict": True, "cross": True, "twice": False, "weak": False}


# ------------------------------------------------------------------ Spark jobs: a bound that cannot regress
FD3 = {"zip_city": "zip -> city", "zip_state": "zip -> state", "city_state": "city -> state"}


@pytest.mark.parametrize("max_change", [1.0, 0.0], ids=["changed-rows-only", "cost-rule-full"])
def test_since_with_three_fds_runs_a_bounded_number_of_spark_jobs(spark, max_change):
    # before the fused counts this 8-row run took 55 jobs (changed rows only) and 65 (full); then 11 and 4;
    # now 2 and 2: ONE job for both key checks and the change kinds (one shuffle by key, cached) and ONE
    # aggregation for every rule's counts (each FD one groupBy over its left-hand side, no broadcast)
    from dqkit.detect.since import detect_since
    from dqkit.rules import as_rules

    old, new = spark.createDataFrame(OLD, COLS), spark.createDataFrame(NEW, COLS)
    with spark_jobs(spark, "detect --since job bound") as counted:
        res = detect_since(new, old, as_rules(FD3), key="id", spark=spark, max_change=max_change)
        d = res.to_dict()
    jobs = counted.n
    assert (d["new"], d["resolved"], d["persisting"]) == (2, 0, 1)
    assert jobs <= 3, f"{jobs} Spark jobs"
    res.unpersist()
