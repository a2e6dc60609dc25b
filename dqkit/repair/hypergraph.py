"""The violation hypergraph (BigDansing §5.1, R27) as DataFrames, its components, and a bounded export.

Nodes are cells ``(tid, attr, value)``; each violation is a hyperedge over the cells its candidate
fixes name, carrying those fixes. Violations of different rules share one hypergraph (Figure 7).
Components are computed on the cell graph in which each hyperedge links its cells (``dqkit.primitives.components``),
so two violations are in one component when they share a cell, directly or through others.

Tuple ids keep the type of the detection's key (string for content ids), as in the candidate fixes;
``value`` is the cell's value as text (``dqkit.primitives.violations.CELL_SCHEMA``).
"""
from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from dqkit.primitives.components import run_connected_components
from dqkit.errors import ParameterError
from dqkit.runtime.sparkutil import checkpoint
from dqkit.primitives.violations import FIX_CELL_FIELDS

__all__ = ["ViolationHypergraph", "violation_hypergraph", "violation_id", "component_key"]


def violation_id(rule: Column, t1: Column, t2: Column) -> Column:
    """The id of a violation: ``rule|t1|t2`` (``t2`` empty for one-tuple rules); stable across runs."""
    return F.concat_ws("|", rule, t1.cast("string"), F.coalesce(t2.cast("string"), F.lit("")))


def _cell_key(c: Column) -> Column:
    return F.struct(c["tid"].alias("tid"), c["attr"].alias("attr"))


@dataclass(frozen=True)
class ViolationHypergraph:
    """``cells (tid, attr, value)`` and ``hyperedges (violation_id, rule, cells, fixes)``, lazily.

    ``components``: each cell's component ``(tid, attr, component)``, the component named by its
    smallest cell ``struct(tid, attr)``; ``component_sizes()``: cells and violations per component.
    """

    cells: DataFrame
    hyperedges: DataFrame

    @functools.cached_property
    def _run(self):
        cells = F.transform("cells", _cell_key)
        edges = self.hyperedges.where(F.size("cells") > 0).select(
            F.explode(cells).alias("src"), F.array_min(cells).alias("dst"))
        run = run_connected_components(edges)
        # materialised once: sizes, exports and per-violation components all read it
        return type(run)(run.components.transform(checkpoint), run.iterations)

    @functools.cached_property
    def _hyperedge_components(self) -> DataFrame:
        first = self.hyperedges.where(F.size("cells") > 0).select(
            "violation_id", "rule", F.array_min(F.transform("cells", _cell_key)).alias("node"))
        return first.join(self._run.components, "node").select("violation_id", "rule", "component").transform(checkpoint)

    @property
    def iterations(self) -> int:
        """Rounds the connected-components computation took."""
        return self._run.iterations

    @property
    def components(self) -> DataFrame:
        """``(tid, attr, component)`` for every cell of a violation."""
        return self._run.components.select(F.col("node.tid").alias("tid"), F.col("node.attr").alias("attr"),
                                           "component")

    def hyperedge_components(self) -> DataFrame:
        """``(violation_id, rule, component)``: the component of each violation that names a cell."""
        return self._hyperedge_components

    def component_sizes(self) -> DataFrame:
        """``(component, cells, violations)``, largest first (ties by component id)."""
        ncells = self.components.groupBy("component").agg(F.count(F.lit(1)).alias("cells"))
        nviol = self.hyperedge_components().groupBy("component").agg(F.count(F.lit(1)).alias("violations"))
        return (ncells.join(nviol, "component", "left").fillna(0, ["violations"])
                .orderBy(F.desc("cells"), "component"))

    def to_networkx(self, component: Any, max_nodes: int = 200):
        """One component as a networkx graph: the hypergraph's incidence graph.

        Cell nodes are ``(tid, attr)`` with ``kind="cell"``, ``value`` and ``label`` ``tid.attr = value``;
        violation nodes are their ``violation_id`` with ``kind="violation"`` and ``rule``; an edge joins a
        violation to each of its cells (carrying ``rule``). ``component`` is a component id as returned
        by ``components`` (a ``Row``, a ``(tid, attr)`` pair or a dict). Only the component's rows reach
        the driver: a component of more than ``max_nodes`` nodes (cells plus violations) is refused.
        """
        import networkx as nx

        tid, attr = component_key(component)
        target = (F.col("component.tid") == F.lit(tid)) & (F.col("component.attr") == F.lit(attr))
        ids = self.hyperedge_components().where(target).select("violation_id")
        edges = self.hyperedges.join(ids, "violation_id", "left_semi")
        counts = (self.components.where(target).select(F.lit(1).alias("c"), F.lit(0).alias("v"))
                  .union(ids.select(F.lit(0).alias("c"), F.lit(1).alias("v"))).agg(F.sum("c"), F.sum("v")).collect()[0])
        ncells, nviol = int(counts[0] or 0), int(counts[1] or 0)
        if ncells == 0:
            raise ParameterError(f"no component {tid}.{attr} in this hypergraph",
                                 hint="take a component id from component_sizes() or components")
        if ncells + nviol > max_nodes:
            raise ParameterError(f"component {tid}.{attr} has {ncells} cells and {nviol} violations, more than "
                                 f"max_nodes={max_nodes}", hint="raise max_nodes, or pick a smaller component "
                                                                "from component_sizes()")
        g = nx.Graph()
        for row in edges.orderBy("violation_id").collect():
            g.add_node(row["violation_id"], kind="violation", rule=row["rule"])
            for c in row["cells"]:
                node = (c["tid"], c["attr"])
                g.add_node(node, kind="cell", value=c["value"], label=f"{c['tid']}.{c['attr']} = {c['value']}")
                g.add_edge(row["violation_id"], node, rule=row["rule"])
        return g


