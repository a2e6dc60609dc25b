"""Headless tests of the rules widgets (RulePicker, ViolationExplorer): set values and click buttons,
then assert on state and results."""
from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest

from dqkit.contract.charts import violation_graph
from dqkit.rules import load_rules, rules_from_yaml
from dqkit.widgets import RulePicker, RulesController, TableListing, ViolationExplorer

DATA = Path(__file__).resolve().parent.parent / "data"
TABLE1 = DATA / "bigdansing_table1.csv"
RULES1 = DATA / "bigdansing_table1_rules.yaml"


@pytest.fixture(scope="module")
def table1_listing(spark):
    """BigDansing's Table 1, listed once for every picker of the module."""
    return TableListing(str(TABLE1), spark)


@pytest.fixture(scope="module")
def explored(spark):
    """One explorer run on Table 1 with phiF and phiD, repair ticked (shared by the tests that read it)."""
    ex = ViolationExplorer(str(TABLE1), rules=str(RULES1), key="tid", spark=spark)
    ex.repair_box.value = True
    ex.run_button.click()
    assert ex.controller.wait(900)
    assert ex.status == "done", ex.error
    return ex


# ------------------------------------------------------------------------------------------ RulePicker
def test_live_validation_points_a_caret_at_the_error_with_the_hint_and_clears_when_fixed(table1_listing):
    p = RulePicker(table1_listing)
    p.editor.value = "phiF: zipcode -> "
    [problem] = p.problems
    assert problem.line == 1 and "expected name, found end of rule" in problem.message
    assert problem.pointer() == "phiF: zipcode -> \n" + " " * 16 + "^"  # right after the arrow
    assert problem.hint and "FD: 'a, b -> c'" in problem.hint
    assert "^" in p.status.value and "Hint:" in p.status.value and "1 problem" in p.status.value

    line = "phiD: not(t1.rate > t2.rate or t1.salary < t2.salary)"
    p.editor.value = line
    [problem] = p.problems
    assert "'or' is not allowed" in problem.message and problem.caret == line.index("or t1")

    p.editor.value = "phiF: zipcode -> city"
    assert p.problems == [] and [r.name for r in p.value] == ["phiF"]
    assert "1 rule valid" in p.status.value and "^" not in p.status.value


def test_an_unknown_column_is_reported_with_a_caret_under_it_and_good_lines_are_kept(table1_listing):
    p = RulePicker(table1_listing)
    text = ("phiF: zipcod -> city\n"
            "# a comment\n"
            "phiD: not(t1.rate > t2.rate and t1.salry < t2.salary)\n"
            "ok: zipcode -> state\n"
            "bad: not(t1.salary > t2.city)")
    p.editor.value = text
    lines = text.splitlines()
    first, second, third = p.problems
    assert (first.line, second.line, third.line) == (1, 3, 5)
    assert "unknown column 'zipcod'" in first.message and first.caret == lines[0].index("zipcod")
    assert "columns: tid, name, zipcode" in first.hint
    assert "unknown column 'salry'" in second.message and second.caret == lines[2].index("salry")
    assert "cannot be compared" in third.message and third.caret is None
    assert [r.name for r in p.value] == ["ok"]


def test_choosing_another_table_checks_the_rules_against_its_columns(spark):
    a = spark.createDataFrame([(1, "x")], "zip int, city string")
    b = spark.createDataFrame([(1, "x")], "zip int, town string")
    p = RulePicker({"a": a, "b": b}, rules="f: zip -> city")
    assert p.table.value == "a" and p.problems == [] and "city" in p.schema.value
    p.table.value = "b"
    assert p.controller.table == "b" and "town" in p.schema.value
    assert [x.message for x in p.problems] == ["rule 'f': unknown column 'city'"]
    assert ("town : string", "town") in p.lhs.select.options


def test_the_fd_builder_appends_an_fd_of_the_picked_columns(table1_listing):
    p = RulePicker(table1_listing, rules="phiF: zipcode -> city")
    p.lhs.value = ("zipcode",)
    p.rhs.value = ("state", "city")
    p.fd_name.value = "zs"
    p.add_fd_button.click()
    assert p.editor.value == "phiF: zipcode -> city\nzs: zipcode -> city, state"
    assert [r.name for r in p.value] == ["phiF", "zs"] and p.problems == []
    p.rhs.value = ()
    p.add_fd_button.click()
    assert "both sides" in p.file_message.value and len(p.value) == 2


