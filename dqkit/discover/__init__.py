"""Rules from the data: minimal functional dependencies, approximate FDs (g3) and two-tuple denial
constraints discovered in a table, ranked, and written as a rules file ``detect`` and ``repair`` read.

* ``lattice``: the level-wise search (Tane's lattice, Apriori candidates per right-hand side, pruning
  of every superset of a left-hand side that already determines the attribute); no data access;
* ``driver``: the measurements on the driver (Arrow columns encoded as integers, stripped partitions
  in NumPy/pandas) for a table that fits;
* ``spark``: the same measurements as one Spark aggregation job per lattice level (many candidates
  per job), for a table that does not;
* ``dc``: denial constraints from an evidence set of tuple pairs (driver, bounded sample);
* ``rulesfile``: the ranked rules as a rules YAML; ``result``: ``DiscoverResult``;
* ``api``: ``discover(table, ...)``, choosing the route by the measured size.

NULL semantics: NULL equals NULL (one value), as Desbordante's default; see docs/discover.md.
The package face is lazy: importing it needs no pyspark.
"""
from __future__ import annotations

import importlib
import importlib.util
from typing import Any

__all__ = ["discover", "DiscoverResult", "DiscoveredFD", "DiscoveredDC", "search_fds", "rules_yaml",
           "DRIVER_CELLS"]

_HOMES = {"discover": "api", "DRIVER_CELLS": "api", "DiscoverResult": "result", "DiscoveredFD": "lattice",
          "search_fds": "lattice", "DiscoveredDC": "dc", "rules_yaml": "rulesfile"}


def __getattr__(name: str) -> Any:
    """The public names load their module (and pyspark, for ``api``) on first use, not at import."""
    if name.startswith("__"):
        raise AttributeError(name)
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _HOMES:
        return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    raise AttributeError(f"module 'dqkit.discover' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
