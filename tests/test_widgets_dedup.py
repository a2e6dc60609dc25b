"""Headless tests of the DedupExplorer: set values and click buttons, then assert on state and results.

One explorer run on 30 generated people (with their true clusters) is shared by the tests that read it."""
from __future__ import annotations

from itertools import combinations

import networkx as nx
import pandas as pd
import pytest

from data.people import generate_people, true_pairs
from dqkit.dedup.evaluate import pair_accuracy
from dqkit.widgets import DedupController, DedupExplorer
from dqkit.widgets.dedup_explorer import parse_comparison_lines, parse_rule_lines

INJECTED = "<script>alert(1)</script>"
COMPARISONS = ("given_name: jaro_winkler\nsurname: jaro_winkler\ndate_of_birth: levenshtein\n"
               "postcode: exact\naddress_1: token_set")


@pytest.fixture(scope="module")
def people(spark):
    """30 entities' records (text columns) with ``entity``, the true cluster; the records of the largest
    entity carry markup in ``state`` (not compared), to check escaping."""
    from pyspark.sql import types as T

    records, truth = generate_people(30, seed=3)
    pdf = records.merge(truth, on="rec_id")
    pdf["entity"] = pdf["entity"].astype(str)
    biggest = pdf["entity"].value_counts().sort_index().idxmax()
    pdf.loc[pdf["entity"] == biggest, "state"] = INJECTED
    pdf = pdf.astype(object).where(pdf.notna(), None)
    schema = T.StructType([T.StructField(c, T.StringType()) for c in pdf.columns])
    return pdf, spark.createDataFrame(pdf.values.tolist(), schema), biggest


@pytest.fixture(scope="module")
def explored(spark, people):
    """The explorer driven as a user would: key, two rules (one from the picker), block sizes, the
    comparisons, the truth column, Run."""
    _, sdf, _ = people
    ex = DedupExplorer({"people": sdf}, spark=spark)
    ex.key.value = "rec_id"
    ex.block_columns.value = ("surname",)
    ex.add_rule_button.click()
    ex.rules.value += "\npostcode, substr(given_name,1,1)"
    ex.stats_button.click()
    stats = ex.controller.stats
    ex.comparisons.value = COMPARISONS
    ex.truth.value = "entity"
    ex.run_button.click()
    assert ex.controller.wait(900)
    assert ex.status == "done", ex.error
    return ex, stats


def _brute_pairs(pdf: pd.DataFrame) -> tuple[set, set]:
    """The pairs of each blocking rule by brute force (NULL parts never match)."""
    first = {}
    for rule, key in (("surname", lambda r: r["surname"]),
                      ("postcode", lambda r: None if r["postcode"] is None or r["given_name"] is None
                       else (r["postcode"], r["given_name"][0]))):
        first[rule] = {tuple(sorted((a["rec_id"], b["rec_id"]))) for (_, a), (_, b) in combinations(pdf.iterrows(), 2)
                       if key(a) is not None and key(a) == key(b)}
    return first["surname"], first["postcode"]


def test_block_sizes_before_running_count_each_pair_once_with_the_cumulative_total(explored, people):
    ex, stats = explored
    pdf, _, _ = people
    assert ex.controller.blocking == [["surname"], ["postcode", "substr(given_name,1,1)"]]
    by_surname, by_postcode = _brute_pairs(pdf)
    assert list(stats["new_pairs"]) == [len(by_surname), len(by_postcode - by_surname)]
    assert list(stats["cumulative_pairs"]) == [len(by_surname), len(by_surname | by_postcode)]
    assert stats["comparisons"].iloc[1] == len(by_postcode)
    # the widget shows the report's blocking table: headers in words, not the raw statistics
    assert "cumulative pairs" in ex.stats_view.value and "cumulative_pairs" not in ex.stats_view.value
    # the run compared exactly those pairs
    assert ex.result.n_pairs == len(by_surname | by_postcode)


