"""Daisy's cleaning operators (§4–§5): clean_σ for FDs (relaxation, then the cost model's decision) and
for two-tuple DCs (partial theta-join of result x unseen tuples), and the in-place update of the delta (R11).

``CleaningOperators`` is a part of ``Daisy`` (a mixin): it reads the engine's settings (``partitions``,
``threshold``, ``strict``, ``nb_parts``, ``strategy``, ``cost_units``, ``spark``).
"""
from __future__ import annotations

import time
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dqkit.detect import restricted_pairs
from dqkit.relax import dc as dcmod
from dqkit.relax import fd as fdmod
from dqkit.relax.cost import CostModel
from dqkit.relax.model import CAND_PREFIX, CAND_TYPE, CHECKED, TID, possible_values
from dqkit.relax.plan import cond_column
from dqkit.relax.sql import BoolOp, Query
from dqkit.relax.table import DaisyTable, unchecked_ids, with_checks
from dqkit.rules import DenialConstraint, FunctionalDependency
from dqkit.runtime.sparkutil import checkpoint, checkpoint_on_read, col


class CleaningOperators:
    """clean_σ and the delta updates of ``Daisy`` (see the module docstring)."""

    tables: dict[str, DaisyTable]

    # ------------------------------------------------------------------------------------ stats
    def _stats(self, t: DaisyTable) -> None:
        for fd in t.fds:
            if fd.name not in t.stats:
                t.stats[fd.name] = fdmod.compute_stats(fd, t.base, t.types)
        if t.cost is None:
            n = t.base.count()
            eps = sum(s.dirty_tuples for s in t.stats.values())
            ps = [s.mean_candidates for s in t.stats.values() if s.dirty_groups]
            t.cost = CostModel(n, eps, sum(ps) / len(ps) if ps else 0.0, self.strategy, units=self.cost_units)

    def _selection(self, t: DaisyTable, step: dict[str, Any], parts: dict[str, DataFrame], q: Query) -> DataFrame:
        """Rows of the probabilistic table that may satisfy the pushed selection and join keys."""
        alias = step["alias"]
        types = {alias: t.types}
        cond = cond_column(BoolOp("and", tuple(step["_pushed"])) if step["_pushed"] else None, types, lambda a: "")
        sel = t.prob.where(cond)
        for j in step["_keys"]:
            mine, other = (j.left, j.right) if j.left.alias == alias else (j.right, j.left)
            keys = parts[other.alias].select(F.explode(possible_values(other.column)).alias("_dq_key")).distinct()
            mk = sel.select(TID, F.explode(possible_values(mine.column)).alias("_dq_key"))
            ok = mk.join(keys, "_dq_key", "left_semi").select(TID).distinct()
            sel = sel.join(ok, TID, "left_semi")
        return sel

    def _clean_sigma(self, t: DaisyTable, sel: DataFrame, step: dict[str, Any], injected: list[dict[str, Any]],
                     trace: list[dict[str, Any]], decisions: list[dict[str, Any]]) -> None:
        """clean_σ on one table: relax, decide (cost model), clean the unchecked relaxed tuples, update."""
        # the answer keeps its rule attributes: relaxation starts from them without re-reading the table
        answer = checkpoint_on_read(sel.select(TID, *[col(c) for c in t.rule_columns]))
        q_i = answer.count()  # keeps it
        by_name = {r.name: r for r in [*t.fds, *t.dcs]}
        fd_rules = [(by_name[r["rule"]], r["mode"]) for r in injected if isinstance(by_name[r["rule"]], FunctionalDependency)]
        dc_rules = [by_name[r["rule"]] for r in injected if isinstance(by_name[r["rule"]], DenialConstraint)]
        unchecked_all = unchecked_ids(t, [f.name for f in t.fds])
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
                flags = checkpoint_on_read(relaxed.join(unchecked_all.select(TID, F.lit(1).alias("_dq_u")), TID, "left"))
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

    def _clean_tuples(self, t: DaisyTable, ids: DataFrame, fd_only: bool = False) -> None:
        """Recompute the FD cells of ``ids`` under all FDs of the table and update it in place (R11)."""
        ids = ids.select(TID).distinct()
        if t.fds and fdmod.single_side(t.fds):
            # ids are unchecked tuples of dirty groups, so the lookup gives every one of them a row
            wide = fdmod.fd_cells_by_lookup(t.fds, t.stats, ids, t.rule_columns)
            self._update(t, None, ids, ["fd"], [f.name for f in t.fds], wide=wide, wide_is_ids=True)
        elif t.fds:
            cells, cleaned = fdmod.fd_candidates(t.fds, t.stats, t.base, ids, t.types)
            self._update(t, cells, ids, ["fd"], [f.name for f in t.fds])

    def _update(self, t: DaisyTable, cells: DataFrame | None, ids: DataFrame, sources: list[str], rules: list[str],
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
                out.append(with_checks(hit, rules))
            else:
                out.append(col(c))
        t.set_delta(j.select(*out))

    def _mark(self, t: DaisyTable, ids: DataFrame, rules: list[str]) -> None:
        """Mark ``rules`` checked on the tuples of ``ids`` (the delta only)."""
        marks = ids.select(TID, F.lit(True).alias("_dq_mark")).distinct()
        j = t.delta.join(marks, TID, "full_outer")
        t.set_delta(j.select(*[with_checks(F.coalesce(F.col("_dq_mark"), F.lit(False)), rules) if c == CHECKED
                               else col(c) for c in t.delta.columns]))

    def _clean_dc(self, t: DaisyTable, rule: DenialConstraint, answer: DataFrame, trace: list[dict[str, Any]],
                  decisions: list[dict[str, Any]]) -> None:
        """clean_σ for a DC: Estimate_Errors decides partial or full; pairs of result x unseen (R21–R26)."""
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
        allp = (new if old is None else old.unionByName(new).distinct()).transform(checkpoint)
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

    def _update_dc(self, t: DaisyTable, cells: DataFrame, checked: DataFrame, targets: DataFrame, rule: DenialConstraint) -> None:
        self._update(t, cells, targets, [rule.name], [])
        self._mark(t, checked, [rule.name])
