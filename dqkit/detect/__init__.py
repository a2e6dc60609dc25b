"""Violation detection at scale (BigDansing §3–§4) on Spark DataFrames.

``detect(table, rules)`` turns every rule into a logical plan (Scope, Block, Iterate, Detect, GenFix),
consolidates the Scopes of rules reading the same table into one shared scan, and picks a physical
operator per rule:

* ``Scope+Detect`` -- one-tuple DCs: a filter.
* ``Block+UCrossProduct`` -- FDs and symmetric DCs with an equality: a hash block on the equality
  attributes and each unordered pair inside a block once (``t1.tid < t2.tid``): n(n-1)/2 pairs, no
  duplicate violations.
* ``Block+CrossProduct`` -- asymmetric DCs with an equality: ordered pairs inside blocks.
* ``OCJoin`` -- DCs whose cross-tuple predicates are only ordering comparisons (and !=): range
  partitioning on the first inequality attribute, min/max pruning of partition pairs on every
  inequality attribute, an equi-join of rows to the surviving partition pairs (the same partition
  paired with itself included) and a vectorised sort-merge inside each pair. No cartesian product.
* UDF jobs (``dqkit.rules.Job``): see ``dqkit.detect._udf``.

Every violation names its rule and tuples by a stable tuple id: the user's key, or a deterministic
content id (see ``tuple_ids``). NULL semantics: a predicate on NULL is false, as in SQL.
"""
from __future__ import annotations

import importlib
import importlib.util
from typing import Any

__all__ = ['detect', 'tuple_ids', 'spark_plan', 'DetectionResult', 'RuleSummary', 'MODES',
           'restricted_pairs', 'lazy_violations', 'fd_count', 'fd_pairs', 'dirty_blocks']


def __getattr__(name: str) -> Any:
    """The public names load ``dqkit.detect.api`` (and pyspark) on first use, not at import."""
    if name.startswith("__"):
        raise AttributeError(name)
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:  # a submodule: no need for the api
        return importlib.import_module(f"{__name__}.{name}")
    api = importlib.import_module("dqkit.detect.api")
    try:
        return getattr(api, name)
    except AttributeError:
        raise AttributeError(f"module 'dqkit.detect' has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
