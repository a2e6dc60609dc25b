"""``detect --since`` with the changed keys as literal sets: the same lists as the broadcast route and as two
full detections diffed, for every key type and equality it takes, and a bounded number of Spark jobs."""
from __future__ import annotations

import random

import pytest

from dqkit.detect import _since_buckets as buckets
from dqkit.detect import _since_probe as probes
from dqkit.detect._since_probe import Literal, literal_keys, plan_probe
from support.sparkjobs import spark_jobs
from tests.test_detect_since import COLS, GOLDEN, NEW, OLD, POOL, _case_frames, _lists, _oracle, _rules


# ------------------------------------------------------------------ no Spark: which runs take literal sets
def test_probe_refuses_keys_and_equalities_whose_values_cannot_be_matched_as_literals():
    from dqkit.rules import as_rules

    fd, dc = as_rules({"f": "a -> b", "d": "not(t1.a = t2.c and t1.b > t2.b)"})
    ints = {"id": "bigint", "a": "int", "b": "int", "c": "bigint"}
    probe = plan_probe([fd, dc], ints, "id")
    # the FD's lhs hashed as its own type; the DC's a = c as bigint on both sides, partners both ways
    assert probe is not None and probe.tuples == ((("a",), ("int",)), (("a",), ("bigint",)), (("c",), ("bigint",)))
    assert probe.links == ((0, 0), (2, 1), (1, 2))
    assert "CAST(`a` AS BIGINT)" in probe.hash_sql(1, ints) and "CAST" not in probe.hash_sql(2, ints)
    assert plan_probe([fd], {**ints, "id": "double"}, "id") is None  # a key that is not integral or text
    assert plan_probe([dc], {**ints, "a": "double", "c": "double"}, "id") is None  # -0.0 = 0.0, NaN
    assert plan_probe([dc], {**ints, "c": "string"}, "id") is None  # '1' = 1 hashes differently
    assert plan_probe([fd], {**ints, "id": "string"}, "id") is not None


def test_literal_keys_are_digits_or_hex_bytes_never_the_text_itself():
    assert literal_keys([3, -2**63, 3, 7], "bigint") == [f"({-2**63 + 1}L - 1L)", "3L", "7L"]
    got = literal_keys(["it's", "a`b", "ü", ""], "string")
    assert got == ["CAST(X'' AS STRING)", "CAST(X'616062' AS STRING)", "CAST(X'69742773' AS STRING)",
                   "CAST(X'C3BC' AS STRING)"]
    assert all("'" not in g[7:-12] for g in got)


# ------------------------------------------------------------------ Spark: both routes, exact lists
def _full_diff(spark, old, new, rules):
    from dqkit.detect import detect
    from dqkit.detect.since import identities

    def full(df):
        return {tuple(r) for r in identities(detect(df, rules, key="id", spark=spark).violations).collect()}

    v_old, v_new = full(old), full(new)
    return {"new": v_new - v_old, "resolved": v_old - v_new, "persisting": v_new & v_old}


@pytest.mark.parametrize("route", ["literal", "broadcast"])
def test_since_lists_are_the_same_with_literal_sets_and_with_broadcasts(spark, tmp_path, monkeypatch, route):
    from dqkit.detect import detect
    from dqkit.detect.since import detect_since

    if route == "broadcast":
        monkeypatch.setattr(probes, "LITERAL_KEYS", 0)  # more changed keys than literal sets take
    old, new = spark.createDataFrame(OLD, COLS), spark.createDataFrame(NEW, COLS)
    detect(old, _rules(), key="id", spark=spark).save(tmp_path / "old", charts=False)
    for since in (old, str(tmp_path / "old")):
        res = detect_since(new, since, _rules(), key="id", spark=spark, max_change=1.0)
        assert _lists(res) == GOLDEN and res.to_dict()["persisting"] == 4
        # each list over every rule is built at once (no union per rule) and equals the per-rule lists together
        per_rule = {w: {tuple(r) for rule in res.per_rule for r in rule.frames[w].collect()} for w in GOLDEN}
        assert set(res.lists) == set(GOLDEN) and per_rule == GOLDEN
        res.unpersist()


