"""``detect NEW --since OLD``: violations new, resolved and persisting since OLD, re-checking only what changed.

A violation's identity is its rule and the sorted keys of its rows (``k1 <= k2``; ``k2`` NULL for a
one-tuple rule). Changed keys ``C`` are found as in Diftong's delta, by key: a row is inserted, deleted
or updated when its key is on one side only or its 128-bit fingerprint over the rules' columns differs
(a change to a column no rule reads changes no violation). Then, per rule,

* a violation among unchanged rows is the same in OLD and NEW: it **persists**;
* every other violation involves a changed row; its partner shares the changed row's FD left-hand side,
  or satisfies the DC's equality predicates with it, on the same side. So detection runs only on the
  changed rows plus those partners (``restrict``), on each side, and keeps the violations touching ``C``:
  ``A_old`` and ``A_new``. New = ``A_new - A_old``, resolved = ``A_old - A_new``, persisting =
  (violations not touching ``C``) + ``A_old & A_new``.

Violations among unchanged rows come from the saved result of OLD when ``--since`` names one (no full
detection at all), else from NEW, listed and counted; the lists stay lazy. With a saved result nothing
is proportional to the persisting violations but one stream over the saved list (``A_old`` is the saved
violations touching ``C``, the stream filtered by the changed keys; the rest is the same stream, never
shuffled or recounted): a rule's persisting count is the saved result's count of its identities
(``manifest.json``, ``identities``) minus its resolved ones. A rule whose two orders may both violate
(``pairs_unique`` false) or a result from an older dqkit has no such count: its rest is counted.

FDs are the exception when OLD is a table (or a saved result without the FD's count), by measurement:
an FD's full detection is grouped over its left-hand side (``dqkit.detect.fd_pairs``), and its persisting
violations need that full detection of NEW anyway. So such an FD is
detected in full on each side's cached rows (OLD's violations read from the saved result) and diffed
(measured faster than its changed blocks at 0.1 / 1 / 5 %: benchmarks/RESULTS.md). With a saved count (``partners_rule(counted=True)``) an FD
is restricted like a DC: its persisting count is the saved count minus resolved, so nothing groups
every row of NEW.

Spark jobs and passes (what dominates on small and medium tables):

* With a saved OLD, ONE action first finds the buckets of keys whose ``(key, fingerprint)`` multisets
  differ (``dqkit.detect._since_buckets``: partial sums, a few thousand rows shuffled); only the rows in
  those buckets go through the shuffle by key below (at 1M rows and 0.1 % changed, ~2 % of them).
* ONE shuffle by key over both sides (``_by_key``) gives each key's rows per side and its change; only
  keys and fingerprints are shuffled (and, per side, the hashes of the changed rows' partner columns).
  ONE action over it gives the key checks of NEW (and of OLD when a table; a refusal reads exactly as
  ``check_key``'s, via ``refuse_key``), the change kinds and, when at most ``LITERAL_KEYS`` keys changed,
  the changed keys and their partner hashes themselves. With those, every later step is a filter
  against literal sets (``dqkit.detect._since_probe``): a side's restriction is one filter, "touches a
  changed key" another; no broadcast, no semi join. More changed keys (or a key or equality whose
  values cannot be matched as literals) take the broadcast route: ``_by_key`` cached, the changed keys
  broadcast at each use (``restrict``, ``touching``).
* Each side's rows (``_rows``: the key and the rules' columns) are cached, filled by the change job,
  when a later step reads every row again (OLD a table; a rule detected in full); with a saved OLD and
  every rule restricted, NEW is read once more instead, by the one filter of its restriction.
* An FD's violations are grouped over its left-hand side (``dqkit.detect.fd_pairs``): only blocks that
  violate are paired, a block's rhs groups crossed. No semi join, no broadcast.
* DCs: every rule's restricted detection is one lazy frame per side (``lazy_violations`` over the union
  of their restrictions, cached).
* Both sides' identities are flagged and grouped once (``_tagged``, cached) and ONE aggregation
  (``_counts``) gives every rule's new / resolved / persisting counts (on 8 rows and 3 FDs, OLD a
  table: 2 jobs; 55 before the fused counts, 11 before the fused key checks).

Cost rule: a rule is detected in full on both sides (then diffed) when the change is large
(``changed keys > MAX_CHANGE`` of the rows of NEW), when it is an FD (above), a DC with no equality
predicate (its partners are all rows) or a UDF rule.
"""
from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from dqkit.detect import detect, fd_pairs, lazy_capable, lazy_violations
from dqkit.detect import _since_probe as probes
from dqkit.detect._since_buckets import changed_buckets, in_buckets
from dqkit.detect._since_probe import Literal, plan_probe
from dqkit.detect._since_result import RuleSince, SinceResult
from dqkit.errors import RuleError, SchemaMismatchError
from dqkit.primitives import changes
from dqkit.primitives.fingerprint import FP_HI, FP_LO, row_fingerprint
from dqkit.primitives.keys import check_reserved, refuse_key
from dqkit.rules import DenialConstraint, FunctionalDependency, UDFRule, as_rules, validate_rules
from dqkit.runtime.session import get_spark
from dqkit.io.sources import read_table
from dqkit.runtime.sparkutil import cancellable, col
from dqkit.detect.since_manifest import (
    FINGERPRINTS, check_saved, identity_counts, pairs_unique, rule_columns, saved_manifest,
)

