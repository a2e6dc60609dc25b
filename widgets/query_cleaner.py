"""``QueryCleaner``: presentation only: the dirty and cleaned answers side by side and a table form, which
the ``query`` declaration cannot express. Register tables (a path, ``catalog:`` name or DataFrame) with
their rules typed in a box, type a query, run it with progress and Cancel, and read the answers (candidates
with probabilities), the relaxation trace and the cost model's totals and decision. The run is
``query``'s ``System.run`` with the declared ``QueryParams`` (the tables a ``{name: table}`` mapping)."""
from __future__ import annotations

import os
from typing import Any

import ipywidgets as W
from pyspark.sql import SparkSession

from dqkit.contract import render
from dqkit.contract.result import sections_html
from dqkit.errors import ParameterError
from dqkit.systems import Params, get
from dqkit.systems.base import RuleText
from dqkit.systems.query import load_rules
from dqkit.widgets.controllers import RunController
from dqkit.widgets.declared import convert
from dqkit.widgets.result_view import ExplorerBase, ResultView


class QueryController(RunController):
    """Tables (name -> source), their keys and rules (name -> typed rules, a rules file or rule objects),
    the strategy and the query; a run is ``query``'s ``System.run`` over them (each run registers the
    tables afresh; keep the cleaned tables between runs with a ``state`` folder, as the CLI does)."""

    system = "query"

    def __init__(self, spark: SparkSession | None = None, strategy: str = "auto") -> None:
        super().__init__(spark)
        self.strategy = convert("query", "strategy", strategy)  # its declared choices
        self.tables: dict[str, Any] = {}
        self.keys: dict[str, str] = {}
        self.rules: dict[str, Any] = {}
        self.query = ""

    def add_table(self, name: str, source: Any, key: str | None = None, rules: Any = None) -> None:
        """Register a table (and its rules); a missing name or source, or rules that do not parse, raise
        at once, before any run."""
        if not str(name).strip() or source is None or (isinstance(source, str) and not source.strip()):
            raise ParameterError("a table needs a name and a source", hint="e.g. cities and data/cities.csv")
        if rules is not None:
            rules = self._rules(rules)
            load_rules(rules)  # typed rules parse now: a mistake is shown before any run
        self.tables[name] = source
        if key:
            self.keys[name] = key
        if rules:
            self.rules[name] = rules
        self._changed("tables")

    def add_rules(self, name: str, rules: Any) -> None:
        rules = self._rules(rules)
        load_rules(rules)
        self.rules[name] = rules
        self._changed("tables")

    @staticmethod
    def _rules(rules: Any) -> Any:
        """Rules as a ``query`` rules value: a rules file stays a path, other text is rules typed in a box."""
        if isinstance(rules, str) and not isinstance(rules, RuleText) and not os.path.isfile(rules):
            return RuleText(rules)
        return rules

    def rule_texts(self, name: str) -> list[str]:
        """The rules of table ``name``, one text each."""
        return [str(r) for r in load_rules(self.rules[name])] if name in self.rules else []

    def params(self) -> Params:
        """``query``'s checked ``Params``: the query over the registered tables, keys and rules."""
        if not self.query.strip():
            raise ParameterError("type a query first", hint="SELECT ... FROM ... WHERE ...")
        return get("query").prepare(query=self.query, table=dict(self.tables), key=dict(self.keys),
                                    rules=dict(self.rules), strategy=self.strategy)


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
            rows = [f"<li>{render.esc(n)}: {render.esc(', '.join(c.rule_texts(n)) or 'no rules')}</li>"
                    for n in c.tables]
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
        if self.view.shown and self.view.shown[0] == get("query").tabs[0]:
            # the answer tab: the verdict, then the dirty and cleaned answers side by side
            self.view.children[0].value = (render.HTML_STYLE + sections_html(of("summary", "workload"))
                                           + self.answers.value)

    def clear_results(self) -> None:
        super().clear_results()
        self.answers.value = self.cost.value = ""