def test_rules_yaml_load_and_save_round_trip(table1_listing, tmp_path):
    p = RulePicker(table1_listing)
    p.path.value = str(RULES1)
    p.load_button.click()
    assert "loaded 2 rule(s)" in p.file_message.value
    assert p.editor.value == ("phiF: zipcode -> city\n"
                              "phiD: not(t1.rate > t2.rate and t1.salary < t2.salary)")
    target = tmp_path / "rules.yaml"
    p.path.value = str(target)
    p.save_button.click()
    assert "saved 2 rule(s)" in p.file_message.value
    saved = rules_from_yaml(target.read_text())
    assert [(r.name, str(r)) for r in saved] == [(r.name, str(r)) for r in load_rules(RULES1)]
    assert [x.name for x in tmp_path.iterdir()] == ["rules.yaml"]  # no temporary file left

    again = RulePicker(table1_listing)
    again.load(target)
    assert again.text == p.text and [r.name for r in again.value] == ["phiF", "phiD"]

    p.save_button.click()  # the file exists now
    assert "exists" in p.file_message.value and "overwrite" in p.file_message.value
    p.editor.value += "\nbroken: zipcode ->"
    p.overwrite.value = True
    p.save_button.click()
    assert "the rules have a problem" in p.file_message.value
    assert rules_from_yaml(target.read_text())[0].name == "phiF"  # untouched


