"""Every hand-written explorer is a presentation layer over the systems registry: the options that are a
system's parameters get their widget (name, help, default, choices, range) and their check from the
system's ``Params`` declaration, and results are drawn through the section view, never by hand."""
from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import ipywidgets as W
import pytest

from dqkit.errors import ParameterError
from dqkit.systems import get

from support.tables import sqlite_table

ROOT = Path(__file__).resolve().parent.parent
USERS = ROOT / "data" / "users"
EMPTY = (None, (), [], {}, "")


def _systems() -> dict[str, tuple[str, ...]]:
    """Each explorer and controller class, by name, with the systems whose parameters it takes."""
    return {"DeltaExplorer": ("delta",), "DeltaController": ("delta",), "DedupExplorer": ("dedup",),
            "DedupController": ("dedup",), "ViolationExplorer": ("detect", "repair"),
            "ViolationController": ("detect", "repair"), "TcfcExplorer": ("tcfc",), "TcfcController": ("tcfc",),
            "LakeExplorer": ("lake",), "LakeController": ("lake",), "QueryCleaner": ("query",),
            "QueryController": ("query",)}


@pytest.fixture(scope="module")
def explorers(spark, tmp_path_factory) -> dict[str, Any]:
    """One explorer of each kind, built with no value for any declared parameter (a few rows each)."""
    from dqkit import widgets as w

    tmp = tmp_path_factory.mktemp("declared")
    lake = tmp / "lake"
    lake.mkdir()
    (lake / "big.csv").write_text("a,b\n1,x\n2,y\n")
    (lake / "small.csv").write_text("b,a\nx,1\n")
    df = spark.createDataFrame([("1", "x"), ("1", "y")], "k string, v string")
    spec = {"pairs": [{"name": "p", "source": {"url": sqlite_table(tmp / "a.db", "t", "k text, v int", [("a", 1)]), "table": "t"},
                       "target": {"url": sqlite_table(tmp / "b.db", "t", "k text, v int", [("a", 1)]), "table": "t"},
                       "aggregates": [["sum", "v", "s"]], "levels": [["k"]]}]}
    return {"delta": w.DeltaExplorer(str(USERS / "old"), str(USERS / "new"), spark=spark),
            "violation": w.ViolationExplorer({"t": df}, rules="f: k -> v", spark=spark),
            "tcfc": w.TcfcExplorer(spec, spark=spark),
            "lake": w.LakeExplorer(str(lake), spark=spark)}


def _declared_default_drift(cls: type, systems: tuple[str, ...]) -> list[str]:
    """The keyword defaults of ``cls.__init__`` that differ from the declared default of the parameter of
    the same name (None and empty collections are the same "not given"; required parameters have none)."""
    out = []
    for name, p in inspect.signature(cls.__init__).parameters.items():
        if p.default is inspect.Parameter.empty:
            continue
        for system in systems:
            specs = {s.name: s for s in get(system).params.specs()}
            if name in specs and not specs[name].required:
                declared = specs[name].default
                same = (p.default in EMPTY and declared in EMPTY) or p.default == declared
                if not same:
                    out.append(f"{cls.__name__}({name}={p.default!r}): {system} declares {declared!r}")
                break
    return out


def test_every_explorer_and_controller_default_is_the_declared_default():
    from dqkit import widgets as w

    drift = [d for name, systems in _systems().items() for d in _declared_default_drift(getattr(w, name), systems)]
    assert drift == []


def test_the_default_check_catches_a_controller_that_drifts_from_its_declaration():
    class Drifting:
        def __init__(self, lake: str = "", *, s: int = 5, verify: bool = False) -> None: ...

    assert _declared_default_drift(Drifting, ("lake",)) == ["Drifting(s=5): lake declares 4"]


