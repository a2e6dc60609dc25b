"""Dedup's Spark work: how many jobs a run costs per stage (so fused work cannot silently split
again), the fused key check's counts and refusals, and bounded edit-distance levels."""
from __future__ import annotations

import pandas as pd
import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.dedup import _compare as C
from dqkit.dedup import dedup, link, parse_config
from dqkit.errors import ParameterError
from tests.test_dedup import _frame, tiny_people
from support.sparkjobs import spark_jobs

CONFIG = {"blocking": [["surname"], ["postcode"]],
          "comparisons": [{"column": "given", "method": "jaro_winkler"},
                          {"column": "surname", "method": "levenshtein"},
                          {"column": "postcode", "method": "exact"}],
          "u_sample_records": 20}

#: Spark jobs of a tiny dedup run per stage, with adaptive execution off (the test session), measured:
#: block 1 (the key check fused into the block statistics' job over the records kept once; it was 2,
#: a separate key check reading the input again), compare 2 (the level-pattern counts that also keep
#: the levelled pairs), estimate 2 (the u sample's broadcast, the u level counts), cluster 3.
JOB_BUDGET = {"block": 1, "compare": 2, "estimate": 2, "cluster": 3}
#: the same run on the driver route (dqkit.dedup._driver), measured: block 2 (the statistics, the one
#: fetch of the records), compare and estimate none (on the driver), cluster 1 (the records joined to the
#: components labelled on the driver; their sizes are counted there)
DRIVER_JOB_BUDGET = {"block": 2, "compare": 0, "estimate": 0, "cluster": 1}


def _jobs_per_stage(spark, run) -> dict[str, int]:
    """The Spark jobs each progress stage started, counted in this thread's own job group (a job another
    test's leftover thread starts in the same worker is not counted)."""
    with spark_jobs(spark, "job budget") as jobs:
        marks = [("start", 0)]
        result = run(lambda stage, *_: marks.append((stage, jobs.n)))
    return result, {s: j - marks[i][1] for i, (s, j) in enumerate(marks[1:])}


@pytest.mark.parametrize("route", ["spark", "driver"])
def test_a_tiny_dedup_run_stays_within_its_spark_job_budget_per_stage(spark, monkeypatch, route):
    from dqkit.runtime import sparkutil

    monkeypatch.setenv("DQKIT_DEDUP_DRIVER_PAIRS", "0" if route == "spark" else "1000")
    budget = JOB_BUDGET if route == "spark" else DRIVER_JOB_BUDGET

    # local checkpoints, as on a laptop: a checkpoint folder another test left set would make each
    # checkpoint a reliable one (a job more each), which is the cluster's budget, not this one
    monkeypatch.setattr(sparkutil, "checkpoint_folder", lambda _spark: None)
    _, sdf = tiny_people(spark)
    sdf = sdf.localCheckpoint()  # a DataFrame input: no job of its own inside the run
    result, jobs = _jobs_per_stage(spark, lambda progress: dedup(sdf, "id", CONFIG, progress=progress))
    assert result.n_records == 8 and result.n_pairs > 0 and (result.driver_pairs is None) == (route == "spark")
    over = {s: (n, budget[s]) for s, n in jobs.items() if n > budget[s]}
    assert not over, f"stages over their Spark job budget (jobs, budget): {over}; all: {jobs}"


def test_the_fused_key_check_counts_each_linked_table_and_refuses_a_repeat_naming_its_table(spark):
    pdf, sdf = tiny_people(spark)
    right = _frame(spark, pdf.head(5))
    result = link(sdf, right, "id", CONFIG, sources=("a", "b"))
    assert result.source_records == (8, 5) and result.n_records == 13
    repeated = _frame(spark, pd.concat([pdf.head(5), pdf.head(1)]))
    with pytest.raises(ParameterError, match=r"right table.*not unique: 1 key value\(s\) repeat"):
        link(sdf, repeated, "id", CONFIG, sources=("a", "b"))
    nulls = _frame(spark, pdf.assign(id=[None] + list(pdf["id"][1:])))
    with pytest.raises(ParameterError, match=r"left table.*NULL in 1 row"):
        link(nulls, right, "id", CONFIG, sources=("a", "b"))


def test_the_fused_key_check_refuses_a_repeated_key_in_dedup_with_the_key_checks_message(spark):
    pdf, _ = tiny_people(spark)
    dup = _frame(spark, pd.concat([pdf, pdf.head(2)]))
    with pytest.raises(ParameterError, match=r"not unique: 2 key value\(s\) repeat, on 4 rows"):
        dedup(dup, "id", CONFIG)


@pytest.mark.parametrize("thresholds", [(1, 2), (1.5,), (0, 3)])
def test_bounded_edit_distance_levels_equal_the_unbounded_distance_levels(spark, thresholds):
    words = ["kitten", "sitting", "kitten", "mitten", "kitte", "smith", None, "", "kiten", "xyz"]
    rows = [(a, b) for a in words for b in words]
    df = spark.createDataFrame(rows, "_dq_c0_l string, _dq_c0_r string")
    cmp = parse_config({"blocking": [["x"]], "comparisons": [
        {"column": "x", "method": "levenshtein", "thresholds": list(thresholds)}]}).comparisons
    got = C.add_levels(df, cmp, ["x"], {"x": T.StringType()})
    assert "_dq_s0" not in got.columns
    d = F.levenshtein("_dq_c0_l", "_dq_c0_r")  # the unbounded distance, read once per threshold
    want = F.when(F.col("_dq_c0_l").isNull() | F.col("_dq_c0_r").isNull(), -1).when(
        F.col("_dq_c0_l") == F.col("_dq_c0_r"), len(thresholds) + 1)
    for n, th in enumerate(thresholds):
        want = want.when(d <= th, len(thresholds) - n)
    rows = got.select("_dq_c0_l", "_dq_c0_r", "_dq_g0", want.otherwise(0).alias("want")).collect()
    wrong = [r for r in rows if r["_dq_g0"] != r["want"]]
    assert not wrong and len(rows) == 100
    assert {r["_dq_g0"] for r in rows} >= {-1, 0, len(thresholds) + 1}