def test_a_malformed_rules_file_is_reported_and_the_rules_are_kept(table1_listing, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules:\n  - name: f\n    rule: 'zipcode -> '\n")
    p = RulePicker(table1_listing, rules="phiF: zipcode -> city")
    p.load(bad)
    assert "expected name" in p.file_message.value and p.text == "phiF: zipcode -> city"


def test_values_reaching_the_rule_picker_html_are_escaped(table1_listing):
    p = RulePicker(table1_listing)
    p.editor.value = "x: not(t1.city = '<b>x</b>')"
    assert p.problems == []
    assert "&lt;b&gt;x&lt;/b&gt;" in p.status.value and "<b>x</b>" not in p.status.value
    p.editor.value = "<b>x</b> -> city"
    assert p.problems and "&lt;b&gt;x&lt;/b&gt;" in p.status.value and "<b>x</b>" not in p.status.value


def test_the_controller_works_without_any_widget(table1_listing):
    c = RulesController(table1_listing, rules=["phiF: zipcode -> city", "zipcode -> state"])
    assert [r.name for r in c.rules] == ["phiF", "zipcode -> state"] and c.valid
    assert "name: zipcode -> state" in c.to_yaml()
    c.set_text("a: zipcode -> city\na: zipcode -> state")
    [dup] = c.problems
    assert dup.line == 2 and "used more than once (first on line 1)" in dup.message
    with pytest.raises(Exception, match="the rules have a problem"):
        c.check()


# ------------------------------------------------------------------------------------ the violation graph
def _graph() -> nx.Graph:
    g = nx.Graph()
    for vid, rule, cells in [("f|t1|t2", "phiF", [("t1", "city", "$x$"), ("t2", "city", "LA")]),
                             ("d|t2|t3", "phiD", [("t2", "city", "LA"), ("t3", "rate", "10")])]:
        g.add_node(vid, kind="violation", rule=rule)
        for tid, attr, value in cells:
            g.add_node((tid, attr), kind="cell", value=value, label=f"{tid}.{attr} = {value}")
            g.add_edge(vid, (tid, attr), rule=rule)
    return g


def test_violation_graph_labels_cells_as_plain_text_and_names_each_rule_in_the_legend():
    fig = violation_graph(_graph(), title="Component t1.city")
    ax = fig.axes[0]
    labels = {t.get_text() for t in ax.texts}
    assert labels == {"t1.city = $x$", "t2.city = LA", "t3.rate = 10"}
    assert all(not t.get_parse_math() for t in ax.texts)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["phiD (1 violation)", "phiF (1 violation)"]
    assert fig.get_suptitle() == "Component t1.city (3 cells, 2 violations)"  # the figure's title: never clipped
    again = violation_graph(_graph(), title="Component t1.city")
    assert [t.xyann for t in ax.texts] == [t.xyann for t in again.axes[0].texts]
    assert [t.xy for t in ax.texts] == [t.xy for t in again.axes[0].texts]  # a deterministic layout


def test_violation_graph_bounds_its_labels_and_draws_an_empty_graph():
    fig = violation_graph(_graph(), max_labels=1)
    assert len(fig.axes[0].texts) == 1 and "labels on 1 cells" in fig.get_suptitle().replace("\n", " ")
    empty = violation_graph(nx.Graph())
    assert [t.get_text() for t in empty.axes[0].texts] == ["nothing to show"]


# -------------------------------------------------------------------------------------- ViolationExplorer
def test_explorer_finds_the_violations_of_table1_per_rule(explored):
    run = explored.result
    assert run.detection.counts == {"phiF": 2, "phiD": 2}  # phiF: (t2, t4) and (t4, t6)
    per_rule, samples, _, _ = (explored.tabs.children[i] for i in range(4))
    assert "VIOLATIONS" in per_rule.value and per_rule.value.count("<img") == 1
    assert "First violations" in samples.value and "First candidate fixes" in samples.value
    assert "t4[city] = t6[city]" in samples.value and "t1[salary] &gt;= t2[salary]" in samples.value
    assert explored.progress.bar.value == 100 and explored.controller.fraction == 1.0
    assert not explored.run_button.disabled


GRAPH_TAB = 2


def _job_ids(spark) -> set[int]:
    """The ids of the Spark jobs the session's status tracker holds (jobs run by the widgets have no group)."""
    return set(spark.sparkContext.statusTracker().getJobIdsForGroup(None))


def test_the_component_picker_lists_components_largest_first_and_draws_one_inline(explored):
    explored.tabs.selected_index = GRAPH_TAB  # the graph is built when its tab opens
    options = explored.graph.component.options
    assert [label for label, _ in options] == ["t1.rate: 6 cells, 2 violations", "t2.city: 6 cells, 2 violations"]
    assert explored.graph.component.value == ("t1", "rate")
    first = explored.graph.png
    assert first is not None and first.startswith(b"\x89PNG")
    assert "data:image/png;base64," in explored.graph.image.value
    explored.graph.component.value = ("t2", "city")
    assert explored.graph.png.startswith(b"\x89PNG") and explored.graph.png != first


def test_a_component_larger_than_max_nodes_gives_a_message_not_a_crash(explored):
    explored.tabs.selected_index = GRAPH_TAB
    explored.graph.max_nodes.value = 3
    try:
        assert explored.graph.png is None
        assert "more than the 3 nodes" in explored.graph.image.value and "raise max nodes" in explored.graph.image.value
    finally:
        explored.graph.max_nodes.value = 60
    assert explored.graph.png is not None


def test_with_repair_ticked_the_repairs_tab_shows_each_change(explored):
    rep = explored.result.repair
    changes = {(r["tid"], r["attr"], r["old"], r["new"]) for r in rep.changes.collect()}
    assert ("t4", "city", "SF", "LA") in changes
    repairs = explored.tabs.children[3].value
    assert "SF → LA" in repairs and "What was repaired" in repairs


def test_a_bad_rule_stops_the_run_before_spark_with_the_caret_in_the_message(table1_listing):
    ex = ViolationExplorer(table1_listing, rules="phiF: zipcode ->")
    assert ex.run(60) is None and ex.status == "failed"
    assert "expected name" in ex.error and "phiF: zipcode ->\n                ^" in ex.error
    assert "&gt;" in ex.message.value and "Traceback" not in ex.message.value


def test_the_key_and_repair_controls_reach_the_controller(table1_listing):
    ex = ViolationExplorer(table1_listing, rules=str(RULES1))
    assert ex.key.value == "" and ex.controller.key is None
    ex.key.value = "tid"
    ex.repair_box.value = True
    ex.method.value = "equivalence-class"
    ex.max_iterations.value = 3
    c = ex.controller
    assert (c.key, c.repair, c.method, c.max_iterations) == ("tid", True, "equivalence-class", 3)
    assert c.arguments()["key"] == "tid" and c.expected_steps() == 2 + 1 + 3
    assert list(ex.method.options) == ["auto", "equivalence-class", "holistic"]


def test_cancel_stops_the_running_detection(spark, slow_ids, wait_for, wall_clock):
    table = slow_ids()
    ex = ViolationExplorer({"t": table}, rules="f: id -> v", spark=spark)
    ex.run_button.click()
    assert wait_for(lambda: ex.controller.progress.running, 60), "no Spark job started"
    with wall_clock.within(30, "Cancel"):
        ex.progress.cancel_button.click()
        assert ex.controller.wait(60)
    assert ex.status == "cancelled" and ex.result is None
    assert "cancelled" in ex.error and "Cancelled" in ex.message.value
    assert wait_for(lambda: not spark.sparkContext.statusTracker().getActiveJobsIds(), 30)


def test_values_reaching_the_explorer_html_are_escaped(spark):
    table = spark.createDataFrame([("1", "<b>x</b>"), ("1", "y")], "k string, v string")
    ex = ViolationExplorer({"t": table}, rules="f: k -> v", spark=spark)
    ex.run(300)
    assert ex.status == "done", ex.error
    samples = ex.tabs.children[1].value
    assert "&lt;b&gt;x&lt;/b&gt;" in samples and "<b>x</b>" not in samples
    ex.tabs.selected_index = GRAPH_TAB
    assert ex.graph.png is not None


def test_a_run_starts_no_spark_job_for_the_violation_graph_until_its_tab_opens(spark):
    table = spark.createDataFrame([(1, "1", "x"), (2, "1", "y"), (3, "2", "z")], "id int, k string, v string")
    ex = ViolationExplorer({"t": table}, rules="f: k -> v", key="id", spark=spark)
    ex.run(300)
    assert ex.status == "done", ex.error
    run = ex.result
    assert not run.graph_built and "graph" not in run.seconds and ex.graph.png is None
    assert "built when this tab is opened" in ex.graph.image.value
    before = _job_ids(spark)
    ex.tabs.selected_index = 1  # another tab, and back to the first: no graph, no job
    ex.tabs.selected_index = 0
    assert _job_ids(spark) == before and not run.graph_built

    ex.tabs.selected_index = GRAPH_TAB  # as a user opens it: built, drawn, shown
    opened = _job_ids(spark) - before
    assert opened, "opening the graph tab started no Spark job: the run had built the graph"
    assert run.graph_built and run.seconds["graph"] >= 0
    assert ex.graph.png is not None and ex.graph.png.startswith(b"\x89PNG")
    assert "<img" in ex.graph.image.value and "violation graph of component" in ex.graph.image.value
    assert [label for label, _ in ex.graph.component.options] == ["1.k: 4 cells, 1 violation"]

    drawn = _job_ids(spark)  # opened again: kept, built once per run
    ex.tabs.selected_index = 0
    ex.tabs.selected_index = GRAPH_TAB
    assert _job_ids(spark) == drawn and ex.result.components is run.components

    ex.run(300)  # a new run drops the graph: nothing built, nothing drawn until the tab opens again
    assert ex.status == "done", ex.error
    assert ex.result is not run and not ex.result.graph_built and ex.graph.png is None
    assert ex.tabs.selected_index == 0
    ex.tabs.selected_index = GRAPH_TAB
    assert ex.result.graph_built and ex.graph.png is not None


def test_the_controller_builds_a_runs_graph_on_first_read_and_once(spark):
    from dqkit.widgets import ViolationController

    table = spark.createDataFrame([(1, "1", "x"), (2, "1", "y"), (3, "2", "z")], "id int, k string, v string")
    c = ViolationController({"t": table}, rules="f: k -> v", key="id", spark=spark)
    run = c.run(300)
    assert c.status == "done", c.error
    assert not run.graph_built and "graph" not in run.seconds
    before = _job_ids(spark)
    assert list(run.components["component"]) == ["1.k"]  # the first read builds it: Spark jobs
    built = _job_ids(spark)
    assert built - before and run.graph_built
    assert run.hypergraph is not None and c.component_options() and _job_ids(spark) == built


def test_with_a_key_and_repair_ticked_a_run_detects_once_and_shows_repairs_first_detection(spark, monkeypatch):
    import dqkit.widgets.violation_controller as vc

    calls = []
    monkeypatch.setattr(vc, "detect", lambda *a, **k: calls.append(a) or pytest.fail("a second detection"))
    table = spark.createDataFrame([(1, "1", "x"), (2, "1", "y"), (3, "1", "y"), (4, "2", "z")],
                                  "id int, k string, v string")
    c = vc.ViolationController({"t": table}, rules="f: k -> v", key="id", repair=True, spark=spark)
    run = c.run(300)
    assert c.status == "done", c.error
    assert calls == [] and run.detection is run.repair.first_detection
    assert run.detection.counts == {"f": 2} and list(run.fixes["rule"]) == ["f"] * len(run.fixes)
    assert {(r["tid"], r["old"], r["new"]) for r in run.repair.changes.collect()} == {(1, "x", "y")}