def test_the_run_gives_clusters_and_precision_recall_that_follow_the_threshold(explored, people):
    ex, _ = explored
    pdf, _, _ = people
    c = ex.controller
    truth = true_pairs(pdf[["rec_id", "entity"]])
    for threshold in (0.9, 0.2, 0.999):
        ex.threshold.value = threshold
        assert c.threshold == threshold and c.current.threshold == threshold
        matches = {(r["key_1"], r["key_2"]) for r in c.current.matches.select("key_1", "key_2").collect()}
        m = c.metrics()
        tp = len(matches & truth)
        assert m["matching pairs"] == len(matches)
        assert m["precision"] == round(tp / len(matches), 4) and m["recall"] == round(tp / len(truth), 4)
        g = nx.Graph(list(matches))
        g.add_nodes_from(pdf["rec_id"])
        sizes = [len(comp) for comp in nx.connected_components(g)]
        assert m["clusters with duplicates"] == sum(s > 1 for s in sizes)
        assert m["golden records"] == len(sizes) and m["largest cluster"] == max(sizes)
        assert f"{m['recall']}" in ex.threshold_view.value
    assert 0.9 <= c.metrics()["precision"] and c.metrics()["recall"] >= 0.6


def test_moving_the_threshold_within_one_weight_step_reuses_the_clusters(explored, wall_clock):
    ex, _ = explored
    c = ex.controller
    ex.threshold.value = 0.9
    before = c.current.clusters
    near = [t for t in (0.901, 0.902, 0.905, 0.91) if c.result.matching_pairs_at(t) == c.result.matching_pairs_at(0.9)]
    assert near, "no threshold within the step of 0.9"
    with wall_clock.within(20, "moving the threshold"):
        ex.threshold.value = near[-1]
    assert c.current.clusters is before  # the same clusters: no re-clustering


def test_the_cluster_browser_shows_records_side_by_side_and_a_pair_waterfall(explored, people):
    ex, _ = explored
    pdf, _, biggest = people
    ex.threshold.value = 0.9
    c = ex.controller
    options = [v for _, v in ex.cluster.options]
    assert 0 < len(options) <= c.sample_clusters
    sizes = [int(label.split("(")[1].split()[0]) for label, _ in ex.cluster.options]
    assert sizes == sorted(sizes, reverse=True)  # largest first
    cid = min(pdf.loc[pdf["entity"] == biggest, "rec_id"])
    assert cid in options
    ex.cluster.value = cid
    members = sorted(r[c.result.key] for r in c.current.clusters.where(f"cluster_id = '{cid}'").collect())
    side = c.cluster_table(cid)
    assert list(side.columns) == ["attribute", *members] and "rec_id" not in set(side["attribute"])
    for k in members:
        assert f">{k}<" in ex.cluster_view.value
    # markup in the data is escaped in the browser
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in ex.cluster_view.value and INJECTED not in ex.cluster_view.value
    # the first pair of the cluster is explained as a waterfall
    k1, k2 = ex.pair.value
    assert {k1, k2} <= set(members) and (ex.key_1.value, ex.key_2.value) == (k1, k2)
    assert "<img" in ex.waterfall.value and "match_weight" in ex.waterfall.value
    e = c.explain(k1, k2)
    row = c.result.pairs.where(f"key_1 = '{k1}' and key_2 = '{k2}'").first()
    assert e["log2_bayes_factor"].sum() == pytest.approx(row["match_weight"])
    # any two keys can be typed; an unknown one is a message, not a crash
    ex.key_1.value, ex.key_2.value = k1, "no-such-key"
    ex.explain_button.click()
    assert "no record with key" in ex.waterfall.value


def test_truth_as_key_pairs_gives_the_same_measures_as_a_truth_column(explored, people):
    ex, _ = explored
    pdf, _, _ = people
    by_pairs = pair_accuracy(ex.result, sorted(true_pairs(pdf[["rec_id", "entity"]])))
    for t in (0.2, 0.9, 0.999):
        assert by_pairs.at(t) == ex.controller.accuracy.at(t)


def test_the_result_tabs_render_the_run_and_escape_values(explored):
    ex, _ = explored
    summary, blocking, clusters = (t.value for t in ex.tabs.children)
    assert "DUPLICATES" in summary
    assert "Blocking rules" in blocking and "Model" in blocking and blocking.count("<img") >= 2
    assert "Cluster sizes" in clusters and "Largest clusters" in clusters
    assert "<script" not in summary + blocking + clusters
    assert not ex.run_button.disabled and ex.progress.bar.value == 100


