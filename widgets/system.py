"""Any system's widget, derived from its declaration alone (``dqkit.systems``): ``explore(name, **values)``.

A controller holds the values by parameter name and checks them with the same ``System.prepare`` as the
CLI and the report; its run is the generic ``RunController``'s ``System.run``. The view's form fields
(names, help, defaults, choices) come from ``Params`` and its tabs show the result's ``sections()``
routed by their stable keys into the system's declared ``tabs``.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ipywidgets as W

from dqkit.contract import render
from dqkit.errors import DqkitError, ParameterError, describe_error
from dqkit.systems import Params, ParamSpec, System, get
from dqkit.systems.base import RuleText
from dqkit.widgets.controllers import RunController
from dqkit.widgets.declared import field_for
from dqkit.widgets.result_view import ExplorerBase, ResultView


class SystemController(RunController):
    """State and run of one system: ``values`` by parameter name (text or typed, or a notebook's value a
    field accepts: a DataFrame, a ``{name: table}`` mapping, typed rules), ``params()`` checks them
    without Spark, the run is ``System.run``. Nothing here parses on its own."""

    def __init__(self, system: System | str, values: Mapping[str, Any] | None = None, *, spark: Any = None) -> None:
        super().__init__(spark, get(system) if isinstance(system, str) else system)
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
        self._build_run_controls(controller, ResultView(controller.system.tabs))
        self.title = W.HTML(render.HTML_STYLE + f"<div class='dqkit'><h3>{render.esc(controller.system.name)}</h3>"
                            f"<p class='muted'>{render.esc(controller.system.summary)}</p></div>")
        super().__init__(children=[self.title, *self.fields.values(), W.HBox([self.run_button]), self.progress,
                                   self.message, self.view])

    def _on_field(self, name: str, value: Any) -> None:
        spec = self.controller.system.params.spec(name)
        if spec.accepts == "rules" and isinstance(value, str):
            value = rules_value(value)
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


def rules_value(text: str) -> Any:
    """What a rules box holds: rule files, one per line (each line an existing file), else the rules
    themselves, typed one per line (``RuleText``)."""
    import os

    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if lines and all(os.path.isfile(line) for line in lines):
        return tuple(lines)
    return RuleText(text) if lines else ""


def explore(name_or_system: System | str, *, spark: Any = None, **values: Any) -> SystemExplorer:
    """The explorer of any registered system (or a ``System`` declaration), built from its declaration
    alone: a form of its ``Params`` holding ``values`` (texts, or what a field accepts: a DataFrame, a
    ``{name: table}`` mapping, typed rules), Run with progress and Cancel (``System.run``), and its
    result's sections in the declared tabs. ``explore("delta", old="db/v1", new="db/v2")``."""
    return SystemExplorer(name_or_system, values, spark=spark)
