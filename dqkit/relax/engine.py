"""The Daisy engine: registered tables and rules, queries cleaned on demand (Daisy §4–§6).

``Daisy`` holds, per registered table, its probabilistic version (``dqkit.relax.model``), its rules
(from ``dqkit.rules``, unchanged), the FD statistics, the DC violation pairs found so far and the cost
model. ``query(sql)`` runs the plan of ``plan_query``:

1. per table of the query, in FROM order, the **pushed-down selection**: the WHERE conjuncts that
   read only that table, evaluated over candidates (R12); for a table joined to earlier ones, also the
   join keys those parts may take (clean_⋈, R30: only the qualifying part of each side is cleaned);
2. ``clean_σ`` for every rule of that table the query touches (R4): FD relaxation (Algorithm 1),
   DC partial theta-join, then cleaning of the relaxed tuples not yet checked (R17, R19) under all the
   table's rules, merged (R27), and the in-place update of the probabilistic table (R11);
3. the probabilistic equi-join of the cleaned parts (R13: candidate sets intersect; both tuple ids
   kept), the conditions spanning tables, the projection, and GROUP BY after cleaning (R14).
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.errors import DqkitError, ParameterError, RuleError, UnknownTableError
from dqkit.keys import check_key, check_reserved
from dqkit.relax import dc as dcmod
from dqkit.relax import fd as fdmod
from dqkit.relax.cost import CostModel
from dqkit.relax.model import CAND_PREFIX, CAND_TYPE, CHECKED, TID, WORLD_RHS, cand_col, possible, possible_values
from dqkit.relax.sql import BoolOp, Cond, Pred, Query, aliases_of, conjuncts_of, parse_query
from dqkit.rules import DenialConstraint, FunctionalDependency, as_rules, validate_rules
from dqkit.sparkutil import cancellable, col
from dqkit.violations import tuple_ids

ProgressFn = Callable[[str, str, int, int], None]
from dqkit.relax.checks import STRATEGIES, check_daisy_params  # noqa: E402,F401 - STRATEGIES re-exported
# a delta row can hold long candidate arrays (a popular rhs value's lhs world): hint a broadcast only for small
# deltas and leave larger ones to Spark's own choice (a 37K-row delta exhausted a 1 GiB driver when hinted)
BROADCAST_DELTA_ROWS = 20_000


class StateMismatchError(DqkitError):
    """A ``--state`` folder written for another version of a table (its fingerprint differs)."""


@dataclass
class _Table:
    name: str
    source: Any
    key: str | None
    base: DataFrame  # TID + original columns (persisted)
    types: dict[str, str]
    columns: list[str]
    delta: DataFrame  # TID, CHECKED, candidate columns: only the tuples cleaning touched (persisted)
    delta_rows: int = 0
    fds: list[FunctionalDependency] = field(default_factory=list)
    dcs: list[DenialConstraint] = field(default_factory=list)
    stats: dict[str, fdmod.FDStats] = field(default_factory=dict)
    pairs: dict[str, DataFrame] = field(default_factory=dict)
    cost: CostModel | None = None
    fully_checked: bool = False
    fingerprint: str | None = None
    dc_checked_ranges: dict[str, set[int]] = field(default_factory=dict)
    dc_estimates: dict[str, Any] = field(default_factory=dict)

    @property
    def prob(self) -> DataFrame:
        """The probabilistic table: every base tuple, with the candidates and checks the delta holds.

        Cleaning writes only the delta (the cells it changed and the checks it made), so an update costs
        the size of the delta, not of the table (the paper's outer join of dataset and fixes, R11, is this
        view); a delta of at most ``BROADCAST_DELTA_ROWS`` rows is broadcast, so reading the view is a scan;
        a larger one is joined as Spark plans it."""
        d = F.broadcast(self.delta) if self.delta_rows <= BROADCAST_DELTA_ROWS else self.delta
        cands = [c for c in self.delta.columns if c.startswith(CAND_PREFIX)]
        return self.base.join(d, TID, "left").select(
            TID, *[col(c) for c in self.columns],
            F.coalesce(col(CHECKED), F.array().cast("array<string>")).alias(CHECKED), *[col(c) for c in cands])

    def set_delta(self, delta: DataFrame) -> None:
        """Keep only the tuples with a candidate or a check, persisted (the next query starts from it)."""
        cands = [c for c in delta.columns if c.startswith(CAND_PREFIX)]
        keep = F.size(F.coalesce(col(CHECKED), F.array().cast("array<string>"))) > 0
        for c in cands:
            keep = keep | col(c).isNotNull()
        self.delta = delta.where(keep).localCheckpoint(eager=True)
        self.delta_rows = self.delta.count()

    @property
    def rule_names(self) -> list[str]:
        return sorted([r.name for r in self.fds] + [r.name for r in self.dcs])

    @property
    def rule_columns(self) -> list[str]:
        return list(dict.fromkeys(c for r in [*self.fds, *self.dcs] for c in r.columns))


def _cond_column(cond: Cond | None, types: Mapping[str, Mapping[str, str]], prefix: Callable[[str], str],
                 dirty: bool = False) -> Column:
    """The Spark expression of a WHERE tree: ``possible`` semantics, or plain values when ``dirty``."""
    if cond is None:
        return F.lit(True)
    if isinstance(cond, Pred):
        c = cond.col
        if dirty:
            return F.coalesce({"=": col(prefix(c.alias) + c.column) == F.lit(cond.value),
                               "!=": col(prefix(c.alias) + c.column) != F.lit(cond.value),
                               "<": col(prefix(c.alias) + c.column) < F.lit(cond.value),
                               "<=": col(prefix(c.alias) + c.column) <= F.lit(cond.value),
                               ">": col(prefix(c.alias) + c.column) > F.lit(cond.value),
                               ">=": col(prefix(c.alias) + c.column) >= F.lit(cond.value)}[cond.op], F.lit(False))
        return possible(c.column, types[c.alias][c.column], cond.op, cond.value, prefix(c.alias))
    parts = [_cond_column(i, types, prefix, dirty) for i in cond.items]
    out = parts[0]
    for p in parts[1:]:
        out = (out & p) if cond.op == "and" else (out | p)
    return out


def _worlds(prob: DataFrame, cols: Sequence[str]) -> Column:
    """The worlds of each tuple: every world a candidate names, or ``[A]`` for an untouched tuple."""
    arrs = [F.coalesce(F.transform(col(cand_col(c)), lambda x: x["world"]), F.array().cast("array<string>"))
            for c in cols if cand_col(c) in prob.columns]
    if not arrs:
        return F.array(F.lit(WORLD_RHS))
    w = F.array_sort(F.array_distinct(F.flatten(F.array(*arrs))))
    return F.when(F.size(w) == 0, F.array(F.lit(WORLD_RHS))).otherwise(w)


class Daisy:
    """Query-driven cleaning over registered dirty tables (see the module docstring).

    ``strategy``: ``auto`` (the cost model decides per query, R35), ``incremental`` (never switch) or
    ``full`` (clean everything at the first query: offline cleaning with the same kernel).
    ``cost_units``: ``seconds`` (the cost model's rule with costs measured on this engine) or
    ``tuples`` (R34/R35 verbatim); see ``dqkit.relax.cost``.
    ``threshold``: Algorithm 2's th; a DC query whose estimated accuracy is below it is cleaned against
    the whole table (R38). ``strict``: DC range boundaries as the paper prints them (``<2000``).
    """

    def __init__(self, spark: SparkSession | None = None, *, strategy: str = "auto", threshold: float = 0.5,
                 strict: bool = True, nb_parts: int | None = None, partitions: int = 4,
                 cost_units: str = "seconds") -> None:
        from dqkit.session import get_spark

        check_daisy_params(strategy, threshold, partitions, nb_parts, cost_units)  # before Spark
        self.spark = spark or get_spark()
        self.strategy = strategy
        self.cost_units = cost_units
        self.threshold = float(threshold)
        self.strict = strict
        self.nb_parts = nb_parts
        self.partitions = int(partitions)
        self.tables: dict[str, _Table] = {}
        self.history: list[dict[str, Any]] = []

    # ------------------------------------------------------------------------------ registration
    def register(self, name: str, source: Any, key: str | None = None) -> Daisy:
        """Register a table (a path, ``catalog:db.t`` or a DataFrame, read by ``dqkit.sources``).

        ``key`` names the rows' ids (unique and non-NULL: checked here, ``dqkit.keys.check_key``);
        without it rows are named by a content id (``dqkit.violations.tuple_ids``)."""
        from dqkit.sources import read_table

        if not isinstance(name, str) or not name.strip() or not name.replace("_", "a").isalnum():
            raise ParameterError(f"table name {name!r} must be a plain identifier", hint="letters, digits and _")
        if isinstance(source, str) and not source.strip():
            from dqkit.errors import SourceError

            raise SourceError(f"table {name!r}: no source given", hint="a Parquet/CSV/JSON path, catalog:db.t or a DataFrame")
        df = read_table(source, self.spark)
        types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
        label = f"table {name!r}" + (f" ({os.fspath(source)})" if isinstance(source, (str, os.PathLike)) else "")
        check_reserved(types, table=label, command="query")
        if key is not None and key not in types:
            from dqkit.errors import UnknownColumnError

            raise UnknownColumnError(f"table {name!r}: unknown key column {key!r}", hint=f"columns: {', '.join(types)}")
        if key is not None:
            check_key(df, key, table=label, command="query",
                      without=f"leave --key {name}=... out so dqkit names rows by a content id")
        cols = list(df.columns)
        base = df.select(tuple_ids(df, key).cast("string").alias(TID), *[col(c) for c in cols]).localCheckpoint(eager=True)
        delta = self.spark.createDataFrame([], T.StructType([T.StructField(TID, T.StringType()),
                                                              T.StructField(CHECKED, T.ArrayType(T.StringType()))]))
        self.tables[name] = _Table(name, source, key, base, types, cols, delta)
        return self

    def add_rules(self, table: str, rules: Any) -> Daisy:
        """Add rules (objects, text, a file) to a registered table; FD-shaped DCs become FDs (R3).

        A rule added after queries re-cleans, when reached, the tuples checked without it, from the
        original values (R29)."""
        if table not in self.tables:
            raise UnknownTableError(f"rules given for {table!r}, which is not registered",
                                    hint=f"registered tables: {', '.join(self.tables) or 'none'}; "
                                         f"register it first (--table {table}=SOURCE)")
        t = self.tables[table]
        parsed = as_rules(rules)
        validate_rules(parsed, t.types)
        names = set(t.rule_names)
        for r in parsed:
            if getattr(r, "kind", "") == "udf":
                raise RuleError(f"rule {r.name!r}: UDF rules are not supported by query-time cleaning",
                                hint="give FDs or two-tuple denial constraints")
            if r.name in names:
                raise RuleError(f"rule name {r.name!r} is already used on table {table!r}")
            if isinstance(r, FunctionalDependency):
                t.fds.extend(fdmod.single_rhs([r]))
            else:
                fd = dcmod.as_fd(r)
                if fd is not None:
                    t.fds.append(fd)
                elif r.arity != 2:
                    raise RuleError(f"rule {r.name!r}: one-tuple rules are not supported by query-time cleaning",
                                    hint="Daisy cleans FDs and two-tuple denial constraints")
                else:
                    t.dcs.append(r)
            names.add(r.name)
        for c in t.rule_columns:
            if cand_col(c) not in t.delta.columns:
                t.delta = t.delta.withColumn(cand_col(c), F.lit(None).cast(CAND_TYPE))
        t.fully_checked = False
        t.cost = None
        return self

    def table(self, name: str) -> DataFrame:
        """The probabilistic version of a registered table (originals, candidates, checked rules)."""
        return self._get(name).prob

    def _get(self, name: str) -> _Table:
        if name not in self.tables:
            raise UnknownTableError(f"unknown table {name!r}", hint=f"registered: {', '.join(self.tables) or 'none'}")
        return self.tables[name]

    # ------------------------------------------------------------------------------------ stats
    def _stats(self, t: _Table) -> None:
        for fd in t.fds:
            if fd.name not in t.stats:
                t.stats[fd.name] = fdmod.compute_stats(fd, t.base, t.types)
        if t.cost is None:
            n = t.base.count()
            eps = sum(s.dirty_tuples for s in t.stats.values())
            ps = [s.mean_candidates for s in t.stats.values() if s.dirty_groups]
            t.cost = CostModel(n, eps, sum(ps) / len(ps) if ps else 0.0, self.strategy, units=self.cost_units)

    # ------------------------------------------------------------------------------------- plan
    def plan_query(self, sql: str) -> dict[str, Any]:
        """Parse and plan without running: per table the pushed-down selection, the rules whose
        attributes the query touches (R4) and the cleaning operator injected (R32/R33)."""
        schemas = {n: t.columns for n, t in self.tables.items()}
        q = parse_query(sql, schemas)
        steps = []
        conj = conjuncts_of(q.where)
        residual = [c for c in conj if len(aliases_of(c)) != 1]
        for pos, (alias, name) in enumerate(q.tables):
            t = self.tables[name]
            pushed = [c for c in conj if aliases_of(c) == {alias}]
            keys_in = [j for j in q.joins if alias in (j.left.alias, j.right.alias)
                       and ({j.left.alias, j.right.alias} - {alias}) <= set(q.aliases[:pos])]
            where_cols = {p.col.column for c in pushed for p in _preds(c)}
            key_cols = {j.left.column if j.left.alias == alias else j.right.column for j in keys_in}
            touched = set(q.columns_used.get(alias, ())) | {p.col.column for c in residual for p in _preds(c)
                                                            if p.col.alias == alias}
            rules = []
            for r in [*t.fds, *t.dcs]:
                overlap = sorted(set(r.columns) & touched)
                if not overlap:
                    rules.append({"rule": r.name, "injected": False, "why": "no attribute of the rule is read"})
                    continue
                filt = where_cols | key_cols
                if isinstance(r, FunctionalDependency):
                    mode = ("fixpoint" if filt & set(r.lhs) else "lhs-once" if filt & set(r.rhs) else "once")
                    why = {"fixpoint": "a filter on the lhs: relaxation to a fixpoint (Algorithm 1)",
                           "lhs-once": "a filter on the rhs only: one lhs relaxation round (Lemma 4.3)",
                           "once": "no filter on the FD: one relaxation round of both sides"}[mode]
                else:
                    mode, why = "theta", "result x unseen tuples partial theta-join (OCJoin)"
                rules.append({"rule": r.name, "injected": True, "overlap": overlap, "mode": mode, "why": why})
            operator = "clean_σ" if pos == 0 else "clean_⋈ side (qualifying part by join-key lineage)"
            steps.append({"alias": alias, "table": name, "pushed": [str(c) for c in pushed],
                          "join_keys": [str(j) for j in keys_in], "operator": operator, "rules": rules,
                          "_pushed": pushed, "_keys": keys_in})
        return {"query": q, "steps": steps, "residual": residual}

    def explain(self, sql: str) -> str:
        """Where each cleaning operator goes and why (R33), without running anything."""
        return explain_text(self.plan_query(sql))

    # ----------------------------------------------------------------------------------- query
    def query(self, sql: str, progress: ProgressFn | None = None) -> Any:
        """Run ``sql`` over the registered tables, cleaning what it touches; returns a ``QueryResult``."""
        from dqkit.relax._result import QueryResult

        plan = self.plan_query(sql)
        q: Query = plan["query"]
        started = time.perf_counter()
        trace: list[dict[str, Any]] = []
        decisions: list[dict[str, Any]] = []
        types = {a: self.tables[n].types for a, n in q.tables}
        with cancellable("the query"):
            dirty = self._answer(q, plan, types, dirty=True)
            parts: dict[str, DataFrame] = {}
            total = len(plan["steps"])
            for done, step in enumerate(plan["steps"], 1):
                t = self.tables[step["table"]]
                sel = self._selection(t, step, parts, q)
                injected = [r for r in step["rules"] if r["injected"]]
                if injected:
                    self._stats(t)
                    self._clean_sigma(t, sel, step, injected, trace, decisions)
                    sel = self._selection(t, step, parts, q)
                parts[step["alias"]] = sel
                if progress is not None:
                    progress("clean", step["table"], done, total)
            answer = self._join(q, plan, parts, types)
        seconds = time.perf_counter() - started
        self.history.append({"query": sql, "seconds": seconds, "decisions": decisions})
        return QueryResult(self, q, plan, answer, dirty, trace, decisions, seconds)

    def _selection(self, t: _Table, step: dict[str, Any], parts: dict[str, DataFrame], q: Query) -> DataFrame:
        """Rows of the probabilistic table that may satisfy the pushed selection and join keys."""
        alias = step["alias"]
        types = {alias: t.types}
        cond = _cond_column(BoolOp("and", tuple(step["_pushed"])) if step["_pushed"] else None, types, lambda a: "")
        sel = t.prob.where(cond)
        for j in step["_keys"]:
            mine, other = (j.left, j.right) if j.left.alias == alias else (j.right, j.left)
            keys = parts[other.alias].select(F.explode(possible_values(other.column)).alias("_dq_key")).distinct()
            mk = sel.select(TID, F.explode(possible_values(mine.column)).alias("_dq_key"))
            ok = mk.join(keys, "_dq_key", "left_semi").select(TID).distinct()
            sel = sel.join(ok, TID, "left_semi")
        return sel

    def _clean_sigma(self, t: _Table, sel: DataFrame, step: dict[str, Any], injected: list[dict[str, Any]],
                     trace: list[dict[str, Any]], decisions: list[dict[str, Any]]) -> None:
        """clean_σ on one table: relax, decide (cost model), clean the unchecked relaxed tuples, update."""
        # the answer keeps its rule attributes: relaxation starts from them without re-reading the table
        answer = sel.select(TID, *[col(c) for c in t.rule_columns]).localCheckpoint(eager=True)
        q_i = answer.count()
        by_name = {r.name: r for r in [*t.fds, *t.dcs]}
        fd_rules = [(by_name[r["rule"]], r["mode"]) for r in injected if isinstance(by_name[r["rule"]], FunctionalDependency)]
        dc_rules = [by_name[r["rule"]] for r in injected if isinstance(by_name[r["rule"]], DenialConstraint)]
        unchecked_all = _unchecked(t, [f.name for f in t.fds])
        if fd_rules:
            t0 = time.perf_counter()
            if t.fully_checked:
                trace.append({"table": t.name, "rule": ", ".join(r.name for r, _ in fd_rules), "iteration": 0,
                              "added": 0, "sample": [], "note": "table fully cleaned: no relaxation needed"})
                relaxed = answer.select(TID)
            else:
                relaxed = answer.select(TID)
                for fd, mode in fd_rules:
                    before = len(trace)
                    rx = fdmod.relax(t.stats[fd.name], t.base, answer, mode, trace)
                    for tr in trace[before:]:
                        tr["table"] = t.name
                        tr["mode"] = mode
                    relaxed = relaxed.unionByName(rx)
                relaxed = relaxed.distinct()
            if t.fully_checked:  # every dirty tuple is checked: nothing is left to count or clean (no Spark job)
                to_clean, n_relaxed, eps_i = relaxed, q_i, 0
            else:
                # ε_i: the relaxed tuples still to clean (unchecked tuples of dirty groups), kept once for the count and the cleaning
                flags = relaxed.join(unchecked_all.select(TID, F.lit(1).alias("_dq_u")), TID, "left").localCheckpoint(eager=True)
                to_clean = flags.where(F.col("_dq_u").isNotNull()).select(TID)
                row = flags.agg(F.count(F.lit(1)).alias("n"),
                                F.sum(F.when(F.col("_dq_u").isNotNull(), 1).otherwise(0)).alias("e")).collect()[0]
                n_relaxed, eps_i = int(row["n"]), int(row["e"] or 0)
            assert t.cost is not None
            relax_s = time.perf_counter() - t0
            stored = t.delta_rows
            d = t.cost.decide(q_i, max(0, n_relaxed - q_i), eps_i, relax_seconds=relax_s, stored=stored)
            d["table"] = t.name
            if t.fully_checked:
                d["decision"] = "clean (after the switch)"
            written = eps_i
            if d["decision"] == "full":
                to_clean = unchecked_all
                written = t.cost.remaining
            t0 = time.perf_counter()
            # nothing unchecked in a dirty group among the relaxed tuples: there is nothing to clean or mark
            if d["decision"] != "clean (after the switch)" and not t.fully_checked and (eps_i or d["decision"] == "full"):
                self._clean_tuples(t, to_clean, fd_only=True)
                if d["decision"] == "full":
                    t.fully_checked = not t.dcs
            t.cost.record(d, q_i, eps_i, relax_seconds=relax_s, clean_seconds=time.perf_counter() - t0,
                          rows=written + stored)
            decisions.append(d)
        for rule in dc_rules:
            self._clean_dc(t, rule, answer.select(TID), trace, decisions)

    def _clean_tuples(self, t: _Table, ids: DataFrame, fd_only: bool = False) -> None:
        """Recompute the FD cells of ``ids`` under all FDs of the table and update it in place (R11)."""
        ids = ids.select(TID).distinct()
        if t.fds and fdmod.single_side(t.fds):
            # ids are unchecked tuples of dirty groups, so the lookup gives every one of them a row
            wide = fdmod.fd_cells_by_lookup(t.fds, t.stats, ids, t.rule_columns)
            self._update(t, None, ids, ["fd"], [f.name for f in t.fds], wide=wide, wide_is_ids=True)
        elif t.fds:
            cells, cleaned = fdmod.fd_candidates(t.fds, t.stats, t.base, ids, t.types)
            self._update(t, cells, ids, ["fd"], [f.name for f in t.fds])

    def _update(self, t: _Table, cells: DataFrame | None, ids: DataFrame, sources: list[str], rules: list[str],
                wide: DataFrame | None = None, wide_is_ids: bool = False) -> None:
        """Replace the candidates of ``sources`` in the cells of ``ids`` and mark ``rules`` checked there:
        a full outer join of the delta with the new cells (R11: the table's outer join with the fixes,
        restricted to the tuples cleaning ever touched), then a local checkpoint. The new cells come as
        long rows (``cells``) or already one row per tuple (``wide``: TID, ``_dq_new_<c>``)."""
        cols = [c for c in t.rule_columns]
        if wide is None:
            assert cells is not None
            cells = cells.withColumn("p", F.col("support").cast("double") / F.col("n").cast("double"))
            arr = (cells.select(TID, "attr", F.struct(*[F.col(f.name).cast(f.dataType).alias(f.name) for f in CAND_TYPE.elementType.fields])  # type: ignore[union-attr]
                                .alias("c"))
                   .groupBy(TID, "attr").agg(F.sort_array(F.collect_list("c")).cast(CAND_TYPE).alias("cs")))
            wide = arr.groupBy(TID).agg(*[F.first(F.when(F.col("attr") == c, F.col("cs")), ignorenulls=True).alias("_dq_new_" + c)
                                          for c in cols])
        if wide_is_ids:  # one row per tuple of ids already
            marked = wide.withColumn("_dq_hit", F.lit(True))
        else:
            marked = ids.select(TID, F.lit(True).alias("_dq_hit")).join(wide, TID, "left")
        j = t.delta.join(marked, TID, "full_outer")
        hit = F.coalesce(F.col("_dq_hit"), F.lit(False))
        srcs = F.array(*[F.lit(s) for s in sources])
        out = []
        for c in t.delta.columns:
            if c.startswith(CAND_PREFIX) and c[len(CAND_PREFIX):] in cols:
                a = c[len(CAND_PREFIX):]
                kept = F.filter(F.coalesce(col(c), F.array().cast(CAND_TYPE)), lambda x: ~F.array_contains(srcs, x["source"]))
                merged = F.concat(kept, F.coalesce(col("_dq_new_" + a), F.array().cast(CAND_TYPE)))
                merged = F.when(F.size(merged) == 0, F.lit(None).cast(CAND_TYPE)).otherwise(F.array_sort(merged))
                out.append(F.when(hit, merged).otherwise(col(c)).alias(c))
            elif c == CHECKED:
                out.append(_with_checks(hit, rules))
            else:
                out.append(col(c))
        t.set_delta(j.select(*out))

    def _mark(self, t: _Table, ids: DataFrame, rules: list[str]) -> None:
        """Mark ``rules`` checked on the tuples of ``ids`` (the delta only)."""
        marks = ids.select(TID, F.lit(True).alias("_dq_mark")).distinct()
        j = t.delta.join(marks, TID, "full_outer")
        t.set_delta(j.select(*[_with_checks(F.coalesce(F.col("_dq_mark"), F.lit(False)), rules) if c == CHECKED
                               else col(c) for c in t.delta.columns]))

    def _clean_dc(self, t: _Table, rule: DenialConstraint, answer: DataFrame, trace: list[dict[str, Any]],
                  decisions: list[dict[str, Any]]) -> None:
        """clean_σ for a DC: Estimate_Errors decides partial or full; pairs of result x unseen (R21–R26)."""
        from dqkit.detect import restricted_pairs

        checked = t.delta.where(F.array_contains(col(CHECKED), rule.name)).select(TID)
        unseen = t.base.join(checked, TID, "left_anti")
        mine = answer.join(checked, TID, "left_anti")
        if rule.name not in t.dc_estimates:
            t.dc_estimates[rule.name] = dcmod.estimate_errors(rule, t.base, self.partitions)
        ranges, vio = t.dc_estimates[rule.name]
        first = [p for p in rule.cross_predicates if p.op != "!="][0].left.column
        stats = t.base.join(answer, TID, "left_semi").agg(F.count(F.lit(1)).alias("n"),
                                                          F.min(col(first).cast("double")).alias("lo"),
                                                          F.max(col(first).cast("double")).alias("hi")).collect()[0]
        est = dcmod.query_estimate(ranges, vio, int(stats["n"]), stats["lo"], stats["hi"],
                                   t.dc_checked_ranges.setdefault(rule.name, set()))
        full = est["accuracy"] < self.threshold
        decision = {"table": t.name, "rule": rule.name, "decision": "full" if full else "incremental",
                    "estimated_accuracy": est["accuracy"], "estimated_errors": est["errors"],
                    "support": est["support"], "threshold": self.threshold}
        if full:
            mine = unseen.select(TID)
            t.dc_checked_ranges[rule.name] |= {r.index for r in ranges}
        mine = mine.persist()
        if mine.isEmpty():
            decisions.append({**decision, "note": "every result tuple already checked"})
            trace.append({"table": t.name, "rule": rule.name, "iteration": 1, "added": 0, "sample": [], "mode": "theta"})
            return
        scope = t.base.select(TID, *[col(c) for c in rule.columns])
        left = scope.join(mine, TID, "left_semi")
        rest = scope.join(unseen, TID, "left_semi")
        p1, info = restricted_pairs(rule, left, rest, t.types, self.nb_parts, self.spark)
        p2, _ = restricted_pairs(rule, rest.join(mine, TID, "left_anti"), left, t.types, self.nb_parts, self.spark)
        new = p1.unionByName(p2).distinct().persist()
        old = t.pairs.get(rule.name)
        allp = (new if old is None else old.unionByName(new).distinct()).localCheckpoint(eager=True)
        t.pairs[rule.name] = allp
        partners = new.select(F.col("t1").alias(TID)).unionByName(new.select(F.col("t2").alias(TID))).distinct() \
            .join(mine, TID, "left_anti")
        rows = partners.orderBy(TID).limit(21).collect()
        n_added = partners.count() if len(rows) > 20 else len(rows)
        trace.append({"table": t.name, "rule": rule.name, "iteration": 1, "added": n_added,
                      "sample": [r[0] for r in rows[:20]], "mode": "theta",
                      "violations_found": new.count(), "operator": info.get("operator"),
                      "partition_pairs": info.get("partition_pairs"), "pairs_pruned": info.get("pairs_pruned")})
        targets = mine.unionByName(partners).distinct()
        cells = dcmod.dc_candidates(rule, allp, t.base, targets, self.strict)
        decision["violations_found"] = trace[-1]["violations_found"]
        decisions.append(decision)
        # the result tuples are checked against everything; their partners only against them
        self._update_dc(t, cells, mine, targets, rule)
        new.unpersist()
        mine.unpersist()

    def _update_dc(self, t: _Table, cells: DataFrame, checked: DataFrame, targets: DataFrame, rule: DenialConstraint) -> None:
        self._update(t, cells, targets, [rule.name], [])
        self._mark(t, checked, [rule.name])

    def clean_all(self, name: str) -> None:
        """Offline full cleaning of a table with the same kernel: every unchecked tuple, every rule."""
        t = self._get(name)
        self._stats(t)
        with cancellable("the cleaning"):
            if t.fds:
                self._clean_tuples(t, _unchecked(t, [f.name for f in t.fds]))
                t.fully_checked = not t.dcs
            for rule in t.dcs:
                saved = self.threshold
                self.threshold = 1.01
                try:
                    self._clean_dc(t, rule, t.base.select(TID), [], [])
                finally:
                    self.threshold = saved

    # ------------------------------------------------------------------------------------ answers
    def _answer(self, q: Query, plan: dict[str, Any], types: dict[str, dict[str, str]], dirty: bool) -> DataFrame:
        """The dirty answer: the query over the original values (no cleaning)."""
        frames = {}
        for alias, name in q.tables:
            t = self.tables[name]
            frames[alias] = t.base.select(*[F.col(TID).alias(f"{alias}.{TID}")] + [col(c).alias(f"{alias}.{c}") for c in t.columns])
        out = frames[q.aliases[0]]
        for alias in q.aliases[1:]:
            conds = [col(f"{j.left.alias}.{j.left.column}") == col(f"{j.right.alias}.{j.right.column}")
                     for j in q.joins if alias in (j.left.alias, j.right.alias)
                     and ({j.left.alias, j.right.alias} - {alias}) <= set(q.aliases[:q.aliases.index(alias)])]
            cond = conds[0]
            for c in conds[1:]:
                cond = cond & c
            out = out.join(frames[alias], cond)
        out = out.where(_cond_column(q.where, types, lambda a: f"{a}.", dirty=True))
        return _project(q, out, dirty=True)

    def _join(self, q: Query, plan: dict[str, Any], parts: dict[str, DataFrame], types: dict[str, dict[str, str]]) -> DataFrame:
        """The probabilistic join of the cleaned parts (R13), the spanning conditions, the projection."""
        frames = {}
        for alias, name in q.tables:
            t = self.tables[name]
            p = parts[alias]
            cands = [c for c in p.columns if c.startswith("_dq_cand_")]
            frames[alias] = p.select(F.col(TID).alias(f"{alias}.{TID}"),
                                     _worlds(p, t.rule_columns).alias(f"{alias}._dq_worlds"),
                                     *[col(c).alias(f"{alias}.{c}") for c in t.columns],
                                     *[col(c).alias(f"{alias}.{c}") for c in cands])
        out = frames[q.aliases[0]]
        for alias in q.aliases[1:]:
            keys = [j for j in q.joins if alias in (j.left.alias, j.right.alias)
                    and ({j.left.alias, j.right.alias} - {alias}) <= set(q.aliases[:q.aliases.index(alias)])]
            right = frames[alias]
            # candidate sets intersect on every key: explode both sides' possible values, equi-join, dedupe
            lk, rk = [], []
            for i, j in enumerate(keys):
                mine, other = (j.left, j.right) if j.left.alias == alias else (j.right, j.left)
                lk.append(possible_values(other.column, f"{other.alias}.").alias(f"_dq_lk{i}"))
                rk.append(possible_values(mine.column, f"{mine.alias}.").alias(f"_dq_rk{i}"))
            le = out.select("*", *lk)
            re_ = right.select("*", *rk)
            for i in range(len(keys)):
                le = le.withColumn(f"_dq_lk{i}", F.explode(f"_dq_lk{i}"))
                re_ = re_.withColumn(f"_dq_rk{i}", F.explode(f"_dq_rk{i}"))
            cond = None
            for i in range(len(keys)):
                c = F.col(f"_dq_lk{i}") == F.col(f"_dq_rk{i}")
                cond = c if cond is None else cond & c
            joined = le.join(re_, cond)
            idcols = [f"{a}.{TID}" for a in q.aliases[:q.aliases.index(alias) + 1]]
            keep = [c for c in joined.columns if not c.startswith(("_dq_lk", "_dq_rk"))]
            out = joined.select(*[col(c) for c in keep]).dropDuplicates(idcols)
        out = out.where(_cond_column(q.where, types, lambda a: f"{a}."))
        return _project(q, out, dirty=False)

    # ------------------------------------------------------------------------------------ exports
    def long_format(self, name: str, only_cleaned: bool = True) -> DataFrame:
        """The probabilistic table in long format ``(tid, attr, world_id, candidate, prob, is_original)``:
        the candidate domain of every cleaned cell (R43, the DaisyH / HoloClean ``cell_domain`` use)."""
        t = self._get(name)
        return long_cells(t.prob, t.rule_columns, only_cleaned)

    def most_probable(self, name: str) -> DataFrame:
        """DaisyP (R43): the table with each cell at its most probable value (``model.most_probable``)."""
        t = self._get(name)
        return daisy_p(t.prob, t.columns, t.rule_columns, t.types, t.key)

    def supporting_tuples(self, name: str, tid: str, attr: str, value: str) -> DataFrame:
        """The tuples supporting an FD rhs candidate of a cell (world A): same lhs of an FD with rhs
        ``attr`` and rhs ``value``, over the original values (R5's supporting tuple ids)."""
        t = self._get(name)
        fds = [f for f in t.fds if f.rhs[0] == attr]
        if not fds:
            raise ParameterError(f"no FD of {name!r} has the rhs {attr!r}")
        me = t.base.where(F.col(TID) == F.lit(str(tid)))
        parts = []
        for f in fds:
            k = me.select(*[col(c).alias("_dq_k_" + c) for c in f.lhs])
            parts.append(t.base.join(k, _and([col(c) == col("_dq_k_" + c) for c in f.lhs])).select(TID, col(attr)))
        u = parts[0]
        for p in parts[1:]:
            u = u.unionByName(p)
        return u.distinct().where(col(attr).cast("string") == F.lit(str(value))).select(TID)

    # ------------------------------------------------------------------------------------ state
    def fingerprints(self) -> dict[str, str]:
        """Table-version fingerprints (``dqkit.fingerprint``: the commutative hash of the row hashes)."""
        from dqkit.fingerprint import group_fingerprint, row_fingerprint

        out = {}
        for name, t in self.tables.items():
            if t.fingerprint is None:
                df = t.base.drop(TID)
                hi, lo = row_fingerprint(df)
                r = df.select(hi.alias("h"), lo.alias("l")).agg(group_fingerprint(F.col("h"), F.col("l")).alias("g"),
                                                                F.count(F.lit(1)).alias("n")).collect()[0]
                t.fingerprint = f"{r['g']}:{r['n']}"
            out[name] = t.fingerprint
        return out

    def save_state(self, folder: str | os.PathLike) -> str:
        """Write the probabilistic tables, DC pairs and cost models atomically (stage, then rename)."""
        from dqkit.render import atomic_folder

        fps = self.fingerprints()

        def write(tmp: Path) -> None:
            meta: dict[str, Any] = {"version": 1, "tables": {}}
            for name, t in self.tables.items():
                t.prob.write.parquet((tmp / "tables" / name).as_posix())
                for rn, p in t.pairs.items():
                    p.write.parquet((tmp / "pairs" / name / rn).as_posix())
                meta["tables"][name] = {"fingerprint": fps[name], "key": t.key, "rules": sorted(t.rule_names),
                                        "cost": t.cost.to_dict() if t.cost else None,
                                        "fully_checked": t.fully_checked,
                                        "dc_checked_ranges": {k: sorted(v) for k, v in t.dc_checked_ranges.items()},
                                        "pairs": sorted(t.pairs)}
            (tmp / "state.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")

        return str(atomic_folder(folder, write))

    def load_state(self, folder: str | os.PathLike) -> bool:
        """Restore a saved state for the registered tables; refuse one written for another version of a
        table (fingerprint) or other rules. Returns False when ``folder`` holds no state yet."""
        from dqkit.relax.state import check_state_folder

        p = Path(folder)
        meta = check_state_folder(p)  # damaged files are refused here, before any Parquet is read
        if meta is None:
            return False
        fps = self.fingerprints()
        for name, m in meta.get("tables", {}).items():
            if name not in self.tables:
                continue
            t = self.tables[name]
            if m["fingerprint"] != fps[name]:
                raise StateMismatchError(
                    f"the state in {p} was written for another version of table {name!r} "
                    f"(fingerprint {m['fingerprint']} != {fps[name]})",
                    hint="the table changed since: start a new state folder, or delete this one to clean from scratch")
            if m["key"] != t.key:
                raise StateMismatchError(f"the state in {p} identifies {name!r} by {m['key']!r}, not {t.key!r}",
                                         hint="give the same --key as before, or a new state folder")
            prob = self.spark.read.parquet((p / "tables" / name).as_posix())
            for c in t.delta.columns:
                if c not in prob.columns:
                    prob = prob.withColumn(c, F.lit(None).cast(t.delta.schema[c].dataType))
            t.set_delta(prob.select(*t.delta.columns))
            for rn in m.get("pairs", []):
                t.pairs[rn] = self.spark.read.parquet((p / "pairs" / name / rn).as_posix()).localCheckpoint(eager=True)
            if m.get("cost") and sorted(m["rules"]) == sorted(t.rule_names):
                t.cost = CostModel.from_dict(m["cost"])
                t.fully_checked = bool(m.get("fully_checked"))
            t.dc_checked_ranges = {k: set(v) for k, v in m.get("dc_checked_ranges", {}).items()}
        return True


def _with_checks(hit: Column, rules: Sequence[str]) -> Column:
    """The ``CHECKED`` column of a delta row after marking ``rules`` where ``hit``."""
    have = F.coalesce(col(CHECKED), F.array().cast("array<string>"))
    if not rules:
        return have.alias(CHECKED)
    return F.when(hit, F.array_sort(F.array_union(have, F.array(*[F.lit(r) for r in rules])))).otherwise(have).alias(CHECKED)


def _dirty_ids(t: _Table) -> DataFrame:
    """TIDs of the tuples in a dirty group of some FD of the table (R20: only they can need cleaning)."""
    return fdmod._union_ids([t.stats[f.name].dirty.select(TID) for f in t.fds])


def _unchecked(t: _Table, names: Sequence[str]) -> DataFrame:
    """TIDs of the tuples of dirty FD groups that some of the FDs ``names`` have not checked yet (R19).

    A tuple of a group that is clean under every FD never needs an FD check (the statistics of R20
    prove it), so FD checks are recorded on the tuples of dirty groups only and the delta stays small."""
    if not names:
        return t.base.where(F.lit(False)).select(TID)
    done = t.delta.where(F.forall(F.array(*[F.lit(n) for n in names]),
                                  lambda x: F.array_contains(col(CHECKED), x))).select(TID)
    return _dirty_ids(t).join(done, TID, "left_anti")


def _and(cs: list[Column]) -> Column:
    out = cs[0]
    for c in cs[1:]:
        out = out & c
    return out


def _preds(c: Cond) -> list[Pred]:
    if isinstance(c, Pred):
        return [c]
    return [p for i in c.items for p in _preds(i)]


def _project(q: Query, df: DataFrame, dirty: bool) -> DataFrame:
    """The SELECT list over the joined frame: originals, candidates and tuple ids (no aggregation here;
    ``QueryResult`` aggregates after cleaning over DaisyP values)."""
    cols: list[Column] = []
    seen = set()
    for a in q.aliases:
        cols.append(col(f"{a}.{TID}"))
        if not dirty:
            cols.append(col(f"{a}._dq_worlds"))
    refs = q.projected_columns()
    for r in refs:
        name = f"{r.alias}.{r.column}"
        if name in seen:
            continue
        seen.add(name)
        cols.append(col(name))
        if not dirty and f"{r.alias}._dq_cand_{r.column}" in df.columns:
            seen.add(f"{r.alias}._dq_cand_{r.column}")
            cols.append(col(f"{r.alias}._dq_cand_{r.column}"))
    if not dirty:  # the cells the WHERE read: QueryResult shows them and the tuple's probability
        for r in sorted(q.where_columns(), key=str):
            for name in (f"{r.alias}.{r.column}", f"{r.alias}._dq_cand_{r.column}"):
                if name not in seen and name in df.columns:
                    seen.add(name)
                    cols.append(col(name))
    return df.select(*cols)


def long_cells(prob: DataFrame, rule_columns: Sequence[str], only_cleaned: bool = True,
               tid_col: str = TID, prefix: str = "", attr_names: Mapping[str, str] | None = None) -> DataFrame:
    """Long format of cells (R42): ``tid, attr, world_id, candidate, prob, is_original``; a cell with
    no candidate in a world of its tuple is its original value with probability 1 there."""
    worlds = _worlds(prob, [c for c in rule_columns if f"{prefix}{cand_col(c)}" in prob.columns] if not prefix else [])
    if prefix:
        worlds = col(f"{prefix}_dq_worlds")
    parts = []
    for c in rule_columns:
        cc = f"{prefix}{cand_col(c)}"
        has = cc in prob.columns
        name = (attr_names or {}).get(c, c)
        base = prob.select(col(tid_col).alias("tid"), F.lit(name).alias("attr"), col(prefix + c).cast("string").alias("_o"),
                           (col(cc) if has else F.lit(None).cast(CAND_TYPE)).alias("_c"), worlds.alias("_w"))
        if only_cleaned:
            base = base.where(F.col("_c").isNotNull())
        ex = base.select("tid", "attr", "_o", "_c", F.explode("_w").alias("world_id"))
        ex = ex.withColumn("_cw", F.filter(F.coalesce(F.col("_c"), F.array().cast(CAND_TYPE)),
                                           lambda x: x["world"] == F.col("world_id")))
        certain = ex.where(F.size("_cw") == 0).select("tid", "attr", "world_id", F.col("_o").alias("candidate"),
                                                      F.lit(1.0).alias("prob"), F.lit(True).alias("is_original"))
        cand = ex.where(F.size("_cw") > 0).select("tid", "attr", "world_id", "_o", F.explode("_cw").alias("x")).select(
            "tid", "attr", "world_id",
            F.when(F.col("x.kind") == "range", F.concat(F.col("x.op"), F.col("x.value"))).otherwise(F.col("x.value")).alias("candidate"),
            F.col("x.p").alias("prob"),
            ((F.col("x.kind") == "value") & (F.col("x.value") == F.col("_o"))).alias("is_original"))
        parts += [certain, cand]
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


def daisy_p(prob: DataFrame, columns: Sequence[str], rule_columns: Sequence[str], types: Mapping[str, str],
            key: str | None) -> DataFrame:
    """The table with every rule cell at its most probable value (DaisyP), in the original types."""
    from dqkit.relax.model import most_probable

    @F.udf("string")
    def pick(orig, cands, worlds):  # noqa: ANN001 - a Spark UDF over one cell
        v, _ = most_probable(orig, cands, worlds)
        return v

    w = _worlds(prob, rule_columns)
    out = []
    for c in columns:
        if c in rule_columns and cand_col(c) in prob.columns:
            out.append(F.when(col(cand_col(c)).isNull(), col(c))
                       .otherwise(pick(col(c).cast("string"), col(cand_col(c)), w).cast(types[c])).alias(c))
        else:
            out.append(col(c))
    return prob.select(*out)


def explain_text(plan: dict[str, Any]) -> str:
    """R33: the cleaning-aware plan as text."""
    q: Query = plan["query"]
    lines = [f"query: {q.text.strip()}"]
    for i, s in enumerate(plan["steps"]):
        lines.append(f"{i + 1}. scan {s['table']} AS {s['alias']}"
                     + (f" where {' AND '.join(s['pushed'])}" if s["pushed"] else "")
                     + (f"; join keys from the cleaned parts before: {', '.join(s['join_keys'])}" if s["join_keys"] else ""))
        inj = [r for r in s["rules"] if r["injected"]]
        if inj:
            above = [w for w, on in (("the join", len(q.tables) > 1), ("the aggregation", q.aggregated)) if on]
            lines.append(f"   {s['operator']} pushed down onto {s['table']}, right above its scan"
                         + (f" and below {' and '.join(above)}" if above else "") + ":")
            for r in inj:
                lines.append(f"     - {r['rule']}: reads {', '.join(r['overlap'])} of the query; {r['why']}")
        for r in s["rules"]:
            if not r["injected"]:
                lines.append(f"   no cleaning for {r['rule']}: {r['why']}")
        if not s["rules"]:
            lines.append("   no rule on this table: no cleaning operator")
    if len(q.tables) > 1:
        lines.append(f"{len(plan['steps']) + 1}. probabilistic equi-join of the cleaned parts on "
                     f"{', '.join(str(j) for j in q.joins)} (candidate sets intersect; tuple ids kept); "
                     "no further violation check (Lemma 4.12)")
    if plan["residual"]:
        lines.append(f"   then {' AND '.join(str(c) for c in plan['residual'])} over candidates")
    if q.aggregated:
        lines.append(f"{len(plan['steps']) + 2}. GROUP BY {', '.join(map(str, q.group_by)) or '(all)'} after cleaning, "
                     "over the most probable values (DaisyP)")
    return "\n".join(lines)
