"""DeltaExplorer: pick tables, keys and exclusions of two database versions, run Diftong, read the result."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import ipywidgets as W
from pyspark.sql import SparkSession

from dqkit.contract import render
from dqkit.delta import STAGES, DeltaResult
from dqkit.contract.result import Table
from dqkit.io.sources import DatabaseSource
from dqkit.errors import DqkitError
from dqkit.widgets.controllers import DeltaController, error_text, keys_from_mapping
from dqkit.widgets.declared import DeclaredFields
from dqkit.widgets.pickers import ColumnPicker, TablePicker, _Guard, keep_selection
from dqkit.widgets.result_view import ExplorerBase, ResultView, wrap

#: The explorer's tabs over ``DeltaResult.sections()``: the verdict and row statistics, the per-column
#: blocks, and the samples.
DELTA_TABS = (
    ("Row statistics", None),
    ("Column statistics", lambda b: b.title.startswith(("Column statistics:", "Differences per column",
                                                         "Quartiles of"))),
    ("Samples", lambda b: isinstance(b, Table) and b.title.startswith(("Changes:", "Row delta sample:"))),
)


class DeltaExplorer(DeclaredFields, ExplorerBase):
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
        c = DeltaController(old, new, spark=spark)
        self.sample_rows = sample_rows
        self._guard = _Guard()
        self._build_run_controls(c, ResultView(DELTA_TABS, sample_rows))
        if tables:
            c.select_tables(list(tables))
        for t, cols in keys_from_mapping(keys).items():
            c.set_key(t, cols)
        for t, cols in (exclude or {}).items():
            c.set_excluded(t, list(cols))

        self.header = W.HTML(wrap(f"<b>old</b>: {render.esc(c.old.label)} &nbsp; "
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
        self.abs_tol = self.declare("delta", "abs_tol", c.abs_tol, width="180px")
        self.rel_tol = self.declare("delta", "rel_tol", c.rel_tol, width="180px")
        for box in (self.abs_tol, self.rel_tol):
            box.observe(lambda _: self._set_tolerance(), names="value")
        self.refresh_button = W.Button(description="Refresh tables", icon="refresh")
        self.refresh_button.on_click(lambda _: self.refresh())
        self._sync_key_table()
        #: one "Accept" button per rename the last result proposes (``accept_rename``)
        self.rename_box = W.VBox()
        super().__init__([
            self.header, self.table_picker,
            W.HBox([self.key_table, self.key_picker, self.exclude_picker]),
            W.HBox([W.Label("Stages"), *self.stage_boxes.values(), self.abs_tol, self.rel_tol]),
            W.HBox([self.run_button, self.refresh_button]), self.progress, self.message, self.rename_box,
            self.view])

    # ----- public API
    @property
    def result(self) -> DeltaResult | None:
        return self.controller.result

    def refresh(self) -> None:
        """Re-read the table lists; valid selections (tables, keys, exclusions) survive."""
        self.controller.refresh_tables()
        with self._guard():
            self.table_picker._sync()
            self.table_picker.value = tuple(t for t in self.controller.selected_tables
                                            if t in self.controller.old.tables)
        self._sync_key_table()

    def accept_rename(self, table: str, old: str, new: str, run: bool = True) -> None:
        """Accept a proposed rename (what its button does): compare ``table.old`` as ``new``, and run again."""
        try:
            self.controller.accept_rename(table, old, new)
        except DqkitError as exc:
            self._show_error(error_text(exc))
            return
        if run:
            self.start()

    # ----- the result's proposed renames, each with a button that accepts it
    def show_result(self, result: Any) -> None:
        super().show_result(result)
        buttons = []
        for t in getattr(getattr(result, "schema", None), "tables", {}).values():
            for p in t.proposed:
                button = W.Button(description=f"Accept {t.name}.{p['old']} \u2192 {p['new']}", icon="check",
                                  tooltip=f"{p['evidence']}; runs again with {p['accept']}",
                                  layout=W.Layout(width="auto"))
                button.on_click(lambda _, t=t.name, o=p["old"], n=p["new"]: self.accept_rename(t, o, n))
                buttons.append(W.HBox([button, W.Label(p["evidence"])]))
        self.rename_box.children = ([W.HTML("<b>Proposed renames</b> (never applied on their own)"), *buttons]
                                    if buttons else [])

    def clear_results(self) -> None:
        super().clear_results()
        if hasattr(self, "rename_box"):
            self.rename_box.children = []

    # ----- view -> controller
    def _set_tolerance(self) -> None:
        try:
            self.controller.set_tolerance(self.abs_tol.value, self.rel_tol.value)
            self.message.value = ""
        except DqkitError as exc:
            self._show_error(error_text(exc))

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
