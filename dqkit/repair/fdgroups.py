"""Equivalence-class repair of FD rules straight from a groupBy (issue #25), no violation hypergraph.

For an FD ``X -> A`` the candidate fixes ``t1[A] = t2[A]`` of a dirty block (rows with one non-NULL
``X`` value and more than one distinct non-NULL ``A`` value) join every non-NULL ``A`` cell of the block
into one class: any two values of the block differ, so the pairs form one connected graph. So a
block is a *group*, and one aggregation per (FD, right-hand attribute) over the table gives every
group's values and their cell counts; blocks with a single ``A`` value are dropped before anything
else. Nothing pairwise is built: no violation, no candidate fix, no cell graph.

Groups of different FDs that share a cell (the same ``A`` cell reached through two FDs with ``A`` on
the right, such as ``zip -> city`` and ``phone -> city``) belong to one equivalence class: the
connected components (``dqkit.primitives.components``) of a graph whose nodes are *groups*, with an edge between
two groups holding a common cell (only attributes on the right of two or more FDs need this step; the
cells are visited once, the edges are distinct group pairs). Each class then takes the target value
of ``dqkit.repair.equivalence`` (most frozen cells, then most cells, then the smallest text); frozen
cells are counted but never changed, and FDs whose right side is the key change nothing.

The changes have the shape of ``equivalence_class_repair``'s, plus ``violation_id``. **The violation
id of an FD group change** is a real violation of the rule naming the cell, in the ``rule|t1|t2`` form
of ``dqkit.repair.hypergraph.violation_id``: the changed cell's row paired with the row of the smallest
id in the same group holding a different value (``t1 < t2`` by the key's ordering); the rule is the
smallest rule name among the groups holding the cell. (The hypergraph route takes the smallest such id
in text order over every violation naming the cell, which needs the pairs; the two agree on BigDansing's
Table 1 and differ at most in which violation is named.)

``FD_ROUTES`` names the two routes of FD rules in ``dqkit.repair.repair`` (``fd_route``): ``groupby``
(this module, the default) and ``hypergraph`` (classes from the candidate fixes), kept for comparison.
Denial constraints and UDF rules always take the hypergraph route; so do FDs repaired by equivalence
classes together with them (their fixes may join FD cells into DC classes).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from dqkit.primitives.components import run_connected_components
from dqkit.rules import FunctionalDependency
from dqkit.runtime.sparkutil import checkpoint_on_read, col, local_frame
from dqkit.primitives.violations import not_null

__all__ = ["FD_ROUTES", "fd_group_repair", "fd_families"]

FD_ROUTES = ("groupby", "hypergraph")
_V, _T, _N, _NF, _MT = "_dq_v", "_dq_t", "_dq_n", "_dq_nf", "_dq_mt"
_G, _P, _CLS = "_dq_g", "_dq_partner", "_dq_class"


def fd_families(rules: Sequence[FunctionalDependency], tid: str) -> list[tuple[FunctionalDependency, str]]:
    """The (rule, right-hand attribute) pairs that can change a cell: not the key, not on the left too."""
    out = []
    for r in rules:
        for a in dict.fromkeys(r.rhs):
            if a != tid and a not in r.lhs:
                out.append((r, a))
    return out


def _vid(rule: Column, t: Column, partner: Column) -> Column:
    """``rule|t1|t2`` for the pair (t, partner), ``t1 < t2`` (``hypergraph.violation_id``'s text)."""
    return F.concat_ws("|", rule, F.least(t, partner).cast("string"), F.greatest(t, partner).cast("string"))


def _groups(table: DataFrame, rule: FunctionalDependency, attr: str, tid: str,
            types: Mapping[str, str]) -> tuple[DataFrame, DataFrame, list[str]]:
    """``(cells, groups, xs)`` of one (FD, attribute): ``cells (tid, xs.., _v, _t)`` the rows with a
    non-NULL left side and ``attr``; ``groups (xs.., _v, _t, _n, _g, _partner)`` one row per value of
    each dirty block (more than one distinct value), with its cell count, the group id ``_g =
    (rule, attr, smallest tid of the block)`` and ``_partner``: the smallest tid of the block holding
    another value (the other row of the violation id)."""
    lhs = list(rule.lhs)
    xs = [f"_dq_x{i}" for i in range(len(lhs))]
    cells = (table.where(not_null(lhs, dict(types)) & col(attr).isNotNull())
             .select(col(tid).alias("tid"), *[col(x).alias(n) for x, n in zip(lhs, xs)],
                     col(attr).alias(_V), col(attr).cast("string").alias(_T)))
    agg = cells.groupBy(*xs, _V, _T).agg(F.count(F.lit(1)).alias(_N), F.min("tid").alias(_MT))
    w = Window.partitionBy(*xs)
    first = F.min(F.struct(F.col(_MT).alias("mt"), F.col(_V).alias("v"))).over(w)
    agg = agg.withColumn("_dq_p1", first)
    # the smallest tid holding a value other than the block's first one: NULL when the block is clean
    agg = agg.withColumn("_dq_p2", F.min(F.when(F.col(_V) != F.col("_dq_p1.v"), F.col(_MT))).over(w))
    gid = F.struct(F.lit(rule.name).alias("rule"), F.lit(attr).alias("attr"), F.col("_dq_p1.mt").alias("mt"))
    partner = F.when(F.col(_V) != F.col("_dq_p1.v"), F.col("_dq_p1.mt")).otherwise(F.col("_dq_p2"))
    groups = agg.where(F.col("_dq_p2").isNotNull()).select(*xs, _V, _T, _N, gid.alias(_G), partner.alias(_P))
    return cells, groups, xs


def fd_group_repair(table: DataFrame, rules: Sequence[FunctionalDependency], tid: str, types: Mapping[str, str],
                    frozen: DataFrame | None = None) -> tuple[DataFrame, dict[str, int]]:
    """The changes giving every equivalence class of ``rules`` (FDs) its target value, computed from
    groups (see the module): ``(tid, attr, old, new, rules, violation_id)``, one row per changed cell
    (``old``/``new`` as text), and ``equivalence_class_repair``'s statistics (``classes``, ``cells``,
    ``largest_class``, ``components_rounds``: rounds of the group graph's components).

    ``table`` holds the ``tid`` column and the rules' columns; ``types`` maps columns to Spark type
    names (NaN on a left side counts as NULL, as in detection); ``frozen``: cells ``(tid, attr)`` that
    must not change.
    """
    families = fd_families(rules, tid)
    spark = table.sparkSession
    if not families:
        return _empty(spark, table.schema[tid].dataType), {"classes": 0, "cells": 0, "largest_class": 0,
                                                            "components_rounds": 0}
    shared = {a for a, n in Counter(a for _, a in families).items() if n > 1}
    fz_of = {}
    if frozen is not None:
        fz = frozen.select(F.col("tid").cast(table.schema[tid].dataType).alias("tid"), "attr").distinct()
        fz_of = {a: fz.where(F.col("attr") == a).select("tid") for _, a in families}

    votes: list[DataFrame] = []  # (class, _t, _n, _nf)
    class_rules: list[DataFrame] = []  # (class, rules)
    pending: list[tuple[str, DataFrame, DataFrame, list[str], str]] = []  # (attr, cells, groups, xs, rule)
    members: dict[str, list[DataFrame]] = {}  # shared attr -> (tid, _t, _g, _partner) of its cells
    for rule, attr in families:
        cells, groups, xs = _groups(table, rule, attr, tid, types)
        if attr in shared:
            keep = groups.select(*xs, _V, _T, _G, _P)
            members.setdefault(attr, []).append(cells.join(keep, [*xs, _V, _T]).select("tid", _T, _G, _P))
            continue
        groups = checkpoint_on_read(groups)  # read by the votes and the changes (kept by the first)
        if attr in fz_of:  # frozen cells per (group, value): few, joined to the group rows
            nf = (cells.join(fz_of[attr], "tid").groupBy(*xs, _V, _T).agg(F.count(F.lit(1)).alias(_NF)))
            groups = groups.join(nf, [*xs, _V, _T], "left").fillna(0, [_NF])
        else:
            groups = groups.withColumn(_NF, F.lit(0))
        votes.append(groups.select(F.col(_G).alias(_CLS), _T, _N, _NF))
        class_rules.append(groups.select(F.col(_G).alias(_CLS), F.array(F.col(_G)["rule"]).alias("rules")).distinct())
        pending.append((attr, cells, groups, xs, rule.name))

    rounds = 0
    shared_cells: list[tuple[str, DataFrame]] = []
    for attr, parts in members.items():
        m = parts[0]
        for p in parts[1:]:
            m = m.unionByName(p)
        m = checkpoint_on_read(m)  # read by the edges, the votes and the changes (kept by the first)
        first = F.min(_G).over(Window.partitionBy("tid"))
        edges = m.select(F.col(_G).alias("src"), first.alias("dst")).where(F.col("src") != F.col("dst")).distinct()
        run = run_connected_components(edges)
        rounds = max(rounds, run.iterations)
        m = (m.join(run.components, F.col(_G) == F.col("node"), "left")
             .select("tid", _T, _G, _P, F.coalesce(F.col("component"), F.col(_G)).alias(_CLS)))
        cells = m.select("tid", _T, _CLS).distinct()
        if attr in fz_of:
            cells = cells.join(fz_of[attr].withColumn(_NF, F.lit(1)), "tid", "left").fillna(0, [_NF])
        else:
            cells = cells.withColumn(_NF, F.lit(0))
        votes.append(cells.groupBy(_CLS, _T).agg(F.count(F.lit(1)).alias(_N), F.sum(_NF).alias(_NF)))
        class_rules.append(m.groupBy(_CLS).agg(F.array_sort(F.collect_set(F.col(_G)["rule"])).alias("rules")))
        shared_cells.append((attr, m))

    allv = votes[0]
    for v in votes[1:]:
        allv = allv.unionByName(v)
    allv = checkpoint_on_read(allv)  # kept by the class statistics below, read again by the changes
    pick = F.min(F.struct((-F.col(_NF)).alias("a"), (-F.col(_N)).alias("b"), F.col(_T).alias("v")))
    target = allv.groupBy(_CLS).agg(pick["v"].alias("_dq_target"))
    rules_of = class_rules[0]
    for r in class_rules[1:]:
        rules_of = rules_of.unionByName(r)

    out: list[DataFrame] = []
    for attr, cells, groups, xs, name in pending:
        moving = (groups.join(target, F.col(_G) == F.col(_CLS)).where(F.col(_T) != F.col("_dq_target"))
                  .select(*xs, _V, _T, F.col("_dq_target"), _P))
        ch = cells.join(moving, [*xs, _V, _T])
        if attr in fz_of:
            ch = ch.join(fz_of[attr], "tid", "left_anti")
        out.append(ch.select("tid", F.lit(attr).alias("attr"), F.col(_T).alias("old"),
                             F.col("_dq_target").alias("new"), F.array(F.lit(name)).alias("rules"),
                             _vid(F.lit(name), F.col("tid"), F.col(_P)).alias("violation_id")))
    for attr, m in shared_cells:
        ch = m.join(target, _CLS).where(F.col(_T) != F.col("_dq_target"))
        if attr in fz_of:
            ch = ch.join(fz_of[attr], "tid", "left_anti")
        named = F.min(F.struct(F.col(_G)["rule"].alias("rule"), F.col(_P).alias("p")))
        ch = (ch.groupBy("tid", _T, "_dq_target", _CLS).agg(named.alias("_dq_named"))
              .join(rules_of, _CLS))
        out.append(ch.select("tid", F.lit(attr).alias("attr"), F.col(_T).alias("old"),
                             F.col("_dq_target").alias("new"), "rules",
                             _vid(F.col("_dq_named.rule"), F.col("tid"), F.col("_dq_named.p")).alias("violation_id")))
    changes = out[0]
    for c in out[1:]:
        changes = changes.unionByName(c)
    sizes = allv.groupBy(_CLS).agg(F.sum(_N).alias("n")).agg(
        F.count(F.lit(1)).alias("classes"), F.sum("n").alias("cells"), F.max("n").alias("largest")).collect()[0]
    stats = {"classes": int(sizes["classes"] or 0), "cells": int(sizes["cells"] or 0),
             "largest_class": int(sizes["largest"] or 0), "components_rounds": rounds}
    return changes, stats


def _empty(spark, tid_type) -> DataFrame:
    from pyspark.sql import types as T

    schema = T.StructType([T.StructField("tid", tid_type), T.StructField("attr", T.StringType()),
                           T.StructField("old", T.StringType()), T.StructField("new", T.StringType()),
                           T.StructField("rules", T.ArrayType(T.StringType())),
                           T.StructField("violation_id", T.StringType())])
    return local_frame(spark, [], schema)
