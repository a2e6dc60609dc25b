"""Holistic repair of denial constraints with inequalities, by minimal change (BigDansing §5.1, §6.6, R37).

BigDansing hands each connected component of the violation hypergraph to "the general hypergraph
algorithm" of Holistic Data Cleaning (Chu, Ilyas, Papotti, ICDE 2013), which the paper does not
detail. dqkit implements it per component, in two steps, as a black-box repair function
(``dqkit.repair.blackbox``), so components are repaired in parallel on the executors:

1. **Which cells change: a minimum vertex cover of the hyperedges.** Each violation is a hyperedge
   over the cells its fixes can change; at least one cell per violation must change, and as few cells
   as possible should (minimal change). This is a set cover, solved exactly as a 0/1 MILP with HiGHS
   (``scipy.optimize.milp``: minimise the number of chosen cells subject to one chosen cell per
   hyperedge). A component with more than ``MILP_MAX_HYPEREDGES`` hyperedges is covered greedily
   (the cell in most uncovered hyperedges first, ties by the smallest cell), which is within a factor
   ``H(d)`` of optimal. Both are deterministic: the problem is built from rows in sorted order and the
   MILP has a node limit, not a time limit.
2. **Which values: the repair context of each chosen cell.** Cells are visited in sorted order. For
   each violation of the cell that still holds (none of its fixes is satisfied by the current values),
   the fix naming the cell is a constraint ``cell op value`` with the other side's *current* value (or
   the fix's constant). The constraints intersect to an interval; the new value is the cell's own value
   clamped into it (the smallest change). Strict bounds step by one unit (integers, dates), by one
   ulp (floats) or by 10^-scale (decimals). An empty interval leaves the cell unchanged; the repair loop
   then re-detects (a changed value may also create a violation the next round repairs).

What holistic repair does not do, by choice:

* ``!=`` fixes are never used to pick a value: any other value satisfies them, and dqkit does not
  invent one. A violation whose only fixes are ``!=`` (an FD's lhs alternatives) is left to other
  fixes, or stays unfixable.
* Text columns take only ``=`` and non-strict bounds (the value becomes the bound); booleans and
  other types only ``=``. Numbers, decimals, dates and timestamps take every ordering operator.
"""
from __future__ import annotations

import datetime as dt
import heapq
import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["MILP_MAX_HYPEREDGES", "minimum_vertex_cover", "holistic_component_repair", "parse_text",
           "format_value", "value_kind"]

MILP_MAX_HYPEREDGES = 5000
MILP_NODE_LIMIT = 20000
ORDERED_KINDS = ("int", "float", "decimal", "date", "timestamp")
_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "=": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}
_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


# --------------------------------------------------------------------------------------- values
def value_kind(spark_type: str) -> str:
    """The value kind of a Spark type name: int, float, decimal, date, timestamp, string or other."""
    t = spark_type.lower()
    if t in ("tinyint", "smallint", "int", "bigint", "byte", "short", "integer", "long"):
        return "int"
    if t in ("float", "double", "real"):
        return "float"
    if t.startswith("decimal"):
        return "decimal"
    if t == "date":
        return "date"
    if t.startswith("timestamp"):
        return "timestamp"
    if t == "string" or t.startswith(("varchar", "char")):
        return "string"
    return "other"


def parse_text(text: Any, kind: str) -> Any:
    """A cell's value from its text (as the candidate fixes carry it); None for NULL or unparseable."""
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return None
    s = str(text)
    try:
        if kind == "int":
            return int(Decimal(s))
        if kind == "float":
            return float(s)
        if kind == "decimal":
            return Decimal(s)
        if kind == "date":
            return dt.date.fromisoformat(s[:10])
        if kind == "timestamp":
            return dt.datetime.fromisoformat(s)
    except (ValueError, ArithmeticError):
        return None
    return s


def parse_constant(text: Any, kind: str) -> Any:
    """A rule constant from its text (``dqkit.rules.Const``: numbers bare, strings single-quoted)."""
    if text is None:
        return None
    s = str(text)
    if len(s) >= 2 and s[0] == "'" and s[-1] == "'":
        s = s[1:-1].replace("\\'", "'").replace("\\\\", "\\")
    return parse_text(s, kind)


