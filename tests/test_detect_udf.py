"""UDF rules: BigDansing jobs with Scope/Block/Iterate/Detect/GenFix as vectorised callables."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dqkit.detect import detect, spark_plan
from dqkit.primitives.similarity import levenshtein, similarity
from dqkit.errors import RuleError
from dqkit.rules import Job

TRIPLES = [("Paul", "student_in", "Yale"), ("John", "student_in", "UCLA"), ("Sally", "student_in", "UCLA"),
           ("William", "professor_in", "UCLA"), ("Paul", "advised_by", "William"),
           ("John", "advised_by", "William"), ("Sally", "advised_by", "William")]


def rdf_job(triples) -> Job:
    """App. C: two graduate students of different universities cannot share an advisor."""
    def scope(p):  # keep advised_by / student_in triples, project subject and object
        return p[p["predicate"].isin(["advised_by", "student_in"])]

    def per_student(blocks):  # Iterate: join each student's triples into (student, advisor, university)
        p = blocks[0]
        adv = p.loc[p["predicate"] == "advised_by", "object"]
        uni = p.loc[p["predicate"] == "student_in", "object"]
        if adv.empty or uni.empty:
            return pd.DataFrame({"tid": [], "advisor": [], "university": []})
        return pd.DataFrame({"tid": [p["subject"].iloc[0]], "advisor": [adv.iloc[0]], "university": [uni.iloc[0]]})

    def differ(c):  # Detect on pairs of students with the same advisor
        return (c["university_1"] != c["university_2"]).to_numpy()

    def fix(v):  # GenFix: make the universities equal
        return pd.DataFrame({"tid": v["tid_1"], "attr": "university", "op": "=",
                             "rhs_tid": v["tid_2"], "rhs_attr": "university"})

    return (Job("rdf").add_input(triples, "S").add_scope(scope, "S").add_block("subject", "S")
            .add_iterate("M", per_student, "S", schema="tid string, advisor string, university string")
            .add_block("advisor", "M").add_detect(differ, "M").add_genfix(fix, "M"))


def test_rdf_example_of_appendix_c(spark):
    triples = spark.createDataFrame(TRIPLES, "subject string, predicate string, object string")
    r = detect(triples, rdf_job(triples))
    got = {frozenset((row["t1"], row["t2"])) for row in r.violations.collect()}
    assert got == {frozenset(("Paul", "John")), frozenset(("Paul", "Sally"))}
    assert r.counts == {"rdf": 2}
    fixes = {f["fix"] for f in r.candidate_fixes.collect()}
    assert fixes == {"John[university] = Paul[university]", "Paul[university] = Sally[university]"}
    assert "Block(subject)" in r.logical_plan or "Block(" in r.logical_plan
    assert "UCrossProduct" in r.physical_plan


CUSTOMERS = [
    (1, "Annie Smith", "10001"), (2, "Anie Smith", "10001"), (3, "Bob Stone", "10001"),
    (4, "Robert Stone", "60601"), (5, "Robert Stone", "60601"), (6, "Mary Jones", "60601"),
    (7, "Mary Jone", "90210"), (8, "Zed", "90210")]


def dedup_job(customers, blocked: bool) -> Job:
    def similar(c):
        return similarity(c["name_1"], c["name_2"]) >= 0.85

    job = Job("dedup").add_input(customers, "C", key="id")
    if blocked:
        job.add_block("zip", "C")
    return job.add_detect(similar, "C")


def test_levenshtein_dedup_inside_blocks_equals_detect_only(spark):
    customers = spark.createDataFrame(CUSTOMERS, "id int, name string, zip string")
    blocked = detect(customers, dedup_job(customers, True))
    flat = detect(customers, dedup_job(customers, False))
    pairs_b = sorted((int(r["t1"]), int(r["t2"])) for r in blocked.violations.collect())
    pairs_f = sorted((int(r["t1"]), int(r["t2"])) for r in flat.violations.collect())
    assert pairs_b == [(1, 2), (4, 5)]
    assert pairs_f == [(1, 2), (4, 5), (6, 7)]  # 6/7 are in different blocks: Block trades recall for speed
    assert blocked.summary("dedup").operator == "Block+UCrossProduct"
    assert flat.summary("dedup").operator == "UCrossProduct"
    plan = spark_plan(flat.violations)
    assert "CartesianProduct" not in plan and "BroadcastNestedLoopJoin" not in plan


def test_block_pairs_are_the_unordered_pairs_inside_each_block():
    from dqkit.detect._udf import _block_pairs

    block = np.array(["a", "a", "a", "b", "c", "c", "d", "d", "d", "d"], dtype=object)
    i, j = _block_pairs(block)
    want = [(s + x, s + y) for s, m in ((0, 3), (3, 1), (4, 2), (6, 4)) for x in range(m) for y in range(x + 1, m)]
    assert sorted(zip(i.tolist(), j.tolist())) == want
    assert [len(x) for x in _block_pairs(block[:1])] == [0, 0]


def _random_customers(n: int, seed: int):
    rng = np.random.default_rng(seed)
    names = ["Annie Smith", "Anie Smith", "Robert Stone", "Robert Stone", "Rob Stone", "Mary Jones",
             "Mary Jone", "Zed", ""]
    return [(i, None if rng.random() < 0.05 else str(rng.choice(names)),
             None if rng.random() < 0.05 else f"z{int(rng.integers(0, 6))}") for i in range(n)]


@pytest.mark.parametrize("blocked", [True, False])
def test_dedup_equals_brute_force_across_arrow_batches_and_detect_batches(spark, monkeypatch, blocked):
    """Blocks spanning several Arrow batches, Detect called on small batches of pairs: same pairs."""
    import dqkit.detect._udf as udf

    rows = _random_customers(120, 5)
    customers = spark.createDataFrame(rows, "id int, name string, zip string")

    def brute():
        out = []
        for a in rows:
            for b in rows:
                if str(a[0]) < str(b[0]) and (not blocked or (a[2] is not None and a[2] == b[2])):
                    if similarity([a[1]], [b[1]])[0] >= 0.85:
                        out.append((a[0], b[0]))
        return sorted(out)

    want = brute()
    monkeypatch.setattr(udf, "PAIR_BATCH", 37)
    old = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "7")
    try:
        r = detect(customers, dedup_job(customers, blocked))
        got = sorted((int(x["t1"]), int(x["t2"])) for x in r.violations.collect())
        counted = detect(customers, dedup_job(customers, blocked), mode="count").counts["dedup"]
    finally:
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", old)
    assert got == want and counted == len(want) and len(want) > 10
    assert "at most 37 pairs per Detect call" in r.physical_plan


def test_levenshtein_matches_reference():
    def ref(a, b):
        d = list(range(len(b) + 1))
        for i, ca in enumerate(a, 1):
            prev, d[0] = d[0], i
            for j, cb in enumerate(b, 1):
                prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (ca != cb))
        return d[-1]
    a = ["kitten", "", "abc", "flaw", "Ünïcode", "same"]
    b = ["sitting", "abc", "", "lawn", "Unicode", "same"]
    assert levenshtein(a, b).tolist() == [ref(x, y) for x, y in zip(a, b)]
    assert np.allclose(similarity(["same", ""], ["same", ""]), [1.0, 1.0])


def test_job_validation_happens_before_spark(spark):
    customers = spark.createDataFrame(CUSTOMERS, "id int, name string, zip string")
    with pytest.raises(RuleError, match="no Detect"):
        detect(customers, Job("j").add_input(customers, "C").add_block("zip", "C"))
    with pytest.raises(RuleError, match="undefined label 'X'"):
        detect(customers, Job("j").add_input(customers, "C").add_detect(lambda c: c, "X"))
    with pytest.raises(RuleError, match="unknown column 'nope'"):
        detect(customers, Job("j").add_input(customers, "C").add_block("nope", "C").add_detect(lambda c: c, "C"))


def test_a_column_named_with_a_backtick_blocks_and_detects(spark):
    people = spark.createDataFrame([(1, "ann", "z1"), (2, "ann", "z2"), (3, "bob", "z1"), (4, "ann", "z1")],
                                   "id int, `na``me` string, zip string")
    job = (Job("same_name").add_input(people, "P", key="id").add_scope(["na`me", "zip"], "P")
           .add_block("na`me", "P").add_detect(lambda c: (c["zip_1"] != c["zip_2"]).to_numpy(), "P"))
    r = detect(people, job)
    assert sorted((int(x["t1"]), int(x["t2"])) for x in r.violations.collect()) == [(1, 2), (2, 4)]
    multi = (Job("same_name_zip").add_input(people, "P", key="id").add_block(["na`me", "zip"], "P")
             .add_detect(lambda c: np.ones(len(c), dtype=bool), "P"))
    assert sorted((int(x["t1"]), int(x["t2"])) for x in detect(people, multi).violations.collect()) == [(1, 4)]

    def fix(v):
        return pd.DataFrame({"tid": v["tid_1"], "attr": "na`me", "op": "!=", "constant": v["na`me_2"]})
    flat = (Job("flat").add_input(people, "P", key="id")
            .add_detect(lambda c: (c["na`me_1"] == c["na`me_2"]).to_numpy(), "P").add_genfix(fix, "P"))
    r = detect(people, flat)
    assert sorted((int(x["t1"]), int(x["t2"])) for x in r.violations.collect()) == [(1, 2), (1, 4), (2, 4)]
    assert sorted(f["fix"] for f in r.candidate_fixes.collect()) == ["1[na`me] != ann"] * 2 + ["2[na`me] != ann"]


def test_slow_detect_runs_are_cancelled_through_their_job_tag(spark):
    import threading
    import time

    from dqkit.errors import CancelledError
    from dqkit.runtime.progress import BackgroundRun

    table = spark.createDataFrame([(i, f"n{i % 3}", i % 2, i % 5) for i in range(40)],
                                  "id int, name string, zip int, v int")

    def slow(c):
        time.sleep(2)
        return np.zeros(len(c), dtype=bool)

    rules = ["fd: zip -> v", "dc: not(t1.zip = t2.zip and t1.v > t2.v)",
             Job("slow").add_input(table, "T", key="id").add_detect(slow, "T")]
    done = threading.Event()
    seen: list[tuple] = []

    def progress(*args):
        seen.append(args)
        if args[2] == 2:
            done.set()

    jvm = spark.sparkContext._jsc
    cached_before = jvm.getPersistentRDDs().size()
    run = BackgroundRun(lambda: detect(table, rules, key="id", spark=spark, progress=progress), spark=spark)
    run.start()
    assert done.wait(120), "the declarative rules did not finish"
    deadline = time.monotonic() + 60
    while not run.progress.running and time.monotonic() < deadline:
        time.sleep(0.1)
    run.cancel()
    assert run.wait(60)
    assert run.status == "cancelled" and isinstance(run.error, CancelledError)
    assert "the detection was cancelled" in str(run.error)  # mapped by detect itself
    assert seen == [("detect", "fd", 1, 3), ("detect", "dc", 2, 3)]
    assert jvm.getPersistentRDDs().size() == cached_before  # the shared scope was released
