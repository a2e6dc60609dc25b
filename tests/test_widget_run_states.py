"""Run and Cancel as a front end would draw them, in every widget (the one implementation in
``dqkit.widgets.result_view.ExplorerBase``): Run disabled from the click until the result or the error
is on screen, Cancel enabled and coloured only while a run runs, Cancel clears the pending view, and no
result of an earlier run is left standing after a cancel.

Each widget runs once for real on a few rows; the second run's work is replaced by one that waits
until it is cancelled, so the states are checked without a slow Spark job.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable

import pytest

from dqkit.errors import CancelledError, ParameterError
from dqkit.widgets.result_view import NO_RESULT

from support.tables import sqlite_table

DATA = Path(__file__).resolve().parent.parent / "data" / "users"
WIDGETS = ["delta", "dedup", "violation", "tcfc", "lake", "query", "system"]


def _make(name: str, spark: Any, tmp: Path) -> tuple[Any, Callable[[Any], list[str]]]:
    """The widget and its own result views beyond the tabs (each must be empty after a cancel)."""
    from dqkit import widgets as w

    if name == "delta":
        return w.DeltaExplorer(str(DATA / "old"), str(DATA / "new"), spark=spark), lambda ex: []
    if name == "dedup":
        df = spark.createDataFrame([(1, "ann"), (2, "ann"), (3, "bob")], "id int, v string")
        ex = w.DedupExplorer({"t": df}, key="id", config={"blocking": [["v"]], "comparisons": [{"column": "v"}]},
                             spark=spark)
        return ex, lambda ex: [ex.threshold_view.value, ex.cluster_view.value]
    if name == "violation":
        df = spark.createDataFrame([("1", "x"), ("1", "y"), ("2", "z")], "k string, v string")
        ex = w.ViolationExplorer({"t": df}, rules="f: k -> v", spark=spark)
        return ex, lambda ex: ["" if ex.graph.png is None else "png"]
    if name == "tcfc":
        src = sqlite_table(tmp / "a.db", "t", "k text, v int", [("a", 1), ("b", 2)])
        tgt = sqlite_table(tmp / "b.db", "t", "k text, v int", [("a", 1), ("b", 3)])
        spec = {"pairs": [{"name": "p", "source": {"url": src, "table": "t"}, "target": {"url": tgt, "table": "t"},
                           "aggregates": [["sum", "v", "s"]], "levels": [["k"]]}]}
        ex = w.TcfcExplorer(spec, spark=spark)
        return ex, lambda ex: [ex.tree_box.value, "leaves" if ex.leaves.options else ""]
    if name == "lake":
        lake = tmp / "lake"
        lake.mkdir()
        (lake / "big.csv").write_text("a,b\n1,x\n2,y\n3,z\n")
        (lake / "small.csv").write_text("b,a\nx,1\n")
        ex = w.LakeExplorer(str(lake), t=5, verify=False, spark=spark)
        return ex, lambda ex: [ex.graph_html.value, "components" if ex.component.options else ""]
    if name == "query":
        ex = w.QueryCleaner(spark)
        ex.controller.add_table("cities", spark.createDataFrame(
            [("t1", 9001, "LA"), ("t2", 9001, "SF"), ("t3", 9001, "LA")], "tid string, Zip int, City string"),
            "tid", "Zip -> City")
        ex.query.value = "SELECT Zip FROM cities WHERE City = 'LA'"
        return ex, lambda ex: [ex.answers.value, ex.cost.value]
    from support import toy_system

    csv = tmp / "people.csv"
    csv.write_text("id,name\n1,Ann\n2,\n")
    return w.SystemExplorer(toy_system.TOY, {"table": str(csv), "column": "name"}, spark=spark), lambda ex: []


def _tab_texts(ex: Any) -> list[str]:
    return [getattr(child, "value", "") for child in ex.view.children if hasattr(child, "value")]


def _idle(ex: Any) -> bool:
    run, cancel = ex.run_button, ex.progress.cancel_button
    return (not run.disabled and run.button_style == "primary"
            and cancel.disabled and cancel.button_style == "")


def _wait_until_cancelled(ex: Any) -> Callable[[Any], Any]:
    stop = getattr(ex.controller, "_stop", None)  # TCFC's own stop (an early budget)

    def work(progress: Any) -> Any:
        while True:
            progress("stage", "item", 0, 1)  # raises CancelledError once the run is cancelled
            if stop is not None and stop.is_set():
                raise CancelledError("the run was cancelled; nothing was written")
            threading.Event().wait(0.02)

    return work


@pytest.mark.parametrize("name", WIDGETS)
def test_run_and_cancel_states_as_drawn_and_no_stale_result_after_cancel(name, spark, tmp_path):
    ex, extras = _make(name, spark, tmp_path)
    # before any run: Run is the primary action, Cancel is neutral and disabled, every tab is titled
    assert _idle(ex), (ex.run_button.disabled, ex.progress.cancel_button.button_style)
    titles = [ex.view.get_title(i) for i in range(len(ex.view.children))]
    assert titles and all(titles), titles
    assert all(text == NO_RESULT for text in _tab_texts(ex))

    # a real run: Run is still disabled when the result is drawn, and usable only after it
    drawn: list[tuple[bool, bool]] = []
    show = ex.show_result
    ex.show_result = lambda r: (drawn.append((ex.run_button.disabled, ex.progress.cancel_button.disabled)), show(r))
    ex.run(timeout=300)
    assert ex.status == "done", ex.error
    assert drawn == [(True, True)]  # Run still disabled; Cancel off: the run is over, only drawing is left
    assert _idle(ex) and ex.message.value == ""
    assert any(text != NO_RESULT for text in _tab_texts(ex)), "the result reached no tab"
    first = [text for text in _tab_texts(ex)]

    # a second run, cancelled: Cancel is armed while it runs, the earlier result is gone at once
    ex.controller.work = _wait_until_cancelled(ex)
    ex.run_button.click()
    assert ex.status == "running"
    assert ex.run_button.disabled and ex.run_button.button_style == ""
    assert not ex.progress.cancel_button.disabled and ex.progress.cancel_button.button_style == "warning"
    assert all(text == NO_RESULT for text in _tab_texts(ex)) and _tab_texts(ex) != first
    ex.progress.cancel_button.click()
    assert ex.progress.cancel_button.disabled  # no second cancel; Run waits until the cancel is shown
    assert ex.controller.wait(30)
    assert ex.status == "cancelled" and ex.result is None and "Cancelled" in ex.message.value
    assert _idle(ex)
    assert all(text == NO_RESULT for text in _tab_texts(ex))
    assert all(not x for x in extras(ex)), extras(ex)

    # a failing run: the error is drawn and Run is usable again
    def fail(progress: Any) -> Any:
        raise ParameterError("the table has no such column", hint="pick another")

    ex.controller.work = fail
    ex.run(timeout=30)
    assert ex.status == "failed" and "Error" in ex.message.value and "no such column" in ex.message.value
    assert _idle(ex)


def test_the_progress_bar_alone_arms_cancel_only_while_its_run_runs(spark):
    from dqkit.widgets import SparkProgress

    bar = SparkProgress()
    assert bar.cancel_button.disabled and bar.cancel_button.button_style == ""
    gate = threading.Event()
    run = bar.start(lambda: gate.wait(30), spark=spark)
    assert not bar.cancel_button.disabled and bar.cancel_button.button_style == "warning"
    gate.set()
    assert run.wait(30)
    assert bar.cancel_button.disabled and bar.cancel_button.button_style == "" and bar.label.value == "done"
