"""DeltaExplorer: pick tables, keys and exclusions of two database versions, run Diftong, read the result."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import ipywidgets as W
from pyspark.sql import SparkSession

from dqkit import charts, render
from dqkit.delta import STAGES, DeltaResult
from dqkit.sources import DatabaseSource
from dqkit.widgets.controllers import DeltaController, keys_from_mapping
from dqkit.widgets.pickers import ColumnPicker, TablePicker, _Guard, keep_selection
from dqkit.widgets.progress import SparkProgress


def _section(title: str, body: str) -> str:
    return f"<h4>{render.esc(title)}</h4>{body}"


def row_section(result: DeltaResult) -> str:
    """Row statistics with the difference count and percentage charts."""
    parts = [_verdict(result), render.html_table(result.row_stats)]
    if result.tables:
        parts.append(charts.img_tag(result.plot_difference_count(), "difference count per table"))
        parts.append(charts.img_tag(result.plot_difference_percent(), "difference percent per table"))
    if result.messages:
        parts.append(render.bullet_list(result.messages))
    return "".join(parts)


def column_section(result: DeltaResult) -> str:
    """Column statistics and the quartile chart of each table that has them."""
    parts = []
    for name, t in result.tables.items():
        if t.column_stats:
            parts.append(_section(f"Column statistics: {name}", render.html_table(result.column_stats(name))))
            parts.append(charts.img_tag(result.plot_quartiles(name), f"quartiles of {name}"))
    return "".join(parts) or "<p class='muted'>No column statistics: give a key to a differing table.</p>"


def sample_section(result: DeltaResult, n: int) -> str:
    """A bounded sample of the row delta and of the UPDATE view of each differing table."""
    parts = []
    for name in result.differing_tables():
        t = result.tables[name]
        if t.row_delta is not None:
            parts.append(_section(f"Row delta sample: {name}", render.html_table(result.sample(name, "row_delta", n))))
        if t.updates is not None and (t.pairing or {}).get("paired", 0):
            parts.append(_section(f"UPDATE sample: {name}", render.html_table(result.sample(name, "updates", n))))
    return "".join(parts) or "<p class='muted'>No differences to sample.</p>"


def _verdict(result: DeltaResult) -> str:
    return ("<p class='ok'>IDENTICAL: no differences</p>" if result.identical
            else f"<p class='bad'>DIFFERENT: {render.esc(', '.join(result.differing_tables() or ['tables differ']))}</p>")


def _wrap(body: str) -> str:
    return render.HTML_STYLE + "<div class='dqkit'>" + body + "</div>"


class DeltaExplorer(W.VBox):
    """Compare two versions of a database interactively.

    ``DeltaExplorer(old, new)`` lists the tables; pick tables (none = all), a key and excluded columns
    per table, the stages and a tolerance, then ``Run`` (or ``.run()``). Progress and a Cancel button
    show while Spark works; the result (``.result``, a ``DeltaResult``) appears in three tabs: row
    statistics with charts, column statistics with quartile charts, and samples of the deltas.
    Errors appear as readable messages in the widget.
    """

    def __init__(self, old: DatabaseSource, new: DatabaseSource, *, tables: Sequence[str] = (),
                 keys: Mapping[str, str | Sequence[str]] | None = None,
                 exclude: Mapping[str, Sequence[str]] | None = None, sample_rows: int = 10,
                 spark: SparkSession | None = None) -> None:
        self.controller = DeltaController(old, new, spark=spark)
        self.sample_rows = sample_rows
        self._guard = _Guard()
        c = self.controller
        if tables:
            c.select_tables(list(tables))
        for t, cols in keys_from_mapping(keys).items():
            c.set_key(t, cols)
        for t, cols in (exclude or {}).items():
            c.set_excluded(t, list(cols))

        self.header = W.HTML(_wrap(f"<b>old</b>: {render.esc(c.old.label)} &nbsp; "
                                   f"<b>new</b>: {render.esc(c.new.label)}"))
        self.table_picker = TablePicker(c.old, description="Tables")
        self.table_picker.value = tuple(t for t in c.selected_tables if t in c.old.tables)
        self.table_picker.on_select(self._on_tables)
        # One refresh for both versions (and the keys and exclusions): the explorer's own button.
        self.table_picker.refresh_button.layout.display = "none"
        self.key_table = W.Dropdown(options=[], description="Table")
        self.key_table.observe(self._on_key_table, names="value")
        self.key_picker = ColumnPicker(description="Key")
        self.key_picker.on_select(lambda cols: self._set_columns("key", cols))
        self.exclude_picker = ColumnPicker(description="Exclude")
        self.exclude_picker.on_select(lambda cols: self._set_columns("exclude", cols))
        self.stage_boxes = {s: W.Checkbox(value=s in c.stages, description=s, indent=False,
                                          layout=W.Layout(width="90px")) for s in STAGES}
        for box in self.stage_boxes.values():
            box.observe(lambda _: c.set_stages([s for s, b in self.stage_boxes.items() if b.value]), names="value")
        self.abs_tol = W.BoundedFloatText(value=c.abs_tol, min=0, max=1e18, description="abs tol",
                                          layout=W.Layout(width="180px"))
        self.rel_tol = W.BoundedFloatText(value=c.rel_tol, min=0, max=1e18, description="rel tol",
                                          layout=W.Layout(width="180px"))
        for box in (self.abs_tol, self.rel_tol):
            box.observe(lambda _: c.set_tolerance(self.abs_tol.value, self.rel_tol.value), names="value")
        self.run_button = W.Button(description="Run", icon="play", button_style="primary")
        self.run_button.on_click(lambda _: self.start())
        self.refresh_button = W.Button(description="Refresh tables", icon="refresh")
        self.refresh_button.on_click(lambda _: self.refresh())
        self.progress = SparkProgress()
        self.message = W.HTML()
        self.tabs = W.Tab(children=[W.HTML(), W.HTML(), W.HTML()])
        for i, title in enumerate(("Row statistics", "Column statistics", "Samples")):
            self.tabs.set_title(i, title)
        c.on_change(self._on_controller)
        self._sync_key_table()
        super().__init__([
            self.header, self.table_picker,
            W.HBox([self.key_table, self.key_picker, self.exclude_picker]),
            W.HBox([W.Label("Stages"), *self.stage_boxes.values(), self.abs_tol, self.rel_tol]),
            W.HBox([self.run_button, self.refresh_button]), self.progress, self.message, self.tabs])

    # ----- public API
    @property
    def result(self) -> DeltaResult | None:
        return self.controller.result

    @property
    def error(self) -> str | None:
        return self.controller.error

    @property
    def status(self) -> str:
        return self.controller.status

    def run(self, timeout: float | None = None) -> DeltaResult | None:
        """Run with the current selections and wait; errors show in the widget (and ``.error``)."""
        self.start()
        self.controller.wait(timeout)
        return self.result

    def start(self) -> None:
        """Start a run in the background (what the Run button does)."""
        if self.controller.status == "running":
            return
        self.run_button.disabled = True
        self.message.value = ""
        run = self.controller.start()
        self.progress.track(run)

    def cancel(self) -> None:
        self.controller.cancel()

    def refresh(self) -> None:
        """Re-read the table lists; valid selections (tables, keys, exclusions) survive."""
        self.controller.refresh_tables()
        with self._guard():
            self.table_picker._sync()
            self.table_picker.value = tuple(t for t in self.controller.selected_tables
                                            if t in self.controller.old.tables)
        self._sync_key_table()

    # ----- view <- controller
    def _on_controller(self, what: str) -> None:
        c = self.controller
        if what == "progress":
            self.progress.show(c.progress, c.step, c.fraction)
        elif what == "status":
            if c.status == "running":
                return
            self.run_button.disabled = False
            if c.status == "done" and c.result is not None:
                self.progress.finish("done", f"done in {c.result.seconds.get('total', 0):.1f} s")
                self._show_result(c.result)
            else:
                self.progress.finish(c.status, c.status)
                self._show_error(c.error or c.status)

    def _show_result(self, result: DeltaResult) -> None:
        try:
            self.tabs.children[0].value = _wrap(row_section(result))
            self.tabs.children[1].value = _wrap(column_section(result))
            self.tabs.children[2].value = _wrap(sample_section(result, self.sample_rows))
            self.tabs.selected_index = 0
        except Exception as exc:  # rendering errors are shown, not lost in a thread
            self._show_error(f"could not render the result: {type(exc).__name__}: {exc}")

    def _show_error(self, text: str) -> None:
        label = "Cancelled" if self.controller.status == "cancelled" else "Error"
        self.message.value = _wrap(f"<p class='bad'>{label}</p>"
                                   f"<pre style='white-space:pre-wrap'>{render.esc(text)}</pre>")

    # ----- view -> controller
    def _on_tables(self, tables: tuple[str, ...]) -> None:
        if self._guard.active:
            return
        self.controller.select_tables(list(tables))
        self._sync_key_table()

    def _sync_key_table(self) -> None:
        c = self.controller
        offered = c.selected_tables or [t for t in c.tables if t in c.old.tables and t in c.new.tables]
        keep_selection(self.key_table, [(t, t) for t in offered], self._guard)
        self._on_key_table(None)

    def _on_key_table(self, change: Any) -> None:
        table = self.key_table.value
        c = self.controller
        cols = c.columns(table) if table else []
        self.key_picker.set_columns(cols, c.keys.get(table, []) if table else [])
        self.exclude_picker.set_columns(cols, c.excluded.get(table, []) if table else [])

    def _set_columns(self, which: str, cols: tuple[str, ...]) -> None:
        table = self.key_table.value
        if not table:
            return
        if which == "key":
            self.controller.set_key(table, list(cols))
        else:
            self.controller.set_excluded(table, list(cols))