#: Cost rule: above this share of NEW's rows changed, every rule is detected in full on both sides.
#: The crossover measured with benchmarks/bench_since.py is in benchmarks/RESULTS.md ("detect --since").
MAX_CHANGE = 0.05
K1, K2 = "key1", "key2"

__all__ = ["detect_since", "MAX_CHANGE", "identities", "restrict", "row_fingerprints", "partners_rule"]


def identities(violations: DataFrame, distinct: bool = True) -> DataFrame:
    """``rule, t1, t2`` violations as distinct identities ``rule, k1, k2`` (sorted keys, k2 NULL for one row).

    ``distinct=False`` when the rules list each identity once (``pairs_unique``): no shuffle, a stream."""
    t1, t2 = F.col("t1"), F.col("t2")
    out = violations.select(
        "rule", F.when(t2.isNull(), t1).otherwise(F.least(t1, t2)).alias(K1),
        F.when(t2.isNull(), t2).otherwise(F.greatest(t1, t2)).alias(K2))
    return out.distinct() if distinct else out


def _ids(violations: DataFrame, rules: list[Any]) -> DataFrame:
    """The identities of ``rules``' violations in ``violations`` (``rule, t1, t2``), distinct only when one
    of the rules may list an identity twice (an asymmetric DC whose two orders can both violate)."""
    names = [r.name for r in rules]
    return identities(violations.where(F.col("rule").isin(names)),
                      distinct=not all(pairs_unique(r) for r in rules))


def row_fingerprints(df: DataFrame, key: str, columns: list[str]) -> DataFrame:
    """``key, _dq_fp_hi, _dq_fp_lo``: each row's fingerprint over ``columns`` (what ``--since`` compares)."""
    hi, lo = row_fingerprint(df, columns)
    return df.select(col(key), hi.alias(FP_HI), lo.alias(FP_LO))


#: Why an FD is detected in full on each side (``fd_pairs``, no join) and diffed when OLD is a table (or a
#: saved result without its count): measured faster than restricting it at every share tried
#: (benchmarks/RESULTS.md, "detect --since"), since its persisting violations need a full detection anyway.
FD_FULL = "an FD: measured faster in full than restricted"


def partners_rule(rule: Any, counted: bool = False) -> str | None:
    """Why ``rule`` is detected in full on both sides, or None when its partners can be restricted.

    ``counted``: OLD is a saved result holding the rule's identity count, so its persisting violations
    need no detection at all (saved count minus resolved): an FD is then restricted to the changed
    blocks like a DC, instead of grouping every row of NEW."""
    if isinstance(rule, FunctionalDependency):
        return None if counted else FD_FULL
    if isinstance(rule, UDFRule):
        return "a UDF rule: its partners are unknown"
    if isinstance(rule, DenialConstraint) and rule.arity == 2 and not _equalities(rule):
        return "a DC with no equality predicate: its partners are all rows"
    return None


