"""The entry points of ``dqkit.detect``, which the package re-exports on first use (so that importing
the package, its constants and its manifests needs no pyspark)."""
from __future__ import annotations

import time
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.detect._plan import MODES, TID, _Plan, _select_violations, _side_frames
from dqkit.detect._result import DetectionResult, RuleSummary, of_violations
from dqkit.detect._udf import udf_plan
from dqkit.detect.ocjoin import _ocjoin_plan, restricted_pairs
from dqkit.errors import ParameterError, RuleError
from dqkit.primitives.fingerprint import row_fingerprint
from dqkit.primitives.checked_keys import check_key_once
from dqkit.primitives.keys import check_reserved
from dqkit.rules import (
    NEGATE, Attr, Const, DenialConstraint, FunctionalDependency, Job, UDFRule, as_rules,
    type_class, validate_rules,
)
from dqkit.runtime.progress import ProgressCallback
from dqkit.runtime.session import get_spark
from dqkit.detect.since_manifest import rule_columns
from dqkit.io.sources import read_table
from dqkit.runtime.sparkutil import cancellable, col, local_frame, spark_plan
from dqkit.primitives.violations import conjunction, disjunction, fix_schema, fix_struct, not_null, predicate_column, tuple_ids

__all__ = ["detect", "tuple_ids", "spark_plan", "DetectionResult", "RuleSummary", "MODES", "restricted_pairs",
           "lazy_violations", "fd_count", "fd_pairs", "dirty_blocks"]


# -------------------------------------------------------------------------------------- rule plans
def _fd_plan(rule: FunctionalDependency, scope: DataFrame, types: dict[str, str]) -> _Plan:
    lhs, rhs = list(rule.lhs), list(rule.rhs)
    s = scope.select(TID, *[col(c) for c in rule.columns]).where(not_null(lhs, types))
    dirty = dirty_blocks(s, lhs, rhs)
    def viol() -> DataFrame:
        d = s.join(dirty, on=lhs, how="left_semi")
        a = d.select(*[col(c).alias("a_" + c) for c in [TID] + list(rule.columns)])
        b = d.select(*[col(c).alias("b_" + c) for c in [TID] + list(rule.columns)])
        cond = conjunction([col("a_" + c) == col("b_" + c) for c in lhs]) & (col("a_" + TID) < col("b_" + TID))
        differs = disjunction([F.coalesce(col("a_" + r) != col("b_" + r), F.lit(False)) for r in rhs])
        return (a.join(b, on=cond & differs, how="inner")
                .select(F.lit(rule.name).alias("rule"), col("a_" + TID).alias("t1"), col("b_" + TID).alias("t2")))

    frame = _fd_count_frame(s, lhs, rhs[0]) if len(rhs) == 1 else None

    def count() -> tuple[int, int]:
        if frame is not None:
            row = frame.collect()[0]
            return int(row["v"] or 0), int(row["cand"] or 0)
        cand = s.groupBy(*[col(c) for c in lhs]).agg(F.count(F.lit(1)).alias("_dq_c")).agg(
            F.sum(F.col("_dq_c") * (F.col("_dq_c") - 1) / 2)).collect()[0][0]
        return viol().count(), int(cand or 0)

    logical = (f"Scope({', '.join(rule.columns)}) -> Block({', '.join(lhs)}) -> Iterate(pairs) -> "
               f"Detect({' or '.join(f't1.{r} != t2.{r}' for r in rhs)}) -> GenFix")
    physical = (f"Block+UCrossProduct: hash block on ({', '.join(lhs)}); blocks with one rhs value "
                f"skipped; unordered pairs t1.tid < t2.tid inside blocks; count by block arithmetic")
    return _Plan(rule, "Block+UCrossProduct", logical, physical, viol, count, count_frame=frame)