def format_value(value: Any, kind: str) -> str:
    """Text that Spark casts back to the column's type exactly."""
    if kind == "int":
        return str(int(value))
    if kind == "float":
        return repr(float(value))
    if kind in ("date", "timestamp"):
        return value.isoformat(sep=" ") if kind == "timestamp" else value.isoformat()
    return str(value)


def _step(value: Any, kind: str, up: bool) -> Any:
    """The next representable value above (``up``) or below ``value``."""
    if kind == "int":
        return value + (1 if up else -1)
    if kind == "float":
        return float(np.nextafter(value, math.inf if up else -math.inf))
    if kind == "decimal":
        unit = Decimal(1).scaleb(value.as_tuple().exponent)
        return value + unit if up else value - unit
    if kind == "date":
        return value + dt.timedelta(days=1 if up else -1)
    if kind == "timestamp":
        return value + dt.timedelta(microseconds=1 if up else -1)
    return None


def _assignable(op: str, kind: str) -> bool:
    """Can holistic repair pick a value for a cell of ``kind`` constrained by ``op``?"""
    if op == "!=":
        return False
    if kind in ORDERED_KINDS:
        return True
    if kind == "string":
        return op in ("=", "<=", ">=")
    return op == "="


# --------------------------------------------------------------------------------- vertex cover
def minimum_vertex_cover(hyperedges: Sequence[Sequence[Hashable]], tie_break: Mapping[Hashable, float] | None = None,
                         max_milp: int = MILP_MAX_HYPEREDGES) -> tuple[set[Hashable], str]:
    """A smallest set of nodes meeting every hyperedge, and how it was found (``milp``/``greedy``).

    Exact by 0/1 MILP (HiGHS) up to ``max_milp`` hyperedges, greedy beyond. ``tie_break``: a cost in
    [0, 1] per node; among the covers of the smallest size, the one of least total cost is taken (the
    costs are scaled below one node, so they never buy a larger cover). Empty hyperedges are ignored
    (nothing can cover them). Deterministic for the same input order.
    """
    edges = [list(dict.fromkeys(e)) for e in hyperedges if len(e)]
    if not edges:
        return set(), "none"
    nodes = sorted({n for e in edges for n in e}, key=_sort_key)
    tb = tie_break or {}
    weights = np.array([1.0 + min(max(float(tb.get(n, 0.0)), 0.0), 1.0) / (len(nodes) + 1) for n in nodes])
    if len(edges) <= max_milp:
        cover = _milp_cover(edges, nodes, weights)
        if cover is not None:
            return cover, "milp"
    return _greedy_cover(edges, nodes, weights), "greedy"


def _sort_key(node: Hashable) -> tuple:
    return tuple((type(x).__name__, x) for x in node) if isinstance(node, tuple) else ((type(node).__name__, node),)


def _milp_cover(edges: list[list[Hashable]], nodes: list[Hashable], weights: np.ndarray) -> set[Hashable] | None:
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import csr_array

    index = {n: i for i, n in enumerate(nodes)}
    rows = np.repeat(np.arange(len(edges)), [len(e) for e in edges])
    cols = np.fromiter((index[n] for e in edges for n in e), dtype=np.int64, count=len(rows))
    a = csr_array((np.ones(len(rows)), (rows, cols)), shape=(len(edges), len(nodes)))
    res = milp(c=weights, constraints=LinearConstraint(a, lb=1, ub=np.inf),
               integrality=np.ones(len(nodes)), bounds=Bounds(0, 1),
               options={"node_limit": MILP_NODE_LIMIT, "presolve": True})
    if res.x is None:
        return None
    chosen = {nodes[i] for i in np.flatnonzero(res.x > 0.5)}
    return chosen if all(any(n in chosen for n in e) for e in edges) else None