def _equalities(rule: DenialConstraint) -> list[tuple[str, str]]:
    """(t1 column, t2 column) of each cross-tuple equality predicate."""
    out = []
    for p in rule.cross_predicates:
        if p.op == "=":
            a, b = p.left, p.right
            out.append((a.column, b.column) if a.tuple == 1 else (b.column, a.column))  # type: ignore[union-attr]
    return out


def _semi(side: DataFrame, values: DataFrame, side_cols: list[str]) -> DataFrame:
    """Rows of ``side`` whose ``side_cols`` equal one row of ``values`` (broadcast; NULL matches nothing)."""
    names = [f"_dq_v{i}" for i in range(len(side_cols))]
    v = values.toDF(*names).distinct()
    cond = None
    for c, n in zip(side_cols, names):
        eq = side[c] == v[n]
        cond = eq if cond is None else cond & eq
    return side.join(F.broadcast(v), cond, "left_semi")


def restrict(side: DataFrame, rule: Any, changed: DataFrame, key: str) -> DataFrame:
    """The rows of ``side`` a violation of ``rule`` involving a changed row can hold: the changed rows
    (``changed``: keys) plus the rows sharing their FD left-hand side or meeting their DC equalities."""
    mine = side.join(F.broadcast(changed.select(key)), key, "left_semi")
    if isinstance(rule, FunctionalDependency):
        lhs = list(rule.lhs)
        return _semi(side, mine.select(*[col(c) for c in lhs]), lhs)
    if rule.arity == 1:
        return mine
    eqs = _equalities(rule)
    as_t1 = _semi(side, mine.select(*[col(a) for a, _ in eqs]), [b for _, b in eqs])  # partners as t2
    as_t2 = _semi(side, mine.select(*[col(b) for _, b in eqs]), [a for a, _ in eqs])  # partners as t1
    return mine.unionByName(as_t1).unionByName(as_t2).dropDuplicates([key])


def touching(ids: DataFrame, changed: DataFrame, key: str, touch: bool = True) -> DataFrame:
    """The identities with a row in ``changed`` (``touch``), or with none."""
    c = F.broadcast(changed.select(col(key).alias("_dq_c")).distinct())
    hit1 = ids.join(c, ids[K1] == c["_dq_c"], "left").select(ids["*"], c["_dq_c"].isNotNull().alias("_dq_h1"))
    c2 = F.broadcast(changed.select(col(key).alias("_dq_c2")).distinct())
    hit = hit1.join(c2, hit1[K2] == c2["_dq_c2"], "left").select(
        *[hit1[n] for n in ids.columns], (hit1["_dq_h1"] | c2["_dq_c2"].isNotNull()).alias("_dq_h"))
    return hit.where(F.col("_dq_h") if touch else ~F.col("_dq_h")).drop("_dq_h")


def _restricted(side: DataFrame, rules: list[Any], changed: DataFrame, key: str, keep: list[DataFrame]) -> DataFrame:
    """Identities of the violations of ``rules`` touching a changed row of ``side``: ONE detection of every
    rule over the union of their restrictions (``restrict``), cached (small: the changed rows and their
    partners; each rule's plan reads it several times) and appended to ``keep`` for the caller to release."""
    s = side.select(*[col(c) for c in dict.fromkeys([key, *[c for r in rules for c in r.columns]])])
    parts = [restrict(s, r, changed, key) for r in rules]
    sub = (_union(parts).dropDuplicates([key]) if len(parts) > 1 else parts[0]).persist()
    keep.append(sub)
    return touching(identities(lazy_violations(sub, rules, key)), changed, key)


def _probed(side: DataFrame, rules: list[Any], lit: Literal, which: int, keep: list[DataFrame]) -> DataFrame:
    """``_restricted`` by literal sets (``dqkit.detect._since_probe``): the side's restriction is ONE filter
    (cached: each rule's plan reads it), FDs paired inside their blocks (``fd_pairs``), and the violations
    touching a changed key kept by a filter. No broadcast, no semi join. ``which``: 1 NEW, 0 OLD."""
    key = lit.key
    s = side.select(*[col(c) for c in dict.fromkeys([key, *[c for r in rules for c in r.columns]])])
    sub = s.where(lit.restriction(which)).persist()
    keep.append(sub)
    fds = [r for r in rules if isinstance(r, FunctionalDependency)]
    others = [r for r in rules if r not in fds]
    frames = [_pairs(fd_pairs(sub, r, key)) for r in fds]
    if others:  # not distinct: ``_tagged`` groups the identities anyway
        frames.append(identities(lazy_violations(sub, others, key), distinct=False))
    return _union(frames).where(lit.touching())