def test_paging_the_dedup_tabs_runs_no_spark_job(explored, spark):
    """The explorer's tabs show 3 largest clusters, then 12, then 10 again, from what the result
    fetched once (clusters, matching pairs, golden records): a page runs no Spark job."""
    ex, _ = explored

    def shown(title: str) -> int:
        html = ex.tabs.children[2].value
        part = html[html.index(f"{title}</h3>"):]
        return part[:part.index("</table>")].count("<tr>") - 1

    ex.tabs.set_sample_rows(3)
    n = spark.sparkContext._jsc.sc().dagScheduler().nextJobId()
    before = int(n if isinstance(n, int) else n.get())
    ex.tabs.set_sample_rows(12)
    assert shown("Largest clusters") == min(12, ex.result.duplicate_clusters)
    assert shown("Matching pairs") == min(12, ex.result.n_matching_pairs)
    ex.tabs.set_sample_rows(10)
    n = spark.sparkContext._jsc.sc().dagScheduler().nextJobId()
    assert int(n if isinstance(n, int) else n.get()) == before, "a page re-ran Spark"


def test_selections_are_checked_without_spark_and_block_the_run_button(spark, people):
    _, sdf, _ = people
    ex = DedupExplorer({"people": sdf}, spark=spark)
    assert ex.run_button.disabled
    assert "pick the key column" in ex.problems_view.value
    ex.key.value = "rec_id"
    ex.rules.value = "surname"
    ex.comparisons.value = "surnme: jaro_winkler"
    assert "unknown column &#x27;surnme&#x27;" in ex.problems_view.value and ex.run_button.disabled
    ex.comparisons.value = "surname: fuzzy"
    assert "unknown comparison method" in ex.problems_view.value and ex.run_button.disabled
    ex.comparisons.value = "surname jaro_winkler"
    assert "does not read" in ex.problems_view.value
    ex.compare_column.value, ex.compare_method.value = "surname", "levenshtein"
    ex.add_comparison_button.click()
    assert ex.controller.comparisons == [{"column": "surname", "method": "levenshtein"}]
    assert ex.comparisons.value == "surname: levenshtein" and not ex.run_button.disabled
    ex.block_columns.value = ()
    ex.add_rule_button.click()
    assert "at least one column" in ex.problems_view.value


def test_rule_and_comparison_lines_and_a_config_round_trip(spark, people):
    assert parse_rule_lines("surname\n# note\n\npostcode, substr(given_name,1,1)\n") == [
        ["surname"], ["postcode", "substr(given_name,1,1)"]]
    assert parse_comparison_lines("dob: date 31 365\nsurname: jaro_winkler") == [
        {"column": "dob", "method": "date", "thresholds": [31.0, 365.0]}, {"column": "surname", "method": "jaro_winkler"}]
    _, sdf, _ = people
    cfg = ("blocking: [[surname]]\ncomparisons:\n  - {column: surname, method: jaro_winkler, thresholds: [0.9]}\n"
           "  - {column: postcode, method: exact}\nthreshold: 0.8\nmax_block_size: 50\n")
    c = DedupController({"people": sdf}, key="rec_id", config=cfg, spark=spark)
    assert c.config_dict() == {"blocking": [["surname"]],
                               "comparisons": [{"column": "surname", "method": "jaro_winkler", "thresholds": [0.9]},
                                               {"column": "postcode", "method": "exact"}],
                               "threshold": 0.8, "max_block_size": 50}
    assert c.problems() == [] and "max_block_size: 50" in c.config_yaml()
    assert c.as_parameters("dedup.yaml") == {"table": "people", "key": "rec_id", "config": "dedup.yaml",
                                             "threshold": "0.8"}
    ex = DedupExplorer(controller=c)
    assert ex.comparisons.value == "surname: jaro_winkler 0.9\npostcode: exact" and ex.threshold.value == 0.8


def test_cancel_stops_the_running_dedup(spark, slow_ids, wait_for, wall_clock):
    table = slow_ids().selectExpr("id", "cast(v as string) as v")
    ex = DedupExplorer({"t": table}, key="id", config={"blocking": [["v"]], "comparisons": [{"column": "v"}]},
                       spark=spark)
    ex.run_button.click()
    assert wait_for(lambda: ex.controller.progress.running, 60), "no Spark job started"
    with wall_clock.within(30, "Cancel"):
        ex.progress.cancel_button.click()
        assert ex.controller.wait(60)
    assert ex.status == "cancelled" and ex.result is None
    assert "Cancelled" in ex.message.value and not ex.run_button.disabled
    assert wait_for(lambda: not spark.sparkContext.statusTracker().getActiveJobsIds(), 30)
