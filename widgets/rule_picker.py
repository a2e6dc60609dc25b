"""RulePicker: write FD and DC rules against a table's columns with live validation (a bad rule shows
the rule, a caret under the error and the hint), and load or save a rules YAML. A view over
``RulesController``.
"""
from __future__ import annotations

import os
from typing import Any

import ipywidgets as W
from pyspark.sql import SparkSession

from dqkit.contract import render
from dqkit.errors import ParameterError, RuleError
from dqkit.io.sources import DatabaseSource
from dqkit.widgets.controllers import TableListing, error_text
from dqkit.widgets.pickers import ColumnPicker, _Guard, keep_selection
from dqkit.widgets.result_view import wrap
from dqkit.widgets.rule_suggestions import RuleSuggestions
from dqkit.widgets.rules_controller import _EXAMPLES, RuleProblem, RulesController

__all__ = ["RulePicker"]


class RulePicker(W.VBox):
    """Write FD and DC rules for a table with live validation, and load or save them as YAML.

    Pick the table (its columns and types are listed), type rules one per line (``name: a -> b`` or
    ``name: not(t1.x > t2.x and t1.y < t2.y)``) or build an FD from two column pickers. Every edit is
    parsed and checked against the column types: a mistake shows the rule, a caret under it and a hint.
    ``value`` is the list of valid rules; ``controller`` is the ``RulesController`` behind it.
    ``suggest()`` offers the rules ``dqkit discover`` finds in the table, best score first, with their
    error and violations; ``pick(i)`` adds one.
    """

    def __init__(self, source: DatabaseSource | TableListing | Any = None, *, table: str | None = None,
                 rules: Any = None, spark: SparkSession | None = None,
                 controller: RulesController | None = None) -> None:
        if controller is None:
            if source is None:
                raise ParameterError("RulePicker needs a source (a table, a database or a TableListing)")
            controller = RulesController(source, table=table, rules=rules, spark=spark)
        c = self.controller = controller
        self._guard = _Guard()
        self.header = W.HTML(wrap(f"<b>source</b>: {render.esc(c.listing.label)}"))
        self.table = W.Dropdown(options=[], description="Table")
        self.table.observe(self._on_table, names="value")
        self.refresh_button = W.Button(description="Refresh", icon="refresh", tooltip="re-read the table list")
        self.refresh_button.on_click(lambda _: self.refresh())
        self.schema = W.HTML()
        self.lhs = ColumnPicker(description="If equal")
        self.rhs = ColumnPicker(description="then equal")
        self.fd_name = W.Text(placeholder="name (optional)", layout=W.Layout(width="160px"))
        self.add_fd_button = W.Button(description="Add FD", icon="plus",
                                      tooltip="append the FD (left columns) -> (right columns) to the rules")
        self.add_fd_button.on_click(lambda _: self.add_fd())
        self.editor = W.Textarea(value=c.text, placeholder=_EXAMPLES, rows=8, continuous_update=True,
                                 layout=W.Layout(width="100%"))
        self.editor.observe(self._on_edit, names="value")
        self.status = W.HTML()
        self.path = W.Text(placeholder="rules.yaml", description="File", layout=W.Layout(width="360px"))
        self.load_button = W.Button(description="Load", icon="folder-open", tooltip="read a rules YAML or text file")
        self.save_button = W.Button(description="Save", icon="save", tooltip="write the rules as YAML")
        self.overwrite = W.Checkbox(value=False, description="overwrite", indent=False, layout=W.Layout(width="100px"))
        self.file_message = W.HTML()
        self.load_button.on_click(lambda _: self._file_action("load"))
        self.save_button.on_click(lambda _: self._file_action("save"))
        self.suggestions = RuleSuggestions(c)  # discovered rules, best first: picking one adds it
        c.on_change(self._on_controller)
        self._sync_tables()
        self._render()
        super().__init__([
            self.header, W.HBox([self.table, self.refresh_button]), self.schema,
            W.HBox([self.lhs, self.rhs, W.VBox([self.fd_name, self.add_fd_button])]),
            self.editor, self.status,
            W.HBox([self.path, self.load_button, self.save_button, self.overwrite]), self.file_message,
            W.Accordion([self.suggestions], titles=("Suggested rules (dqkit discover)",))])

    # ----- public API
    @property
    def value(self) -> list[Any]:
        """The valid rules (a line with a problem is left out)."""
        return list(self.controller.rules)

    @property
    def problems(self) -> list[RuleProblem]:
        return list(self.controller.problems)

    @property
    def text(self) -> str:
        return self.controller.text

    def suggest(self, result: Any = None, **options: Any) -> list[Any]:
        """Discovered rules for the chosen table as suggestions, best score first (``RuleSuggestions``);
        ``pick(i)`` adds one to the rules."""
        return self.suggestions.suggest(result, **options)

    def pick(self, *indices: int) -> list[str]:
        """Add the suggestions at ``indices`` to the rules; returns the lines added."""
        return self.suggestions.pick(*indices)

    def refresh(self) -> None:
        self.controller.refresh()
        self._sync_tables()

    def add_fd(self) -> None:
        """Append the FD built from the two column pickers (what ``Add FD`` does)."""
        order = {c: i for i, (c, _) in enumerate(self.controller.columns())}
        lhs, rhs = (sorted(cols, key=lambda c: order.get(c, len(order))) for cols in (self.lhs.value, self.rhs.value))
        try:
            self.controller.add_fd(lhs, rhs, self.fd_name.value.strip() or None)
        except ParameterError as exc:
            self.file_message.value = wrap(f"<p class='bad'>{render.esc(error_text(exc))}</p>")
            return
        self.file_message.value = ""
        self.fd_name.value = ""

    def load(self, path: str | os.PathLike) -> None:
        self.path.value = os.fspath(path)
        self._file_action("load")

    def save(self, path: str | os.PathLike, overwrite: bool = False) -> None:
        self.path.value, self.overwrite.value = os.fspath(path), overwrite
        self._file_action("save")

    # ----- view <-> controller
    def _file_action(self, action: str) -> None:
        path = self.path.value.strip()
        if not path:
            self.file_message.value = wrap("<p class='bad'>give a file name first</p>")
            return
        try:
            if action == "load":
                self.controller.load(path)
                done = f"loaded {len(self.controller.rules)} rule(s) from {path}"
            else:
                written = self.controller.save(path, self.overwrite.value)
                done = f"saved {len(self.controller.rules)} rule(s) to {written}"
        except (RuleError, ParameterError) as exc:
            self.file_message.value = wrap(f"<pre class='bad' style='white-space:pre-wrap'>"
                                           f"{render.esc(error_text(exc))}</pre>")
            return
        self.file_message.value = wrap(f"<p class='ok'>{render.esc(done)}</p>")

    def _on_edit(self, change: dict[str, Any]) -> None:
        if not self._guard.active:
            self.controller.set_text(change["new"])

    def _on_table(self, change: dict[str, Any]) -> None:
        if not self._guard.active and change["new"] != self.controller.table:
            self.controller.select_table(change["new"])

    def _on_controller(self, what: str) -> None:
        if what == "table":
            self._sync_tables()
        elif what == "rules":
            if self.editor.value != self.controller.text:
                with self._guard():
                    self.editor.value = self.controller.text
            self.status.value = self.controller.status_html()

    def _sync_tables(self) -> None:
        keep_selection(self.table, [(t, t) for t in self.controller.tables], self._guard)
        with self._guard():
            self.table.value = self.controller.table
        self._render_columns()

    def _render_columns(self) -> None:
        cols = self.controller.columns()
        self.lhs.set_columns(cols)
        self.rhs.set_columns(cols)
        if cols:
            listed = ", ".join(f"{render.esc(c)} <span class='muted'>{render.esc(t)}</span>" for c, t in cols)
            self.schema.value = wrap(f"<div><b>{render.esc(self.controller.table)}</b>: {listed}</div>")
        else:
            self.schema.value = wrap(f"<p class='bad'>{render.esc(self.controller.listing.error)}</p>"
                                     if self.controller.listing.error else "<p class='muted'>no table</p>")

    def _render(self) -> None:
        self.status.value = self.controller.status_html()
