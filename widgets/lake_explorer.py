"""LakeExplorer: presentation only: the lake's table listing, live cost parameters that re-plan the last
result, and a containment-graph component picker, which the ``lake`` declaration cannot express.

``LakeController`` holds the state (no ipywidgets) and runs ``lake``'s ``System.run`` with its declared
``LakeParams`` (``s``, ``t``, ``seed``, ``mode``, ``verify``; ``plan`` on, ``costs`` the ``CostModel``
itself); changing a cost parameter re-plans at once (``LakeResult.replan``: Opt-Ret only, the stages
are not re-run). The tabs are ``lake``'s declared ones.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import ipywidgets as W
from pyspark.sql import SparkSession

from dqkit.contract import render
from dqkit.contract.result import Chart, Table, sections_html
from dqkit.errors import DqkitError, ParameterError
from dqkit.systems import Params, get
from dqkit.systems.lake import cost_model, lake_tables
from dqkit.widgets.controllers import RunController, error_text
from dqkit.widgets.declared import DeclaredFields, convert
from dqkit.widgets.result_view import ExplorerBase, ResultView

#: the cost parameters the explorer offers (the rest keep their defaults)
COST_FIELDS = ("storage_cost", "maintenance_cost", "read_cost", "write_cost", "accesses", "latency_threshold")
#: the ``lake`` parameters the explorer's controller holds (checked as ``LakeParams`` declares them)
CLP_FIELDS = ("s", "t", "seed", "mode", "verify")


class LakeController(RunController):
    """State: ``lake`` (folder or catalog:DB), ``s``, ``t``, ``seed``, ``mode``, ``verify`` and ``costs``;
    ``tables()`` lists the lake (name, format, bytes, columns) without a Spark job; ``run()`` runs the
    stages and the plan; ``set_cost(name, value)`` re-plans the current result."""

    system = "lake"

    def __init__(self, lake: str = "", *, s: int = 4, t: int = 10, seed: int = 0, mode: str = "strict",
                 verify: bool = False, costs: Any = None, spark: SparkSession | None = None) -> None:
        super().__init__(spark)
        self.lake = lake
        for name, value in zip(CLP_FIELDS, (s, t, seed, mode, verify)):
            self.set(name, value)
        self.costs = costs or cost_model()
        self.listing: list[dict[str, Any]] = []
        self.listing_error: str | None = None
        if lake:
            self.set_lake(lake)

    def set(self, name: str, value: Any) -> None:
        """One CLP option (``s``, ``t``, ``seed``, ``mode``, ``verify``), checked as ``lake`` declares it."""
        if name not in CLP_FIELDS:
            raise ParameterError(f"unknown lake option {name!r}", hint=", ".join(CLP_FIELDS))
        setattr(self, name, convert("lake", name, value))

    def set_lake(self, lake: str) -> None:
        self.lake = lake
        try:
            self.listing = lake_tables(lake, spark=self.spark)
            self.listing_error = None
        except DqkitError as exc:
            self.listing, self.listing_error = [], error_text(exc)
        self._changed("tables")

    def params(self) -> Params:
        """``lake``'s checked ``Params``: the CLP options, always a plan, with the explorer's costs."""
        if not self.lake:
            raise ParameterError("no lake chosen", hint="type a folder of tables or catalog:DB")
        return get("lake").prepare(lake=self.lake, s=self.s, t=self.t, seed=self.seed, mode=self.mode,
                                   verify=self.verify, plan=True, costs=self.costs)

    def set_cost(self, name: str, value: float) -> None:
        """Change one cost parameter; the current result's plan is recomputed (Opt-Ret only)."""
        if name not in COST_FIELDS:
            raise ParameterError(f"unknown cost parameter {name!r}", hint=", ".join(COST_FIELDS))
        self.costs = dataclasses.replace(self.costs, **{name: float(value)})
        if self.result is not None:
            self.result = self.result.replan(self.costs)
            self._changed("plan")