def test_since_with_text_keys_needing_quotes_takes_literal_sets_and_equals_two_detections_diffed(spark, tmp_path):
    from dqkit.detect import detect
    from dqkit.detect.since import detect_since

    ids = {1: "it's", 2: "a`b", 3: "ü", 4: "", 5: "x'); DROP", 6: "new", 7: "7", 8: "\\n"}
    schema = "id string, zip string, city string, state string, salary long, rate long"
    old = spark.createDataFrame([(ids[r[0]], *r[1:]) for r in OLD], schema)
    new = spark.createDataFrame([(ids[r[0]], *r[1:]) for r in NEW], schema)
    assert plan_probe(_rules(), {f.name: f.dataType.simpleString() for f in new.schema.fields}, "id") is not None
    want = _full_diff(spark, old, new, _rules())
    detect(old, _rules(), key="id", spark=spark).save(tmp_path / "old", charts=False)
    for since in (old, str(tmp_path / "old")):
        res = detect_since(new, since, _rules(), key="id", spark=spark, max_change=1.0)
        assert _lists(res) == want and res.to_dict()["new"] == 3
        res.unpersist()


def test_since_equality_between_int_and_bigint_columns_and_nulls_find_every_partner(spark):
    # t1.a (int) = t2.c (bigint): both hashed as bigint, else a partner would be missed; NULLs match nothing
    from dqkit.detect.since import detect_since
    from dqkit.rules import as_rules

    schema = "id long, a int, b long, c long"
    old = spark.createDataFrame([(1, 1, 5, 2), (2, 2, 1, 1), (3, None, 9, 1), (4, 1, 0, None), (5, 3, 4, 3)], schema)
    new = spark.createDataFrame([(1, 1, 0, 2), (2, 2, 7, 1), (3, None, 9, 1), (4, 1, 0, None), (5, 3, 4, 3),
                                 (6, 1, 9, 3)], schema)
    rules = as_rules({"cross": "not(t1.a = t2.c and t1.b > t2.b)", "fd": "c -> b"})
    assert plan_probe(rules, {"id": "bigint", "a": "int", "b": "bigint", "c": "bigint"}, "id") is not None
    want = _full_diff(spark, old, new, rules)
    res = detect_since(new, old, rules, key="id", spark=spark, max_change=1.0)
    assert _lists(res) == want and want["new"] and want["persisting"]
    res.unpersist()


def test_since_on_seeded_random_cases_equals_the_oracle_on_both_routes(spark, tmp_path, monkeypatch):
    # the hypothesis property runs the literal route; here the same oracle checks both routes, saved OLD
    from dqkit.detect import detect
    from dqkit.detect.since import detect_since

    rnd = random.Random(26)
    for n in range(2):
        old = [{"id": i, "a": rnd.randint(0, 2), "b": rnd.randint(0, 2), "c": rnd.randint(0, 3),
                "x": rnd.randint(0, 1)} for i in range(9)]
        new = [dict(r, **{rnd.choice("abc"): rnd.randint(0, 2)}) if rnd.random() < 0.4 else r
               for r in old if rnd.random() > 0.15] + [{"id": 100, "a": 1, "b": 2, "c": 0, "x": 0}]
        names = ["fd", "eq", "cross", "one"]
        o, nw, rules, v_old, v_new = _case_frames(spark, (old, new, names))
        assert v_old == set().union(*[_oracle(k, old) for k in names])
        detect(o, rules, key="id", spark=spark).save(tmp_path / f"old{n}", charts=False)
        want = {"new": v_new - v_old, "resolved": v_old - v_new, "persisting": v_new & v_old}
        for cap in (probes.LITERAL_KEYS, 0):
            monkeypatch.setattr(probes, "LITERAL_KEYS", cap)
            res = detect_since(nw, str(tmp_path / f"old{n}"), rules, key="id", spark=spark, max_change=1.0)
            assert _lists(res) == want, (n, cap)
            assert res.to_dict()["persisting"] == len(want["persisting"])
            res.unpersist()
    assert POOL  # the same rule pool as the property


def test_literal_touching_is_false_not_null_for_a_one_tuple_violation(spark):
    from dqkit.rules import as_rules

    probe = plan_probe(as_rules({"one": "not(t1.c > 2)"}), {"id": "bigint", "c": "bigint"}, "id")
    lit = Literal.of([{"id": 3}], "id", probe, {"id": "bigint", "c": "bigint"}, (1,))
    ids = spark.createDataFrame([("one", 3, None), ("one", 4, None)], "rule string, key1 long, key2 long")
    assert [r["key1"] for r in ids.where(lit.touching()).collect()] == [3]
    assert [r["key1"] for r in ids.where(~lit.touching()).collect()] == [4]


