"""Daisy: queries over dirty data, cleaned on demand into probabilistic candidate values.

``Daisy`` registers tables and rules and answers queries (``query``) by cleaning only what each query
touches (relaxation, FD and inequality-DC cleaning, clean_⋈, the cost model); ``QueryResult`` is the
answer on the common result contract. See ``dqkit.relax.model`` for the representation.

The names below are imported on first use, so ``dqkit.relax.sql`` (the query parser) loads without
Spark: ``dqkit query`` refuses a bad statement before a JVM starts.
"""
from __future__ import annotations

import importlib
from typing import Any

_WHERE = {"QueryResult": "_result", "CostModel": "cost", "incremental_cost": "cost", "full_cost": "cost",
          "tighten": "dc", "hypergeometric_extra_iteration": "dc", "relaxed_size_bound": "dc",
          "STRATEGIES": "engine", "Daisy": "engine", "StateMismatchError": "engine",
          "UnsupportedQueryError": "sql", "parse_query": "sql"}

__all__ = ["Daisy", "QueryResult", "CostModel", "incremental_cost", "full_cost", "tighten",
           "hypergeometric_extra_iteration", "relaxed_size_bound", "STRATEGIES", "StateMismatchError",
           "UnsupportedQueryError", "parse_query"]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
