"""Presentation only: TcfcExplorer's growing drill-down tree and fragment drill-down, and its level editor,
which the ``tcfc`` declaration cannot express; its run and tabs are ``tcfc``'s declared ones.

Pick the pairs to compare and the fragmentation columns of each level (the M4 data checks show as
warnings), set the budget, run in the background with progress and Cancel, watch the drill-down tree
grow job by job, and click a differing fragment to see a bounded sample of its rows on both sides.
Cancel stops the run the way an expired budget does: the result is the UNCOMPLETED report so far.

``TcfcController`` holds the state; its run is ``tcfc``'s ``System.run`` with the declared ``TcfcParams``
(the spec the edited object itself; each completed job grows the tree); ``TcfcExplorer`` binds ipywidgets
to it.
The budget is the ``tcfc`` system's declared ``budget`` (its field, help and check from ``TcfcParams``:
seconds above 0, blank for none); a fragment's rows show as the result's sections show a table.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import ipywidgets as W

from dqkit.contract import render
from dqkit.contract.result import Table, sections_html
from dqkit.errors import DqkitError, ParameterError
from dqkit.systems import Params, get
from dqkit.systems.tcfc import fragment_label, level_warnings, load_spec, pair_columns, with_levels
from dqkit.widgets.controllers import RunController, error_text
from dqkit.widgets.declared import DeclaredFields, convert
from dqkit.widgets.result_view import ExplorerBase, ResultView, wrap

__all__ = ["TcfcController", "TcfcExplorer"]


class TcfcController(RunController):
    """State of a TCFC run: the spec (pairs, levels), the selected pairs, the budget and the outcome.

    ``set_levels(pair, [[cols], ...])`` edits a pair's fragmentation sets (same aggregates per level);
    a spec the model refuses leaves the old levels and puts the reason in ``problem``. ``check()`` runs
    the M4 data checks into ``warnings``. ``tree`` grows after every completed job (``on_change('tree')``).
    """

    system = "tcfc"

    def __init__(self, spec: Any, *, budget: float | None = None, spark: Any = None) -> None:
        super().__init__(spark)
        self.spec: Any = load_spec(spec)  # a TcfcSpec
        self.selected: list[str] = [p.name for p in self.spec.pairs]
        self.budget = budget if budget is not None else self.spec.budget
        self.warnings: list[str] = []
        self.problem: str | None = None
        self.tree: list[tuple[Any, list[Any]]] = []
        self._columns: dict[str, list[str]] = {}

    # ----- choices
    @property
    def pairs(self) -> list[str]:
        return [p.name for p in self.spec.pairs]

    def columns(self, pair: str) -> list[str]:
        """The source side's columns of ``pair`` (read from its schema; no query runs)."""
        if pair not in self._columns:
            try:
                self._columns[pair] = pair_columns(self.spec, pair, spark=self.spark)
            except DqkitError as exc:
                self.problem = error_text(exc)
                self._columns[pair] = []
        return self._columns[pair]

    def levels(self, pair: str) -> list[list[str]]:
        return [list(lv.X) for lv in self.spec.pair(pair).levels]

    def set_levels(self, pair: str, levels: Sequence[Sequence[str]]) -> bool:
        """Replace ``pair``'s fragmentation sets; False (and ``problem``) when the model refuses them."""
        try:
            self.spec = with_levels(self.spec, pair, levels)
        except DqkitError as exc:
            self.problem = error_text(exc)
            self._changed("problem")
            return False
        self.problem = None
        self._changed("spec")
        return True

    def set_budget(self, seconds: float | str | None) -> None:
        """The time budget in seconds (text or a number; None or blank: none), as ``tcfc`` declares it."""
        self.budget = None if seconds is None else convert("tcfc", "budget", seconds)

    def check(self) -> list[str]:
        """The M4 warnings of the selected pairs (distinct counts on each source)."""
        self.warnings = []
        for name in self.selected:
            try:
                self.warnings += level_warnings(self.spec, name, spark=self.spark)
            except DqkitError as exc:
                self.warnings.append(f"{name}: {error_text(exc)}")
        self._changed("warnings")
        return self.warnings

    # ----- running
    def expected_steps(self) -> int:
        return 0

    def params(self) -> Params:
        """``tcfc``'s checked ``Params``: the selected pairs of the edited spec (the object itself), the
        budget, and the tree's hook (each completed job grows it)."""
        if not self.selected:
            raise ParameterError("no pair is selected", hint="select at least one pair")
        spec = replace(self.spec, pairs=tuple(p for p in self.spec.pairs if p.name in self.selected))
        self.tree = []

        def on_job(record: Any, diffs: list[Any]) -> None:
            self.tree.append((record, diffs))
            self._changed("tree")

        params = get("tcfc").prepare(spec=spec, budget=self.budget)
        return dataclasses.replace(params, _on_job=on_job)

    def cancel(self) -> None:
        """Stop the run like an expired budget (the ``cancel`` the run watches): running queries are
        cancelled, the report so far is kept."""
        self.cancel_event.set()

    def differing(self) -> list[tuple[str, int, tuple, str]]:
        """(pair, level, values, label) of every differing fragment of the result."""
        if self.result is None:
            return []
        return [(d.pair, d.level, d.values, f"{d.pair} L{d.level} {d.kind}: {fragment_label(d.X, d.values)}")
                for d in self.result.differences]

    def rows(self, pair: str, level: int, values: tuple, limit: int = 20) -> dict[str, Any]:
        """A bounded sample of one fragment's rows on both sides."""
        if self.result is None:
            raise ParameterError("run first")
        return self.result.rows(pair, level, values, limit)


