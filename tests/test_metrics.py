"""``Result.metrics()``: every system's result names its numbers, flat, finite, timings left out."""
from __future__ import annotations

import math

import pytest

from dqkit.contract.metrics import flatten, number, pick
from dqkit.systems import all_systems

SYSTEMS = [s.name for s in all_systems() if s.name != "history"]


@pytest.mark.parametrize("name", SYSTEMS)
def test_every_systems_example_result_has_flat_finite_named_metrics(name, example_result):
    m = example_result(name).metrics()
    assert m and isinstance(m, dict)
    for key, value in m.items():
        assert isinstance(key, str) and key
        assert isinstance(value, float) and math.isfinite(value), (key, value)
        assert "seconds" not in key


def test_detect_metrics_are_violations_per_rule_and_their_total(example_result):
    m = example_result("detect").metrics()
    assert m == {"violations": 4.0, "rule.phiF.violations": 2.0, "rule.phiD.violations": 2.0}


def test_delta_metrics_hold_the_row_and_column_statistics_per_table(example_result):
    m = example_result("delta").metrics()
    assert m["users.rows_old"] == 3 and m["users.rows_new"] == 5 and m["users.differences"] == 5
    assert m["users.percent"] == pytest.approx(71.4)
    assert m["users.salary.median"] == 50 and m["users.paired"] == 2
    assert m["tables_only_in_new"] == 0


def test_dedup_metrics_hold_pairs_clusters_and_the_duplicate_share(example_result):
    m = example_result("dedup").metrics()
    assert (m["matching_pairs"], m["clusters"], m["records"]) == (38, 32, 57)
    assert m["duplicate_share"] == pytest.approx(38 / 57)


def test_repair_review_and_dedup_diff_metrics_count_what_they_did(example_result):
    r = example_result("repair").metrics()
    assert r["changed_cells"] == 2 and r["violations"] == 4 and r["remaining_violations"] == 0
    assert r["rule.phiF.violations"] == 2 and r["rule.phiD.remaining"] == 0
    v = example_result("review").metrics()
    assert (v["changes"], v["applied"], v["held"]) == (2, 1, 1) and v["rule.phiF.applied"] == 1
    d = example_result("dedup-diff").metrics()
    assert d["created"] == 1 and d["split"] == 1 and d["clusters.b"] == 34 and d["records.added"] == 2


def test_lake_tcfc_and_query_metrics(example_result):
    lake = example_result("lake").metrics()
    assert lake["edges"] == 1 and lake["edge.orders>orders_bob_cy"] == 1 and lake["tables"] == 3
    t = example_result("tcfc").metrics()
    assert t["users.differing_fragments"] == 4 and t["differing_pairs"] == 1 and t["completed"] == 1
    q = example_result("query").metrics()
    assert q == {"answer_rows": 3.0, "dirty_rows": 3.0, "candidate_cells": 3.0}


def test_flatten_keeps_numbers_joins_paths_and_drops_timings_text_nan_and_lists():
    d = {"a": 1, "b": {"c": 2.5, "seconds": 9, "d": "x", "e": float("nan")}, "f": [1, 2], "g": True}
    assert flatten(d) == {"a": 1.0, "b.c": 2.5, "g": 1.0}
    assert pick({"x": 3, "y": None}, ("x", "y", "z"), "p.") == {"p.x": 3.0}
    assert number("3") is None and number(float("inf")) is None