def _greedy_cover(edges: list[list[Hashable]], nodes: list[Hashable], weights: np.ndarray) -> set[Hashable]:
    # the node in most uncovered hyperedges first; ties by the smaller tie-break cost, then node order
    rank = {n: (w, i) for i, (n, w) in enumerate(zip(nodes, weights))}
    incident: dict[Hashable, list[int]] = {n: [] for n in nodes}
    for i, e in enumerate(edges):
        for n in e:
            incident[n].append(i)
    covered = [False] * len(edges)
    degree = {n: len(incident[n]) for n in nodes}
    heap = [(-degree[n], rank[n], n) for n in nodes]
    heapq.heapify(heap)
    chosen: set[Hashable] = set()
    left = len(edges)
    while left and heap:
        d, r, n = heapq.heappop(heap)
        if -d != degree[n]:  # stale entry: push the current degree back
            if degree[n]:
                heapq.heappush(heap, (-degree[n], r, n))
            continue
        if degree[n] == 0:
            break
        chosen.add(n)
        for i in incident[n]:
            if not covered[i]:
                covered[i] = True
                left -= 1
                for m in edges[i]:
                    degree[m] -= 1
        degree[n] = 0
    return chosen


# ---------------------------------------------------------------------------------- the repair
def holistic_component_repair(kinds: Mapping[str, str]) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """A black-box repair function (``dqkit.repair.blackbox``) doing holistic repair of one component.

    ``kinds`` maps each attribute to its ``value_kind``. The function takes the component's fixes
    (``dqkit.repair.blackbox.COMPONENT_COLUMNS``) and returns ``(tid, attr, new)`` changes.
    """
    kinds = dict(kinds)

    def repair_one(fixes: pd.DataFrame) -> pd.DataFrame:
        return _repair_component(fixes, kinds)

    return repair_one


def _repair_component(fixes: pd.DataFrame, kinds: Mapping[str, str]) -> pd.DataFrame:
    fixes = fixes.sort_values(["violation_id", "tid", "attr", "op", "rhs_tid", "rhs_attr", "constant"],
                              na_position="first", kind="mergesort")
    current: dict[tuple, Any] = {}
    original: dict[tuple, Any] = {}
    frozen: set[tuple] = set()
    by_violation: dict[str, list[tuple]] = {}
    for r in fixes.itertuples(index=False):
        kind = kinds.get(r.attr, "other")
        lhs = (r.tid, r.attr)
        original.setdefault(lhs, parse_text(r.value, kind))
        if r.frozen:
            frozen.add(lhs)
        rhs = None
        if r.rhs_tid is not None and not _isnan(r.rhs_tid) and r.rhs_attr is not None:
            rhs = (r.rhs_tid, r.rhs_attr)
            original.setdefault(rhs, parse_text(r.rhs_value, kinds.get(r.rhs_attr, "other")))
            if r.rhs_frozen:
                frozen.add(rhs)
        const = None if rhs is not None else parse_constant(r.constant, kind)
        by_violation.setdefault(r.violation_id, []).append((lhs, r.op, rhs, const))
    current.update(original)

    def holds(fix: tuple) -> bool:
        lhs, op, rhs, const = fix
        a = current.get(lhs)
        b = current.get(rhs) if rhs is not None else const
        if a is None or b is None:
            return False
        try:
            return bool(_OPS[op](a, b))
        except TypeError:
            return False

    def candidates(vfixes: list[tuple]) -> list[tuple]:
        out = []
        for lhs, op, rhs, _ in vfixes:
            if lhs not in frozen and _assignable(op, kinds.get(lhs[1], "other")):
                out.append(lhs)
            if rhs is not None and rhs not in frozen and _assignable(_FLIP[op], kinds.get(rhs[1], "other")):
                out.append(rhs)
        return sorted(set(out), key=_sort_key)

    violated = {v: f for v, f in by_violation.items() if not any(holds(x) for x in f)}
    incident: dict[tuple, list[str]] = {}
    for v, f in violated.items():
        for c in candidates(f):
            incident.setdefault(c, []).append(v)

    def context(cell: tuple) -> list[list[tuple[str, Any]]]:
        """The constraints on ``cell`` from its violations that still hold (one disjunction each)."""
        kind = kinds.get(cell[1], "other")
        out = []
        for v in incident.get(cell, []):
            vfixes = violated[v]
            if any(holds(x) for x in vfixes):
                continue  # repaired by an earlier change
            options = [_constraint_on(cell, x, current) for x in vfixes]
            options = [o for o in options if o is not None and _assignable(o[0], kind)]
            if options:
                out.append(options)
        return out

    # among covers of the fewest cells, the one whose cells need the smallest relative change
    cost = {c: _relative_change(original[c], _choose(original[c], context(c), kinds.get(c[1], "other")))
            for c in incident}
    cover, _ = minimum_vertex_cover([candidates(f) for f in violated.values()], tie_break=cost)

    out: list[tuple[Any, str, str]] = []
    for cell in sorted(cover, key=_sort_key):
        kind = kinds.get(cell[1], "other")
        constraints = context(cell)
        if not constraints:
            continue
        new = _choose(original[cell], constraints, kind)
        if new is not None and new != current[cell]:
            current[cell] = new
            out.append((cell[0], cell[1], format_value(new, kind)))
    return pd.DataFrame(out, columns=["tid", "attr", "new"])