class TcfcExplorer(DeclaredFields, ExplorerBase):
    """Pairs and levels, M4 warnings, budget, Run/Cancel, the growing tree and a fragment drill-down."""

    def __init__(self, spec: Any, *, budget: float | None = None, spark: Any = None, sample_rows: int = 20) -> None:
        super().__init__()
        self.controller: TcfcController = TcfcController(spec, budget=budget, spark=spark)
        c = self.controller
        self.sample_rows = sample_rows
        self.pairs = W.SelectMultiple(options=c.pairs, value=tuple(c.selected), description="Pairs",
                                      rows=min(6, max(2, len(c.pairs))))
        self.pair = W.Dropdown(options=c.pairs, description="Levels of")
        self.levels_text = W.Textarea(description="X per line", layout=W.Layout(width="60%", height="90px"))
        self.apply_levels = W.Button(description="Apply levels", icon="check")
        self.check_button = W.Button(description="Check levels (M4)", icon="search")
        self.budget = self.declare("tcfc", "budget", c.budget, width="360px")
        self.notes = W.HTML()
        self.tree_box = W.HTML()
        self.leaves = W.Dropdown(options=[], description="Fragment")
        self.show_rows = W.Button(description="Show rows", icon="table")
        self.rows_box = W.HTML()
        self._build_run_controls(c, ResultView(get("tcfc").tabs))
        self.pairs.observe(lambda ch: setattr(c, "selected", list(ch["new"])), names="value")
        self.pair.observe(lambda _: self._load_levels(), names="value")
        self.apply_levels.on_click(lambda _: self.set_levels(self.levels_text.value))
        self.check_button.on_click(lambda _: self.check())
        self.budget.observe(lambda ch: self._set_budget(ch["new"]), names="value")
        self.show_rows.on_click(lambda _: self.show_fragment())
        c.on_change(self._on_tcfc_change)
        self._load_levels()
        self.children = [self.pairs, W.HBox([self.pair, self.apply_levels, self.check_button]), self.levels_text,
                         self.budget, self.notes, W.HBox([self.run_button]), self.progress, self.message,
                         self.tree_box, W.HBox([self.leaves, self.show_rows]), self.rows_box, self.view]

    # ----- actions (what the buttons do; tests call them too)
    def _load_levels(self) -> None:
        if self.pair.value:
            self.levels_text.value = "\n".join(", ".join(x) or "-" for x in self.controller.levels(self.pair.value))

    def set_levels(self, text: str) -> bool:
        levels = [[c.strip() for c in line.split(",") if c.strip() and c.strip() != "-"]
                  for line in text.splitlines() if line.strip()]
        unknown = sorted({c for x in levels for c in x} - set(self.controller.columns(self.pair.value)))
        if unknown and self.controller.columns(self.pair.value):
            self.controller.problem = f"unknown column(s) {', '.join(unknown)} in {self.pair.value}"
            self._render_notes()
            return False
        ok = self.controller.set_levels(self.pair.value, levels)
        self._render_notes()
        return ok

    def check(self) -> list[str]:
        warnings = self.controller.check()
        self._render_notes()
        return warnings

    def clear_results(self) -> None:
        """The tabs, the growing tree, the fragment picker and its rows."""
        super().clear_results()
        self.tree_box.value = self.rows_box.value = ""
        self.leaves.options = []

    def show_result(self, result: Any) -> None:
        """Cancel is an early budget: the result is the report so far (UNCOMPLETED), shown like any other."""
        super().show_result(result)
        self.leaves.options = [(label, (p, lv, v)) for p, lv, v, label in self.controller.differing()]

    def show_fragment(self) -> dict[str, Any] | None:
        if self.leaves.value is None:
            return None
        pair, level, values = self.leaves.value
        sample = self.controller.rows(pair, level, values, self.sample_rows)
        blocks = [Table(f"{side} (at most {self.sample_rows} rows)", df) for side, df in sample.items()]
        self.rows_box.value = render.HTML_STYLE + sections_html(blocks)
        return sample

    def _set_budget(self, value: str) -> None:
        try:
            self.controller.set_budget(value)
            self.controller.problem = None
        except DqkitError as exc:
            self.controller.problem = error_text(exc)
        self._render_notes()

    # ----- rendering
    def _render_notes(self) -> None:
        c = self.controller
        lines = []
        if c.problem:
            lines.append(f"<p class='bad'>{render.esc(c.problem)}</p>")
        lines += [f"<p class='muted'>warning: {render.esc(w)}</p>" for w in c.warnings]
        self.notes.value = wrap("".join(lines)) if lines else ""

    def _on_tcfc_change(self, what: str) -> None:
        c = self.controller
        if what == "tree" and not self._cancel_requested:
            items = []
            for rec, diffs in c.tree:
                mark = "bad" if diffs else "ok"
                items.append(f"<li class='{mark}'>job {rec.job_id}: {render.esc(rec.pair)} level {rec.level} "
                             f"{render.esc(rec.kind)}, {len(diffs)} differing fragment(s), {rec.seconds:.2f} s</li>")
            self.tree_box.value = wrap(f"<ul>{''.join(items)}</ul>")
        elif what in ("problem", "warnings", "spec"):
            self._render_notes()
