"""Presentation only: DedupExplorer's pair browser (threshold slider, clusters side by side, waterfalls),
which the ``dedup`` declaration cannot express; its run and tabs are ``dedup``'s declared ones.

Pick the table, its key and the blocking rules and see each rule's block sizes and the cumulative
number of pairs before anything is compared; pick the comparisons (column and method); run in the
background with progress and Cancel; then move the threshold and watch the matching pairs, the
clusters and, when the true links are known, precision and recall follow; browse a bounded sample
of clusters with their records side by side; and explain any pair with its waterfall chart.

As everywhere in the widget layer, a plain-Python controller (``DedupController``) holds the state
and calls dqkit; the view binds ipywidgets to it, and tests drive both headlessly.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as W
import pandas as pd
from pyspark.sql import SparkSession

from dqkit.contract import render
from dqkit.errors import DqkitError, ParameterError
from dqkit.contract.result import Chart, Facts, Notes, Table, sections_html
from dqkit.io.sources import DatabaseSource
from dqkit.systems import get
from dqkit.systems.dedup import block_stats_blocks, comparison_methods
from dqkit.widgets.controllers import TableListing, error_text
from dqkit.widgets.pickers import ColumnPicker, _Guard, keep_selection
from dqkit.widgets.result_view import ExplorerBase, ResultView, wrap

__all__ = ["DedupController", "DedupExplorer", "split_rule", "parse_rule_lines", "parse_comparison_lines"]

from dqkit.widgets.dedup_controller import (  # noqa: F401 - re-exported
    _NONE, DedupController, _comparison_line, _rule_line, parse_comparison_lines, parse_rule_lines, split_rule,
)


def side_by_side_html(side: pd.DataFrame) -> str:
    """A cluster's records as an escaped HTML table, one column per record; a value that differs from
    the most frequent non-NULL value of its row is marked (class ``bad``)."""
    head = "".join(f"<th class='l'>{render.esc(c)}</th>" for c in side.columns)
    rows = []
    for rec in side.itertuples(index=False):
        attr, *values = rec
        present = [v for v in values if v is not None and not (isinstance(v, float) and v != v)]
        common = pd.Series(present, dtype=object).astype(str).value_counts().index[0] if present else None
        cells = "".join(f"<td class='l{' bad' if v is not None and common is not None and str(v) != common else ''}'>"
                        f"{render.esc(v)}</td>" for v in values)
        rows.append(f"<tr><th class='l'>{render.esc(attr)}</th>{cells}</tr>")
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


class DedupExplorer(ExplorerBase):
    """Deduplicate a table interactively (see the module docstring).

    Controls, top to bottom: table and key; blocking columns (``Add rule``) and the rules, one per line
    (columns or expressions such as ``substr(surname,1,3)``), with ``Block sizes``; the comparisons, one
    per line ``column: method`` (``Add`` from the two pickers); the truth column (optional); Run with
    progress and Cancel; the threshold slider with its counts; the result tabs; the cluster browser and
    the waterfall of a chosen pair. ``controller`` is the ``DedupController`` behind it.
    """

    def __init__(self, source: DatabaseSource | TableListing | Any = None, *, table: str | None = None,
                 key: str | None = None, config: Any = None, threshold: float | None = None, truth: Any = None,
                 sample_rows: int = 10, spark: SparkSession | None = None,
                 controller: DedupController | None = None) -> None:
        if controller is None:
            if source is None:
                raise ParameterError("DedupExplorer needs a source (a table, a database or a TableListing)")
            controller = DedupController(source, table=table, key=key, config=config, threshold=threshold,
                                         truth=truth, spark=spark)
        c = controller
        self._guard = _Guard()
        self.header = W.HTML(wrap(f"<b>source</b>: {render.esc(c.listing.label)}"))
        self.table = W.Dropdown(options=[], description="Table")
        self.key = W.Dropdown(options=[], description="Key")
        self.truth = W.Dropdown(options=[], description="Truth", tooltip="a column of true cluster ids (optional)")
        self.schema = W.HTML()
        self.block_columns = ColumnPicker(description="Block on")
        self.add_rule_button = W.Button(description="Add rule", icon="plus",
                                        tooltip="append a blocking rule: records equal on all picked columns")
        self.rules = W.Textarea(rows=5, placeholder="surname\npostcode, substr(given_name,1,1)",
                                layout=W.Layout(width="420px"))
        self.stats_button = W.Button(description="Block sizes", icon="th",
                                     tooltip="count the blocks and pairs of each rule, before comparing anything")
        self.stats_view = W.HTML()
        self.compare_column = W.Dropdown(options=[], description="Compare")
        self.compare_method = W.Dropdown(options=list(comparison_methods()), value="jaro_winkler", description="by")
        self.add_comparison_button = W.Button(description="Add", icon="plus", tooltip="append the comparison")
        self.comparisons = W.Textarea(rows=6, placeholder="given_name: jaro_winkler\npostcode: exact",
                                      layout=W.Layout(width="420px"))
        self.problems_view = W.HTML()
        self.threshold = W.FloatSlider(value=c.threshold, min=0.01, max=0.999, step=0.001, readout_format=".3f",
                                       description="Threshold", continuous_update=False,
                                       layout=W.Layout(width="520px"))
        self.threshold_view = W.HTML()
        self.cluster = W.Dropdown(options=[], description="Cluster", layout=W.Layout(width="420px"))
        self.cluster_view = W.HTML()
        self.pair = W.Dropdown(options=[], description="Pair", layout=W.Layout(width="420px"))
        self.key_1 = W.Text(description="Keys", placeholder="key 1", layout=W.Layout(width="240px"))
        self.key_2 = W.Text(placeholder="key 2", layout=W.Layout(width="160px"))
        self.explain_button = W.Button(description="Explain", icon="bar-chart",
                                       tooltip="the waterfall of the two keys' match weight")
        self.waterfall = W.HTML()
        self._build_run_controls(c, ResultView(get("dedup").tabs, sample_rows=sample_rows))
        # events
        self.table.observe(self._on_table, names="value")
        self.key.observe(lambda ch: self._quiet(ch, lambda v: c.set_key(v)), names="value")
        self.truth.observe(lambda ch: self._quiet(ch, lambda v: c.set_truth(None if v == _NONE else v)),
                           names="value")
        self.add_rule_button.on_click(lambda _: self.add_rule())
        self.rules.observe(lambda ch: self._quiet(ch, lambda v: c.set_blocking(parse_rule_lines(v))), names="value")
        self.stats_button.on_click(lambda _: self.show_block_stats())
        self.add_comparison_button.on_click(lambda _: self.add_comparison())
        self.comparisons.observe(self._on_comparisons, names="value")
        self.threshold.observe(lambda ch: self._quiet(ch, self._set_threshold), names="value")
        self.cluster.observe(lambda ch: self._quiet(ch, self.show_cluster), names="value")
        self.pair.observe(lambda ch: self._quiet(ch, self._pick_pair), names="value")
        self.explain_button.on_click(lambda _: self.explain())
        c.on_change(self._on_controller)
        self._sync_table()
        self._sync_texts()
        super().__init__([
            self.header, W.HBox([self.table, self.key, self.truth]), self.schema,
            W.HTML(wrap("<h3>Blocking</h3><p class='muted'>one rule per line: records equal on every part are "
                        "compared; parts are columns or expressions such as substr(surname,1,3)</p>")),
            W.HBox([self.block_columns, W.VBox([self.add_rule_button]), self.rules, self.stats_button]),
            self.stats_view,
            W.HTML(wrap("<h3>Comparisons</h3><p class='muted'>one per line: column: method [thresholds]</p>")),
            W.HBox([W.VBox([self.compare_column, self.compare_method, self.add_comparison_button]), self.comparisons]),
            self.problems_view,
            W.HBox([self.run_button, self.progress]), self.message,
            self.threshold, self.threshold_view, self.view,
            W.HTML(wrap("<h3>Clusters</h3>")), self.cluster, self.cluster_view,
            W.HTML(wrap("<h3>Why a pair scores what it does</h3>")),
            W.HBox([self.pair]), W.HBox([self.key_1, self.key_2, self.explain_button]), self.waterfall])

    # ----- public actions (what the buttons do)
    def add_rule(self) -> None:
        """Append a rule of the picked blocking columns."""
        try:
            self.controller.add_blocking_rule(list(self.block_columns.value))
        except ParameterError as exc:
            self.problems_view.value = wrap(f"<p class='bad'>{render.esc(error_text(exc))}</p>")
            return
        self._sync_texts()

    def add_comparison(self) -> None:
        """Append (or replace) the comparison of the picked column by the picked method."""
        if self.compare_column.value is None:
            return
        self.controller.add_comparison(self.compare_column.value, self.compare_method.value)
        self._sync_texts()

    def show_block_stats(self) -> None:
        """Count each rule's blocks and pairs now and show them, with the cumulative pairs chart."""
        self.stats_view.value = wrap("<p class='muted'>counting blocks ...</p>")
        stats = self.controller.block_stats()
        if stats is None:
            self.stats_view.value = wrap(f"<pre class='bad' style='white-space:pre-wrap'>"
                                         f"{render.esc(self.controller.stats_error)}</pre>")
            return
        self.stats_view.value = render.HTML_STYLE + sections_html(block_stats_blocks(stats))

    def show_cluster(self, cluster_id: Any) -> None:
        """Show one cluster's records side by side and offer its pairs for the waterfall."""
        c = self.controller
        self._shown = (c.current.clusters if c.current is not None else None, cluster_id)
        if cluster_id is None or c.current is None:
            self.cluster_view.value = ""
            with self._guard():
                self.pair.options = []
            return
        side = c.cluster_table(cluster_id)
        self.cluster_view.value = wrap(f"<div class='scroll'>{side_by_side_html(side)}</div>"
                                       "<p class='muted'>values that differ from the most frequent one of their row "
                                       "are in red</p>")
        pairs = c.cluster_pairs(cluster_id)
        with self._guard():
            self.pair.options = [(f"{a} ~ {b}", (a, b)) for a, b in pairs]
            self.pair.value = pairs[0] if pairs else None
        if pairs:
            self._pick_pair(pairs[0])

    def explain(self) -> None:
        """The waterfall of the two keys typed (or the pair picked)."""
        c = self.controller
        k1, k2 = self.key_1.value.strip(), self.key_2.value.strip()
        if c.result is None:
            self.waterfall.value = wrap("<p class='muted'>run first</p>")
            return
        try:
            k1v, k2v = self._key_value(k1), self._key_value(k2)
            table = c.explain(k1v, k2v)
            fig = c.result.plot_waterfall(k1v, k2v)
        except DqkitError as exc:
            self.waterfall.value = wrap(f"<p class='bad'>{render.esc(error_text(exc))}</p>")
            return
        shown = table[["comparison", "value_1", "value_2", "level", "m", "u", "log2_bayes_factor", "match_weight"]]
        shown = shown.round({"m": 4, "u": 4, "log2_bayes_factor": 2, "match_weight": 2})
        self.waterfall.value = render.HTML_STYLE + sections_html([
            Chart(f"Waterfall of {k1} ~ {k2}", "waterfall", lambda: fig),
            Table(f"Match weight of {k1} ~ {k2}, per comparison", shown)])

    # ----- view <-> controller
    def _key_value(self, text: str) -> Any:
        """A typed key as the key column's type (numbers for a numeric key)."""
        kind = dict(self.controller.columns()).get(self.controller.key or "", "string")
        if kind in ("int", "bigint", "smallint", "tinyint"):
            try:
                return int(text)
            except ValueError:
                raise ParameterError(f"the key {self.controller.key!r} is a number, not {text!r}") from None
        return text

    def _quiet(self, change: dict[str, Any], fn: Callable[[Any], Any]) -> None:
        if self._guard.active:
            return
        try:
            fn(change["new"])
        except DqkitError as exc:
            self.problems_view.value = wrap(f"<p class='bad'>{render.esc(error_text(exc))}</p>")

    def _on_table(self, change: dict[str, Any]) -> None:
        if not self._guard.active and change["new"] != self.controller.table:
            self.controller.select_table(change["new"])

    def _on_comparisons(self, change: dict[str, Any]) -> None:
        if self._guard.active:
            return
        try:
            self.controller.set_comparisons(parse_comparison_lines(change["new"]))
        except ParameterError as exc:
            self.problems_view.value = wrap(f"<p class='bad'>{render.esc(error_text(exc))}</p>")

    def _set_threshold(self, value: float) -> None:
        self.threshold_view.value = wrap("<p class='muted'>clustering ...</p>")
        self.controller.set_threshold(value)

    def _pick_pair(self, pair: Any) -> None:
        if not pair:
            return
        self.key_1.value, self.key_2.value = str(pair[0]), str(pair[1])
        self.explain()

    def _on_controller(self, what: str) -> None:
        if what == "table":
            self._sync_table()
        elif what == "selection":
            self._render_problems()
        elif what == "threshold":
            self._render_threshold()

    def _sync_table(self) -> None:
        c = self.controller
        cols = c.columns()
        names = [n for n, _ in cols]
        keep_selection(self.table, [(t, t) for t in c.tables], self._guard)
        keep_selection(self.key, [(n, n) for n in names], self._guard)
        keep_selection(self.truth, [(_NONE, _NONE), *[(n, n) for n in names]], self._guard)
        keep_selection(self.compare_column, [(f"{n} : {t}", n) for n, t in cols], self._guard)
        with self._guard():
            self.table.value = c.table
            self.key.value = c.key if c.key in names else None
            self.truth.value = c.truth if isinstance(c.truth, str) and c.truth in names else _NONE
        self.block_columns.set_columns(cols)
        if cols:
            listed = ", ".join(f"{render.esc(n)} <span class='muted'>{render.esc(t)}</span>" for n, t in cols)
            self.schema.value = wrap(f"<div><b>{render.esc(c.table)}</b>: {listed}</div>")
        else:
            self.schema.value = wrap(f"<p class='bad'>{render.esc(c.listing.error)}</p>" if c.listing.error
                                     else "<p class='muted'>no table</p>")
        self.stats_view.value = ""
        self._render_problems()

    def _sync_texts(self) -> None:
        c = self.controller
        with self._guard():
            self.rules.value = "\n".join(_rule_line(r) for r in c.blocking)
            self.comparisons.value = "\n".join(_comparison_line(x) for x in c.comparisons)
            self.threshold.value = min(max(c.threshold, self.threshold.min), self.threshold.max)
        self._render_problems()

    def _render_problems(self) -> None:
        problems = self.controller.problems()
        self.run_button.disabled = bool(problems) or self.controller.status == "running"
        if problems:
            self.problems_view.value = wrap("<ul class='bad'>" + "".join(f"<li>{render.esc(p)}</li>" for p in problems)
                                            + "</ul>")
        else:
            n, m = len(self.controller.blocking), len(self.controller.comparisons)
            self.problems_view.value = wrap(f"<p class='ok'>{n} blocking rule(s), {m} comparison(s): ready</p>")

    def _render_threshold(self) -> None:
        c = self.controller
        with self._guard():
            self.threshold.value = min(max(c.threshold, self.threshold.min), self.threshold.max)
        metrics = c.metrics()
        if not metrics:
            self.threshold_view.value = ""
            return
        facts = Facts("", {k: f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else v
                           for k, v in metrics.items()})
        note = ([Notes("", [f"The counts above and the cluster browser follow the slider; the tabs below show the "
                            f"run at its threshold {c.result.threshold:g}."])] if c.result is not None else [])
        self.threshold_view.value = render.HTML_STYLE + sections_html([facts, *note])
        sample = c.cluster_sample()
        options = [(f"{r.cluster_id} ({r.cluster_size} records)", r.cluster_id) for r in sample.itertuples()]
        old = self.cluster.value
        with self._guard():
            self.cluster.options = options
            values = [v for _, v in options]
            self.cluster.value = old if old in values else (values[0] if values else None)
        last = getattr(self, "_shown", (None, None))
        same = c.current is not None and last[0] is c.current.clusters and last[1] == self.cluster.value
        if not same:  # the same clusters and the same cluster: nothing to redraw
            self.show_cluster(self.cluster.value)

    def clear_results(self) -> None:
        """The tabs, the threshold counts, the cluster browser and the waterfall."""
        super().clear_results()
        self.threshold_view.value = self.cluster_view.value = self.waterfall.value = ""
        with self._guard():
            self.cluster.options = []
            self.pair.options = []
        self._shown = (None, None)

    def _on_run_change(self, what: str) -> None:
        super()._on_run_change(what)
        if what == "status" and self.controller.status != "running":
            self._render_problems()
