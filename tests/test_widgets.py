"""Headless tests of the widget layer: set selections and click buttons, then assert state and results."""
from __future__ import annotations

import time
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from dqkit.errors import CancelledError
from dqkit.runtime.progress import BackgroundRun
from dqkit.contract.render import atomic_folder
from dqkit.systems import get
from dqkit.widgets import ColumnPicker, DeltaController, DeltaExplorer, SparkProgress, TablePicker

DATA = Path(__file__).resolve().parent.parent / "data" / "users"


def _write_db(folder: Path, tables: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in tables.items():
        (folder / f"{name}.csv").write_text(text)
    return folder


def test_table_picker_lists_tables_with_schemas_and_counts_rows_on_demand(spark, tmp_path):
    db = _write_db(tmp_path / "db", {"a": "x,y\n1,p\n2,q\n", "b": "z\n1\n"})
    picker = TablePicker(db, spark=spark)
    assert [v for _, v in picker.select.options] == ["a", "b"]
    assert "x" in picker.schema.value and "int" in picker.schema.value
    assert picker.listing.row_counts == {}  # nothing counted until asked
    picker.value = ("a",)
    picker.count_button.click()
    assert picker.listing.row_counts == {"a": 2}
    assert picker.value == ("a",)  # the relabelled options kept the selection
    assert "2 rows" in dict((v, k) for k, v in picker.select.options)["a"]


def test_column_picker_keeps_valid_selection_when_columns_change():
    picker = ColumnPicker([("id", "int"), ("name", "string"), ("age", "int")])
    seen = []
    picker.on_select(seen.append)
    picker.value = ("id", "age")
    assert seen == [("id", "age")]
    picker.set_columns([("id", "bigint"), ("name", "string")])
    assert picker.value == ("id",)
    assert seen == [("id", "age")]  # a refresh of the options is not a user change
    assert ("id : bigint", "id") in picker.select.options


def test_explorer_run_button_gives_the_papers_statistics_and_renders_them(spark):
    ex = DeltaExplorer(str(DATA / "old"), str(DATA / "new"), spark=spark)
    assert ex.key_table.value == "users"
    ex.key_picker.value = ("id",)
    assert ex.controller.keys == {"users": ["id"]}
    ex.run_button.click()
    assert ex.controller.wait(180)
    assert ex.status == "done", ex.error
    result = ex.result
    row = result.row_stats.set_index("table").loc["users"]
    assert (row["differences"], row["percent"]) == (5, 71.4)
    cols = result.column_stats("users").set_index("column")
    assert cols.loc["salary", "max"] == 50 and cols.loc["name", "count"] == 1
    assert [ex.tabs.get_title(i) for i in range(len(ex.tabs.children))] == [t.title for t in get("delta").tabs]
    summary_tab, delta_tab, charts_tab = (t.value for t in ex.tabs.children)  # delta's declared tabs
    assert "DIFFERENT" in summary_tab and "What was compared" in summary_tab
    assert "71.4" in delta_tab and "Column statistics: users" in delta_tab
    assert "Row delta sample: users" in delta_tab and "Changes: users" in delta_tab
    assert "Karol" in delta_tab
    assert charts_tab.count("<img") == 4 and "Quartiles of users" in charts_tab
    assert ex.progress.cancel_button.disabled and ex.progress.bar.value == 100
    assert ex.controller.fraction == 1.0 and ex.controller.tables_done == ex.controller.tables_total == 1
    assert not ex.run_button.disabled
    # the result names the folders as given (and save refuses them), though it compared the listed tables
    assert result.public_parameters()["old"] == str(DATA / "old") and result.inputs() == [str(DATA / "old"),
                                                                                         str(DATA / "new")]


def test_a_warm_delta_rerun_compares_the_listed_tables_without_reading_the_folders_again(spark, monkeypatch):
    import dqkit.io.sources

    c = DeltaController(str(DATA / "old"), str(DATA / "new"), spark=spark)
    c.set_key("users", ["id"])

    def no_read(*_a, **_k):
        raise AssertionError("the folders were read again")
    monkeypatch.setattr(dqkit.io.sources, "read_path", no_read)  # what reading a folder's table calls
    assert c.run(timeout=180) is not None, c.error
    assert c.result.row_stats.set_index("table").loc["users", "differences"] == 5


def test_refresh_of_the_table_list_keeps_valid_selections(spark, tmp_path):
    old = _write_db(tmp_path / "old", {"a": "k,v\n1,2\n", "b": "k,w\n1,x\n"})
    new = _write_db(tmp_path / "new", {"a": "k,v\n1,3\n", "b": "k,w\n1,x\n"})
    ex = DeltaExplorer(str(old), str(new), spark=spark)
    ex.table_picker.value = ("a", "b")
    ex.key_table.value = "a"
    ex.key_picker.value = ("k",)
    ex.exclude_picker.value = ("v",)
    ex.key_table.value = "b"
    ex.key_picker.value = ("k",)
    assert ex.controller.keys == {"a": ["k"], "b": ["k"]}
    # b disappears from both versions, c appears
    for side in (old, new):
        (side / "b.csv").unlink()
        (side / "c.csv").write_text("k\n1\n")
    ex.refresh_button.click()
    c = ex.controller
    assert c.tables == ["a", "c"]
    assert c.selected_tables == ["a"] and ex.table_picker.value == ("a",)
    assert c.keys == {"a": ["k"]} and c.excluded == {"a": ["v"]}
    assert ex.key_table.value == "a" and ex.key_picker.value == ("k",) and ex.exclude_picker.value == ("v",)
    assert c.params().exclude == ("a.v",)


def test_controller_turns_selections_into_delta_params_and_report_parameters(spark):
    c = DeltaController(str(DATA / "old"), str(DATA / "new"), spark=spark)
    c.select_tables(["users"])
    c.set_key("users", ["id"])
    c.set_excluded("users", ["birthday"])
    c.set_stages(["row", "dedup"])
    c.set_tolerance(0.5, 0.01)
    p = c.params()  # the declared DeltaParams, checked as the CLI checks them
    assert (p.tables, p.exclude, p.key, p.stages, p.abs_tol, p.rel_tol) == (
        ("users",), ("users.birthday",), ("users=id",), ("dedup", "row"), 0.5, 0.01)
    params = c.params(listed=False).to_parameters()  # what `dqkit report delta` takes to reproduce the run
    assert params["key"] == ["users=id"] and params["exclude"] == ["users.birthday"]
    assert params["old"] == str(DATA / "old") and params["stages"] == ["dedup", "row"]
    with pytest.raises(Exception, match="no column nope"):
        c.set_key("users", ["nope"])


def test_a_bad_key_is_shown_in_the_widget_as_a_readable_message(spark):
    ex = DeltaExplorer(str(DATA / "old"), str(DATA / "new"), keys={"users": "id"},
                       exclude={"users": ["id"]}, spark=spark)
    assert ex.run(120) is None
    assert ex.status == "failed"
    assert "key column users.id is excluded" in ex.error
    assert "key column users.id is excluded" in ex.message.value and "Traceback" not in ex.message.value
    assert ex.progress.bar.bar_style == "danger"


def test_a_spark_error_is_reduced_to_the_line_naming_its_cause():
    from dqkit.widgets.controllers import error_text

    class Py4JJavaError(Exception):
        pass

    raw = ("An error occurred while calling o111.count.\n: org.apache.spark.SparkException: "
           "[DIVIDE_BY_ZERO] Division by zero. SQLSTATE: 22012\n\tat org.apache.spark.sql.errors...")
    assert error_text(Py4JJavaError(raw)) == (
        "Py4JJavaError: org.apache.spark.SparkException: [DIVIDE_BY_ZERO] Division by zero. SQLSTATE: 22012")


def test_a_schema_change_shows_first_and_a_proposed_rename_is_accepted_with_a_click(spark, tmp_path):
    old = _write_db(tmp_path / "old", {"t": "k,v,m\n1,2,a\n2,3,b\n"})
    new = _write_db(tmp_path / "new", {"t": "k,v,mail\n1,x,a\n2,3,b\n"})
    ex = DeltaExplorer(str(old), str(new), keys={"t": "k"}, spark=spark)
    ex.run(120)
    assert ex.status == "done", ex.error
    first_tab = ex.tabs.children[0].value
    assert first_tab.index("Schema changes") < first_tab.index("What was compared")
    assert "Proposed renames" in first_tab and "compared as text" in first_tab  # t.v: int -> string
    (row,) = ex.rename_box.children[1:]
    button = row.children[0]
    assert button.description == "Accept t.m \u2192 mail" and "2 of 2 key-paired rows agree" in button.tooltip
    button.click()  # accepts the rename and runs again with it
    assert ex.controller.wait(120) and ex.status == "done", ex.error
    assert ex.controller.renames == {"t": {"m": "mail"}} and ex.controller.params(listed=False).to_parameters()["rename"] == ["t.m=mail"]
    assert ex.result.schema.tables["t"].renamed == (("m", "mail"),) and ex.rename_box.children == ()


def test_values_reaching_the_widget_html_are_escaped(spark, tmp_path):
    old = _write_db(tmp_path / "old", {"t": "k,v\n1,a\n"})
    new = _write_db(tmp_path / "new", {"t": "k,v\n1,<script>alert(1)</script>\n"})
    ex = DeltaExplorer(str(old), str(new), spark=spark)
    ex.stage_boxes["column"].value = False  # the row delta sample shows the value; no need to pair
    assert ex.controller.stages == ["dedup", "row"]
    ex.run(120)
    assert ex.status == "done", ex.error
    samples = ex.tabs.children[1].value  # the "Row delta" tab: the row delta sample shows the value
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in samples and "<script>alert" not in samples


def _slow_tables(slow_ids):
    old = slow_ids()
    new = old.withColumn("v", F.col("v") + 1)
    return {"t": old}, {"t": new}


def test_cancel_button_stops_the_running_spark_job(spark, slow_ids, wait_for, wall_clock):
    old, new = _slow_tables(slow_ids)
    ex = DeltaExplorer(old, new, keys={"t": "id"}, spark=spark)
    ex.run_button.click()
    assert wait_for(lambda: ex.controller.progress.running, 60), "no Spark job started"
    assert not ex.progress.cancel_button.disabled
    with wall_clock.within(30, "Cancel"):
        ex.progress.cancel_button.click()
        assert ex.controller.wait(60)
    assert ex.status == "cancelled" and ex.result is None
    assert "cancelled" in ex.error and "Cancelled" in ex.message.value
    assert wait_for(lambda: not spark.sparkContext.statusTracker().getActiveJobsIds(), 30)


def test_a_cancelled_run_writes_nothing(spark, tmp_path, slow_ids, wait_for):
    old, _ = _slow_tables(slow_ids)
    target = tmp_path / "out"

    def write() -> None:
        atomic_folder(target, lambda tmp: old["t"].write.parquet(str(tmp / "t")))

    bar = SparkProgress()
    run: BackgroundRun = bar.start(write, spark=spark)
    assert wait_for(lambda: run.progress.running, 60)
    bar.cancel_button.click()
    assert run.wait(60)
    assert run.status == "cancelled" and isinstance(run.error, CancelledError)
    assert bar.label.value == "cancelled" and bar.cancel_button.disabled
    assert not target.exists() and list(tmp_path.iterdir()) == []


_CONNECT_CANCEL = r'''
import json, os, sys, time
os.environ["PYSPARK_PYTHON"] = sys.executable
from pyspark.sql import functions as F
from dqkit.runtime.progress import BackgroundRun
from dqkit.runtime.session import get_spark, is_connect

spark = get_spark(remote="local[2]")
assert is_connect(spark) and get_spark() is spark  # the active Connect session is the session

@F.udf("long")
def slow(x):
    import time as _t
    _t.sleep(0.05)
    return x

df = spark.range(0, 400, numPartitions=2).withColumn("v", slow("id"))
run = BackgroundRun(lambda: df.filter("v >= 0").count(), spark=spark)
run.start()
for _ in range(1200):
    if run.progress.running:
        break
    time.sleep(0.05)
seen = run.progress.total_tasks
run.cancel()
run.wait(60)
done = BackgroundRun(lambda: spark.range(0, 10, numPartitions=2).count(), spark=spark).start()
done.wait(120)
print(json.dumps({"seen_tasks": seen, "status": run.status, "error": type(run.error).__name__,
                  "after": done.status, "result": done.result}))
'''


@pytest.mark.connect
def test_progress_and_cancel_work_under_spark_connect(tmp_path):
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "SPARK_REMOTE"}
    proc = subprocess.run([sys.executable, "-c", _CONNECT_CANCEL], capture_output=True, text=True,
                          timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    outcome = json.loads(proc.stdout.strip().splitlines()[-1])
    assert outcome == {"seen_tasks": 2, "status": "cancelled", "error": "CancelledError",
                       "after": "done", "result": 10}


def _jobs_started(spark) -> int:
    """How many Spark jobs the session has started (the DAG scheduler's next job id)."""
    n = spark.sparkContext._jsc.sc().dagScheduler().nextJobId()
    return int(n if isinstance(n, int) else n.get())


def test_paging_a_shown_result_runs_no_spark_job_and_draws_no_chart_again(spark, monkeypatch):
    """Issue 25's warm actions: the result view pages through a detection's violation sample (10 rows,
    then 20, then 3) from what the result fetched once; charts are drawn once per result."""
    from dqkit.contract import charts
    from dqkit.detect import detect
    from dqkit.widgets import ResultView

    rows = [(i, f"{i % 3}", f"city{i}") for i in range(40)]  # zip -> city broken in every zip block
    table = spark.createDataFrame(rows, "id long, zip string, city string")
    det = detect(table, "phi: zip -> city", key="id", spark=spark)
    drawn = []
    real = charts.img_tag
    monkeypatch.setattr(charts, "img_tag", lambda fig, alt="": drawn.append(alt) or real(fig, alt))
    view = ResultView(sample_rows=10)

    def sample_shown() -> int:  # rows of the "First violations" table, its header left out
        html = view.children[0].value
        table = html[html.index("First violations</h3>"):]
        return table[:table.index("</table>")].count("<tr>") - 1

    view.show(det)
    assert sample_shown() == 10
    before, charts_drawn = _jobs_started(spark), len(drawn)
    view.set_sample_rows(20)
    assert sample_shown() == 20
    view.set_sample_rows(3)
    assert sample_shown() == 3
    assert _jobs_started(spark) == before, "a page re-ran Spark"
    assert len(drawn) == charts_drawn, "a page drew a chart again"
    view.show(detect(table, "phi: zip -> city", key="id", spark=spark))  # another result: drawn anew
    assert len(drawn) == charts_drawn + 1


def test_paging_a_delta_result_reads_its_changes_and_row_delta_sample_once(spark):
    from dqkit.delta import delta
    from dqkit.widgets import ResultView

    old = spark.createDataFrame([(i, f"a{i}") for i in range(30)], "id int, name string")
    new = spark.createDataFrame([(i, f"b{i}" if i % 2 else f"a{i}") for i in range(30)], "id int, name string")
    result = delta({"t": old}, {"t": new}, keys={"t": ["id"]}, spark=spark)
    view = ResultView(sample_rows=5)
    view.show(result)
    before = _jobs_started(spark)
    view.set_sample_rows(12)
    html = view.children[0].value
    changes = html[html.index("Changes: t</h3>"):]
    assert changes[:changes.index("</table>")].count("<tr>") - 1 == 12  # 12 changed rows, one column each
    view.set_sample_rows(5)
    assert _jobs_started(spark) == before, "a page re-ran Spark"


def test_paging_a_repair_result_reads_its_change_list_once(spark):
    from dqkit.data import bundled
    from dqkit.repair import repair
    from dqkit.widgets import ResultView

    data = bundled("bigdansing_table1.csv").parent
    result = repair(str(data / "bigdansing_table1.csv"), str(data / "bigdansing_table1_rules.yaml"), key="tid",
                    spark=spark)
    assert result.changed_cells >= 2
    view = ResultView(sample_rows=1)
    view.show(result)
    before = _jobs_started(spark)
    view.set_sample_rows(10)
    html = view.children[0].value
    part = html[html.index("Change list</h3>"):]
    assert part[:part.index("</table>")].count("<tr>") - 1 == result.changed_cells
    view.set_sample_rows(1)
    assert _jobs_started(spark) == before, "a page re-ran Spark"
