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

from dqkit.runtime.lazy import lazy_face

__all__ = ['detect', 'tuple_ids', 'spark_plan', 'DetectionResult', 'RuleSummary', 'MODES',
           'restricted_pairs', 'lazy_violations', 'fd_count', 'fd_pairs', 'dirty_blocks']

__getattr__, __dir__ = lazy_face(__name__, __all__)
