"""``dqkit.widgets.explore``: any registered system's explorer from its declaration alone, its tabs the
declared ones (read from the rendered widget state); and the widget layer reaches the systems only
through their declarations, never a kernel package."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from dqkit.systems import all_systems, get, register, unregister

ROOT = Path(__file__).resolve().parent.parent
WIDGETS = ROOT / "widgets"
#: the kernel packages: a widget reaches them only through ``dqkit.systems`` (declarations and their runs)
KERNELS = ("dqkit.delta", "dqkit.detect", "dqkit.repair", "dqkit.dedup", "dqkit.tcfc", "dqkit.lake", "dqkit.relax",
           "dqkit.discover", "dqkit.profile", "dqkit.history")


def rendered_titles(view) -> list[str]:
    return [view.get_title(i) for i in range(len(view.children))]


def before_a_run(system) -> list:
    return [t for t in system.tabs if not t.when]


@pytest.mark.parametrize("name", [s.name for s in all_systems()])
def test_explore_builds_each_builtin_systems_explorer_with_its_declared_fields_and_tabs(name, spark):
    from dqkit.widgets import explore

    system = get(name)
    ex = explore(name, spark=spark, **system.example)
    assert rendered_titles(ex.view) == [t.title for t in before_a_run(system)] and rendered_titles(ex.view)
    assert [t.keys for t in ex.view.shown] == [t.keys for t in before_a_run(system)]
    assert all("press Run" in child.value for child in ex.view.children)
    assert list(ex.fields) == [s.name for s in system.params.specs()]
    assert ex.controller.unit == system.progress_unit  # the unit the CLI's progress line says too
    assert ex.controller.problem() is None, ex.controller.problem()  # the example checks as the CLI checks it


def test_explore_builds_the_toy_systems_explorer_whose_run_fills_the_declared_tabs_by_key(spark, tmp_path):
    from support import toy_system

    from dqkit.widgets import explore

    register(toy_system.TOY)
    try:
        csv = tmp_path / "people.csv"
        csv.write_text("id,name\n1,Ann\n2,\n3,Cy\n")
        ex = explore(toy_system.TOY, spark=spark, table=str(csv), column="name")
        assert rendered_titles(ex.view) == ["Verdict", "Counts"]
        result = ex.run(timeout=120)
        assert result is not None and result.nulls == 1, ex.error
        assert rendered_titles(ex.view) == ["Verdict", "Counts"]
        assert ex.view.shown_keys == [["verdict"], ["counts"]]  # each tab holds the sections it names
        assert "NULLS" in ex.view.children[0].value and "allowed" in ex.view.children[1].value
    finally:
        unregister("toy")


def test_a_table_field_takes_an_in_memory_dataframe_and_typed_rules_without_a_file_check(spark):
    from dqkit.systems.base import RuleText
    from dqkit.widgets import explore

    df = spark.createDataFrame([(1, "a", "x"), (2, "a", "y")], "tid int, zip string, city string")
    ex = explore("detect", spark=spark, table=df, rules=RuleText("zip -> city"), key="tid")
    params = ex.controller.params()
    assert params.table is df and params.in_memory("table") and params.inputs() == []
    assert [r.name for r in params.load_rules()] and params.in_memory("rules")
    result = ex.run(timeout=300)
    assert result is not None and result.total_violations == 1, ex.error
    with pytest.raises(Exception, match="in-memory value"):
        params.to_parameters()  # a report cannot carry a DataFrame: said, not silently dropped


def _kernel_imports(path: Path) -> list[str]:
    """Every import of a kernel package in ``path`` (top level or inside a function)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        found += [n for n in names if n.startswith(KERNELS) and n.split(".")[:2] in [k.split(".") for k in KERNELS]]
    return found


@pytest.mark.parametrize("module", sorted(p.name for p in WIDGETS.glob("*.py")))
def test_no_widget_module_imports_or_calls_a_kernel_package(module):
    assert _kernel_imports(WIDGETS / module) == []


def test_the_kernel_scan_finds_an_import_inside_a_function(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from dqkit.lake.optret import opt_ret\n    import dqkit.delta\n"
                   "from dqkit.systems.lake import lake_tables\n")
    assert _kernel_imports(bad) == ["dqkit.lake.optret", "dqkit.delta"]


def test_importing_the_widgets_loads_no_kernel_code():
    """Only the kernel packages' lazy faces and the Spark-free modules of names the declarations offer
    (stages, methods, column names) may load: no module of a kernel that imports pyspark."""
    code = ("import json, sys, dqkit.widgets\n"
            f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({KERNELS!r}))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    modules = [m for m in loaded if m not in KERNELS]
    sources = {m: (ROOT / (m.replace(".", "/") + ".py")).read_text(encoding="utf-8") for m in modules}
    assert [m for m, text in sources.items() if "pyspark" in text or "pandas" in text] == []


class _Frame:
    """Stands for an in-memory DataFrame (a schema and a session), so the checks run without Spark."""

    schema = None
    sparkSession = None
    columns = ["id", "zip", "city"]


def test_in_memory_values_skip_the_file_checks_and_a_report_cannot_carry_them(tmp_path):
    from dqkit.errors import DqkitError, ParameterError
    from dqkit.systems.base import RuleText

    frame = _Frame()
    delta = get("delta").prepare(old={"t": frame}, new={"t": frame}, key=["t=id"])  # no folder exists: no check
    assert delta.in_memory("old") and delta.inputs() == [] and delta.old == {"t": frame}
    with pytest.raises(ParameterError, match="in-memory value"):
        delta.to_argv()
    with pytest.raises(DqkitError):  # the key syntax is still checked
        get("delta").prepare(old={"t": frame}, new={"t": frame}, key=["tid"])
    detect = get("detect").prepare(table=frame, rules=RuleText("phi: zip -> city"), key="id")
    assert [r.name for r in detect.load_rules()] == ["phi"] and detect.table_name() == "table"
    with pytest.raises(DqkitError):  # typed rules that do not parse are refused before Spark
        get("detect").prepare(table=frame, rules=RuleText("phi: zip ->"), key="id")
    with pytest.raises(DqkitError, match="no such|does not exist|not found"):  # a path is still checked
        get("detect").prepare(table=str(tmp_path / "missing.csv"), rules=RuleText("zip -> city"))
    config = {"blocking": [["zip"]], "comparisons": [{"column": "city", "method": "jaro_winkler"}]}
    assert get("dedup").prepare(table=frame, key="id", config=config).in_memory("config")
    with pytest.raises(DqkitError, match="nope"):  # the one config parser names the bad method
        get("dedup").prepare(table=frame, key="id", config={**config, "comparisons": [{"column": "city",
                                                                                       "method": "nope"}]})
    query = get("query").prepare(query="SELECT zip FROM cities", table={"cities": frame},
                                 rules={"cities": RuleText("zip -> city")}, key={"cities": "id"})
    assert query.inputs() == [] and query.in_memory("table")
