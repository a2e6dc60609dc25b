"""The declared parameters of every widget: input fields and value checks from a system's ``Params``.

A hand-written explorer adds layout (pickers, sliders, drill-downs), never its own parsing: each option
that is a parameter of a registered system (``dqkit.systems``) gets its widget from ``param_field``
(description, tooltip, default, choices and range from the ``Params`` field) and its value through
``convert`` (the field's own parse, range and choice check, the one the CLI and the report use). The
derived ``SystemExplorer`` builds its form with the same ``field_for``. ``DeclaredFields`` keeps the
fields an explorer made, so a test can hold them to the declaration.
"""
from __future__ import annotations

from typing import Any

import ipywidgets as W

from dqkit.systems import ParamSpec, get
from dqkit.systems.base import RuleText, in_memory

__all__ = ["DeclaredFields", "convert", "default", "field_for", "param_field", "spec"]

#: an unset value (``None`` is a value: a parameter's "not given")
_UNSET: Any = object()
#: the bound of a number field whose declaration gives none (ipywidgets needs one)
_BIG = 1e15


def spec(system: str, name: str) -> ParamSpec:
    """The declared field ``name`` of ``system`` (an unknown name is a ``ParameterError``)."""
    return get(system).params.spec(name)


def default(system: str, name: str) -> Any:
    """The declared default of ``system``'s parameter ``name``."""
    return spec(system, name).default


def convert(system: str, name: str, value: Any) -> Any:
    """``value`` (text or typed) checked and converted as ``system`` declares ``name``: a value out of its
    range or choices is a ``ParameterError`` naming the parameter, worded as the CLI words it."""
    return spec(system, name).convert(value)


def field_for(s: ParamSpec, value: Any, *, typed: bool = False) -> W.Widget:
    """The input widget of one parameter: a checkbox, a drop-down of its choices, or a text box;
    ``typed``: a number field bounded by the declared range for an int or float that cannot be None
    (else a text box, where blank means None)."""
    description = s.name.replace("_", " ")
    style = {"description_width": "initial"}
    if s.kind is bool:
        return W.Checkbox(value=bool(value), description=description, tooltip=s.help, indent=False)
    if s.choices and not s.repeat:
        return W.Dropdown(options=list(s.choices), value=value if value in s.choices else s.choices[0],
                          description=description, tooltip=s.help, style=style)
    if typed and s.kind in (int, float) and not s.repeat and not s.optional and value is not None:
        low = s.low if s.low is not None else -_BIG
        high = s.high if s.high is not None else _BIG
        if s.kind is int:
            return W.BoundedIntText(value=int(value), min=int(low), max=int(high), description=description,
                                    tooltip=s.help, style=style)
        return W.BoundedFloatText(value=float(value), min=low, max=high, step=None, description=description,
                                  tooltip=s.help, style=style)
    if in_memory(value, s.accepts):  # a notebook's value (a DataFrame, a mapping, typed rules) stays as given
        shown = str(value) if isinstance(value, RuleText) else f"(the {type(value).__name__} given)"
        return (W.Textarea if s.accepts == "rules" else W.Text)(value=shown, description=description,
                                                                 placeholder=s.help, tooltip=s.help, style=style)
    text = ("\n" if s.accepts == "rules" else s.sep).join(map(str, value)) if isinstance(value, (list, tuple)) else (
        "" if value is None else str(value))
    if s.accepts == "rules":  # rule files, or rules typed one per line
        return W.Textarea(value=text, description=description, placeholder=s.help, tooltip=s.help, style=style)
    return W.Text(value=text, description=description, placeholder=s.help, tooltip=s.help, style=style)


def param_field(system: str, name: str, value: Any = _UNSET, **layout: Any) -> W.Widget:
    """The widget of ``system``'s parameter ``name`` (typed), showing ``value`` or the declared default."""
    s = spec(system, name)
    widget = field_for(s, s.default if value is _UNSET else value, typed=True)
    if layout:
        widget.layout = W.Layout(**layout)
    return widget


class DeclaredFields:
    """Mixin of an explorer: ``declare(system, name, value)`` makes and keeps a ``param_field``;
    ``declared_fields`` maps ``(system, name)`` to each field made, in order."""

    def declare(self, system: str, name: str, value: Any = _UNSET, **layout: Any) -> W.Widget:
        widget = param_field(system, name, value, **layout)
        fields = self.__dict__.setdefault("_declared_fields", {})
        fields[(system, name)] = widget
        return widget

    @property
    def declared_fields(self) -> dict[tuple[str, str], W.Widget]:
        return dict(self.__dict__.get("_declared_fields", {}))