def dirty_blocks(s: DataFrame, lhs: list[str], rhs: list[str]) -> DataFrame:
    """The left-hand-side values of an FD's dirty blocks: more than one distinct non-NULL value on some
    right-hand attribute, i.e. ``min(A) != max(A)`` (both skip NULLs; a block of NULLs has neither).

    One aggregation: a distinct count per block is two (Spark plans ``countDistinct`` as a distinct
    then a count, with a shuffle each). The same blocks (test: a property test against the distinct
    count, NULLs and NaN included; Spark's ``=`` and ordering both take NaN = NaN and -0.0 = 0.0).
    """
    aggs = [F.min(col(r)).alias(f"_dq_lo{i}") for i, r in enumerate(rhs)] + [
        F.max(col(r)).alias(f"_dq_hi{i}") for i, r in enumerate(rhs)]
    differs = disjunction([F.coalesce(F.col(f"_dq_lo{i}") != F.col(f"_dq_hi{i}"), F.lit(False))
                           for i in range(len(rhs))])
    return s.groupBy(*[col(c) for c in lhs]).agg(*aggs).where(differs).select(*[col(c) for c in lhs])


def _fd_count_frame(s: DataFrame, lhs: list[str], r: str) -> DataFrame:
    """One row ``v, cand``: a one-rhs FD's violating pairs and candidate pairs by block arithmetic (no pair built)."""
    g = s.groupBy(*[col(c) for c in lhs], col(r)).agg(F.count(F.lit(1)).alias("_dq_c"))
    g = g.withColumn("_dq_nn", F.when(col(r).isNotNull(), F.col("_dq_c")).otherwise(0))
    blk = g.groupBy(*[col(c) for c in lhs]).agg(
        F.sum("_dq_c").alias("_dq_n"), F.sum("_dq_nn").alias("_dq_n_nn"),
        F.sum(F.col("_dq_nn") * (F.col("_dq_nn") - 1) / 2).alias("_dq_same"))
    return blk.agg(F.sum(F.col("_dq_n_nn") * (F.col("_dq_n_nn") - 1) / 2 - F.col("_dq_same")).alias("v"),
                   F.sum(F.col("_dq_n") * (F.col("_dq_n") - 1) / 2).alias("cand"))


def _dc1_plan(rule: DenialConstraint, scope: DataFrame, types: dict[str, str], tid_type: T.DataType) -> _Plan:
    s = scope.select(*[col(c).alias("a_" + c) for c in [TID] + list(rule.columns)])
    v = s.where(conjunction([predicate_column(p, {1: "a_"}) for p in rule.predicates]))
    viol = v.select(F.lit(rule.name).alias("rule"), col("a_" + TID).alias("t1"),
                    F.lit(None).cast(tid_type).alias("t2"))
    logical = f"Scope({', '.join(rule.columns)}) -> Detect({' and '.join(map(str, rule.predicates))}) -> GenFix"
    return _Plan(rule, "Scope+Detect", logical, "Scope+Detect: one filter over the shared scan",
                 viol, lambda: (viol.count(), None), count_frame=_count_row(viol))


def _count_row(viol: DataFrame) -> DataFrame:
    """One row ``v, cand``: the number of violations, no candidate count."""
    return viol.agg(F.count(F.lit(1)).alias("v"), F.lit(None).cast("double").alias("cand"))


def _blocked_plan(rule: DenialConstraint, scope: DataFrame, types: dict[str, str]) -> _Plan:
    a, b = _side_frames(rule, scope, types)
    eqs = [p for p in rule.cross_predicates if p.op == "="]
    rest = [p for p in rule.cross_predicates if p.op != "="]
    sym = rule.symmetric
    cond = conjunction([predicate_column(p, {1: "a_", 2: "b_"}) for p in eqs + rest])
    cond = cond & ((col("a_" + TID) < col("b_" + TID)) if sym else (col("a_" + TID) != col("b_" + TID)))
    viol = _select_violations(a.join(b, on=cond, how="inner"), rule)
    op = "Block+UCrossProduct" if sym else "Block+CrossProduct"
    keys = ", ".join(f"{p.left.column}={p.right.column}" if p.left.column != p.right.column  # type: ignore[union-attr]
                     else p.left.column for p in eqs)
    logical = (f"Scope({', '.join(rule.columns)}) -> Block({keys}) -> Iterate(pairs) -> "
               f"Detect({' and '.join(map(str, rule.predicates))}) -> GenFix")
    pairs = "unordered pairs t1.tid < t2.tid" if sym else "ordered pairs t1.tid != t2.tid"
    physical = f"{op}: hash block on ({keys}); {pairs} inside blocks" + (
        f"; residual {' and '.join(map(str, rest))}" if rest else "")
    return _Plan(rule, op, logical, physical, viol, lambda: (viol.count(), None), count_frame=_count_row(viol))


