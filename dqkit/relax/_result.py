"""``QueryResult``: a cleaned query answer on the common result contract (R42).

The answer keeps, per projected cell, the original value and its candidates; a person reads it as
"value p%" lists with the alternative worlds of a tuple separated (a dashed line in HTML, ``‖`` in
text, as Table 2(b)). ``long_format()`` is the export ``(tid, attr, world_id, candidate, prob,
is_original)``; ``dirty`` the answer over the original values; ``trace`` what each relaxation round
added; ``decisions`` the cost model's (and Estimate_Errors') choice per table.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dqkit.contract import render
from dqkit.relax._answer import Cell, best_world, cell_text, frac_text, p_text, read_columns, world_probabilities
from dqkit.relax.cells import long_cells
from dqkit.relax.model import TID, WORLD_RHS, cand_col, cell_worlds, format_world, most_probable
from dqkit.relax.plan import explain_text
from dqkit.relax.sql import ColRef, Query
from dqkit.contract.result import Facts, Notes, Result, Table, Verdict
from dqkit.runtime.sparkutil import checkpoint_on_read, col

SEP = " ‖ "


#: a cost in seconds is predicted from measured cleanings; before the first there is none to show
NOT_PREDICTED = "not predicted yet (no cleaning measured)"


def predicted(decision: dict[str, Any]) -> bool:
    """Whether the decision's full cost is a prediction (tuples: always; seconds: once a cleaning was measured)."""
    return decision.get("units") != "seconds" or bool(decision.get("fixed_seconds") or decision.get("seconds_per_row"))


def cost_text(value: float, units: str) -> str:
    """A cost with its unit: ``15.4 s`` or ``120 tuples``."""
    return f"{value:.3g} s" if units == "seconds" else f"{value:,.0f} tuples"


def decision_costs(d: dict[str, Any]) -> str:
    """``incremental 15.4 s so far vs full 3.2 s``, or what is not known yet (never a 0 s prediction)."""
    units = d.get("units", "tuples")
    inc = f"incremental {cost_text(d['cumulative_incremental'], units)}"
    if not predicted(d):
        return f"{inc}; the full cost is {NOT_PREDICTED}"
    return f"{inc} vs full {cost_text(d['full_cost'], units)}"


