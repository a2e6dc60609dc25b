"""The entry points of ``dqkit.repair``, which the package re-exports on first use (so that importing
the package, its constants and its manifests needs no pyspark)."""
from __future__ import annotations

import os
import time
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.errors import ParameterError
from dqkit.runtime.progress import ProgressCallback
from dqkit.repair._result import RepairResult
from dqkit.repair.changelist import with_violation_ids
from dqkit.repair.blackbox import COMPONENT_COLUMNS, ComponentRepair, repair_components
from dqkit.repair.equivalence import apply_changes, equivalence_class_repair
from dqkit.repair.fdgroups import FD_ROUTES, fd_group_repair
from dqkit.repair.holistic import holistic_component_repair, value_kind
from dqkit.repair.hypergraph import ViolationHypergraph, violation_hypergraph
from dqkit.rules import DenialConstraint, FunctionalDependency, as_rules
from dqkit.runtime.session import get_spark
from dqkit.primitives.checked_keys import check_key_once
from dqkit.primitives.keys import check_reserved
from dqkit.rules import validate_rules
from dqkit.io.sources import CATALOG_PREFIX, read_table
from dqkit.runtime.sparkutil import cancellable, checkpoint, checkpoint_on_read, col, local_frame
from dqkit.primitives.violations import row_position, tuple_ids
from dqkit.repair.methods import METHODS

__all__ = ["repair", "RepairResult", "ViolationHypergraph", "violation_hypergraph", "METHODS", "FD_ROUTES",
           "COMPONENT_COLUMNS", "repair_components", "rule_methods"]

HIDDEN_TID = "__dqkit_tid"
HIDDEN_POS = "__dqkit_pos"
_ORDERING = ("<", "<=", ">", ">=")


def rule_methods(rules: Any, method: str = "auto") -> dict[str, str]:
    """The repair method of each rule (by name) under ``method``: ``"auto"`` sends DCs with an
    ordering comparison to ``"holistic"`` and every other rule to ``"equivalence-class"``."""
    out = {}
    for r in as_rules(rules):
        if method != "auto":
            out[r.name] = method
        elif isinstance(r, DenialConstraint) and any(p.op in _ORDERING for p in r.predicates):
            out[r.name] = "holistic"
        else:
            out[r.name] = "equivalence-class"
    return out


