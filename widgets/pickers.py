"""TablePicker and ColumnPicker: selection widgets whose selections survive option refreshes.

ipywidgets resets a selection widget's value (and fires its observers) whenever its ``options``
change. ``keep_selection`` sets new options while keeping the still-valid part of the selection,
with observers told to ignore the transient reset.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import ipywidgets as W
from pyspark.sql import SparkSession

from dqkit.contract import render
from dqkit.io.sources import DatabaseSource
from dqkit.widgets.controllers import TableListing

Options = Sequence[tuple[str, Any]]


class _Guard:
    """A re-entrancy flag: observers return early while ``active``."""

    def __init__(self) -> None:
        self.active = False

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        before, self.active = self.active, True
        try:
            yield
        finally:
            self.active = before


def keep_selection(widget: W.widget_selection._Selection | W.widget_selection._MultipleSelection,
                   options: Options, guard: _Guard) -> None:
    """Replace ``widget.options`` keeping the selected values that are still offered."""
    values = [v for _, v in options]
    multiple = isinstance(widget.value, tuple)
    with guard():
        old = widget.value
        if list(widget.options) == list(options):
            return
        widget.options = list(options)
        if multiple:
            widget.value = tuple(v for v in old if v in values)
        else:
            widget.value = old if old in values else (values[0] if values else None)


class TablePicker(W.VBox):
    """The tables of a source (a database folder or ``catalog:DB``) with their schemas.

    ``value`` is the tuple of selected table names; ``Count rows`` counts the selected tables (all
    when none is selected) on demand; ``Refresh`` re-reads the source and keeps valid selections.
    """

    def __init__(self, source: DatabaseSource | TableListing, *, spark: SparkSession | None = None,
                 description: str = "Tables") -> None:
        self.listing = source if isinstance(source, TableListing) else TableListing(source, spark)
        self._guard = _Guard()
        self._callbacks: list[Callable[[tuple[str, ...]], None]] = []
        self.select = W.SelectMultiple(options=[], rows=6, description=description,
                                       layout=W.Layout(width="340px"))
        self.count_button = W.Button(description="Count rows", icon="calculator",
                                     tooltip="count the rows of the selected tables (all when none is selected)")
        self.refresh_button = W.Button(description="Refresh", icon="refresh", tooltip="re-read the table list")
        self.schema = W.HTML()
        self.select.observe(self._on_select, names="value")
        self.count_button.on_click(lambda _: self.count_rows())
        self.refresh_button.on_click(lambda _: self.refresh())
        super().__init__([W.HBox([self.select, W.VBox([self.refresh_button, self.count_button])]), self.schema])
        self._sync()

    @property
    def value(self) -> tuple[str, ...]:
        return tuple(self.select.value)

    @value.setter
    def value(self, tables: Sequence[str]) -> None:
        self.select.value = tuple(tables)

    def on_select(self, fn: Callable[[tuple[str, ...]], None]) -> None:
        """Call ``fn(selected tables)`` when the user changes the selection (not on refreshes)."""
        self._callbacks.append(fn)

    def refresh(self) -> None:
        self.listing.refresh()
        self._sync()

    def count_rows(self) -> dict[str, int]:
        counts = self.listing.count_rows(self.value or None)
        self._sync()
        return counts

    def _label(self, table: str) -> str:
        n = len(self.listing.schema(table))
        rows = self.listing.row_counts.get(table)
        return f"{table} ({n} cols{'' if rows is None else f', {rows:,} rows'})"

    def _sync(self) -> None:
        keep_selection(self.select, [(self._label(t), t) for t in self.listing.tables], self._guard)
        self._render_schema()

    def _on_select(self, change: dict[str, Any]) -> None:
        self._render_schema()
        if self._guard.active:
            return
        for fn in list(self._callbacks):
            fn(self.value)

    def _render_schema(self) -> None:
        if self.listing.error:
            self.schema.value = f"<div class='dqkit'><p class='bad'>{render.esc(self.listing.error)}</p></div>"
            return
        shown = self.value or tuple(self.listing.tables[:1])
        parts = []
        for t in shown:
            cols = ", ".join(f"{render.esc(c)} <span class='muted'>{render.esc(ty)}</span>"
                             for c, ty in self.listing.schema(t))
            parts.append(f"<div><b>{render.esc(t)}</b>: {cols}</div>")
        self.schema.value = render.HTML_STYLE + "<div class='dqkit'>" + "".join(parts) + "</div>"


class ColumnPicker(W.VBox):
    """Multi-select of a table's columns with their types (for keys and exclusions)."""

    def __init__(self, columns: Sequence[tuple[str, str]] = (), *, description: str = "Columns",
                 value: Sequence[str] = ()) -> None:
        self._guard = _Guard()
        self._callbacks: list[Callable[[tuple[str, ...]], None]] = []
        self.select = W.SelectMultiple(options=[], rows=5, description=description,
                                       layout=W.Layout(width="300px"))
        self.select.observe(self._on_select, names="value")
        super().__init__([self.select])
        self.set_columns(columns, value)

    @property
    def value(self) -> tuple[str, ...]:
        return tuple(self.select.value)

    @value.setter
    def value(self, columns: Sequence[str]) -> None:
        self.select.value = tuple(columns)

    def set_columns(self, columns: Sequence[tuple[str, str]], value: Sequence[str] | None = None) -> None:
        """Offer ``columns`` ((name, type) pairs); keep the valid selection, or set ``value`` quietly."""
        keep_selection(self.select, [(f"{c} : {t}", c) for c, t in columns], self._guard)
        if value is not None:
            names = {c for c, _ in columns}
            with self._guard():
                self.select.value = tuple(v for v in value if v in names)

    def on_select(self, fn: Callable[[tuple[str, ...]], None]) -> None:
        """Call ``fn(selected columns)`` when the user changes the selection (not on refreshes)."""
        self._callbacks.append(fn)

    def _on_select(self, change: dict[str, Any]) -> None:
        if self._guard.active:
            return
        for fn in list(self._callbacks):
            fn(self.value)
