"""No widget class hides an ipywidgets trait behind a class attribute of the same name: a class
attribute ``titles`` on a ``Tab`` subclass once left every tab of the violation explorer blank."""
from __future__ import annotations

import importlib
import inspect
import pkgutil

import ipywidgets as W
import pytest


def _widget_classes():
    import dqkit.widgets as package

    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"dqkit.widgets.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, W.Widget) and cls.__module__ == module.__name__:
                yield cls


def _ours(klass) -> bool:
    """A class of dqkit's (or a test's), not of ipywidgets or traitlets."""
    return not klass.__module__.startswith(("ipywidgets", "traitlets", "builtins"))


def _shadowed(cls) -> list[str]:
    """Names that a class of ours in ``cls``'s MRO (the class itself, its dqkit bases and mixins such as
    ``DeclaredFields``) defines as a plain attribute, method or property while an ipywidgets base of
    ``cls`` declares a trait of that name."""
    traits: set[str] = set()
    for base in cls.__mro__:
        if not _ours(base) and hasattr(base, "class_trait_names"):
            traits |= set(base.class_trait_names())
    own: dict[str, object] = {}
    for klass in cls.__mro__:
        if _ours(klass):
            own.update({name: value for name, value in vars(klass).items() if not name.startswith("__")})
    return sorted(name for name, value in own.items() if name in traits and not hasattr(value, "default_value"))


@pytest.mark.parametrize("cls", list(_widget_classes()), ids=lambda c: c.__name__)
def test_no_widget_class_attribute_shadows_an_ipywidgets_trait(cls):
    assert _shadowed(cls) == []


def test_the_shadow_check_catches_a_tab_with_a_titles_attribute():
    class Blank(W.Tab):
        titles = ("a", "b")

    assert _shadowed(Blank) == ["titles"]


def test_the_shadow_check_catches_a_trait_shadowed_by_a_mixin_or_a_property():
    class Mixin:
        layout = "wide"

    class Boxed(Mixin, W.VBox):
        @property
        def children(self):  # a property named like the trait hides it as surely as a value
            return ()

    assert _shadowed(Boxed) == ["children", "layout"]


def test_the_violation_view_draws_the_declared_detect_tab_titles_then_its_own():
    from dqkit.widgets.rules_explorer import ViolationView

    view = ViolationView(W.VBox())  # the graph tab's content does not matter to its title
    assert list(view.titles) == ["Summary", "Violations", "Charts", "Violation graph", "Repairs"]  # detect's declared tabs first
    assert len(view.children) == 5
