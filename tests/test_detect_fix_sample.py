"""An FD's dirty blocks from one aggregation, candidate fixes of chosen violations (``fixes_for``) and the
explorer's fix sample built from the first violations only (issue #25, warm widget re-runs)."""
from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import Window
from pyspark.sql import functions as F

from dqkit.detect import DetectionResult, detect, dirty_blocks
from dqkit.widgets.violation_controller import FIX_SAMPLE_COLUMNS, fix_sample

TABLE1 = "data/bigdansing_table1.csv"
RULES1 = "data/bigdansing_table1_rules.yaml"


def _distinct_count_blocks(s, lhs, rhs):
    """The dirty blocks as detection computed them before: a distinct count per rhs attribute."""
    return (s.groupBy(*lhs).agg(*[F.countDistinct(r).alias(f"n{i}") for i, r in enumerate(rhs)])
            .where(F.greatest(*[F.col(f"n{i}") for i in range(len(rhs))], F.lit(0)) > 1).select(*lhs))


def _rows(df):
    return sorted((tuple(r) for r in df.collect()), key=repr)


cells = st.one_of(st.none(), st.sampled_from(["a", "b", "c"]))
reals = st.one_of(st.none(), st.sampled_from([0.0, -0.0, 1.5, math.nan]))


# The property tests below check several random tables per Spark run (one pipeline on a few rows costs
# about as much as on a hundred): the tables are told apart by a column ``g`` that is part of every block
# (the FD's left side), so each table's blocks are its own; the oracle runs on each table alone.
TABLES_PER_RUN = 5


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 3)), cells, reals), min_size=1, max_size=14),
                min_size=TABLES_PER_RUN, max_size=TABLES_PER_RUN))
def test_dirty_blocks_by_min_and_max_are_the_distinct_count_blocks_nulls_and_nan_included(spark, tables):
    s = spark.createDataFrame([(g, *r) for g, rows in enumerate(tables) for r in rows],
                              "g int, x int, a string, r double")
    for rhs in (["a"], ["r"], ["a", "r"]):
        assert _rows(dirty_blocks(s, ["g", "x"], rhs)) == _rows(_distinct_count_blocks(s, ["g", "x"], rhs)), rhs


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 2)), cells, cells), min_size=1, max_size=10),
                min_size=TABLES_PER_RUN, max_size=TABLES_PER_RUN))
def test_fd_violations_are_every_pair_in_a_block_differing_on_the_right_nulls_skipped(spark, tables):
    rows = [(g, *r) for g, table in enumerate(tables) for r in table]
    df = spark.createDataFrame([(i, *r) for i, r in enumerate(rows)], "tid int, g int, x int, a string, b string")
    got = sorted((r["t1"], r["t2"]) for r in detect(df, "f: g, x -> a, b", key="tid").violations.collect())
    want, first = [], 0  # each table's pairs, its rows numbered from its first row's tid
    for table in tables:
        want += [(first + i, first + j) for i, (x, a, b) in enumerate(table) for j, (y, c, d) in enumerate(table)
                 if i < j and x is not None and x == y
                 and ((a is not None and c is not None and a != c) or (b is not None and d is not None and b != d))]
        first += len(table)
    assert got == sorted(want)


def _all_fixes_ranked(det: DetectionResult, n: int) -> pd.DataFrame:
    """The fix sample as the explorer computed it before: every candidate fix, ranked per rule."""
    order = Window.partitionBy("rule").orderBy("t1", "t2", "tid", "attr", "fix")
    rows = (det.candidate_fixes.withColumn("_n", F.row_number().over(order)).where(F.col("_n") <= n)
            .orderBy("rule", "_n").collect())
    return pd.DataFrame([{"rule": r["rule"], "t1": r["t1"], "t2": r["t2"], "cell": f"{r['tid']}[{r['attr']}]",
                          "value": r["value"], "fix": r["fix"],
                          "other value": r["rhs_value"] if r["rhs_tid"] is not None else r["constant"]}
                         for r in rows], columns=FIX_SAMPLE_COLUMNS)


@pytest.fixture(scope="module")
def table1_detection(spark):
    return detect(TABLE1, RULES1, key="tid", spark=spark)


def test_fixes_for_some_violations_are_exactly_their_candidate_fixes(spark, table1_detection):
    det = table1_detection
    some = det.violations.where(F.col("t1").isin("t2", "t5"))
    got = sorted(tuple(r) for r in det.fixes_for(some).collect())
    f = det.candidate_fixes
    want = sorted(tuple(r) for r in f.join(some, ["rule", "t1", "t2"], "left_semi").collect())
    assert got == want and len(got) > 2
    assert det.fixes_for(det.violations.limit(0)).count() == 0


@pytest.mark.parametrize("n", [1, 2, 10])
def test_the_fix_sample_is_the_first_fixes_of_all_fixes_ranked(spark, table1_detection, n):
    det = detect(TABLE1, RULES1, key="tid", spark=spark)
    pd.testing.assert_frame_equal(fix_sample(det, n), _all_fixes_ranked(table1_detection, n))


def test_the_fix_sample_builds_fixes_of_the_first_violations_only(spark, monkeypatch):
    rows = [(i, f"z{i % 4}", f"c{i % 7}", i % 5) for i in range(60)]
    df = spark.createDataFrame(rows, "id long, zip string, city string, rate int")
    rules = "f: zip -> city\nd: not(t1.zip = t2.zip and t1.rate > t2.rate)"
    want = _all_fixes_ranked(detect(df, rules, key="id", spark=spark), 3)
    det = detect(df, rules, key="id", spark=spark)
    monkeypatch.setattr(DetectionResult, "candidate_fixes",
                        property(lambda self: pytest.fail("the fix sample built every candidate fix")))
    got = fix_sample(det, 3)
    pd.testing.assert_frame_equal(got, want)
    assert list(got.groupby("rule").size()) == [3, 3]
    # the violations it read are the detection's own sample, which the explorer shows next: kept
    before = set(spark.sparkContext.statusTracker().getJobIdsForGroup(None))
    shown = det.sample_rows(3)
    assert set(spark.sparkContext.statusTracker().getJobIdsForGroup(None)) == before
    assert {(r, t1, t2) for r, t1, t2, *_ in got.itertuples(index=False)} <= set(shown)


def test_a_clean_table_has_an_empty_fix_sample(spark):
    df = spark.createDataFrame([(1, "a", "x"), (2, "b", "y")], "id long, zip string, city string")
    assert fix_sample(detect(df, "f: zip -> city", key="id", spark=spark), 10).empty