def _full(side: DataFrame | None, rows: DataFrame | None, rules: list[Any], key: str, spark: SparkSession,
          name: str) -> DataFrame:
    """Identities of every violation of ``rules`` in a side: lazily over its cached ``rows`` (``_rows``) when
    the rules allow it, else by ``detect`` over the table ``side`` itself (a UDF rule may read any column)."""
    fds = [r for r in rules if isinstance(r, FunctionalDependency)]  # grouped, no join (``fd_pairs``)
    lazy = [r for r in rules if lazy_capable(r) and r not in fds]
    other = [r for r in rules if not lazy_capable(r)]
    frames = [_pairs(fd_pairs(rows, r, key)) for r in fds]
    if lazy:
        frames.append(identities(lazy_violations(rows, lazy, key)))
    if other:
        frames.append(identities(detect(side, other, key=key, trust_key=True, spark=spark, name=name).violations))
    return _union(frames)


def _pairs(violations: DataFrame) -> DataFrame:
    """``rule, t1, t2`` with ``t1 < t2`` and no repeats (``fd_pairs``) as identities, without a distinct."""
    return violations.select("rule", F.col("t1").alias(K1), F.col("t2").alias(K2))


_NN, _NO = changes.NEW_ROWS, changes.OLD_ROWS


def _rows(df: DataFrame, key: str, cols: list[str]) -> DataFrame:
    """One side's rows: the key and the rules' columns (cached by the caller, filled by ``_by_key``'s job)."""
    return df.select(col(key), *[col(c) for c in cols if c != key])


def _by_key(new_rows: DataFrame, old: DataFrame, key: str, cols: list[str], *, table: bool,
            carry: list[tuple[str, Any]] | None = None) -> DataFrame:
    """ONE shuffle by key over both sides (``dqkit.primitives.changes.by_key``): per key value, its rows on
    each side (``_dq_nn``, ``_dq_no``: the key checks) and the change (inserted, deleted, updated by
    fingerprint, or NULL). ``old``: OLD's rows (``_rows``) when ``table``, else a saved result's
    fingerprints. Only keys and fingerprints are shuffled; the sides' values stay in the caller's caches of
    ``_rows``, which this job fills as it reads them. ``carry``: ``(name, column)`` computed on each side's
    rows (the probe's partner hashes, ``dqkit.detect._since_probe``), kept per side as ``_dq_1name`` (NEW)
    and ``_dq_0name`` (OLD, NULL for a saved result)."""
    carry = carry or []

    def fp(rows: DataFrame) -> DataFrame:
        hi, lo = row_fingerprint(rows, cols)
        return rows.select(col(key), hi.alias(FP_HI), lo.alias(FP_LO), *[c.alias(n) for n, c in carry])

    o = fp(old) if table else old.select(col(key), F.col(FP_HI), F.col(FP_LO))
    return changes.by_key(fp(new_rows), o, key, carry=[n for n, _ in carry])