# ------------------------------------------------------------------------------------------ GenFix
def _const_text(value: Any) -> Column:
    return F.lit(str(Const(value)))


def _candidate_fixes(rule: Any, viol: DataFrame, scope: DataFrame, tid_type: T.DataType,
                     types: dict[str, str]) -> DataFrame:
    """GenFix: candidate fixes ``cell op (cell | constant)`` for each violation of a declarative rule.

    FD: ``t2[city] = t4[city]`` for each differing rhs attribute, plus the lhs alternatives
    ``t2[zipcode] != 90210`` (kind ``lhs``). DC: each predicate negated (kind ``dc``).
    """
    cols = list(rule.columns)
    # the row id as _a_ + TID: a reserved name, so no rule column (aliased _a_ + column) can take it (a
    # column named t did, as _a_t)
    a = scope.select(col(TID).alias("_a_" + TID), *[col(c).alias("_a_" + c) for c in cols])
    b = scope.select(col(TID).alias("_b_" + TID), *[col(c).alias("_b_" + c) for c in cols])
    v = viol.join(a, F.col("t1") == F.col("_a_" + TID))
    if rule.arity == 2:
        v = v.join(b, F.col("t2") == F.col("_b_" + TID))
    ta, tb = F.col("t1"), F.col("t2")
    fixes: list[Column] = []
    if isinstance(rule, FunctionalDependency):
        for r in rule.rhs:
            fixes.append(fix_struct(ta, r, col("_a_" + r), "=", tb, r, col("_b_" + r), None, "rhs",
                                     when=F.coalesce(col("_a_" + r) != col("_b_" + r), F.lit(False))))
        for x in rule.lhs:
            for t, pre in ((ta, "_a_"), (tb, "_b_")):
                fixes.append(fix_struct(t, x, col(pre + x), "!=", None, None, None,
                                         _value_text(col(pre + x), types[x]), "lhs"))
    else:
        pre = {1: ("_a_", ta), 2: ("_b_", tb)}
        for p in rule.predicates:
            op = NEGATE[p.op]
            lp, lt = pre[p.left.tuple]
            if isinstance(p.right, Attr):
                rp, rt = pre[p.right.tuple]
                fixes.append(fix_struct(lt, p.left.column, col(lp + p.left.column), op, rt,
                                         p.right.column, col(rp + p.right.column), None, "dc"))
            else:
                fixes.append(fix_struct(lt, p.left.column, col(lp + p.left.column), op, None, None,
                                         None, _const_text(p.right.value), "dc"))
    out = v.select("rule", "t1", "t2", F.explode(F.array(*fixes)).alias("f")).where(F.col("f").isNotNull())
    return out.select("rule", "t1", "t2", F.col("f.tid").cast(tid_type).alias("tid"), "f.attr", "f.value", "f.op",
                      F.col("f.rhs_tid").cast(tid_type).alias("rhs_tid"), "f.rhs_attr", "f.rhs_value",
                      "f.constant", "f.kind", "f.fix")


def _value_text(value: Column, type_name: str) -> Column:
    """Text of a cell value as a rule constant: numbers bare, everything else quoted."""
    if type_class(type_name) == "numeric":
        return value.cast("string")
    return F.concat(F.lit("'"), F.regexp_replace(value.cast("string"), "'", "\\\\'"), F.lit("'"))