@pytest.mark.parametrize("kind", ["delta", "violation", "tcfc", "lake"])
def test_every_declared_field_is_drawn_from_its_params_field_with_the_declared_default(kind, explorers):
    ex = explorers[kind]
    fields = ex.declared_fields
    assert fields, f"{kind}: no option drawn from a declaration"
    for (system, name), widget in fields.items():
        spec = get(system).params.spec(name)
        assert widget.description == name.replace("_", " ") and widget.tooltip == spec.help, (system, name)
        if isinstance(widget, W.Dropdown):
            assert tuple(widget.options) == spec.choices
        if isinstance(widget, (W.BoundedIntText, W.BoundedFloatText)):
            assert spec.low is None or widget.min == spec.low
            assert spec.high is None or widget.max == spec.high
        shown = "" if spec.default is None and isinstance(widget, W.Text) else spec.default
        if kind == "tcfc" and name == "budget":
            shown = ""  # the spec of the fixture names no budget: the declared "none"
        assert widget.value == shown, (system, name, widget.value, spec.default)


def test_a_value_the_declaration_refuses_is_refused_with_its_wording(explorers):
    lake, tcfc, violation, delta = (explorers[k] for k in ("lake", "tcfc", "violation", "delta"))
    with pytest.raises(ParameterError, match="--mode must be one of paper, strict"):
        lake.controller.set("mode", "loose")
    lake.mode.value = "paper"
    assert lake.controller.mode == "paper"
    tcfc.budget.value = "-3"
    assert "more than 0 seconds" in tcfc.notes.value and tcfc.controller.budget is None
    tcfc.budget.value = "12.5"
    assert tcfc.controller.budget == 12.5 and tcfc.notes.value == ""
    tcfc.budget.value = ""
    assert tcfc.controller.budget is None
    with pytest.raises(ParameterError, match="--method must be one of"):
        violation.controller.set_method("magic")
    with pytest.raises(ParameterError, match="--stages must be one of"):
        delta.controller.set_stages(["duplicates", "everything"])
    delta.rel_tol.value = 0.5
    assert delta.controller.rel_tol == 0.5


def test_the_dedup_and_query_controllers_check_their_declared_parameters(spark):
    from dqkit.widgets import DedupController, QueryController

    df = spark.createDataFrame([(1, "ann"), (2, "ann")], "id int, v string")
    c = DedupController({"t": df}, key="id", spark=spark)
    with pytest.raises(ParameterError, match="--threshold"):
        c.set_threshold(1.5)
    c.set_threshold("0.75")
    assert c.threshold == 0.75
    with pytest.raises(ParameterError, match="--strategy must be one of"):
        QueryController(spark, strategy="sometimes")


#: where a widget module may still draw HTML of its own, and why (anything else goes through the sections)
ALLOWED = {
    ("rules_explorer.py", "to_png_base64("): "the violation graph keeps its PNG bytes (graph.png) to save",
    ("rules_explorer.py", "<img"): "the violation graph drawn from those bytes",
    ("dedup_explorer.py", "<table"): "side_by_side_html marks the values that differ within a cluster",
}
HAND_DRAWN = ("html_table(", "img_tag(", "to_png_base64(", "<table", "<img")


def _hand_drawn(name: str, text: str) -> list[str]:
    return [f"{name}: {needle}" for needle in HAND_DRAWN if needle in text and (name, needle) not in ALLOWED]


def test_no_widget_draws_a_result_table_or_chart_by_hand():
    found = [hit for path in sorted((ROOT / "widgets").glob("*.py"))
             for hit in _hand_drawn(path.name, path.read_text(encoding="utf-8"))]
    assert found == [], "draw it as a Table/Chart through sections_html (the result view's path)"


def test_the_hand_drawn_scan_sees_a_table_or_an_image_drawn_by_hand():
    assert _hand_drawn("lake_explorer.py", "x = render.html_table(frame)") == ["lake_explorer.py: html_table("]
    assert _hand_drawn("tcfc_explorer.py", "charts.img_tag(fig)") == ["tcfc_explorer.py: img_tag("]
