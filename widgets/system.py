"""A system's widget, derived from its declaration (``dqkit.systems``): a controller that holds the values
by parameter name and checks them with the same ``System.prepare`` as the CLI and the report, and a view
whose form fields (names, help, defaults, choices) come from ``Params`` and whose tabs show the result's
``sections()`` grouped by the system's declared ``tabs``.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ipywidgets as W

from dqkit.contract import render
from dqkit.errors import DqkitError, ParameterError, describe_error
from dqkit.systems import Params, ParamSpec, System, get
from dqkit.widgets.controllers import RunController
from dqkit.widgets.declared import field_for
from dqkit.widgets.result_view import ExplorerBase, ResultView, TabRule


class SystemController(RunController):
    """State and run of one system: ``values`` by parameter name (text or typed), ``params()`` checks
    them without Spark, ``work`` runs the system. Nothing here parses on its own."""

    def __init__(self, system: System | str, values: Mapping[str, Any] | None = None, *, spark: Any = None) -> None:
        super().__init__(spark)
        self.system = get(system) if isinstance(system, str) else system
        self.values: dict[str, Any] = {}
        for name, value in (values or {}).items():
            self.set(name, value)

    def set(self, name: str, value: Any) -> None:
        """Set parameter ``name`` (its text or its value); an unknown name is refused at once."""
        self.system.params.spec(name.replace("-", "_"))
        self.values[name.replace("-", "_")] = value
        self._changed("values")

    def params(self) -> Params:
        """The checked parameters (``System.prepare``): what the CLI and the report would run."""
        return self.system.prepare({k: v for k, v in self.values.items() if v not in ("", None)})

    def problem(self) -> str | None:
        """Why the current values cannot run (readable text), or None when they can."""
        try:
            self.params()
        except DqkitError as exc:
            return describe_error(exc)
        return None

    def work(self, progress: Any) -> Any:
        return self.system.run(self.params(), spark=self.spark, progress=progress, cancel=None)

    def tab_rules(self) -> list[TabRule]:
        """The result view's tabs, from the declaration: a tab takes the section kinds it names; the
        last tab also takes whatever no tab names, so no section is lost and no tab is added."""
        rules: list[TabRule] = []
        for title, kinds in self.system.tabs:
            rules.append((title, (lambda block, k=tuple(kinds): type(block).__name__ in k) if kinds else None))
        if rules and all(takes is not None for _, takes in rules):
            rules[-1] = (rules[-1][0], None)
        return rules


def _field(s: ParamSpec, value: Any) -> W.Widget:
    """The input widget of one parameter: a checkbox, a drop-down of its choices, or a text box."""
    return field_for(s, value)


class SystemExplorer(ExplorerBase):
    """The widget of any registered system: a form derived from its ``Params``, Run, progress with
    Cancel, and its result's sections in the declared tabs."""

    def __init__(self, system: System | str, values: Mapping[str, Any] | None = None, *, spark: Any = None) -> None:
        controller = SystemController(system, values, spark=spark)
        self.fields: dict[str, W.Widget] = {}
        for s in controller.system.params.specs():
            widget = _field(s, controller.values.get(s.name, s.default))
            widget.observe(lambda ch, name=s.name: self._on_field(name, ch["new"]), names="value")
            self.fields[s.name] = widget
        self._build_run_controls(controller, ResultView(controller.tab_rules()))
        self.title = W.HTML(render.HTML_STYLE + f"<div class='dqkit'><h3>{render.esc(controller.system.name)}</h3>"
                            f"<p class='muted'>{render.esc(controller.system.summary)}</p></div>")
        super().__init__(children=[self.title, *self.fields.values(), W.HBox([self.run_button]), self.progress,
                                   self.message, self.view])

    def _on_field(self, name: str, value: Any) -> None:
        try:
            self.controller.set(name, value)
        except ParameterError as exc:
            self._show_error(describe_error(exc))

    def start(self) -> None:
        """Check the values first (no Spark): a problem is shown and nothing runs."""
        problem = self.controller.problem()
        if problem is not None:
            self.view.clear()
            self._show_error(problem)
            return
        super().start()
