"""ViolationExplorer: BigDansing in a notebook.

``RulePicker`` (``rule_picker``) writes FD and DC rules against a table's columns with live validation
and loads or saves a rules YAML. ``ViolationExplorer`` runs detection, and repair when asked, in the
background with progress and Cancel, then shows the violations per rule, a sample of violations and
candidate fixes, the violation graph of a chosen component, and the repairs. As everywhere in the
widget layer, plain-Python controllers (``RulesController`` in ``rules_controller``,
``ViolationController`` in ``violation_controller``) hold the state and call dqkit; the views bind to
them. The names of those modules are re-exported here, where they lived before the split.
"""
from __future__ import annotations

from typing import Any

import ipywidgets as W
from pyspark.sql import SparkSession

from dqkit.contract import charts
from dqkit.contract import render
from dqkit.errors import ParameterError
from dqkit.io.sources import DatabaseSource
from dqkit.errors import DqkitError
from dqkit.systems import Tab, get
from dqkit.widgets.controllers import TableListing, error_text
from dqkit.widgets.declared import DeclaredFields
from dqkit.widgets.pickers import _Guard
from dqkit.widgets.result_view import ExplorerBase, ResultView, wrap
from dqkit.widgets.rule_picker import RulePicker
from dqkit.widgets.rules_controller import RuleProblem, RulesController
from dqkit.widgets.violation_controller import (
    COMPONENT_COLUMNS, FIX_SAMPLE_COLUMNS, ViolationController, ViolationRun, fix_sample, largest_components,
)

__all__ = ["RuleProblem", "RulesController", "RulePicker", "ViolationRun", "ViolationController",
           "ViolationGraphView", "ViolationExplorer", "COMPONENT_COLUMNS", "FIX_SAMPLE_COLUMNS", "fix_sample",
           "largest_components"]


# ----------------------------------------------------------------------------------------------- views
class ViolationGraphView(W.VBox):
    """A component picker (largest first), a node bound, and the chosen component's graph inline.

    ``show(run)`` only remembers the run: the graph (a checkpoint, connected components, a drawing)
    is built when the view is opened (``open_graph()``, called when its tab is selected), once per run.
    """

    def __init__(self, controller: ViolationController) -> None:
        self.controller = controller
        self._guard = _Guard()
        self.component = W.Dropdown(options=[], description="Component", layout=W.Layout(width="420px"))
        self.component.observe(lambda _: None if self._guard.active else self.draw(), names="value")
        self.max_nodes = W.BoundedIntText(value=controller.max_nodes, min=2, max=2000, description="max nodes",
                                          layout=W.Layout(width="180px"))
        self.max_nodes.observe(self._on_max_nodes, names="value")
        self.image = W.HTML(wrap("<p class='muted'>Run to see the violation graph.</p>"))
        self.png: bytes | None = None
        self._more = ""
        self._run: ViolationRun | None = None  # the run shown, whose graph is drawn when the view opens
        self._opened = False
        super().__init__([W.HBox([self.component, self.max_nodes]), self.image])

    def clear(self) -> None:
        """No components offered and no graph drawn (before a run, while one runs, after a cancel)."""
        self._run, self._opened = None, False
        with self._guard():
            self.component.options = []
        self.png, self._more = None, ""
        self.image.value = wrap("<p class='muted'>Run to see the violation graph.</p>")

    def show(self, run: ViolationRun) -> None:
        """Take a finished run; its graph is built and drawn when the view is opened (no Spark job now)."""
        self.clear()
        self._run = run
        if not run.has_graph:  # nothing to build: say so now
            self.open_graph()
            return
        self.image.value = wrap("<p class='muted'>The violation graph is built when this tab is opened.</p>")

    def open_graph(self) -> None:
        """Build the shown run's graph (once) and offer its components, drawing the largest. What
        selecting the tab does; opening it again keeps what is drawn."""
        run = self._run
        if run is None or self._opened:
            return
        self._opened = True
        if run.has_graph and not run.graph_built:
            self.image.value = wrap("<p class='muted'>Building the violation graph…</p>")
        try:
            options = self.controller.component_options(run)
        except Exception as exc:  # a failed build is shown in the tab, not lost in an observer
            self._opened = False  # opening the tab again tries again
            self.image.value = wrap(f"<pre class='bad' style='white-space:pre-wrap'>could not build the violation "
                                    f"graph: {render.esc(error_text(exc))}</pre>")
            return
        with self._guard():
            self.component.options = options
            self.component.value = options[0][1] if options else None
        if not options:
            self.png = None
            self.image.value = wrap("<p class='muted'>A run with <b>since</b> lists violations by the keys of their "
                                    "rows: clear since and run again to see the violation graph.</p>"
                                    if run.mode == "since" else
                                    "<p class='muted'>No violation has a cell to draw: nothing to show.</p>")
            return
        more = (f"<p class='muted'>The {len(options)} largest components are offered.</p>"
                if len(options) >= self.controller.max_components else "")
        self._more = more
        self.draw()

    def draw(self) -> None:
        """Draw the chosen component (a component too large for ``max nodes`` gives a message)."""
        import base64

        component = self.component.value
        if component is None:
            return
        try:
            fig = self.controller.draw(component, self.max_nodes.value, run=self._run)
        except ParameterError as exc:
            self.png = None
            self.image.value = wrap(f"<pre class='bad' style='white-space:pre-wrap'>"
                                    f"{render.esc(error_text(exc))}</pre>")
            return
        b64 = charts.to_png_base64(fig)
        self.png = base64.b64decode(b64)
        alt = f"violation graph of component {component[0]}.{component[1]}"
        self.image.value = wrap(f"<img alt='{render.esc(alt)}' src='data:image/png;base64,{b64}' "
                                f"style='max-width:100%;max-height:820px;width:auto'/>" + self._more)

    def _on_max_nodes(self, change: dict[str, Any]) -> None:
        self.controller.max_nodes = int(change["new"])
        if self.component.value is not None:
            self.draw()