def _key_checks(per: DataFrame, key: str, label: str, old_label: str | None, carry: list[str] | None = None,
                cap: int = 0) -> tuple[int, int | None, dict[str, int], list[Any] | None]:
    """Rows of NEW (and of OLD when a table) and the change kinds, by ONE job over ``_by_key``; refuses a
    repeated or NULL key on NEW, then on OLD, with ``check_key``'s own message (``refuse_key``).

    ``carry``: the same action also returns the changed keys' rows (``key``, ``change`` and these columns)
    when at most ``cap`` (the two parts read one shuffle: Spark reuses the exchange), else None."""
    k = col(key)
    stats = []
    for n in (_NN, _NO):
        rep = k.isNotNull() & (F.col(n) > 1)
        stats += [F.coalesce(F.sum(n), F.lit(0)), F.coalesce(F.sum(F.when(k.isNull(), F.col(n))), F.lit(0)),
                  F.count(F.when(rep, 1)), F.coalesce(F.sum(F.when(rep, F.col(n))), F.lit(0))]
    kinds = changes.CHANGE_KINDS
    stats += [F.count(F.when(F.col("change") == w, 1)) for w in kinds]
    agg = per.agg(F.array(*[x.cast("bigint") for x in stats]).alias("_dq_a"))
    rows: list[Any] | None = None
    if carry is None:
        got = agg.collect()
    else:
        detail = per.where(F.col("change").isNotNull()).select(k, "change", *carry).limit(cap + 1)
        types = {f.name: f.dataType for f in detail.schema.fields}
        both = agg.select(F.lit(0).alias("_dq_w"), "_dq_a", *[F.lit(None).cast(types[c]).alias(c) for c in detail.columns])
        got = both.unionByName(detail.select(F.lit(1).alias("_dq_w"), F.lit(None).cast("array<bigint>").alias("_dq_a"),
                                             *[col(c) for c in detail.columns])).collect()
        rows = [r for r in got if r["_dq_w"] == 1]
        rows = rows if len(rows) <= cap else None
    a = [int(x) for x in next(r for r in got if r["_dq_a"] is not None)["_dq_a"]]
    for j, (n, name) in enumerate(((_NN, label), (_NO, old_label))):
        if name is None:
            continue
        side = per.where(F.col(n) > 0).select(k.alias("_dq_k0"), F.col(n).alias("_dq_n"))
        refuse_key(side, key, nulls=a[4 * j + 1], repeats=a[4 * j + 2], repeat_rows=a[4 * j + 3], table=name,
                   command="detect --since", without="give a key column")
    rows_old = a[4] if old_label is not None else None
    return a[0], rows_old, {w: a[8 + i] for i, w in enumerate(kinds) if a[8 + i]}, rows


def _union(frames: list[DataFrame]) -> DataFrame:
    return functools.reduce(DataFrame.unionByName, frames)


def _rules(rules: Any) -> list[Any]:
    out = [x for r in (rules if isinstance(rules, (list, tuple)) else [rules])
           for x in ([r] if isinstance(r, (FunctionalDependency, DenialConstraint, UDFRule)) else as_rules(r))]
    if not out:
        raise RuleError("no rules given")
    return out


