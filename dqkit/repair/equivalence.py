"""Equivalence-class repair (BigDansing §5.2, R30–R32) and applying changes by a join on ``tid`` (R34).

The cells joined by candidate fixes ``cell = cell`` (FD rhs fixes, equality fixes of DCs) form
equivalence classes: the connected components of that fix graph (``dqkit.primitives.components``). Each class
gets one target value by two aggregation steps, BigDansing's "distributed word counting":

1. ``(class, value) -> count`` of distinct cells holding the value (each cell counted once);
2. per class, the value with the highest count.

Tie-break (R31, unspecified by the paper): the smallest value text in Spark's string ordering (binary
UTF-8; so ``"10" < "9"`` for numbers). Frozen cells (changed too often, §2.2) are never changed: a class
holding a frozen cell takes a frozen cell's value (the smallest such text if they differ). Fixes on the
key column are ignored, so tuple ids stay stable. Other fixes (``!=``, ``<``, constants) are not used
by this method.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.primitives.components import run_connected_components
from dqkit.runtime.sparkutil import checkpoint, col

__all__ = ["equivalence_classes", "equivalence_class_repair", "apply_changes", "CHANGE_COLUMNS"]

CHANGE_COLUMNS = ("tid", "attr", "old", "new", "rules")


def _cell(tid: str, attr: str):
    return F.struct(F.col(tid).alias("tid"), F.col(attr).alias("attr"))


def equivalence_classes(fixes: DataFrame, key: str | None = None) -> tuple[DataFrame, DataFrame, int]:
    """The equivalence classes of the ``cell = cell`` fixes among ``fixes`` (candidate-fix frame).

    Returns ``(cells, rules, iterations)``: ``cells (tid, attr, value, class)`` with ``class`` the
    smallest cell ``struct(tid, attr)`` of the class, ``rules (class, rules)`` the sorted names of the
    rules whose fixes built each class, and the components' round count.
    """
    eq = fixes.where((F.col("op") == "=") & F.col("rhs_tid").isNotNull())
    if key is not None:
        eq = eq.where((F.col("attr") != key) & (F.col("rhs_attr") != key))
    edges = eq.select(_cell("tid", "attr").alias("src"), _cell("rhs_tid", "rhs_attr").alias("dst"), "rule")
    run = run_connected_components(edges.select("src", "dst"))
    cls = run.components
    cells = (eq.select("tid", "attr", "value")
             .union(eq.select(F.col("rhs_tid").alias("tid"), F.col("rhs_attr").alias("attr"),
                              F.col("rhs_value").alias("value"))).distinct())
    cells = cells.join(cls, _cell("tid", "attr") == cls["node"]).select("tid", "attr", "value",
                                                                        F.col("component").alias("class"))
    rules = (edges.join(cls, edges["src"] == cls["node"]).groupBy(F.col("component").alias("class"))
             .agg(F.array_sort(F.collect_set("rule")).alias("rules")))
    return cells, rules, run.iterations


def equivalence_class_repair(fixes: DataFrame, key: str | None = None,
                             frozen: DataFrame | None = None) -> tuple[DataFrame, dict[str, int]]:
    """The changes that give every equivalence class its target value: ``(tid, attr, old, new, rules)``,
    one row per changed cell (``old``/``new`` as text), and statistics of the classes
    (``classes``, ``cells``, ``largest_class``, ``components_rounds``).

    ``frozen``: cells ``(tid, attr)`` that must not change.
    """
    cells, rules, rounds = equivalence_classes(fixes, key)
    cells = cells.transform(checkpoint)
    if frozen is not None:
        fz = frozen.select("tid", "attr", F.lit(1).alias("_dq_frozen"))
        cells = cells.join(fz, ["tid", "attr"], "left").fillna(0, ["_dq_frozen"])
    else:
        cells = cells.withColumn("_dq_frozen", F.lit(0))
    # step 1: (class, value) -> number of distinct cells holding it (frozen ones counted apart)
    votes = cells.groupBy("class", "value").agg(F.count(F.lit(1)).alias("n"), F.sum("_dq_frozen").alias("nf"))
    # step 2: per class the value with most frozen cells, then most cells, then the smallest text
    pick = F.min(F.struct((-F.col("nf")).alias("a"), (-F.col("n")).alias("b"), F.col("value").alias("v")))
    target = votes.groupBy("class").agg(pick["v"].alias("_dq_target"))
    changes = (cells.join(target, "class").where((F.col("_dq_frozen") == 0) & ~F.col("value").eqNullSafe(
        F.col("_dq_target"))).join(rules, "class", "left")
        .select("tid", "attr", F.col("value").alias("old"), F.col("_dq_target").alias("new"), "rules"))
    sizes = cells.groupBy("class").agg(F.count(F.lit(1)).alias("n")).agg(
        F.count(F.lit(1)).alias("classes"), F.sum("n").alias("cells"), F.max("n").alias("largest")).collect()[0]
    stats = {"classes": int(sizes["classes"] or 0), "cells": int(sizes["cells"] or 0),
             "largest_class": int(sizes["largest"] or 0), "components_rounds": rounds}
    return changes, stats


def apply_changes(table: DataFrame, tid: str, changes: DataFrame, attrs: Sequence[str],
                  types: Mapping[str, T.DataType] | None = None) -> DataFrame:
    """``table`` with ``changes (tid, attr, new)`` applied by a left join on ``tid`` (R34): same rows,
    same columns in the same order with the same types; ``new`` (text) is cast to each column's type.
    Only the columns in ``attrs`` can change. The input DataFrame is not modified (a new one is
    returned)."""
    types = types or {f.name: f.dataType for f in table.schema.fields}
    attrs = [a for a in dict.fromkeys(attrs) if a in table.columns and a != tid]
    if not attrs:
        return table
    piv = changes.groupBy(F.col("tid").alias("_dq_t")).agg(
        *[F.max(F.when(F.col("attr") == a, F.col("new"))).alias(f"_dq_new{i}") for i, a in enumerate(attrs)])
    joined = table.join(piv, col(tid) == F.col("_dq_t"), "left")
    idx = {a: i for i, a in enumerate(attrs)}
    out = []
    for c in table.columns:
        if c in idx:
            new = F.col(f"_dq_new{idx[c]}")
            out.append(F.when(new.isNotNull(), new.cast(types[c])).otherwise(col(c)).alias(c))
        else:
            out.append(col(c))
    return joined.select(*out)