class ViolationView(W.Tab):
    """The explorer's tabs: ``detect``'s declared ones, then the violation graph and the repairs.

    The detection tabs and the repairs tab are ``ResultView`` tabs (``sections()`` of the run and of
    the ``RepairResult``); the graph tab is interactive. A run with ``since`` shows the tabs ``detect``
    declares for a ``--since`` result (Summary, New, Resolved, Persisting), then the graph and repairs
    tabs; the next plain run gets the plain tabs back.
    """

    #: the tabs after ``detect``'s declared ones (not ``titles``: that is ipywidgets 8's own Tab trait, and a
    #: class attribute of that name blanks the tabs)
    TAB_TITLES = ("Violation graph", "Repairs")

    def __init__(self, graph: ViolationGraphView, sample_rows: int = 10) -> None:
        self.detection_view = ResultView(get("detect").tabs, sample_rows)
        self.repair_view = ResultView((Tab("Repairs"),), sample_rows)
        self.graph = graph
        super().__init__(children=[*self.detection_view.children, graph, *self.repair_view.children])
        self._compose()
        self.clear()
        self.observe(self._on_selected, names="selected_index")

    def _compose(self) -> None:
        """Children and titles from the detection view's current tabs, then the graph and the repairs."""
        detection = list(self.detection_view.children)
        titles = [self.detection_view.get_title(i) for i in range(len(detection))]
        if list(self.children[:len(detection)]) != detection or len(self.children) != len(detection) + 2:
            self.children = [*detection, self.graph, *self.repair_view.children]
        self.titles = (*titles, *self.TAB_TITLES)

    def show(self, run: ViolationRun) -> None:
        self.detection_view.show(run)
        self._compose()
        if run.repair is not None:
            self.repair_view.show(run.repair)
        else:
            self.repair_view.children[0].value = wrap(
                "<p class='muted'>Not repaired: tick <b>repair</b> and run again to repair the table and see "
                "each change (old → new).</p>")
        self.graph.show(run)
        self.selected_index = 0

    def _on_selected(self, change: dict[str, Any]) -> None:
        """Opening the graph tab builds and draws the shown run's graph (once per run)."""
        index = change["new"]
        if (index is not None and 0 <= index < len(self.children) and self.children[index] is self.graph
                and isinstance(self.graph, ViolationGraphView)):
            self.graph.open_graph()

    def clear(self) -> None:
        """No result in any tab, the graph included."""
        self.detection_view.clear()
        self.repair_view.clear()
        if isinstance(self.graph, ViolationGraphView):  # any widget may stand in the graph tab
            self.graph.clear()
        self._compose()