def detect_since(table: Any, since: Any, rules: Any, *, key: str, spark: SparkSession | None = None,
                 name: str | None = None, max_change: float = MAX_CHANGE) -> SinceResult:
    """Violations of ``rules`` in ``table`` as new, resolved and persisting since ``since``.

    ``since``: the old table (any source ``detect`` reads) or a folder ``detect --out`` wrote for it
    with the same rules and key. ``key`` is required and checked unique and non-NULL on both sides.
    ``max_change``: the cost rule's threshold (share of NEW's rows changed) above which every rule is
    detected in full on both sides.
    """
    t0 = time.perf_counter()
    spark = spark or get_spark()
    rule_list = _rules(rules)
    label = name or (str(table) if isinstance(table, (str, Path)) else "the new table")
    new = read_table(table, spark)
    types = {f.name: f.dataType.simpleString() for f in new.schema.fields}
    validate_rules(rule_list, types, key)
    cols = rule_columns(rule_list)
    manifest = saved_manifest(since)
    old: DataFrame | None = None
    saved_n: dict[str, int] = {}  # the saved result's identities per rule (its manifest), where exact
    check_reserved([c for c in types if c != key], table=label, command="detect --since")
    if manifest is not None:
        check_saved(manifest, since, rule_list, key, types)
        folder = Path(since).expanduser()
        old_fp = spark.read.parquet((folder / FINGERPRINTS).as_posix())
        saved = spark.read.parquet((folder / "violations").as_posix())  # rule, t1, t2 (read lazily)
        saved_n = identity_counts(manifest, rule_list)
    else:
        old = read_table(since, spark)
        otypes = {f.name: f.dataType.simpleString() for f in old.schema.fields}
        check_reserved([c for c in otypes if c != key], table=str(since), command="detect --since")
        diff = [f"{c} ({otypes.get(c, 'missing')} -> {types[c]})" for c in [key, *cols]
                if otypes.get(c) != types[c]]
        if diff:
            raise SchemaMismatchError(f"detect --since: the rules' columns differ between {since} and "
                                      f"{label}: {', '.join(diff)}",
                                      hint="compare versions with the same types, or cast them first")
    with cancellable("detect --since"):
        why = {r.name: partners_rule(r, old is None and r.name in saved_n) for r in rule_list}
        candidates = [r for r in rule_list if not why[r.name]]  # restricted unless the change is large
        probe = plan_probe(candidates, types, key) if candidates else None
        # each side's rows are cached (filled by the change job) when a later step reads every row again: OLD a
        # table, or a rule detected in full; else NEW is read once more, by one filter (the restriction)
        keep = old is not None or len(candidates) < len(rule_list)
        new_rows = _rows(new, key, cols)
        new_rows = new_rows.persist() if keep else new_rows
        old_rows = _rows(old, key, cols).persist() if old is not None else None
        own = {c: types[c] for c in cols} | {key: types[key]}
        carry = probe.hash_columns(own) if probe is not None else None
        new_fp = row_fingerprints(new_rows, key, cols)
        tagged: DataFrame | None = None
        subs: list[DataFrame] = []  # the cached restrictions, one per side
        per: DataFrame | None = None
        try:
            # a saved OLD: only the keys in buckets whose (key, fingerprint) multisets differ are shuffled
            total, buckets = changed_buckets(new_fp, old_fp, key) if old is None else (0, None)
            sides = ((in_buckets(new_rows, key, buckets), in_buckets(old_fp, key, buckets)) if buckets is not None
                     else (new_rows, old_rows if old_rows is not None else old_fp))
            per = _by_key(*sides, key, cols, table=old is not None, carry=carry)
            per = per.persist() if probe is None else per  # the broadcast route reads it once per use
            carried = [f"_dq_{s_}{n}" for s_ in (1, 0) for n, _ in carry] if carry is not None else None
            rows_new, rows_old, kinds, rows = _key_checks(per, key, label, None if old is None else str(since),
                                                          carried, probes.LITERAL_KEYS)
            rows_new = total if buckets is not None else rows_new
            if probe is not None and rows is None:  # too many changed keys for literal sets
                per = per.persist()
            changed = per.where(F.col("change").isNotNull()).select(key, "change")
            lit = (Literal.of(rows, key, probe, own, (1, 0) if old is not None else (1,))
                   if probe is not None and rows is not None else None)
            n_changed = sum(kinds.values())
            share = n_changed / max(rows_new, 1)
            large = share > max_change
            full_rules = [r for r in rule_list if large or why[r.name]]
            rest_rules = [r for r in rule_list if r not in full_rules]
            rest_names = [r.name for r in rest_rules]
            olds: list[DataFrame] = []  # identities on OLD's side and on NEW's, diffed by one aggregation
            news: list[DataFrame] = []
            rest: DataFrame | None = None  # violations among unchanged rows (persisting), listed lazily
            counted: DataFrame | None = None  # the part of ``rest`` counted by listing
            if full_rules:
                news.append(_full(new, new_rows, full_rules, key, spark, label))
                olds.append(_full(old, old_rows, full_rules, key, spark, str(since)) if old is not None
                            else _ids(saved, full_rules))
            if rest_rules:
                news.append(_restricted(new_rows, rest_rules, changed, key, subs) if lit is None
                            else _probed(new_rows, rest_rules, lit, 1, subs))
                if old is None:
                    # the saved list is streamed past the changed keys, never shuffled: the touched part is
                    # diffed; the rest persists, counted as the saved count minus resolved
                    mine = _ids(saved, rest_rules)
                    olds.append(touching(mine, changed, key) if lit is None else mine.where(lit.touching()))
                    rest = touching(mine, changed, key, touch=False) if lit is None else mine.where(~lit.touching())
                    recount = [n for n in rest_names if n not in saved_n]  # a result from an older dqkit
                    counted = rest.where(F.col("rule").isin(recount)) if recount else None
                else:
                    olds.append(_restricted(old_rows, rest_rules, changed, key, subs) if lit is None
                                else _probed(old_rows, rest_rules, lit, 0, subs))
                    mine_ids = _ids(lazy_violations(new_rows, rest_rules, key), rest_rules)
                    rest = counted = (touching(mine_ids, changed, key, touch=False) if lit is None
                                      else mine_ids.where(~lit.touching()))
            tagged = _tagged(olds, news).persist()
            counts = _counts(tagged, counted)
            per_rule = []
            for r in rule_list:
                c = counts.get(r.name, {})
                n_new, n_gone, n_both = c.get("new", 0), c.get("resolved", 0), c.get("both", 0)
                if r in full_rules:
                    how, n_rest = "full: " + ("the change is large" if large else str(why[r.name])), 0
                else:
                    how = "changed rows and their partners"
                    # saved count = untouched (persisting as they are) + touched (resolved or both)
                    n_rest = (saved_n[r.name] - n_gone - n_both if old is None and r.name in saved_n
                              else c.get("rest", 0))
                mine_t = tagged.where(F.col("rule") == r.name)
                frames = {"new": _which(mine_t, "new"), "resolved": _which(mine_t, "resolved")}
                both = _which(mine_t, "both")
                frames["persisting"] = (both.unionByName(rest.where(F.col("rule") == r.name))
                                        if rest is not None and r in rest_rules else both)
                per_rule.append(RuleSince(r.name, how, frames,
                                          {"new": n_new, "resolved": n_gone, "persisting": n_rest + n_both}))
        except BaseException:
            for f in [per, new_rows, old_rows, tagged, *subs]:
                if f is not None:
                    f.unpersist()
            raise
    lists = {w: _which(tagged, w) for w in ("new", "resolved", "both")}  # every rule at once: no union per rule
    lists["persisting"] = _union([lists.pop("both"), *([rest] if rest is not None else [])])
    return SinceResult(table=label, since=str(since), key=key, reused=manifest is not None, lists=lists,
                       rules=tuple(rule_list), per_rule=tuple(per_rule), changes=kinds,
                       rows_new=rows_new, rows_old=rows_old, share=share, max_change=max_change,
                       full=large, seconds=time.perf_counter() - t0, changed=changed,
                       fingerprints=new_fp, schema=types, cached=(tagged, per, new_rows, old_rows, *subs))


