"""Daisy's cleaning-aware plan: where each cleaning operator goes and why (R4, R32, R33), without Spark jobs.

``plan_query`` pushes each table's WHERE conjuncts down to its scan and injects ``clean_σ`` for the
rules the query touches; ``explain_text`` says it in words; ``cond_column`` and ``project`` turn the
parsed query into Spark expressions over candidates.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from dqkit.relax.model import TID, possible
from dqkit.relax.sql import Cond, Pred, Query, aliases_of, conjuncts_of, parse_query
from dqkit.relax.table import DaisyTable
from dqkit.rules import FunctionalDependency
from dqkit.runtime.sparkutil import col


def cond_column(cond: Cond | None, types: Mapping[str, Mapping[str, str]], prefix: Callable[[str], str],
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
    parts = [cond_column(i, types, prefix, dirty) for i in cond.items]
    out = parts[0]
    for p in parts[1:]:
        out = (out & p) if cond.op == "and" else (out | p)
    return out


def plan_query(tables: Mapping[str, DaisyTable], sql: str) -> dict[str, Any]:
    """Parse and plan without running: per table the pushed-down selection, the rules whose
    attributes the query touches (R4) and the cleaning operator injected (R32/R33)."""
    schemas = {n: t.columns for n, t in tables.items()}
    q = parse_query(sql, schemas)
    steps = []
    conj = conjuncts_of(q.where)
    residual = [c for c in conj if len(aliases_of(c)) != 1]
    for pos, (alias, name) in enumerate(q.tables):
        t = tables[name]
        pushed = [c for c in conj if aliases_of(c) == {alias}]
        keys_in = [j for j in q.joins if alias in (j.left.alias, j.right.alias)
                   and ({j.left.alias, j.right.alias} - {alias}) <= set(q.aliases[:pos])]
        where_cols = {p.col.column for c in pushed for p in preds(c)}
        key_cols = {j.left.column if j.left.alias == alias else j.right.column for j in keys_in}
        touched = set(q.columns_used.get(alias, ())) | {p.col.column for c in residual for p in preds(c)
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


def preds(c: Cond) -> list[Pred]:
    if isinstance(c, Pred):
        return [c]
    return [p for i in c.items for p in preds(i)]


def project(q: Query, df: DataFrame, dirty: bool) -> DataFrame:
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
