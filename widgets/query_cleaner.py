"""``QueryCleaner``: pick tables and rules, type a query, run it with progress and Cancel, and read the
dirty and cleaned answers side by side (candidates with probabilities), the relaxation trace and the
cost model's totals and decision. A thin view over ``QueryController`` (plain Python, ``dqkit.relax``)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as W
from pyspark.sql import SparkSession

from dqkit.contract import render
from dqkit.errors import ParameterError
from dqkit.contract.result import sections_html
from dqkit.systems import get
from dqkit.widgets.controllers import RunController
from dqkit.widgets.declared import convert
from dqkit.widgets.result_view import ExplorerBase, ResultView


class QueryController(RunController):
    """Tables (name -> source, key) and rules (name -> text) registered into one ``Daisy``; ``query``
    runs in the background. The Daisy persists across runs, so each query sees what earlier ones cleaned."""

    unit = "tables"

    def __init__(self, spark: SparkSession | None = None, strategy: str = "auto") -> None:
        from dqkit.relax import Daisy

        super().__init__(spark)
        self.daisy = Daisy(self.spark, strategy=convert("query", "strategy", strategy))  # its declared choices
        self.query = ""

    def add_table(self, name: str, source: Any, key: str | None = None, rules: Any = None) -> None:
        """Register a table (and its rules); errors raise at once, before any run."""
        self.daisy.register(name, source, key=key or None)
        if rules:
            self.daisy.add_rules(name, rules)
        self._changed("tables")

    def add_rules(self, name: str, rules: Any) -> None:
        self.daisy.add_rules(name, rules)
        self._changed("tables")

    def expected_steps(self) -> int:
        try:
            return len(self.daisy.plan_query(self.query)["steps"])
        except Exception:  # noqa: BLE001 - the run reports the error
            return 0

    def work(self, progress: Callable[[str, str, int, int], None]) -> Any:
        if not self.query.strip():
            raise ParameterError("type a query first", hint="SELECT ... FROM ... WHERE ...")
        return self.daisy.query(self.query, progress=progress)


class QueryCleaner(ExplorerBase):
    """Tables and rules, a query box, Run with progress and Cancel; answers side by side (see module)."""

    def __init__(self, spark: SparkSession | None = None, strategy: str = "auto", sample_rows: int = 10) -> None:
        self.controller = QueryController(spark, strategy)
        self.name = W.Text(description="Table", placeholder="cities")
        self.source = W.Text(description="Source", placeholder="path or catalog:db.t")
        self.key = W.Text(description="Key", placeholder="(optional) tid")
        self.rules = W.Textarea(description="Rules", placeholder="Zip -> City", layout=W.Layout(width="60%"))
        self.add_button = W.Button(description="Add table", icon="plus")
        self.add_button.on_click(lambda _: self.add())
        self.tables = W.HTML()
        self.query = W.Textarea(description="Query", placeholder="SELECT Zip FROM cities WHERE City = 'LA'",
                                layout=W.Layout(width="90%"))
        self.query.observe(lambda ch: setattr(self.controller, "query", ch["new"]), names="value")
        self.answers = W.HTML()
        self.cost = W.HTML()
        self.sample_rows = sample_rows
        view = ResultView(get("query").tabs, sample_rows)
        self._build_run_controls(self.controller, view)
        #: the one Cancel button, the progress bar's (enabled only while a query runs)
        self.cancel_button = self.progress.cancel_button
        self.controller.on_change(self._refresh)
        super().__init__([W.HBox([self.name, self.source, self.key]), W.HBox([self.rules, self.add_button]),
                          self.tables, self.query, W.HBox([self.run_button]), self.progress,
                          self.message, self.cost, self.view])

    def add(self) -> None:
        """What the Add table button does; a bad table or rule shows as the error line."""
        from dqkit.errors import DqkitError

        try:
            self.controller.add_table(self.name.value.strip(), self.source.value.strip(), self.key.value.strip() or None,
                                      self.rules.value if self.rules.value.strip() else None)
            self.message.value = ""
        except DqkitError as exc:
            self._show_error(str(exc))

    def _refresh(self, what: str) -> None:
        c = self.controller
        if what == "tables":
            rows = [f"<li>{render.esc(n)}: {render.esc(', '.join(str(r) for r in [*t.fds, *t.dcs]) or 'no rules')}</li>"
                    for n, t in c.daisy.tables.items()]
            self.tables.value = f"<ul>{''.join(rows)}</ul>"

    def show_result(self, result: Any) -> None:
        """The dirty and cleaned answers side by side, the cost model's totals, then the tabs: all of them
        the result's own ``sections()``."""
        blocks = result.sections(sample_rows=self.sample_rows)
        of = lambda *keys: [b for b in blocks if getattr(b, "key", "") in keys]  # noqa: E731 - by section key
        self.answers.value = render.HTML_STYLE + (
            "<div style='display:flex;gap:24px'>"
            f"<div>{sections_html(of('dirty'))}</div><div>{sections_html(of('answer'))}</div></div>")
        costs = of("cost")  # the result's own
        self.cost.value = render.HTML_STYLE + sections_html(costs) if costs else ""
        super().show_result(result)
        if self.view.shown and self.view.shown[0].title == get("query").tabs[0].title:
            # the answer tab: the verdict, then the dirty and cleaned answers side by side
            self.view.children[0].value = (render.HTML_STYLE + sections_html(of("summary", "workload"))
                                           + self.answers.value)

    def clear_results(self) -> None:
        super().clear_results()
        self.answers.value = self.cost.value = ""