_O, _N = "_dq_o", "_dq_n"


def _tagged(olds: list[DataFrame], news: list[DataFrame]) -> DataFrame:
    """``rule, key1, key2, _dq_o, _dq_n``: every identity of either side once, flagged by the sides holding it."""
    parts = [f.select("rule", K1, K2, F.lit(o).alias(_O), F.lit(n).alias(_N))
             for frames, o, n in ((olds, 1, 0), (news, 0, 1)) for f in frames]
    return _union(parts).groupBy("rule", K1, K2).agg(F.max(_O).alias(_O), F.max(_N).alias(_N))


def _which(tagged: DataFrame, which: str) -> DataFrame:
    """One list of ``_tagged``: ``new`` (NEW only), ``resolved`` (OLD only) or ``both``."""
    o, n = F.col(_O) == 1, F.col(_N) == 1
    cond = {"new": n & ~o, "resolved": o & ~n, "both": o & n}[which]
    return tagged.where(cond).select("rule", K1, K2)


def _counts(tagged: DataFrame, counted: DataFrame | None) -> dict[str, dict[str, int]]:
    """Every rule's counts in ONE Spark job: new / resolved / both from ``tagged`` and ``rest`` (violations
    among unchanged rows, by listing) from ``counted``."""
    o, n = F.col(_O) == 1, F.col(_N) == 1
    what = F.when(o & n, "both").when(n, "new").otherwise("resolved")
    parts = [tagged.groupBy("rule", what.alias("what")).agg(F.count(F.lit(1)).alias("n"))]
    if counted is not None:
        parts.append(counted.groupBy("rule").agg(F.count(F.lit(1)).alias("n"))
                     .select("rule", F.lit("rest").alias("what"), "n"))
    out: dict[str, dict[str, int]] = {}
    for row in _union(parts).collect():
        out.setdefault(row["rule"], {})[row["what"]] = int(row["n"])
    return out