@dataclass(frozen=True)
class CandidateTable:
    """The cleaned answer, bounded: one row per answer tuple, each cell its worlds' candidates."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[tuple[str, ...], ...], ...]  # row -> cell -> text per world
    note: str = ""

    def to_text(self) -> str:
        frame = pd.DataFrame([[SEP.join(cell) for cell in r] for r in self.rows], columns=list(self.columns))
        return render.text_table(frame) + (f"\n{self.note}" if self.note else "")

    def to_html(self, charts: bool = True) -> str:
        head = "".join(f"<th class='l'>{render.esc(c)}</th>" for c in self.columns)
        body = []
        for r in self.rows:
            cells = []
            for cell in r:
                parts = [f"<div style='{'border-top:1px dashed #888;' if i else ''}padding:1px 0'>{render.esc(w)}</div>"
                         for i, w in enumerate(cell)]
                cells.append(f"<td class='l'>{''.join(parts)}</td>")
            body.append(f"<tr>{''.join(cells)}</tr>")
        note = f"<p class='muted'>{render.esc(self.note)}</p>" if self.note else ""
        return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{note}"


class QueryResult(Result):
    """A query answered over dirty data and cleaned on demand (Daisy)."""

    system = "dqkit query"

    def __init__(self, daisy: Any, query: Query, plan: dict[str, Any], answer: DataFrame, dirty: DataFrame,
                 trace: list[dict[str, Any]], decisions: list[dict[str, Any]], seconds: float) -> None:
        self.daisy = daisy
        self.query = query
        self.plan = plan
        self.answer = answer
        self.dirty = dirty
        self.trace = trace
        self.decisions = decisions
        self.seconds = seconds
        #: where ``--state`` was saved after this answer (``dqkit.systems.query``), or None
        self.state_saved: str | None = None
        self._cache: dict[str, Any] = {}

    # ------------------------------------------------------------------------------- helpers
    @property
    def explain(self) -> str:
        return explain_text(self.plan)

    def _attrs(self) -> list[tuple[str, str, str]]:
        """(alias, column, output name) of every projected cell."""
        single = len(self.query.tables) == 1
        out = []
        for r in self.query.projected_columns():
            out.append((r.alias, r.column, r.column if single else f"{r.alias}.{r.column}"))
        return out

    def long_format(self) -> DataFrame:
        """``(tid, attr, world_id, candidate, prob, is_original)`` of every answer cell (R42)."""
        parts = []
        for alias in self.query.aliases:
            cols = [c for a, c, _ in self._attrs() if a == alias]
            if not cols:
                continue
            names = {c: n for a, c, n in self._attrs() if a == alias}
            sub = self.answer.select(col(f"{alias}.{TID}"), col(f"{alias}._dq_worlds"),
                                     *[col(f"{alias}.{c}") for c in cols],
                                     *[col(f"{alias}.{cand_col(c)}") for c in cols if f"{alias}.{cand_col(c)}" in self.answer.columns]
                                     ).distinct()
            parts.append(long_cells(sub, cols, only_cleaned=False, tid_col=f"{alias}.{TID}", prefix=f"{alias}.",
                                    attr_names=names))
        out = parts[0]
        for p in parts[1:]:
            out = out.unionByName(p)
        return out

    def aggregated(self) -> tuple[DataFrame, DataFrame] | None:
        """GROUP BY after cleaning: (cleaned over DaisyP values, dirty over originals); None if no aggregate."""
        if not self.query.aggregated:
            return None
        q = self.query
        types = {a: self.daisy.tables[n].types for a, n in q.tables}

        @F.udf("string")
        def pick(orig, cands, worlds):  # noqa: ANN001
            return most_probable(orig, cands, worlds)[0]

        def values(df: DataFrame, cleaned: bool) -> DataFrame:
            cols = []
            for r in q.projected_columns():
                name = f"{r.alias}.{r.column}"
                cc = f"{r.alias}.{cand_col(r.column)}"
                if cleaned and cc in df.columns:
                    v = F.when(col(cc).isNull(), col(name)).otherwise(
                        pick(col(name).cast("string"), col(cc), col(f"{r.alias}._dq_worlds")).cast(types[r.alias][r.column]))
                else:
                    v = col(name)
                cols.append(v.alias(name))
            return df.select(*cols)

        def agg(df: DataFrame) -> DataFrame:
            exprs = []
            for s in q.select:
                if s.func is None:
                    continue
                target = F.lit(1) if s.col is None else col(f"{s.col.alias}.{s.col.column}")
                fn = {"count": F.count, "sum": F.sum, "avg": F.avg, "min": F.min, "max": F.max}[s.func]
                exprs.append(fn(target).alias(s.name))
            keys = [col(f"{g.alias}.{g.column}") for g in q.group_by]
            g = df.groupBy(*keys).agg(*exprs) if keys else df.agg(*exprs)
            out = []
            for s in q.select:
                out.append(col(s.name) if s.func else col(f"{s.col.alias}.{s.col.column}").alias(s.name))  # type: ignore[union-attr]
            return g.select(*out).orderBy(*[s.name for s in q.select if s.func is None] or [q.select[0].name])

        return agg(values(self.answer, True)), agg(values(self.dirty, False))

    def answer_rows(self, limit: int = 20) -> list[dict[str, Any]]:
        """At most ``limit`` answer tuples, each cell as ``{world: "value p%, ..."}`` (ordered by tuple ids)."""
        key = f"rows{limit}"
        if key not in self._cache:
            ids = [f"{a}.{TID}" for a in self.query.aliases]
            rows = self.first_rows("answer", limit, lambda k: self.answer.orderBy(*[col(i) for i in ids]).limit(k).collect())
            out = []
            for r in rows:
                rec: dict[str, Any] = {"_ids": {a: r[f"{a}.{TID}"] for a in self.query.aliases}}
                for a, c, n in self._attrs():
                    worlds = list(r[f"{a}._dq_worlds"] or ["A"])
                    cc = f"{a}.{cand_col(c)}"
                    cands = r[cc] if cc in r.__fields__ else None
                    cw = cell_worlds(cands)
                    shown = [w for w in worlds] if cands else [worlds[0]]
                    rec[n] = {w: format_world(r[f"{a}.{c}"], cands, w) for w in shown}
                    if cands and len(set(rec[n].values())) == 1 and len(cw) == 0:
                        rec[n] = {worlds[0]: rec[n][worlds[0]]}
                self._why(r, rec)
                out.append(rec)
            self._cache[key] = out
        return self._cache[key]

    def _read_columns(self) -> list[tuple[ColRef, str]]:
        """(column, shown name) of each cell the WHERE read, in the order it names them."""
        single = len(self.query.tables) == 1
        return [(r, r.column if single else f"{r.alias}.{r.column}") for r in read_columns(self.query.where)]

    def _why(self, row: Any, rec: dict[str, Any]) -> None:
        """Add to an answer tuple why it is there: ``_read`` ({shown name: {world: candidates}}) of the
        cells the WHERE read, and ``_p`` (P(WHERE) in its most probable world), ``_world``, ``_p_text``."""
        present = set(row.__fields__)
        cells: dict[ColRef, Cell] = {}
        for r, _ in self._read_columns():
            if f"{r.alias}.{r.column}" not in present:
                return  # an answer read from an older state without the WHERE's cells: nothing to add
            cc = f"{r.alias}.{cand_col(r.column)}"
            cells[r] = Cell(row[f"{r.alias}.{r.column}"], row[cc] if cc in present else None,
                            tuple(row[f"{r.alias}._dq_worlds"] or [WORLD_RHS]))
        read: dict[str, dict[str, str]] = {}
        for r, shown in self._read_columns():
            cell = cells[r]
            ws = cell.worlds if cell.cands else cell.worlds[:1]
            texts = {w: cell_text(cell, w) for w in ws}
            read[shown] = texts if len(set(texts.values())) > 1 else {ws[0]: texts[ws[0]]}
        probs = world_probabilities(self.query.where, cells)
        p, world = best_world(probs)
        rec["_read"], rec["_p"], rec["_world"] = read, p, list(world)
        rec["_p_text"] = p_text(p, world, len(probs))
        rec["_p_worlds"] = {", ".join(w): (None if q is None else frac_text(q)) for w, q in probs.items()}

    def answer_tuples(self, limit: int = 1000) -> list[dict[str, Any]]:
        """At most ``limit`` answer tuples with why each is there (JSON): its ids, the probability that
        it satisfies the WHERE (exact, ``2/3``, and as a number), the world that gives it, that
        probability per world, and the candidates of each cell the WHERE read, per world."""
        out = []
        for r in self.answer_rows(limit):
            p = r.get("_p")
            out.append({"tid": {a: str(v) for a, v in r["_ids"].items()} if len(r["_ids"]) > 1
                        else str(next(iter(r["_ids"].values()))),
                        "p": None if p is None else frac_text(p), "probability": None if p is None else round(float(p), 6),
                        "world": r.get("_world", []), "p_per_world": r.get("_p_worlds", {}),
                        "where_cells": r.get("_read", {})})
        return out

    def counts(self) -> dict[str, int]:
        """Answer tuples after cleaning and over the dirty data, and ``candidate_cells``: the answer's
        cells with a candidate other than their original value (what the cleaning found). The tuple
        counts come first: ``run_workload`` times a query up to them."""
        self.tuple_counts()
        if "candidate_cells" not in self._cache["counts"]:
            alternative = self.long_format().where(~F.col("is_original")).select("tid", "attr").distinct()
            self._cache["counts"]["candidate_cells"] = alternative.count()
        return self._cache["counts"]

    def tuple_counts(self) -> dict[str, int]:
        """Answer tuples after cleaning and over the dirty data (what a workload's time includes)."""
        if "counts" not in self._cache:
            self._cache["counts"] = {"answer": self.answer.count(), "dirty": self.dirty.count()}
        return self._cache["counts"]

    @property
    def needed_cleaning(self) -> bool:
        """Whether cleaning changed the answer: a cell got another candidate, or the tuples differ in
        number from the answer over the dirty data. It sets the exit code (0 no, 1 yes)."""
        n = self.counts()
        return n["candidate_cells"] > 0 or n["answer"] != n["dirty"]

    def long_rows(self) -> list[dict[str, Any]]:
        """The long format as rows, ordered by tuple, attribute, world and candidate (the JSON answer)."""
        if "long" not in self._cache:
            ordered = self.long_format().orderBy("tid", "attr", "world_id", "candidate")
            self._cache["long"] = [r.asDict() for r in ordered.toLocalIterator()]
        return self._cache["long"]

    def materialize(self) -> QueryResult:
        """Hold the answer and the dirty answer in Spark's memory, cut from the tables they were read
        from, so this result stays readable once those files are replaced (a saved ``--state``)."""
        self.answer = checkpoint_on_read(self.answer)
        self.dirty = checkpoint_on_read(self.dirty)
        n_answer, n_dirty = self.answer.count(), self.dirty.count()  # these counts keep them
        self._cache.setdefault("counts", {}).update(answer=n_answer, dirty=n_dirty)
        self.counts()
        return self

    # ------------------------------------------------------------------------------- contract
    def metrics(self) -> dict[str, float]:
        """Answer rows, dirty rows and candidate cells of the query."""
        n = self.counts()
        return {"answer_rows": float(n["answer"]), "dirty_rows": float(n["dirty"]),
                "candidate_cells": float(n["candidate_cells"])}

    def to_dict(self) -> dict[str, Any]:
        n = self.counts()
        d: dict[str, Any] = {
            "system": "daisy", "query": self.query.text, "verdict": self._verdict().label,
            "answer_rows": n["answer"], "dirty_rows": n["dirty"], "candidate_cells": n["candidate_cells"],
            "seconds": round(self.seconds, 3),
            "relaxation": [{k: v for k, v in t.items()} for t in self.trace],
            "decisions": self.decisions, "explain": self.explain,
        }
        if self.state_saved:
            d["state"] = self.state_saved
        agg = self.aggregated()
        d["answer"] = self.long_rows()  # the long format: tid, attr, world_id, candidate, prob, is_original
        if agg is None and self.query.where is not None:
            d["answer_tuples"] = self.answer_tuples()  # why each tuple is there: P(WHERE), the cells it read
        if agg is not None:
            d["aggregate"] = [r.asDict() for r in agg[0].limit(1000).collect()]
            d["aggregate_dirty"] = [r.asDict() for r in agg[1].limit(1000).collect()]
        return d

    @property
    def verdict(self) -> Verdict:
        return self._verdict()

    def _verdict(self) -> Verdict:
        """CLEAN (exit 0) when nothing needed cleaning, CANDIDATES (exit 1) when cleaning changed the answer."""
        n = self.counts()
        found = (f"{n['candidate_cells']} answer cell(s) with candidates; " if self.needed_cleaning
                 else "nothing needed cleaning; ")
        return Verdict(not self.needed_cleaning, "CANDIDATES" if self.needed_cleaning else "CLEAN",
                       found + f"{n['answer']} answer tuple(s) after cleaning, {n['dirty']} over the dirty data "
                       f"({self.seconds:.2f}s)")

    def sections(self, sample_rows: int = 10) -> list[Any]:
        n = self.counts()
        blocks: list[Any] = [self._verdict()]
        facts = {"query": self.query.text.strip(), "tables": ", ".join(f"{n_} AS {a}" for a, n_ in self.query.tables),
                 "answer tuples (cleaned)": n["answer"], "answer tuples (dirty)": n["dirty"]}
        for d in self.decisions:
            k = f"decision ({d.get('table')}{', ' + d['rule'] if d.get('rule') else ''})"
            facts[k] = d["decision"] + ("; " + decision_costs(d) if "full_cost" in d else
                                        f"; estimated accuracy {d.get('estimated_accuracy', 1):.3f} vs threshold {d.get('threshold')}")
        blocks.append(Facts("Query", facts))
        for a, name in self.query.tables:
            cm = self.daisy.tables[name].cost
            if cm is not None and cm.history:
                last = cm.history[-1]
                blocks.append(Facts(f"Cost model ({name})", {
                    "rows n": cm.n, "violating tuples ε": cm.eps, "candidates per value p": round(cm.p, 3),
                    "queries so far": cm.queries, "cost units": cm.units,
                    "cumulative incremental cost": cost_text(cm.cumulative_incremental, cm.units),
                    ("full cleaning of the rest (predicted)" if cm.units == "seconds" else "full cleaning cost (same queries)"):
                        cost_text(last["full_cost"], cm.units) if predicted(last) else NOT_PREDICTED,
                    "decision": last["decision"], "switched at query": cm.switched_at or "not yet"}))
        agg = self.aggregated()
        if agg is not None:
            blocks.append(Table("Answer (cleaned, aggregated over the most probable values)",
                                agg[0].limit(max(sample_rows, 1)).toPandas(), max_rows=sample_rows or None))
            blocks.append(Table("Answer over the dirty data", agg[1].limit(max(sample_rows, 1)).toPandas(),
                                max_rows=sample_rows or None))
        elif sample_rows:
            rows = self.answer_rows(sample_rows)
            names = [n_ for _, _, n_ in self._attrs()]
            id_cols = [f"tid ({a})" if len(self.query.aliases) > 1 else "tid" for a in self.query.aliases]
            read = [shown for _, shown in self._read_columns()] if rows and "_read" in rows[0] else []
            body = []
            for r in rows:
                body.append(tuple((str(r["_ids"][a]),) for a in self.query.aliases)
                            + tuple(tuple(r[n_].values()) for n_ in names)
                            + tuple(tuple(r["_read"][m].values()) for m in read)
                            + (((r["_p_text"],),) if read else ()))
            note = (f"showing {len(rows)} of {n['answer']}" if n["answer"] > len(rows) else "")
            if read:
                note = ("WHERE reads " + ", ".join(read) + ": its candidates per world (exact probabilities); "
                        "P = the probability that the tuple satisfies the WHERE, in its most probable world"
                        + (f"; {note}" if note else ""))
            blocks.append(CandidateTable("Answer (cleaned): value p%, alternative worlds separated",
                                         tuple(id_cols + names + [f"WHERE {m}" for m in read] + (["P"] if read else [])),
                                         tuple(body), note))
            dirty = pd.DataFrame([tuple(r) for r in self.first_rows("dirty", sample_rows, lambda k: self.dirty.orderBy(
                *[col(f"{a}.{TID}") for a in self.query.aliases]).limit(k).collect())], columns=self.dirty.columns)
            dirty.columns = [c.replace(f".{TID}", ".tid") if c.endswith(TID) else c for c in dirty.columns]
            if len(self.query.aliases) == 1:
                dirty.columns = [c.split(".", 1)[1] if "." in c else c for c in dirty.columns]
            names_ = list(dirty.columns)  # a selected column named like a row id: the id says it is one
            dirty.columns = [f"{c} (row id)" if i == names_.index(c) and names_.count(c) > 1 else c
                             for i, c in enumerate(names_)]
            blocks.append(Table("Answer over the dirty data", dirty, max_rows=sample_rows))
        if self.trace:
            tr = pd.DataFrame([{"table": t.get("table"), "rule": t["rule"], "mode": t.get("mode", ""),
                                "iteration": t["iteration"], "tuples added": t["added"],
                                "sample": ", ".join(map(str, t["sample"][:8]))} for t in self.trace])
            blocks.append(Table("Relaxation trace", tr))
        blocks.append(Notes("Plan", self.explain.splitlines()))
        if self.state_saved:
            blocks.append(Notes("State", [f"the probabilistic tables are saved in {self.state_saved}"]))
        return blocks

    def frames(self, **options: Any) -> dict[str, Any]:
        return {"answer_long": self.long_format(), "dirty": self.dirty}


class PlanResult(Result):
    """Where a query's cleaning operators go and why (``dqkit query --explain``), nothing run: the plan
    on the common result contract, so it prints, saves and exits (0) like every other result."""

    system = "dqkit query"

    def __init__(self, query: str, explain: str) -> None:
        self.query = query
        self.explain = explain

    def to_dict(self) -> dict[str, Any]:
        return {"system": "daisy", "query": self.query, "verdict": "PLAN", "explain": self.explain}

    def sections(self, sample_rows: int = 10) -> list[Any]:
        return [Verdict(True, "PLAN", "where the cleaning operators go; nothing was run"),
                Notes("Plan", self.explain.splitlines())]

    def frames(self, **options: Any) -> dict[str, Any]:
        return {}
