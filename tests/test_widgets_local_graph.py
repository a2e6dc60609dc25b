"""The violation graph tab built on the driver (``dqkit.widgets.local_graph``) is the Spark route's graph."""
from __future__ import annotations

import random
from types import SimpleNamespace

import networkx as nx
import pytest

import dqkit.widgets.local_graph as lg
import dqkit.widgets.violation_controller as vc
from dqkit.detect import detect
from dqkit.errors import ParameterError
from dqkit.repair import violation_hypergraph
from dqkit.rules import UDFRule
from dqkit.widgets import ViolationExplorer
from dqkit.widgets.local_graph import LocalHypergraph, local_capable

TABLE1 = "data/bigdansing_table1.csv"
RULES1 = "data/bigdansing_table1_rules.yaml"
GRAPH_TAB = 3  # after detect's declared Summary, Violations, Charts


def _spark_sizes(graph) -> list[tuple]:
    return [((r["component"]["tid"], r["component"]["attr"]), r["cells"], r["violations"])
            for r in graph.component_sizes().collect()]


def _local_sizes(graph: LocalHypergraph) -> list[tuple]:
    return [(c, int(k), int(v)) for c, k, v in graph.component_sizes().itertuples(index=False)]


def _same_graph(a: nx.Graph, b: nx.Graph) -> None:
    assert dict(a.nodes(data=True)) == dict(b.nodes(data=True))
    def edges(g: nx.Graph) -> dict:
        return {frozenset((u, v)): d for u, v, d in g.edges(data=True)}
    assert edges(a) == edges(b)


def _both_routes_agree(det) -> list[tuple]:
    spark_graph, local = violation_hypergraph(det), LocalHypergraph.fetch(det)
    sizes = _spark_sizes(spark_graph)
    assert _local_sizes(local) == sizes
    for (tid, attr), cells, viols in sizes:
        _same_graph(local.to_networkx((tid, attr), max_nodes=10_000),
                    spark_graph.to_networkx((tid, attr), max_nodes=10_000))
    return sizes


def test_table1_gives_the_same_components_and_graphs_on_both_routes(spark):
    det = detect(TABLE1, RULES1, key="tid", spark=spark)
    assert local_capable(det)
    assert len(_both_routes_agree(det)) == 2


def test_random_tables_with_nulls_give_the_same_graph_on_both_routes(spark):
    # three random tables (seeds 1-3) in one detection: told apart by ``tab``, on the left of both FDs and
    # equal in the DC's pairs, so no violation (hence no component) spans two tables
    rows = []
    for seed in (1, 2, 3):
        rng = random.Random(seed)
        rows += [(40 * seed + i, seed, rng.choice([None, "z1", "z2", "z3"]), rng.choice([None, "a", "b", "c"]),
                  rng.randint(0, 4), rng.choice([None, 1, 2])) for i in range(40)]
    df = spark.createDataFrame(rows, "id long, tab int, zip string, city string, rate int, tax int")
    rules = ("f: tab, zip -> city\ng: tab, zip, tax -> rate\n"
             "d: not(t1.tab = t2.tab and t1.zip = t2.zip and t1.rate > t2.rate)\no: not(t1.rate = 4)")
    _both_routes_agree(detect(df, rules, key="id", spark=spark))
    _both_routes_agree(detect(df.drop("id"), rules, spark=spark))  # content ids: string tuple ids


def test_the_local_route_refuses_like_the_spark_route(spark):
    det = detect(TABLE1, RULES1, key="tid", spark=spark)
    local, remote = LocalHypergraph.fetch(det), violation_hypergraph(det)
    for component, bound in ((("t9", "city"), 100), (("t1", "rate"), 3)):
        with pytest.raises(ParameterError) as a:
            local.to_networkx(component, max_nodes=bound)
        with pytest.raises(ParameterError) as b:
            remote.to_networkx(component, max_nodes=bound)
        assert (a.value.message, a.value.hint) == (b.value.message, b.value.hint)


def test_only_few_violations_of_declarative_rules_with_ordered_ids_take_the_local_route(spark):
    df = spark.createDataFrame([(1, "1", "x"), (2, "1", "y"), (3, "1", "z")], "id long, k string, v string")
    det = detect(df, "f: k -> v", key="id", spark=spark)
    assert local_capable(det) and not local_capable(det, limit=2)
    timed = spark.createDataFrame([(1.5, "1", "x"), (2.5, "1", "y")], "id double, k string, v string")
    assert not local_capable(detect(timed, "f: k -> v", key="id", spark=spark))  # float ids: Spark's order
    clean = spark.createDataFrame([(1, "1", "x")], "id long, k string, v string")
    assert not local_capable(detect(clean, "f: k -> v", key="id", spark=spark))
    assert not local_capable(detect(df, "f: k -> v", key="id", mode="count", spark=spark))
    udf = SimpleNamespace(mode="violations", total_violations=3, rules=(UDFRule.__new__(UDFRule),), key="id",
                          schema={"id": "bigint"})  # a UDF rule's violation may have no fix: Spark's route
    assert not local_capable(udf) and local_capable(SimpleNamespace(**{**vars(udf), "rules": det.rules}))


def test_the_graph_tab_draws_the_same_components_on_either_route(spark, monkeypatch):
    rows = [(i, f"z{i % 3}", f"c{i % 4}") for i in range(12)]
    table = spark.createDataFrame(rows, "id long, zip string, city string")
    shown = {}
    for route, limit in (("local", lg.LOCAL_VIOLATIONS), ("spark", 0)):
        monkeypatch.setattr(vc, "local_capable", lambda d, limit=limit: lg.local_capable(d, limit))
        ex = ViolationExplorer({"t": table}, rules="f: zip -> city", key="id", spark=spark)
        ex.run(300)
        assert ex.status == "done", ex.error
        ex.tabs.selected_index = GRAPH_TAB
        graph = ex.result.hypergraph
        assert isinstance(graph, LocalHypergraph) == (route == "local")
        assert ex.graph.png is not None and ex.graph.png.startswith(b"\x89PNG")
        assert "<img" in ex.graph.image.value
        shown[route] = [label for label, _ in ex.graph.component.options]
    assert shown["local"] == shown["spark"] and shown["local"][0].endswith("violations")
