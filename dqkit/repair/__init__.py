"""Repair (BigDansing §5, R29–R35): detect -> repair until no violation with a fix remains.

``repair(table, rules)`` alternates detection (``dqkit.detect``) and a repair step on the candidate
fixes, as BigDansing §2.2 does, and returns a ``RepairResult``. The repair step is chosen by ``method``:

* ``"equivalence-class"``: the cells joined by ``cell = cell`` fixes form equivalence classes, each set
  to its most frequent value (``dqkit.repair.equivalence``); this repairs FDs and DCs whose fixes are
  equalities. FD classes come from one groupBy per FD (``dqkit.repair.fdgroups``), without building
  any violation pair (``fd_route="hypergraph"`` builds them from the candidate fixes instead);
* ``"holistic"``: a minimum vertex cover of each component of the violation hypergraph, then the
  smallest change of each chosen cell that satisfies the fixes on it (``dqkit.repair.holistic``); this
  repairs DCs with inequalities (``not(t1.salary > t2.salary and t1.rate < t2.rate)``);
* ``"auto"`` (default): each rule by the method that fits it, in the same round: FDs and DCs without
  ordering comparisons by equivalence classes, DCs with ``<, <=, >, >=`` holistically (the cells the
  equivalence step changes are held fixed by the holistic step of that round);
* a callable: black-box repair (R29), the unmodified user function applied to each component of the
  violation hypergraph in parallel (``dqkit.repair.blackbox``).

Several rules are repaired together (R35). The changes of a round are applied by a left join on the
tuple id (R34): same rows, columns and types; the input is never modified. Rows read from files keep
the file's order; a DataFrame or catalog table is returned in the order of its row ids (or its key). A cell changed ``freeze_after`` times is frozen (never changed again), so rules that pull a
cell two ways cannot loop (§2.2); the loop also stops after ``max_iterations`` rounds, or when the
remaining violations have no fix the method can apply (they are reported, not looped on).

A fix lands only on the row it was computed for. A ``key`` is checked before anything is computed
(``dqkit.primitives.keys.check_key``: a repeated or NULL key is refused). Without a ``key``, the row id is the
content id of the *input* row (``dqkit.primitives.violations.tuple_ids``: its 128-bit fingerprint, ``#k`` for the
k-th exact copy, copies counted in file order when the table is read from files), kept in a hidden
column through the rounds so a row keeps its id while its cells change. The id is a function of the
row's content and its place in its file, never of partitioning or task order, so a recomputed
partition (a lost executor, a changed plan) gives every row the same id again. Input columns named
like dqkit's hidden ones (``_dq_*``, ``__dqkit*``) are refused (``dqkit.primitives.keys.check_reserved``).
"""
from __future__ import annotations

from dqkit.runtime.lazy import lazy_face

__all__ = ['repair', 'RepairResult', 'ViolationHypergraph', 'violation_hypergraph', 'METHODS', 'FD_ROUTES',
           'COMPONENT_COLUMNS', 'repair_components', 'rule_methods']

__getattr__, __dir__ = lazy_face(__name__, __all__)
