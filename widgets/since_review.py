"""Presentation only: the nightly views of the rules widgets, ``SinceView`` and ``ChangeReview``'s per-cell
checkboxes (issue #26), which a declaration cannot express.

``SinceView`` shows a ``detect --since`` result (``SinceResult``) in New / Resolved / Persisting tabs,
each the result's own section, so the widget says what the text, HTML and report say. ``ChangeReview``
shows a repair's change list (``RepairResult.change_list``, e.g. of ``repair(..., dry_run=True)``) with
one checkbox per changed cell; **Apply** applies the ticked cells (``dqkit.systems.review.review_cells``:
``apply_changes``) and shows what was applied (a ``ReviewResult``'s sections). A stale change list is refused by
``apply_changes`` and shown as a readable message; nothing is applied then.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ipywidgets as W
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from dqkit.contract import render
from dqkit.errors import DqkitError, ParameterError
from dqkit.systems import Tab, get
from dqkit.systems.review import change_list_columns, review_cells
from dqkit.widgets.controllers import error_text
from dqkit.widgets.result_view import ResultView, wrap

__all__ = ["SinceView", "ChangeReview", "MAX_REVIEW_CELLS"]

#: a change list longer than this is reviewed per rule (``dqkit review --accept``), not per cell
MAX_REVIEW_CELLS = 200


class SinceView(ResultView):
    """A ``detect --since`` result in four tabs: Summary, New, Resolved, Persisting: ``detect``'s declared
    tabs, of which these belong to a ``--since`` result (a list with no violation says so in its tab)."""

    def __init__(self, sample_rows: int = 10) -> None:
        super().__init__(get("detect").tabs, sample_rows)


class ChangeReview(W.VBox):
    """Per-cell review of a change list: a checkbox per changed cell (ticked: accepted), Apply.

    ``ChangeReview(table, changes, key=...)``: ``table`` the dirty DataFrame the change list was computed
    on, ``changes`` a change list (``CHANGE_LIST_COLUMNS``). ``apply()`` (the Apply button) applies the
    ticked cells with ``apply_changes`` and sets ``result`` (a ``ReviewResult``: ``.table`` the reviewed
    table, ``.applied`` the applied changes), ``applied_count`` and the view below. A change list of
    more than ``max_cells`` rows is refused (``ParameterError``): review it per rule with ``dqkit review``.
    """

    def __init__(self, table: DataFrame, changes: DataFrame, *, key: str, spark: SparkSession | None = None,
                 max_cells: int = MAX_REVIEW_CELLS, sample_rows: int = 10) -> None:
        columns = change_list_columns()
        missing = [c for c in columns if c not in changes.columns]
        if missing:
            raise ParameterError(f"not a change list: no column(s) {', '.join(missing)}",
                                 hint="pass RepairResult.change_list (e.g. of repair(..., dry_run=True))")
        rows = changes.select(*columns).orderBy(F.col("tid").cast("string"), "attr") \
            .limit(max_cells + 1).collect()
        if len(rows) > max_cells:
            raise ParameterError(f"the change list has more than {max_cells} changed cells, too many to tick one by one",
                                 hint="review it per rule: dqkit review CHANGES --to TABLE --key K --accept RULE")
        self.table, self.changes, self.key, self.spark = table, changes, key, spark
        self.cells: list[Mapping[str, Any]] = [r.asDict() for r in rows]
        self.boxes: list[W.Checkbox] = []
        for c in self.cells:
            box = W.Checkbox(value=True, indent=False, layout=W.Layout(width="auto"),
                             description=f"{c['tid']}.{c['attr']}: {c['old']} → {c['new']}  "
                                         f"({', '.join(c['rules'] or [])})")
            box.cell = (str(c["tid"]), c["attr"])  # type: ignore[attr-defined]
            self.boxes.append(box)
        self.apply_button = W.Button(description="Apply", icon="check", button_style="primary",
                                     disabled=not self.cells)
        self.apply_button.on_click(lambda _: self.apply())
        self.message = W.HTML()
        self.view = ResultView((Tab("Applied"),), sample_rows)
        self.result: Any = None  # a ReviewResult
        header = W.HTML(wrap(f"<p>{len(self.cells)} changed cell{'s' if len(self.cells) != 1 else ''}: "
                             "tick the changes to accept, then Apply.</p>" if self.cells else
                             "<p class='muted'>The change list is empty: nothing to review.</p>"))
        super().__init__([header, W.VBox(self.boxes), self.apply_button, self.message, self.view])

    @property
    def chosen(self) -> set[tuple[str, str]]:
        """The ticked cells as ``(tid as text, column)``."""
        return {b.cell for b in self.boxes if b.value}  # type: ignore[attr-defined]

    @property
    def applied_count(self) -> int:
        """Changes applied by the last Apply (0 before one)."""
        return self.result.applied_count if self.result is not None else 0

    def apply(self) -> Any:
        """Apply the ticked cells to the table (never modified: the result is a new DataFrame)."""
        chosen = self.chosen
        self.message.value = ""
        self.apply_button.disabled = True
        try:
            result = review_cells(self.spark, self.table, self.changes, self.key, self.cells, chosen)
        except DqkitError as exc:
            self.result = None
            self.view.clear()
            self.message.value = wrap("<p class='bad'>Nothing applied</p><pre style='white-space:pre-wrap'>"
                                      f"{render.esc(error_text(exc))}</pre>")
            return None
        finally:
            self.apply_button.disabled = not self.cells
        self.result = result
        self.view.show(self.result)
        return self.result