class LakeExplorer(DeclaredFields, ExplorerBase):
    """Explore a lake interactively: ``LakeExplorer("/data/lake")``. Shows the tables with their sizes,
    the CLP parameters, Run (with Spark progress and Cancel), and the result in tabs: summary with the
    stage funnel, the containment graph (a component picker), and the deletion plan, which updates as
    the cost parameters change."""

    def __init__(self, lake: str = "", *, s: int = 4, t: int = 10, seed: int = 0, mode: str = "strict",
                 verify: bool = False, costs: Any = None, sample_rows: int = 10,
                 spark: SparkSession | None = None) -> None:
        c = LakeController(lake, s=s, t=t, seed=seed, mode=mode, verify=verify, costs=costs, spark=spark)
        self._build_run_controls(c, ResultView(get("lake").tabs, sample_rows))
        self.path = W.Text(value=lake, description="Lake", placeholder="folder or catalog:DB",
                           layout=W.Layout(width="480px"))
        self.load_button = W.Button(description="List tables", icon="folder-open")
        self.load_button.on_click(lambda _: c.set_lake(self.path.value))
        self.tables_html = W.HTML()
        self.s = self.declare("lake", "s", c.s, width="150px")
        self.t = self.declare("lake", "t", c.t, width="150px")
        self.seed = self.declare("lake", "seed", c.seed, width="170px")
        self.mode = self.declare("lake", "mode", c.mode, width="200px")
        self.verify = self.declare("lake", "verify", c.verify)
        for attr in CLP_FIELDS:
            getattr(self, attr).observe(lambda ch, a=attr: self._set(a, ch["new"]), names="value")
        self.cost_inputs = {f: W.FloatText(value=getattr(c.costs, f), description=f, step=None,
                                           style={"description_width": "120px"}, layout=W.Layout(width="260px"))
                            for f in COST_FIELDS}
        for f, w in self.cost_inputs.items():
            w.observe(lambda ch, name=f: self._on_cost(name, ch["new"]), names="value")
        self.component = W.Dropdown(options=[], description="component", layout=W.Layout(width="420px"))
        self.component.observe(lambda ch: self._draw_component(), names="value")
        self.graph_html = W.HTML()
        c.on_change(self._on_controller)
        self._show_tables()
        super().__init__([
            W.HBox([self.path, self.load_button]), self.tables_html,
            W.HBox([self.s, self.t, self.seed, self.mode, self.verify]),
            W.HBox([self.run_button]), self.progress, self.message, self.view,
            W.HTML("<b>Cost parameters</b> (the plan updates as they change)"),
            W.GridBox(list(self.cost_inputs.values()), layout=W.Layout(grid_template_columns="repeat(3, 270px)")),
            self.component, self.graph_html])

    # ----- view <- controller
    def _on_controller(self, what: str) -> None:
        if what == "tables":
            self._show_tables()
        elif what == "plan" and self.controller.result is not None:
            self.view.show(self.controller.result)
            self._draw_component()

    def show_result(self, result: Any) -> None:
        """The tabs, then the component picker and the first component's graph."""
        super().show_result(result)
        comps = result.components()
        self.component.options = [(f"{i}: {len(cmp)} tables ({', '.join(cmp[:3])}{'…' if len(cmp) > 3 else ''})", i)
                                  for i, cmp in enumerate(comps)]
        self._draw_component()

    def clear_results(self) -> None:
        super().clear_results()
        self.component.options = []
        self.graph_html.value = ""

    def _show_tables(self) -> None:
        c = self.controller
        if c.listing_error:
            self.tables_html.value = render.wrap(f"<p class='bad'>{render.esc(c.listing_error)}</p>")
            return
        import pandas as pd

        frame = pd.DataFrame(c.listing, columns=["name", "format", "bytes", "columns", "partitioned by"])
        self.tables_html.value = (render.HTML_STYLE + sections_html([Table(f"Tables of the lake ({len(frame)})", frame,
                                                                          max_rows=50)]) if len(frame) else "")

    def _set(self, name: str, value: Any) -> None:
        try:
            self.controller.set(name, value)
            self.message.value = ""
        except DqkitError as exc:
            self._show_error(error_text(exc))

    def _on_cost(self, name: str, value: float) -> None:
        try:
            self.controller.set_cost(name, value)
            self.message.value = ""
        except DqkitError as exc:
            self._show_error(error_text(exc))

    def _draw_component(self) -> None:
        r = self.controller.result
        if r is None or self.component.value is None:
            self.graph_html.value = ""
            return
        component = self.component.value
        chart = Chart(f"Containment graph, component {component}", "containment_graph",
                      lambda: r.plot_containment_graph(component=component))
        self.graph_html.value = render.HTML_STYLE + sections_html([chart])

    # ----- public API
    def set_cost(self, name: str, value: float) -> None:
        """Set a cost parameter as the user would (the plan updates)."""
        self.cost_inputs[name].value = value