def repair(table: Any, rules: Any, *, key: str | None = None,
           method: str | ComponentRepair = "auto", max_iterations: int = 10,
           freeze_after: int = 3, spark: SparkSession | None = None, name: str | None = None,
           progress: ProgressCallback | None = None, dry_run: bool = False,
           fd_route: str = "groupby", trust_key: bool = False) -> RepairResult:
    """Repair ``table`` against ``rules``: detect -> repair rounds until no violation with a fix remains.

    ``table``/``rules``/``key`` as in ``dqkit.detect.detect``. The key must be unique and non-NULL: it
    is checked first (``dqkit.primitives.keys.check_key``, ``InvalidKeyError``), because a fix computed for one
    row would otherwise land on every row sharing its key. Without a key, rows get a content id
    stable under recomputation (see ``_with_row_ids``).
    ``method``: one of ``METHODS`` or a function ``f(component: pandas.DataFrame) -> pandas.DataFrame``
    (black-box repair; it gets ``COMPONENT_COLUMNS`` and returns ``tid, attr, new``).
    ``max_iterations``: at most that many repair rounds. ``freeze_after``: a cell changed that many
    times is never changed again. ``progress(stage, item, done, total)`` is called with stage
    ``"repair"`` after each round. Returns a ``RepairResult`` whose ``repaired`` DataFrame has the
    input's rows (in the input's order), columns and types; ``exit_code`` is 0 when no violation remains.
    ``change_list`` holds one row per changed cell (``dqkit.repair.changelist``). ``dry_run``: the
    result is computed alike, but saving it writes only the change list (review it, then
    ``dqkit.repair.review.apply_changes``).
    ``fd_route``: how FD rules repaired by equivalence classes find their classes, one of ``FD_ROUTES``:
    ``"groupby"`` (one aggregation per FD, ``dqkit.repair.fdgroups``) or ``"hypergraph"`` (from the
    pairwise candidate fixes); both give the same repaired table and changes (up to which violation a
    change names). When DCs or UDF rules are repaired by equivalence classes too, all take the
    hypergraph route.
    ``trust_key=True`` skips the key check, for a caller that checked this key on these rows already
    (a widget that ran ``detect --since`` first); a re-run on the same DataFrame with unchanged inputs
    reuses the first check anyway (``dqkit.primitives.checked_keys``).
    """
    from dqkit.detect import detect

    blackbox = callable(method)
    if not blackbox and method not in METHODS:
        raise ParameterError(f"unknown repair method {method!r}",
                             hint=f"one of {', '.join(METHODS)}, or a function repairing one component")
    if fd_route not in FD_ROUTES:
        raise ParameterError(f"unknown fd_route {fd_route!r}", hint=f"one of {', '.join(FD_ROUTES)}")
    if max_iterations < 1:
        raise ParameterError("max_iterations must be >= 1")
    if freeze_after < 1:
        raise ParameterError("freeze_after must be >= 1")
    spark = spark or get_spark()
    rule_list = as_rules(rules)
    df = read_table(table, spark)
    label = name or (table if isinstance(table, str) else "table")
    check_reserved(df.columns, table=label, command="repair")
    types = {f.name: f.dataType for f in df.schema.fields}
    validate_rules(rule_list, {c: t.simpleString() for c, t in types.items()}, key)  # before any Spark job
    if key is not None and not trust_key:
        check_key_once(df, key, table=label, command="repair")
    hidden = key is None
    tid = HIDDEN_TID if hidden else key
    current = _with_row_ids(df, table, key)
    attrs = [a for a in types if a != tid]
    kinds = {a: value_kind(t.simpleString()) for a, t in types.items()}
    if blackbox:
        routes = {r.name: "black-box" for r in rule_list}
        fn: ComponentRepair | None = method  # type: ignore[assignment]
        method_label = f"black-box ({getattr(method, '__name__', type(method).__name__)})"
    else:
        routes = rule_methods(rule_list, method)  # type: ignore[arg-type]
        fn = holistic_component_repair(kinds) if "holistic" in routes.values() else None
        method_label = " + ".join(m for m in ("equivalence-class", "holistic") if m in routes.values()) or "none"
    ec_rules = sorted(r for r, m in routes.items() if m == "equivalence-class")
    cc_rules = sorted(r for r, m in routes.items() if m in ("holistic", "black-box"))
    by_name = {r.name: r for r in rule_list}
    fd_groups = (fd_route == "groupby" and bool(ec_rules)
                 and all(isinstance(by_name[r], FunctionalDependency) for r in ec_rules))
    type_names = {c: t.simpleString() for c, t in types.items()}

    history: list[dict[str, Any]] = []  # one entry per repair round that found violations
    detections: list[dict[str, int]] = []  # violations per rule: the input, then after each round
    changes: list[DataFrame] = []
    counts: DataFrame | None = None  # (tid, attr, n): times each cell was changed
    first_detection = None
    iterations = 0
    stop = "no violation"
    with cancellable("the repair"):
        current = checkpoint_on_read(current)  # materialised by the first detection's scan
        while True:
            det = detect(current.drop(HIDDEN_POS), rule_list, key=tid, spark=spark, name=label, trust_key=True)
            detections.append(det.counts)
            if first_detection is None:
                first_detection = det
            if det.total_violations == 0:
                stop = "no violation"
                break
            if iterations >= max_iterations:
                stop = f"max_iterations={max_iterations} reached"
                break
            # candidate fixes are built only where read (the FD groupBy route never needs them)
            frozen = None if counts is None else counts.where(F.col("n") >= freeze_after).select("tid", "attr")
            t0 = time.perf_counter()
            entry: dict[str, Any] = {"iteration": iterations + 1, "violations": det.total_violations}
            history.append(entry)
            parts: list[DataFrame] = []
            if fd_groups:  # classes from one aggregation per FD: no pair, no fix is built
                delta, stats = fd_group_repair(current, [by_name[r] for r in ec_rules], tid, type_names, frozen)
                delta = checkpoint_on_read(delta.withColumn("method", F.lit("equivalence-class")))  # counted below
                entry.update(stats)
                parts.append(delta)
            elif ec_rules:
                # only the cell = cell fixes serve; materialised once, as the classes read them several times
                eq = det.candidate_fixes.where(F.col("rule").isin(ec_rules) & (F.col("op") == "=")
                                 & F.col("rhs_tid").isNotNull()).transform(checkpoint)
                delta, stats = equivalence_class_repair(eq, key=tid, frozen=frozen)
                delta = checkpoint_on_read(delta.withColumn("method", F.lit("equivalence-class")))  # counted below
                entry.update(stats)
                parts.append(delta)
            if cc_rules and fn is not None:
                held = frozen
                if parts:  # cells the equivalence step changed this round stay as it set them
                    mine = parts[0].select("tid", "attr")
                    held = mine if held is None else held.unionByName(mine)
                hg = violation_hypergraph(det, rules=cc_rules)
                delta_cc = (repair_components(hg, fn, frozen=held, immutable=(tid,))
                            .withColumn("method", F.lit("black-box" if blackbox else "holistic")).transform(checkpoint))
                sizes = hg.component_sizes().agg(F.count(F.lit(1)).alias("n"), F.max("cells").alias("m")).collect()[0]
                entry.update(components=int(sizes["n"] or 0), largest_component=int(sizes["m"] or 0))
                parts.append(delta_cc)
            cols = ["tid", "attr", "old", "new", "rules", "method"]
            delta = parts[0].select(*cols) if len(parts) == 1 else parts[0].select(*cols).unionByName(
                parts[1].select(*cols))
            changed = delta.count()
            entry.update(changed=changed, seconds=round(time.perf_counter() - t0, 4))
            if changed == 0:
                stop = "no violation left has a fix this method can apply"
                break
            iterations += 1
            # an FD group change names its violation itself (dqkit.repair.fdgroups); the others by the fixes
            logged = [p.select(*cols, "violation_id") if "violation_id" in p.columns
                      else with_violation_ids(p.select(*cols), det.candidate_fixes) for p in parts]
            log = logged[0] if len(logged) == 1 else logged[0].unionByName(logged[1])
            changes.append(log.withColumn("iteration", F.lit(iterations)))
            step = delta.groupBy("tid", "attr").agg(F.count(F.lit(1)).alias("n"))
            counts = step if counts is None else (counts.unionByName(step).groupBy("tid", "attr")
                                                  .agg(F.sum("n").alias("n")))  # small: each round's delta is checkpointed
            current = checkpoint_on_read(apply_changes(current, tid, delta, attrs, types))  # read by the next detection
            if det is not first_detection:
                det.unpersist()
            if progress is not None:
                progress("repair", f"iteration {iterations}", iterations, max_iterations)

    tid_type = current.schema[tid].dataType
    all_changes = _union_changes(spark, changes, tid_type)
    repaired = current.orderBy(HIDDEN_POS).drop(HIDDEN_POS)
    if hidden:
        repaired = repaired.drop(HIDDEN_TID)
    return RepairResult(table=label, method=method_label, key=key, repaired=repaired, changes=all_changes,
                        iterations=iterations, history=tuple(history), detections=tuple(detections), final=det,
                        max_iterations=max_iterations,
                        freeze_after=freeze_after, stop_reason=stop,
                        input_paths=(table,) if isinstance(table, str) else (),
                        rule_methods=routes, first_detection=first_detection, dry_run=dry_run)