def _isnan(x: Any) -> bool:
    return isinstance(x, float) and math.isnan(x)


def _constraint_on(cell: tuple, fix: tuple, current: Mapping[tuple, Any]) -> tuple[str, Any] | None:
    """The fix as ``cell op value`` (other side at its current value), or None if it names no ``cell``."""
    lhs, op, rhs, const = fix
    if lhs == cell:
        other = current.get(rhs) if rhs is not None else const
        return None if other is None else (op, other)
    if rhs == cell:
        other = current.get(lhs)
        return None if other is None else (_FLIP[op], other)
    return None


def _choose(value: Any, constraints: Iterable[list[tuple[str, Any]]], kind: str) -> Any:
    """The value closest to ``value`` meeting one option of every constraint, or None.

    Each constraint is a disjunction of ``(op, bound)`` options (one per fix of a violation naming the
    cell); the option needing the smallest change is taken, then all are intersected.
    """
    lo = hi = eq = None
    lo_strict = hi_strict = False
    for options in constraints:
        op, b = min(options, key=lambda o: _distance(value, _clamp_one(value, o, kind)))
        if op == "=":
            if eq is not None and eq != b:
                return None
            eq = b
        elif op in (">", ">="):
            if lo is None or b > lo or (b == lo and op == ">"):
                lo, lo_strict = b, op == ">"
        elif op in ("<", "<="):
            if hi is None or b < hi or (b == hi and op == "<"):
                hi, hi_strict = b, op == "<"
    if lo is not None and lo_strict:
        lo = _step(lo, kind, up=True)
        if lo is None:
            return None
    if hi is not None and hi_strict:
        hi = _step(hi, kind, up=False)
        if hi is None:
            return None
    try:
        if eq is not None:
            ok = (lo is None or eq >= lo) and (hi is None or eq <= hi)
            return eq if ok else None
        if lo is not None and hi is not None and lo > hi:
            return None
        new = value
        if new is None:
            return lo if lo is not None else hi
        if lo is not None and new < lo:
            new = lo
        if hi is not None and new > hi:
            new = hi
        return new
    except TypeError:
        return None


def _clamp_one(value: Any, option: tuple[str, Any], kind: str) -> Any:
    op, b = option
    if op == "=":
        return b
    try:
        if op in (">", ">=") and (value is None or value < b or (op == ">" and value == b)):
            return _step(b, kind, True) if op == ">" else b
        if op in ("<", "<=") and (value is None or value > b or (op == "<" and value == b)):
            return _step(b, kind, False) if op == "<" else b
    except TypeError:
        return None
    return value


def _relative_change(old: Any, new: Any) -> float:
    """``|new - old| / |old|`` in [0, 1] (1 when no value fits or the values do not subtract)."""
    if new is None or old is None:
        return 1.0
    d = _distance(old, new)
    if isinstance(old, (int, float, Decimal)) and not isinstance(old, bool):
        return min(1.0, d / max(abs(float(old)), 1e-12)) if d != math.inf else 1.0
    return 0.0 if d == 0 else 1.0


def _distance(a: Any, b: Any) -> float:
    if a is None or b is None:
        return math.inf
    if a == b:
        return 0.0
    try:
        d = b - a
        if isinstance(d, dt.timedelta):
            return abs(d.total_seconds())
        return abs(float(d))
    except TypeError:
        return 1.0