# ------------------------------------------------------------------ a saved OLD: the buckets' pre-pass
@pytest.mark.parametrize("extra", [[(2, "10001", "NYC", "NY", 200, 20)], [(1, "10001", "NY", "NY", 100, 10)],
                                   [(None, "1", "x", "y", 1, 1)]], ids=["repeated-changed", "repeated-same", "null"])
def test_since_with_a_saved_old_refuses_a_bad_key_of_new_hidden_in_an_unchanged_bucket(spark, tmp_path, extra):
    # a repeated key whose second row equals OLD's row, or a NULL key, still changes its bucket's multiset
    from dqkit.detect import detect
    from dqkit.detect.since import detect_since
    from dqkit.errors import InvalidKeyError
    from dqkit.primitives.keys import check_key

    detect(spark.createDataFrame(OLD, COLS), _rules(), key="id", spark=spark).save(tmp_path / "old", charts=False)
    bad = spark.createDataFrame(NEW + extra, COLS)
    with pytest.raises(InvalidKeyError) as since_err:
        detect_since(bad, str(tmp_path / "old"), _rules(), key="id", spark=spark, name="new.parquet")
    with pytest.raises(InvalidKeyError) as own:
        check_key(bad, "id", table="new.parquet", command="detect --since", without="give a key column")
    assert str(since_err.value) == str(own.value)


def test_since_with_a_saved_old_gives_the_same_lists_when_too_many_buckets_changed_for_the_pre_pass(
        spark, tmp_path, monkeypatch):
    from dqkit.detect import detect
    from dqkit.detect.since import detect_since

    detect(spark.createDataFrame(OLD, COLS), _rules(), key="id", spark=spark).save(tmp_path / "old", charts=False)
    new = spark.createDataFrame(NEW, COLS)
    for cap in (0, buckets.MAX_BUCKETS):
        monkeypatch.setattr(buckets, "MAX_BUCKETS", cap)
        res = detect_since(new, str(tmp_path / "old"), _rules(), key="id", spark=spark, max_change=1.0)
        d = res.to_dict()
        assert _lists(res) == GOLDEN and (d["changes"], res.rows_new) == (
            {"inserted": 1, "deleted": 1, "updated": 1}, 7), cap
        res.unpersist()


def test_changed_buckets_are_exactly_those_holding_a_changed_key(spark):
    from dqkit.detect._since_buckets import bucket_of, changed_buckets
    from dqkit.detect.since import row_fingerprints

    rows = [(i, f"v{i % 5}") for i in range(200)]
    old = spark.createDataFrame(rows, "id long, v string")
    # 3 updated, 7 deleted, 500 inserted
    new = spark.createDataFrame([(3, "other") if r[0] == 3 else r for r in rows if r[0] != 7] + [(500, "v1")],
                                "id long, v string")
    total, found = changed_buckets(row_fingerprints(new, "id", ["v"]), row_fingerprints(old, "id", ["v"]), "id")
    keys = spark.createDataFrame([(3,), (7,), (500,)], "id long")
    assert total == 200 and found == sorted({r[0] for r in keys.select(bucket_of("id")).collect()})


# ------------------------------------------------------------------ Spark jobs: a bound that cannot regress
@pytest.mark.parametrize("saved", [True, False], ids=["saved-old", "old-a-table"])
def test_since_with_a_dc_on_the_literal_route_runs_a_bounded_number_of_spark_jobs(spark, tmp_path, saved):
    # the FD and the DC restricted (their changed rows and partners): ONE action for the key checks, the
    # change kinds and the changed keys (with a saved OLD, one more finds the changed buckets first); ONE
    # for every count; no broadcast of the changed keys. Measured: 5 jobs either way.
    from dqkit.detect import detect
    from dqkit.detect.since import detect_since

    old, new = spark.createDataFrame(OLD, COLS), spark.createDataFrame(NEW, COLS)
    since = old
    if saved:
        detect(old, _rules(), key="id", spark=spark).save(tmp_path / "old", charts=False)
        since = str(tmp_path / "old")
    with spark_jobs(spark, "detect --since job bound") as counted:
        res = detect_since(new, since, _rules(), key="id", spark=spark, max_change=1.0)
        d = res.to_dict()
    jobs = counted.n
    assert (d["new"], d["resolved"], d["persisting"]) == (3, 1, 4)
    assert jobs <= 5, f"{jobs} Spark jobs"
    res.unpersist()