class ViolationExplorer(DeclaredFields, ExplorerBase):
    """Detect (and repair) the violations of rules on a table interactively.

    ``ViolationExplorer(source, table=..., rules=..., key=...)`` shows a ``RulePicker`` for the table
    and the rules, a key, a repair checkbox with the method and the iteration bound, ``since`` (a
    previous version: the old table, a DataFrame, or the folder ``detect --out`` wrote) with its
    ``max change``, and ``Run`` (or ``.run()``); the fields are ``detect``'s and ``repair``'s declared
    parameters. With ``since``, the result shows in New / Resolved / Persisting tabs. Spark's progress and a Cancel button show while it works; the result
    (``.result``, a ``ViolationRun``) appears in four tabs: violations per rule with a chart, a sample
    of violations and candidate fixes, the violation graph of a chosen component, and the repairs
    (each change old → new, violations per rule before and after). Errors show as readable messages.
    """

    def __init__(self, source: DatabaseSource | TableListing | Any, *, table: str | None = None, rules: Any = None,
                 key: str | None = None, repair: bool = False, method: str = "auto", max_iterations: int = 10,
                 sample_rows: int = 10, max_nodes: int = 60, since: Any = None, max_change: float = 0.05,
                 spark: SparkSession | None = None) -> None:
        c = ViolationController(source, table=table, rules=rules, key=key, repair=repair, method=method,
                                max_iterations=max_iterations, sample_rows=sample_rows, max_nodes=max_nodes,
                                since=since, max_change=max_change, spark=spark)
        self._guard = _Guard()
        self.rule_picker = RulePicker(controller=c.ruleset)
        self.graph = ViolationGraphView(c)
        self._build_run_controls(c, ViolationView(self.graph, sample_rows))
        self.key = W.Dropdown(options=[], description="Key")
        self.key.observe(self._on_key, names="value")
        self.repair_box = W.Checkbox(value=c.repair, description="repair", indent=False, layout=W.Layout(width="80px"))
        self.repair_box.observe(lambda ch: c.set_repair(ch["new"]), names="value")
        self.method = self.declare("repair", "method", c.method, width="260px")
        self.max_iterations = self.declare("repair", "max_iterations", c.max_iterations, width="220px")
        since_text = c.since if isinstance(c.since, str) else ("" if c.since is None else "(the DataFrame given)")
        self.since = self.declare("detect", "since", since_text, width="420px")
        self.max_change = self.declare("detect", "max_change", c.max_change, width="200px")
        for widget, setter in ((self.method, c.set_method), (self.max_iterations, c.set_max_iterations),
                               (self.since, c.set_since), (self.max_change, c.set_max_change)):
            widget.observe(lambda ch, set_=setter: self._set(set_, ch["new"]), names="value")
        c.ruleset.on_change(lambda what: self._sync_key() if what == "table" else None)
        self._sync_key()
        super().__init__([
            self.rule_picker,
            W.HBox([self.key, self.repair_box, self.method, self.max_iterations]),
            W.HBox([self.since, self.max_change]),
            W.HBox([self.run_button]), self.progress, self.message, self.view])

    # ----- public API
    @property
    def result(self) -> ViolationRun | None:
        return self.controller.result

    @property
    def tabs(self) -> ViolationView:
        return self.view

    # ----- view -> controller
    def _sync_key(self) -> None:
        # "" stands for content ids: a Dropdown cannot offer None as a value
        options = [("(content ids)", "")] + [(f"{col} : {t}", col) for col, t in self.controller.columns()]
        with self._guard():
            self.key.options = options
            self.key.value = self.controller.key or ""

    def _set(self, setter: Any, value: Any) -> None:
        """A field's value to the controller; a value the declaration refuses is shown, not raised."""
        try:
            setter(value)
            self.message.value = ""
        except DqkitError as exc:
            self._show_error(error_text(exc))

    def _on_key(self, change: dict[str, Any]) -> None:
        if not self._guard.active:
            self.controller.set_key(change["new"] or None)