def _with_row_ids(df: DataFrame, table: Any, key: str | None) -> DataFrame:
    """``df`` with ``HIDDEN_POS`` (the order of the output) and, without a key, ``HIDDEN_TID``.

    The row id is stable under recomputation, so a fix computed for a row can only land on that row:
    without a key it is the content id of ``tuple_ids`` (the row's fingerprint, ``#k`` for the k-th
    exact copy). For a table read from files, copies are counted in file order (``row_position``:
    file, split, place in the split), so ids and output order are reproducible; for a DataFrame or
    a catalog table (no stable position exists) the output is ordered by the row id (or the key)
    instead, and exact copies, identical in every column, are interchangeable.
    """
    from_files = isinstance(table, (str, os.PathLike)) and not os.fspath(table).startswith(CATALOG_PREFIX)
    pos = row_position(df) if from_files else None
    if pos is not None:
        out = df.select("*", pos.alias(HIDDEN_POS))
        if key is None:
            out = out.select("*", tuple_ids(df, None, order=[F.col(HIDDEN_POS)], columns=df.columns).alias(HIDDEN_TID))
        return out
    if key is None:
        return df.select("*", tuple_ids(df, None).alias(HIDDEN_TID)).withColumn(HIDDEN_POS, F.col(HIDDEN_TID))
    return df.withColumn(HIDDEN_POS, col(key))


def _union_changes(spark: SparkSession, changes: list[DataFrame], tid_type: T.DataType) -> DataFrame:
    schema = T.StructType([T.StructField("tid", tid_type), T.StructField("attr", T.StringType()),
                           T.StructField("old", T.StringType()), T.StructField("new", T.StringType()),
                           T.StructField("rules", T.ArrayType(T.StringType())),
                           T.StructField("violation_id", T.StringType()),
                           T.StructField("iteration", T.IntegerType()), T.StructField("method", T.StringType())])
    out = local_frame(spark, [], schema)
    for c in changes:
        out = out.unionByName(c.select(*[F.col(f.name).cast(f.dataType) for f in schema.fields]))
    return out