def component_key(component: Any) -> tuple[Any, str]:
    """A component id given as a ``(tid, attr)`` pair or a row's component field, as that pair."""
    if isinstance(component, dict):
        return component["tid"], component["attr"]
    try:
        tid, attr = component
    except (TypeError, ValueError):
        raise ParameterError(f"{component!r} is not a component id",
                             hint="pass a (tid, attr) pair, such as a row's component field") from None
    return tid, attr


def violation_hypergraph(result: Any, rules: Iterable[str] | None = None) -> ViolationHypergraph:
    """The hypergraph of a ``DetectionResult``: its violations as hyperedges over the cells their
    candidate fixes name, each with its fixes (built now, held by Spark, never by the driver).
    Violations without fixes are hyperedges with no cell (they cannot be repaired and join no
    component). ``rules``: only the violations of these rules (by name); all by default."""
    if getattr(result, "mode", None) == "count":
        raise ParameterError("a count-only detection has no violations to build a hypergraph from",
                             hint="detect with mode='violations'")
    fixes = result.candidate_fixes
    v = result.violations
    if rules is not None:
        names = sorted(set(rules))
        fixes = fixes.where(F.col("rule").isin(names))
        v = v.where(F.col("rule").isin(names))
    fix = F.struct(*[F.col(f) for f in FIX_CELL_FIELDS], "kind", "fix")
    lhs = F.struct(F.col("tid").alias("tid"), F.col("attr").alias("attr"), F.col("value").alias("value"))
    rhs = F.when(F.col("rhs_tid").isNotNull(), F.struct(F.col("rhs_tid").alias("tid"), F.col("rhs_attr").alias("attr"),
                                                       F.col("rhs_value").alias("value")))
    per = (fixes.groupBy("rule", "t1", "t2")
           .agg(F.array_sort(F.array_distinct(F.filter(F.flatten(F.collect_list(F.array(lhs, rhs))),
                                                       lambda c: c.isNotNull()))).alias("cells"),
                F.array_sort(F.collect_list(fix)).alias("fixes")))
    cond = ((v["rule"] == per["rule"]) & (v["t1"] == per["t1"]) & v["t2"].eqNullSafe(per["t2"]))
    cell_t = per.schema["cells"].dataType
    fix_t = per.schema["fixes"].dataType
    hyper = v.join(per, cond, "left").select(
        violation_id(v["rule"], v["t1"], v["t2"]).alias("violation_id"), v["rule"].alias("rule"),
        F.coalesce(per["cells"], F.array().cast(cell_t)).alias("cells"),
        F.coalesce(per["fixes"], F.array().cast(fix_t)).alias("fixes"))
    hyper = hyper.transform(checkpoint)  # read by cells, components and exports: built once
    cells = hyper.select(F.explode("cells").alias("c")).select("c.tid", "c.attr", "c.value").distinct()
    return ViolationHypergraph(cells, hyper)