def _fused_counts(plans: list[_Plan]) -> dict[str, tuple[tuple[int, int | None], float]]:
    """The counts of every plan with a ``count_frame``, from one Spark job when there are two or more:
    ``{rule name: ((violations, candidates), seconds)}``, the job's time shared evenly between them
    (one job on a tiny table costs more than its work; on a large one the work is the same)."""
    framed = [p for p in plans if p.count_frame is not None]
    if len(framed) < 2:
        return {}
    t0 = time.perf_counter()
    parts = [p.count_frame.select(F.lit(i).alias("_dq_i"), F.col("v").cast("long").alias("v"),
                                  F.col("cand").cast("double").alias("cand")) for i, p in enumerate(framed)]
    union = parts[0]
    for part in parts[1:]:
        union = union.unionByName(part)
    rows = {r["_dq_i"]: r for r in union.collect()}
    share = (time.perf_counter() - t0) / len(framed)
    out = {}
    for i, p in enumerate(framed):
        r = rows[i]
        cand = int(r["cand"] or 0) if isinstance(p.rule, FunctionalDependency) else None
        out[p.rule.name] = ((int(r["v"] or 0), cand), share)
    return out


# -------------------------------------------------------------------------------------------- main
def detect(table: Any, rules: Any, *, key: str | None = None, mode: str = "violations",
           sample: int | None = None, nb_parts: int | None = None, consolidate: bool = True,
           spark: SparkSession | None = None, name: str | None = None,
           progress: ProgressCallback | None = None, trust_key: bool = False) -> DetectionResult:
    """Detect the violations of ``rules`` in ``table``.

    ``rules``: rule objects, rule text, a mapping name -> text, a rules file, or ``Job``s/``UDFRule``s.
    ``key``: the column identifying tuples; it must be unique and non-NULL, and is checked with one
    aggregation before detection (``dqkit.primitives.keys.check_key``; ``trust_key=True`` skips that, for a
    caller that checked it already, as repair does once before its rounds; a re-run on the same
    DataFrame with unchanged inputs reuses the first check, ``dqkit.primitives.checked_keys``). Default: a deterministic
    content id, see ``tuple_ids``.
    ``mode``: ``"violations"`` (lazy violation and candidate-fix DataFrames), ``"count"`` (counts
    only, no pair is materialised) or ``"sample"`` (at most ``sample`` violations per rule, the
    smallest (t1, t2), deterministic). Per-rule counts are always computed.
    ``nb_parts``: OCJoin range partitions (default 16). ``consolidate``: share one scan (R12).
    ``progress(stage, item, done, total)`` is called after each rule with stage ``"detect"`` and the
    rule's name (the protocol of ``dqkit.delta``). A run cancelled through its Spark job tag
    (``dqkit.runtime.progress.BackgroundRun``) raises ``CancelledError`` and keeps nothing cached.
    All rule, column and type errors are raised before any Spark job.
    """

    if mode not in MODES:
        raise ParameterError(f"unknown mode {mode!r}", hint=f"one of {', '.join(MODES)}")
    if mode == "sample" and (sample is None or sample < 1):
        raise ParameterError("mode='sample' needs sample >= 1")
    if sample is not None and mode == "violations":
        mode = "sample"
    if nb_parts is not None and nb_parts < 1:
        raise ParameterError("nb_parts must be >= 1")
    spark = spark or get_spark()
    df = read_table(table, spark)
    if isinstance(rules, Job):
        rules = rules.rule()
    rule_list = [r.rule() if isinstance(r, Job) else r for r in
                 (as_rules(rules) if not isinstance(rules, (list, tuple)) else
                  [x for r in rules for x in ([r] if isinstance(r, (Job, UDFRule)) else as_rules(r))])]
    if not rule_list:
        raise RuleError("no rules given")
    names = [r.name for r in rule_list]
    if len(set(names)) != len(names):
        raise RuleError(f"rule name {sorted(n for n in names if names.count(n) > 1)[0]!r} is used more than once")
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    validate_rules(rule_list, types, key)
    label = name or (table if isinstance(table, str) else "the table")
    check_reserved([c for c in types if not (trust_key and c == key)], table=label, command="detect")
    if key is not None and not trust_key:
        check_key_once(df, key, table=label, command="detect",
                       without="leave --key out so dqkit names rows by a content id")

    decl = [r for r in rule_list if not isinstance(r, UDFRule)]
    tid_type = df.schema[key].dataType if key else T.StringType()
    used = list(dict.fromkeys(c for r in decl for c in r.columns))
    # (one shared scope for several declarative rules; otherwise each rule builds its own below)
    shared = consolidate and len(decl) > 1
    scope = df.select(tuple_ids(df, key).alias(TID), *[col(c) for c in used]) if shared else df
    plans: list[_Plan] = []
    planned: list[float] = []  # seconds spent planning each rule
    summaries: list[RuleSummary] = []
    scan_seconds = 0.0
    try:
        with cancellable("the detection"):
            if shared:
                t0 = time.perf_counter()
                scope = scope.persist()
                scope.count()  # the one shared scan
                scan_seconds = time.perf_counter() - t0
            for rule in rule_list:
                t0 = time.perf_counter()
                rscope = scope if shared or isinstance(rule, UDFRule) else df.select(
                    tuple_ids(df, key).alias(TID), *[col(c) for c in rule.columns])
                if isinstance(rule, UDFRule):
                    plan = udf_plan(rule, spark, mode)
                elif isinstance(rule, FunctionalDependency):
                    plan = _fd_plan(rule, rscope, types)
                elif rule.arity == 1:
                    plan = _dc1_plan(rule, rscope, types, tid_type)
                elif any(p.op == "=" for p in rule.cross_predicates):
                    plan = _blocked_plan(rule, rscope, types)
                else:
                    plan = _ocjoin_plan(rule, rscope, types, tid_type, nb_parts, spark)
                plans.append(plan)
                planned.append(time.perf_counter() - t0)
            fused = _fused_counts(plans)
            for done, (plan, seconds) in enumerate(zip(plans, planned), start=1):
                t0 = time.perf_counter()
                if plan.rule.name in fused:
                    (nviol, ncand), share = fused[plan.rule.name]
                    seconds += share
                    plan.details["_counted_with"] = len(fused)
                else:
                    nviol, ncand = plan.count()  # (may add to the plan's details)
                details = dict(plan.details)
                seconds += time.perf_counter() - t0
                summaries.append(RuleSummary(plan.rule.name, plan.rule.kind, str(plan.rule), plan.operator,
                                             int(nviol), seconds, None if ncand is None else int(ncand), details))
                if progress is not None:
                    progress("detect", plan.rule.name, done, len(rule_list))
    except BaseException:
        if shared:  # a failed or cancelled run keeps nothing cached
            scope.unpersist()
        raise

    viol_cache: list[DataFrame] = []

    def viol_frames() -> list[DataFrame]:
        if not viol_cache:
            for plan in plans:
                v = plan.violations() if callable(plan.violations) else plan.violations
                if mode == "sample":
                    v = v.orderBy("t1", "t2").limit(int(sample))  # type: ignore[arg-type]
                if v.schema["t1"].dataType != tid_type:
                    v = v.select("rule", F.col("t1").cast(tid_type), F.col("t2").cast(tid_type))
                viol_cache.append(v)
        return viol_cache

    def violations_builder() -> DataFrame:
        frames = viol_frames()
        out = frames[0]
        for v in frames[1:]:
            out = out.unionByName(v)
        return out

    udf_fixes = {p.rule.name: p.details.get("_fixes") for p in plans if isinstance(p.rule, UDFRule)}

    def fixes_of(frames: list[DataFrame]) -> DataFrame:
        """GenFix over each plan's violations in ``frames`` (one frame per plan, in plan order)."""
        fixes = local_frame(spark, [], fix_schema(tid_type))
        for plan, v in zip(plans, frames):
            if isinstance(plan.rule, UDFRule):
                f = udf_fixes.get(plan.rule.name)
                if f is None:
                    continue
                f = f.select(*[F.col(fl.name).cast(fl.dataType) for fl in fixes.schema.fields])
                if frames is not viol_cache:  # only the fixes of the given violations
                    f = of_violations(f, v)
            else:
                src = scope if shared else df.select(tuple_ids(df, key).alias(TID),
                                                     *[col(c) for c in plan.rule.columns])
                f = _candidate_fixes(plan.rule, v, src, tid_type, types)
            fixes = fixes.unionByName(f)
        return fixes

    def fixes_builder() -> DataFrame:
        return fixes_of(viol_frames())

    def fixes_for_builder(violations: DataFrame) -> DataFrame:
        v = violations.select("rule", F.col("t1").cast(tid_type).alias("t1"), F.col("t2").cast(tid_type).alias("t2"))
        return fixes_of([v.where(F.col("rule") == p.rule.name) for p in plans])

    for s in summaries:
        s.details.pop("_fixes", None)
    logical = "\n".join(f"{p.rule.name}: {p.logical}" for p in plans)
    if shared:
        consolidated = (f"Scope(tid, {', '.join(used)}) -- one shared scan, read once for "
                        f"{', '.join(r.name for r in decl)}\n" +
                        "\n".join(f"  {p.rule.name}: {p.logical.split(' -> ', 1)[1] if ' -> ' in p.logical else p.logical}"
                                  for p in plans if not isinstance(p.rule, UDFRule)))
    else:
        consolidated = "(nothing to consolidate)\n" + logical
    consolidated += "".join(f"\n{p.rule.name}: {p.logical}" for p in plans if isinstance(p.rule, UDFRule) and shared)
    physical = "\n".join(f"{p.rule.name}: {p.physical}" for p in plans)
    return DetectionResult(
        table=name or (table if isinstance(table, str) else "table"), mode=mode, sample=sample,
        rules=tuple(rule_list), summaries=tuple(summaries), violations_builder=violations_builder, fixes_builder=fixes_builder,
        fixes_for_builder=fixes_for_builder,
        logical_plan=logical, consolidated_plan=consolidated, physical_plan=physical,
        scan_seconds=scan_seconds, shared_scope=scope if shared else None, key=key, schema=types,
        fingerprints=_fingerprints(df, key, rule_list) if key and mode == "violations" else None)


