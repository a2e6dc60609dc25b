"""Presentation only: the violation graph view's hypergraph, built on the driver when a run's violations
are few (issue #25); a declaration cannot express a graph view.

The "Violation graph" tab needs the largest components of the violation hypergraph (BigDansing §5.1)
and one component at a time as a networkx graph. ``dqkit.repair.violation_hypergraph`` builds them in
Spark: the hyperedges (a grouping of the candidate fixes joined to the violations, checkpointed), the
connected components of the cells, a join naming each violation's component, sizes, and per drawn
component a count and a fetch: many Spark jobs for a graph of a few thousand violations. A widget
draws only bounded components, and a detection of up to ``LOCAL_VIOLATIONS`` violations has at most a
few hundred thousand candidate fixes: so ``LocalHypergraph.fetch`` reads the candidate fixes' cells
once (Arrow) and builds the same hypergraph on the driver: the same hyperedges (each violation's
distinct cells), the same components (named by their smallest ``(tid, attr)`` cell, cells grouped
through shared cells), the same sizes and order, and the same networkx graph of a component (tests
compare both routes).

Only where the driver orders cells as Spark does (``local_capable``): declarative rules (every
violation has a fix, so the fixes name every hyperedge; UDF rules may have violations without one),
tuple ids that are integers, dates or strings with the default collation, and a plain detection.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd
from pyspark.sql import functions as F

from dqkit.errors import ParameterError
from dqkit.primitives.components import smallest_member_components
from dqkit.systems.repair import component_key, violation_id
from dqkit.rules import UDFRule

__all__ = ["LOCAL_VIOLATIONS", "LocalHypergraph", "local_capable"]

#: at most this many violations take the driver route (one fetch of their candidate fixes' cells)
LOCAL_VIOLATIONS = 50_000
_ORDERED_TIDS = ("tinyint", "smallint", "int", "bigint", "string", "date")

Cell = tuple[Any, str, Any]  # (tid, attr, value)
Node = tuple[Any, str]  # (tid, attr)


def local_capable(detection: Any, limit: int = LOCAL_VIOLATIONS) -> bool:
    """Whether ``detection``'s violation graph can be built on the driver (see the module)."""
    if getattr(detection, "mode", None) not in ("violations", "sample"):
        return False
    if not 0 < int(getattr(detection, "total_violations", 0)) <= limit:
        return False
    if any(isinstance(r, UDFRule) for r in detection.rules):
        return False
    key = getattr(detection, "key", None)
    tid_type = "string" if key is None else detection.schema.get(key, "")
    return tid_type in _ORDERED_TIDS


def _cell_order(c: Cell) -> tuple[Any, ...]:
    """Spark's ascending order of a ``(tid, attr, value)`` struct (a NULL field first)."""
    return (c[0], c[1], c[2] is not None, "" if c[2] is None else c[2])


@dataclass(frozen=True)
class LocalHypergraph:
    """The violation hypergraph of one detection held by the driver.

    ``hyperedges``: ``violation_id -> (rule, cells)``, the cells sorted as Spark's ``array_sort`` sorts
    them; ``component``: each cell ``(tid, attr)`` -> its component, the smallest cell of it.
    """

    hyperedges: dict[str, tuple[str, tuple[Cell, ...]]]
    component: dict[Node, Node]

    @classmethod
    def fetch(cls, detection: Any) -> LocalHypergraph:
        """Read ``detection``'s candidate fixes' cells once and build the hypergraph and its components."""
        f = detection.candidate_fixes
        cols = f.select(violation_id(F.col("rule"), F.col("t1"), F.col("t2")).alias("v"), "rule", "tid", "attr",
                        "value", "rhs_tid", "rhs_attr", "rhs_value").toArrow().to_pydict()
        cells: dict[str, tuple[str, set[Cell]]] = {}
        for v, rule, tid, attr, value, rtid, rattr, rvalue in zip(
                cols["v"], cols["rule"], cols["tid"], cols["attr"], cols["value"], cols["rhs_tid"],
                cols["rhs_attr"], cols["rhs_value"]):
            entry = cells.setdefault(v, (rule, set()))
            entry[1].add((tid, attr, value))
            if rtid is not None:
                entry[1].add((rtid, rattr, rvalue))
        edges = {v: (rule, tuple(sorted(cs, key=_cell_order))) for v, (rule, cs) in cells.items()}
        return cls(edges, _label(edges))

    def component_sizes(self) -> pd.DataFrame:
        """``component`` (a ``(tid, attr)`` pair), ``cells``, ``violations``: largest first, ties by id."""
        ncells: dict[Node, int] = {}
        for comp in self.component.values():
            ncells[comp] = ncells.get(comp, 0) + 1
        nviol: dict[Node, int] = {}
        for _, cs in self.hyperedges.values():
            if cs:
                comp = self.component[(cs[0][0], cs[0][1])]
                nviol[comp] = nviol.get(comp, 0) + 1
        rows = sorted(ncells.items(), key=lambda kv: (-kv[1], kv[0]))
        return pd.DataFrame([{"component": c, "cells": n, "violations": nviol.get(c, 0)} for c, n in rows],
                            columns=["component", "cells", "violations"])

    def to_networkx(self, component: Any, max_nodes: int = 200):
        """One component as ``ViolationHypergraph.to_networkx`` gives it (the same nodes, attributes and
        edges), refused in the same words when it is unknown or larger than ``max_nodes`` nodes."""
        import networkx as nx

        tid, attr = component_key(component)
        target = (tid, attr)
        ncells = sum(1 for c in self.component.values() if c == target)
        ids = sorted(v for v, (_, cs) in self.hyperedges.items()
                     if cs and self.component[(cs[0][0], cs[0][1])] == target)
        if ncells == 0:
            raise ParameterError(f"no component {tid}.{attr} in this hypergraph",
                                 hint="take a component id from component_sizes() or components")
        if ncells + len(ids) > max_nodes:
            raise ParameterError(f"component {tid}.{attr} has {ncells} cells and {len(ids)} violations, more than "
                                 f"max_nodes={max_nodes}", hint="raise max_nodes, or pick a smaller component "
                                                                "from component_sizes()")
        g = nx.Graph()
        for v in ids:
            rule, cs = self.hyperedges[v]
            g.add_node(v, kind="violation", rule=rule)
            for c_tid, c_attr, value in cs:
                node = (c_tid, c_attr)
                g.add_node(node, kind="cell", value=value, label=f"{c_tid}.{c_attr} = {value}")
                g.add_edge(v, node, rule=rule)
        return g


def _label(edges: dict[str, tuple[str, tuple[Cell, ...]]]) -> dict[Node, Node]:
    """Each cell's component over the hyperedges, named by the component's smallest cell."""
    cells = [[(c[0], c[1]) for c in cs] for _, cs in edges.values()]
    return smallest_member_components([n for ns in cells for n in ns],
                                      [(ns[0], n) for ns in cells for n in ns[1:]])
