"""Rule suggestions for ``RulePicker``: the rules ``dqkit.discover`` finds in the chosen table, best
score first, each shown with its error and violations; picking one adds it to the picker's rules (the
rules detect and repair then run). Self-contained: ``RulePicker`` holds one and calls ``suggest``."""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import ipywidgets as W

from dqkit.contract import render
from dqkit.errors import ParameterError
from dqkit.systems import get
from dqkit.widgets.result_view import wrap

__all__ = ["RuleSuggestions"]


def suggestion_label(rule: Any) -> str:
    """One line: score, rule text, error and violating rows (or pairs)."""
    unit = "rows" if rule.kind == "fd" else "pairs"
    return f"{rule.score:.3f}  {rule.text}  (error {rule.g3:.4f}, {rule.violations} violating {unit})"


class RuleSuggestions(W.VBox):
    """Discovered rules offered to a ``RulesController``: ``suggest`` discovers them on the controller's
    table (or takes a ``DiscoverResult``), ``pick(i)`` / ``pick_all()`` add them as rule lines."""

    def __init__(self, controller: Any) -> None:
        self.controller = controller
        self.items: list[Any] = []
        self.error = W.BoundedFloatText(value=0.0, min=0.0, max=0.99, step=0.01, description="error",
                                        tooltip="the largest g3 error a suggested FD may have")
        self.top = W.BoundedIntText(value=10, min=1, max=1000, description="top", tooltip="suggestions kept")
        self.discover_button = W.Button(description="Suggest rules", icon="magic",
                                        tooltip="discover FDs in the table (dqkit discover), best score first")
        self.discover_button.on_click(lambda _: self._suggest_clicked())
        self.choices = W.SelectMultiple(options=[], rows=6, layout=W.Layout(width="100%"))
        self.add_button = W.Button(description="Add picked", icon="plus", tooltip="add the picked rules")
        self.add_button.on_click(lambda _: self.pick(*self.choices.value))
        self.message = W.HTML()
        super().__init__([W.HBox([self.error, self.top, self.discover_button]), self.choices,
                          W.HBox([self.add_button]), self.message])

    def suggest(self, result: Any = None, *, error: float | None = None, top: int | None = None,
                **options: Any) -> list[Any]:
        """Fill the list from ``result`` (a ``DiscoverResult``), or discover on the controller's table
        with ``error`` and ``top`` (and the discover declaration's other parameters); returns the rules."""
        if result is None:  # the discover system's own run, on the controller's table (a DataFrame)
            frame = self.controller.frame()
            system = get("discover")
            params = system.prepare(table=frame, error=self.error.value if error is None else error,
                                    top=self.top.value if top is None else top, **options)
            result = system.run(params, spark=frame.sparkSession)
        self.items = sorted(result.rules, key=lambda r: -r.score)
        self.choices.options = [(suggestion_label(r), i) for i, r in enumerate(self.items)]
        note = "" if result.complete else " (bounded search: " + "; ".join(result.notes) + ")"
        self.message.value = wrap(f"<p class='muted'>{len(self.items)} suggestion(s) of {result.found} rule(s) "
                                  f"found{render.esc(note)}</p>")
        return list(self.items)

    def pick(self, *indices: int) -> list[str]:
        """Add the suggestions at ``indices`` to the rules (a free name each); returns the lines added."""
        added = []
        for i in indices:
            if not 0 <= i < len(self.items):
                raise ParameterError(f"no suggestion {i}", hint=f"pick 0 to {len(self.items) - 1}")
            rule = self.items[i]
            line = f"{self._free_name(rule.kind)}: {rule.text}"
            self.controller.add_rule(line)
            added.append(line)
        if added:
            self.message.value = wrap(f"<p class='ok'>added {render.esc('; '.join(added))}</p>")
        return added

    def pick_all(self) -> list[str]:
        return self.pick(*range(len(self.items)))

    def _free_name(self, kind: str) -> str:
        taken = {r.name for r in self.controller.rules} | set(re.findall(r"^\s*([\w.\-]+)\s*:", self.controller.text, re.M))
        return next(f"{kind}{i}" for i in range(1, len(taken) + 2) if f"{kind}{i}" not in taken)

    @property
    def labels(self) -> Sequence[str]:
        return [label for label, _ in self.choices.options]