def _fingerprints(df: DataFrame, key: str, rules: list[Any]) -> DataFrame:
    """``key, _dq_fp_hi, _dq_fp_lo`` over the rules' columns (lazy), saved by ``--out`` for ``--since``."""
    hi, lo = row_fingerprint(df, rule_columns(rules))
    return df.select(col(key), hi.alias("_dq_fp_hi"), lo.alias("_dq_fp_lo"))


# ------------------------------------------------------------------ lazy building blocks (detect --since)
def lazy_capable(rule: Any) -> bool:
    """Whether ``lazy_violations`` can plan ``rule`` without a Spark job: an FD, a one-tuple DC or a DC
    with a cross-tuple equality (not a UDF rule, not an OCJoin DC, whose plans sample the data)."""
    if isinstance(rule, FunctionalDependency):
        return True
    return isinstance(rule, DenialConstraint) and (rule.arity == 1 or any(p.op == "=" for p in rule.cross_predicates))


def lazy_violations(df: DataFrame, rules: list[Any], key: str) -> DataFrame:
    """``rule, t1, t2``: the violations of ``rules`` in ``df`` (tuples named by ``key``) as ONE lazy frame.

    Runs no Spark job (no key check, no cached scan, no per-rule count), so a caller that fuses its own
    counts into one aggregation (``detect --since``) pays for the detection once, inside that job.
    The rules must be ``lazy_capable``, already validated, and ``key`` already checked unique.
    """
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    tid_type = df.schema[key].dataType
    out: DataFrame | None = None
    for rule in rules:
        if not lazy_capable(rule):
            raise RuleError(f"rule {rule.name!r} cannot be detected lazily", hint="use detect()")
        scope = df.select(col(key).alias(TID), *[col(c) for c in rule.columns])
        if isinstance(rule, FunctionalDependency):
            plan = _fd_plan(rule, scope, types)
        elif rule.arity == 1:
            plan = _dc1_plan(rule, scope, types, tid_type)
        else:
            plan = _blocked_plan(rule, scope, types)
        v = plan.violations() if callable(plan.violations) else plan.violations
        v = v.select("rule", F.col("t1").cast(tid_type).alias("t1"), F.col("t2").cast(tid_type).alias("t2"))
        out = v if out is None else out.unionByName(v)
    if out is None:
        raise RuleError("no rules given")
    return out


def fd_count(df: DataFrame, rule: FunctionalDependency) -> DataFrame | None:
    """One row ``rule, n``: the violations of a one-rhs FD in ``df`` counted by block arithmetic (lazy,
    no pair built); None for an FD with several rhs attributes (count its listed violations instead)."""
    if len(rule.rhs) != 1:
        return None
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    lhs = list(rule.lhs)
    s = df.select(*[col(c) for c in rule.columns]).where(not_null(lhs, types))
    return _fd_count_frame(s, lhs, rule.rhs[0]).select(F.lit(rule.name).alias("rule"),
                                                         F.coalesce(F.col("v"), F.lit(0)).cast("long").alias("n"))


def fd_pairs(df: DataFrame, rule: FunctionalDependency, key: str) -> DataFrame:
    """``rule, t1, t2`` (``t1 < t2``, each pair once): every violation of FD ``rule`` in ``df`` (tuples
    named by ``key``, already checked unique) as one lazy plan without a join (``detect --since``).

    One groupBy over the left-hand side and the rhs values gathers the keys sharing both; one over the
    left-hand side gathers a block's rhs groups, and only blocks with more than one group are paired:
    every two groups whose rhs values differ (NULL differs from nothing, as in ``_fd_plan``) give the
    cross product of their keys. The work is the number of groups squared plus the violations, not
    the block's size squared (higher-order functions run interpreted). The join-based plan (dirty
    blocks, a semi join, a self join) reads its input three times and broadcasts twice per rule: on a
    cached input, more jobs than the whole rest of ``--since``.
    """
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    lhs, rhs = list(rule.lhs), list(rule.rhs)
    rs = [f"_dq_r{i}" for i in range(len(rhs))]
    s = df.where(not_null(lhs, types) & disjunction([col(r).isNotNull() for r in rhs]))  # all-NULL rhs: no pair
    groups = s.groupBy(*[col(c) for c in lhs], *[col(r).alias(n) for r, n in zip(rhs, rs)]).agg(
        F.collect_list(col(key)).alias("_dq_ts"))
    blocks = groups.groupBy(*[col(c) for c in lhs]).agg(
        F.collect_list(F.struct(*rs, "_dq_ts")).alias("_dq_gs")).where(F.size("_dq_gs") > 1)
    gs = F.col("_dq_gs")

    def pairs_of(g: Column, i: Column) -> Column:
        def differs(h: Column) -> Column:
            return disjunction([F.coalesce(g.getField(n) != h.getField(n), F.lit(False)) for n in rs])

        def cross(h: Column) -> Column:
            return F.flatten(F.transform(g.getField("_dq_ts"), lambda a: F.transform(
                h.getField("_dq_ts"), lambda b: F.struct(F.least(a, b).alias("t1"), F.greatest(a, b).alias("t2")))))
        return F.flatten(F.transform(F.filter(F.slice(gs, i + 2, F.size(gs)), differs), cross))

    tid_type = df.schema[key].dataType
    p = blocks.select(F.explode(F.flatten(F.transform(gs, pairs_of))).alias("_dq_p"))
    return p.select(F.lit(rule.name).alias("rule"), F.col("_dq_p.t1").cast(tid_type).alias("t1"),
                    F.col("_dq_p.t2").cast(tid_type).alias("t2"))
