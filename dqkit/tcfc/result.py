"""``TcfcResult``: the report of a TCFC run on the common result contract (C5, E1, E2, N1, P5).

* ``status``: COMPLETED (the queue was exhausted) or UNCOMPLETED (the budget expired or the run was
  cancelled; the report holds only completed jobs, T5, and ``pending`` lists what was left);
* ``report()``: one row per differing fragment (pair, level, X, values, kind, both sides' aggregates,
  job id, parent job id, error count), as pandas; ``to_dict()['report']`` is the same as JSON;
* ``coverage()``: per pair, examined or "not examined" (E2), the deepest completed level, the differing
  fragments there and a lower bound on the differing rows (E1: the largest, over levels, of the sum of
  |count_r - count_s| over the differing fragments of that level);
* ``tree(pair)`` / ``plot_tree(pair)``: the drill-down tree in the style of Figure 2, differing fragments
  red, equal ones green (a bounded sample of them per job), step numbers = job order;
* ``jobs()``: per-job instrumentation (P5): wall time, |q_r|, |q_s|, bytes fetched from each engine, the
  queries run and, for a root answered from exact statistics (P4), which sides were and how.

Exit codes (CLI): 0 = COMPLETED without differences; 1 = differences found (completed or not);
3 = UNCOMPLETED with no difference found so far; 2 = error.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pandas as pd

from dqkit.contract import render
from dqkit.exitcodes import EXIT_FINDINGS, EXIT_OK, EXIT_UNCOMPLETED
from dqkit.contract.result import Chart, Facts, Notes, Result, Table, Verdict
from dqkit.tcfc.model import COMPLETED, GRACE_S, UNCOMPLETED, Difference, RunState, project
from dqkit.tcfc.engines import EnginePool, Unrepresentable
from dqkit.tcfc.spec import TcfcSpec



def show(v: Any) -> Any:
    """A value as a person reads it (dates ISO, unrepresentable values flagged)."""
    if isinstance(v, Unrepresentable):
        return str(v)
    return render.to_jsonable(v)


def fragment_label(X: Sequence[str], values: Sequence[Any]) -> str:
    if not X:
        return "(whole table)"
    return ", ".join(f"{c}={show(v)}" for c, v in zip(X, values))


class TcfcResult(Result):
    """What a TCFC run found, within its budget."""

    system = "dqkit tcfc"

    def __init__(self, spec: TcfcSpec, state: RunState, bound: dict[str, Any], pool: EnginePool,
                 reuse: str | None = None) -> None:
        self.spec = spec
        self.state = state
        self.bound = bound
        self.pool = pool
        self.reuse = reuse

    # ----- facts
    @property
    def status(self) -> str:
        return self.state.status

    @property
    def differences(self) -> list[Difference]:
        return list(self.state.report)

    @property
    def pending(self) -> list[Any]:
        return list(self.state.pending)

    @property
    def queries(self) -> int:
        return sum(r.queries for r in self.state.records if r.status == "done")

    @property
    def bytes_crossed(self) -> int:
        """Bytes of aggregated rows fetched from the engines (the only data that left them, P2)."""
        return sum(r.source_bytes + r.target_bytes for r in self.state.records)

    @property
    def exit_code(self) -> int:
        if self.state.report:
            return EXIT_FINDINGS
        return EXIT_OK if self.status == COMPLETED else EXIT_UNCOMPLETED

    def differing_pairs(self) -> list[str]:
        return [p.name for p in self.spec.pairs if any(d.pair == p.name for d in self.state.report)]

    def coverage(self) -> pd.DataFrame:
        """Per pair: examined or not (E2), deepest completed level, differing fragments there, lower bound (E1)."""
        rows = []
        for p in self.spec.pairs:
            deepest = self.state.examined.get(p.name, 0)
            diffs = [d for d in self.state.report if d.pair == p.name]
            at = [d for d in diffs if d.level == deepest]
            bounds = {}
            for d in diffs:
                if d.error_count is not None:
                    bounds[d.level] = bounds.get(d.level, 0) + d.error_count
            pending = sum(1 for j in self.state.pending if j.pair == p.name)
            if deepest == 0:
                state = "not examined"
            elif diffs:
                state = "differences"
            else:
                state = "no differences found"
            rows.append({"pair": p.name, "state": state, "deepest_level": deepest, "full_depth": p.full_depth,
                         "complete": deepest > 0 and pending == 0, "differing_fragments": len(diffs),
                         "at_deepest_level": len(at),
                         "rows_differing_at_least": max(bounds.values()) if bounds else (None if diffs else 0),
                         "pending_jobs": pending})
        return pd.DataFrame(rows)

    def report(self, pair: str | None = None) -> pd.DataFrame:
        """The report (C5) as pandas: one row per differing fragment, values and aggregates readable."""
        rows = []
        for d in self.state.report:
            if pair is not None and d.pair != pair:
                continue
            aggs = [a.alias for a in self.spec.pair(d.pair).levels[d.level - 1].A]
            rows.append({"pair": d.pair, "level": d.level, "X": ", ".join(d.X) or "(none)",
                         "fragment": fragment_label(d.X, d.values), "kind": d.kind,
                         "source": _aggs(aggs, d.source), "target": _aggs(aggs, d.target),
                         "error_count": d.error_count, "job_id": d.job_id, "parent_job": d.parent_job,
                         "reused": d.reused})
        cols = ["pair", "level", "X", "fragment", "kind", "source", "target", "error_count", "job_id",
                "parent_job", "reused"]
        return pd.DataFrame(rows, columns=cols)

    def jobs(self) -> pd.DataFrame:
        """Per-job instrumentation (P5); ``queries`` counts the engine queries the job ran (0 for a root answered
        from exact statistics on both sides, P4) and ``statistics`` names the sides that were and how."""
        cols = ["job_id", "pair", "level", "kind", "fragments_in_filter", "status", "seconds", "source_rows",
                "target_rows", "source_bytes", "target_bytes", "differences", "parent_job", "queries", "statistics"]
        return pd.DataFrame([{c: getattr(r, c) for c in cols} for r in self.state.records], columns=cols)

    def report_rows(self, pair: str | None = None) -> list[dict[str, Any]]:
        """The report as JSON-ready dicts with typed values (what ``to_dict`` holds)."""
        out = []
        for d in self.state.report:
            if pair is not None and d.pair != pair:
                continue
            aggs = [a.alias for a in self.spec.pair(d.pair).levels[d.level - 1].A]
            out.append({"pair": d.pair, "level": d.level, "X": list(d.X), "values": [show(v) for v in d.values],
                        "kind": d.kind, "source": _aggs(aggs, d.source), "target": _aggs(aggs, d.target),
                        "error_count": d.error_count, "job_id": d.job_id, "parent_job": d.parent_job,
                        "reused": d.reused})
        return out

    # ----- drill-down
    def rows(self, pair: str, level: int, values: Sequence[Any], limit: int = 20) -> dict[str, pd.DataFrame]:
        """At most ``limit`` rows of one fragment from each side (bounded; for the widget's drill-down)."""
        bp = self.bound[pair]
        X = bp.spec.levels[level - 1].X
        return {role: b.engine.rows(b, X, tuple(values), limit) for role, b in (("source", bp.source),
                                                                              ("target", bp.target))}

    def tree(self, pair: str) -> Any:
        """The drill-down tree of ``pair`` as a networkx DiGraph (nodes carry level, label, kind, step)."""
        import networkx as nx

        p = self.spec.pair(pair)
        g = nx.DiGraph()
        root = ("root", pair)
        g.add_node(root, level=0, label=pair, kind="root", step=0)
        ids: dict[tuple[int, tuple], Any] = {}
        recs = {r.job_id: r for r in self.state.records}
        for d in sorted(self.state.report, key=lambda d: (d.level, d.job_id)):
            if d.pair != pair:
                continue
            node = ("f", d.level, d.values)
            src = _first_count(p.levels[d.level - 1].A, d.source)
            tgt = _first_count(p.levels[d.level - 1].A, d.target)
            counts = f"\n{_n(src)} <> {_n(tgt)}" if (src, tgt) != (None, None) else ""
            g.add_node(node, level=d.level, label=fragment_label(d.X, d.values).replace(", ", "\n") + counts,
                       kind=d.kind, step=d.job_id)
            ids[(d.level, d.values)] = node
            g.add_edge(self._parent(p, d.level, d.X, d.values, ids, root), node, step=d.job_id)
        for r in sorted(self.state.records, key=lambda r: r.job_id):  # a sample of equal fragments per job
            if r.pair != pair or r.status != "done":
                continue
            for values, agg in getattr(r, "equal_sample", []):
                node = ("f", r.level, values)
                if node in g:
                    continue
                X = p.levels[r.level - 1].X
                c = _first_count(p.levels[r.level - 1].A, agg)
                g.add_node(node, level=r.level, label=fragment_label(X, values).replace(", ", "\n")
                           + (f"\n{_n(c)} = {_n(c)}" if c is not None else ""), kind="EQUAL", step=r.job_id)
                g.add_edge(self._parent(p, r.level, X, values, ids, root), node, step=r.job_id)
            if getattr(r, "equal_more", 0):
                node = ("more", r.job_id)
                g.add_node(node, level=r.level, label=f"+{r.equal_more} equal", kind="EQUAL", step=r.job_id)
                parent = root
                if r.filter_values and r.level > 1:
                    prev = p.levels[r.level - 2].X
                    key = (r.level - 1, project(r.filter_values[0], r.filter_cols, prev)) \
                        if set(prev) <= set(r.filter_cols) else None
                    parent = ids.get(key, root) if key else root
                g.add_edge(parent, node, step=r.job_id)
        return g

    @staticmethod
    def _parent(p: Any, level: int, X: Sequence[str], values: tuple, ids: dict, root: Any) -> Any:
        for up in range(level - 1, 0, -1):
            prev = p.levels[up - 1].X
            key = (up, project(values, X, prev))
            if key in ids:
                return ids[key]
        return root

    def plot_tree(self, pair: str, max_nodes: int = 60) -> Any:
        """Figure 2: the pair's drill-down tree, differing fragments red, equal ones green, steps numbered."""
        import matplotlib.pyplot as plt
        import networkx as nx

        g = self.tree(pair)
        if g.number_of_nodes() > max_nodes:
            keep = sorted(g.nodes, key=lambda n: (g.nodes[n]["kind"] == "EQUAL", g.nodes[n]["level"],
                                                  g.nodes[n]["step"]))[:max_nodes]
            g = g.subgraph(keep).copy()
        levels: dict[int, list[Any]] = {}
        for n in nx.topological_sort(g):
            levels.setdefault(g.nodes[n]["level"], []).append(n)
        pos = {}
        for lv, nodes in levels.items():
            nodes.sort(key=lambda n: (g.nodes[n]["step"], str(g.nodes[n]["label"])))
            for i, n in enumerate(nodes):
                pos[n] = ((i + 1) / (len(nodes) + 1), -lv)
        width = max(6.0, 1.6 * max(len(v) for v in levels.values()))
        fig, ax = plt.subplots(figsize=(min(width, 18), 1.6 * (len(levels) + 1)))
        colour = {"root": "#dddddd", "EQUAL": "#c8ecc8", "MISSING": "#f4a6a6", "EXCESS": "#f4a6a6", "DIFF": "#f4a6a6"}
        nx.draw_networkx_edges(g, pos, ax=ax, arrows=False, edge_color="#888888")
        for n, (x, y) in pos.items():
            d = g.nodes[n]
            ax.text(x, y, d["label"], ha="center", va="center", fontsize=7,
                    bbox={"boxstyle": "round,pad=0.3", "fc": colour.get(d["kind"], "#eeeeee"),
                          "ec": "#cc0000" if d["kind"] in ("MISSING", "EXCESS", "DIFF") else "#558855"})
            if d["kind"] in ("MISSING", "EXCESS", "DIFF"):
                ax.annotate(f"{d['step']}", (x, y), xytext=(-18, 12), textcoords="offset points", fontsize=7,
                            bbox={"boxstyle": "circle,pad=0.2", "fc": "white", "ec": "#333333"})
                ax.annotate(d["kind"], (x, y), xytext=(0, -20), textcoords="offset points", fontsize=6,
                            ha="center", color="#aa0000")
        ax.set_title(f"TCFC drill-down: {pair} ({self.status})", fontsize=9)
        ax.set_ylim(-(max(levels) + 0.6), 0.6)
        ax.set_xlim(0, 1)
        ax.axis("off")
        fig.tight_layout()
        return fig

    # ----- the contract
    def metrics(self) -> dict[str, float]:
        """Per pair ``PAIR.differing_fragments`` and ``PAIR.rows_differing_at_least``, pairs differing,
        whether it completed, queries and bytes crossed."""
        from dqkit.contract.metrics import pick

        out = {"differing_pairs": float(len(self.differing_pairs())), "completed": float(self.status == "COMPLETED"),
               "queries": float(self.queries), "bytes_crossed": float(self.bytes_crossed)}
        for row in self.coverage().to_dict("records"):
            out.update(pick(row, ("differing_fragments", "rows_differing_at_least", "deepest_level"), f"{row['pair']}."))
        return out

    def to_dict(self) -> dict[str, Any]:
        cov = self.coverage()
        return {
            "system": "tcfc", "status": self.status, "budget_s": self.state.budget, "grace_s": GRACE_S,
            "seconds": round(self.state.seconds, 3), "cancelled_by_user": self.state.cancelled_by_user,
            "differing_pairs": self.differing_pairs(), "exit_code": self.exit_code,
            "progress": self.progress_lines(),
            "pairs": [{k: render.to_jsonable(v) for k, v in row.items()} for row in cov.to_dict("records")],
            "report": self.report_rows(),
            "pending": [{"pair": j.pair, "level": j.level, "kind": j.kind, "fragments": len(j.filter_values)}
                        for j in self.state.pending],
            "jobs": [{k: render.to_jsonable(v) for k, v in r.items()} for r in self.jobs().to_dict("records")],
            "queries": self.queries, "bytes_crossed": self.bytes_crossed,
            "unrepresentable": list(self.state.unrepresentable), "notes": list(self.state.notes),
            "spec": {"pairs": [{"name": p.name, "source": p.source.describe(), "target": p.target.describe(),
                                "levels": [list(lv.X) for lv in p.levels], "healthy_depth": p.healthy_depth,
                                "priority": p.priority} for p in self.spec.pairs]},
        }

    def sections(self, sample_rows: int = 10) -> list[Any]:
        n = len(self.state.report)
        pairs = self.differing_pairs()
        if self.status == COMPLETED and not n:
            verdict = Verdict(True, "IDENTICAL", f"all {len(self.spec.pairs)} pair(s) compared to completion; "
                                                 "no difference")
        elif n:
            verdict = Verdict(False, "DIFFERENT" if self.status == COMPLETED else "DIFFERENT (UNCOMPLETED)",
                              f"{len(pairs)} of {len(self.spec.pairs)} pair(s) differ: {', '.join(pairs)}; "
                              f"{n} differing fragment(s)" + ("" if self.status == COMPLETED else
                                                              "; the budget expired before the deepest level"))
        else:
            verdict = Verdict(False, UNCOMPLETED, "no difference found before the budget expired; "
                                                  "not every pair was compared to completion")
        facts = Facts("Run", {"status": self.status, "budget": f"{self.state.budget:g} s" if self.state.budget
                              else "none (run to completion)", "time": f"{self.state.seconds:.2f} s",
                              "pairs": len(self.spec.pairs), "queries": self.queries,
                              "bytes crossed between engines": self.bytes_crossed,
                              "pending jobs": len(self.state.pending),
                              "result reuse": self.reuse or "off"})
        blocks: list[Any] = [verdict, facts, Table("Coverage per pair", self.coverage())]
        if self.status != COMPLETED:
            blocks.append(Notes("Proven so far and still pending", self.progress_lines()))
        if n:
            blocks.append(Table("Differing fragments", _readable_report(self.report()), max_rows=sample_rows or None,
                                note=f"{n} row(s)" + (f"; first {sample_rows} shown" if sample_rows and n > sample_rows
                                                     else "")))
        for p in pairs:
            blocks.append(Chart(f"Drill-down tree: {p}", f"tree_{_safe(p)}", lambda p=p: self.plot_tree(p)))
        jobs = self.jobs()
        if len(jobs):
            blocks.append(Table("Jobs", _readable_jobs(jobs), max_rows=max(sample_rows, 1) * 2 if sample_rows else None,
                                note=f"{len(jobs)} job(s), {self.queries} queries"))
        else:  # a sentence, never an empty frame's repr
            blocks.append(Notes("Jobs", ["no compare job ran" + ("" if self.status == COMPLETED else
                                         ": the budget expired (or the run was cancelled) before the first "
                                         "job finished")]))
        notes = list(self.state.notes) + [f"unrepresentable value: {u}" for u in self.state.unrepresentable]
        notes += [f"pending: {j.describe()}" for j in self.state.pending[:sample_rows or 10]]
        if notes:
            blocks.append(Notes("Notes", notes))
        return blocks

    def progress_lines(self) -> list[str]:
        """One sentence per pair: what this run proved about it, and what is still pending."""
        out = []
        for row in self.coverage().to_dict("records"):
            name, deepest, full = row["pair"], row["deepest_level"], row["full_depth"]
            pending = row["pending_jobs"]
            left = f"; {pending} job(s) still pending" if pending else ""
            if deepest == 0:
                why = "not bound in time" if name not in self.bound else "no job finished"
                out.append(f"{name}: nothing proven yet ({why}){left}")
            elif row["complete"] and not row["differing_fragments"]:
                out.append(f"{name}: proven identical (compared to completion)")
            elif row["differing_fragments"]:
                out.append(f"{name}: proven different: {row['differing_fragments']} differing fragment(s) down to "
                           f"level {deepest} of {full}{left}")
            else:
                out.append(f"{name}: no difference at level {deepest} of {full}{left}")
        return out

    _REPORT_SCHEMA = ("pair string, level int, X string, values string, kind string, source string, target string, "
                      "error_count long, job_id int, parent_job int, reused boolean")

    def save(self, target: Any, overwrite: bool = False, **kwargs: Any) -> str:
        """As ``Result.save``; a folder target gets its ``report`` Parquet written with pyarrow, so saving
        never starts Spark (a run whose budget expired while Spark started, or a database-only spec, would
        otherwise wait for a JVM after the budget). A ``catalog:`` target needs Spark and uses it."""
        import os

        self._local_report = not os.fspath(target).startswith("catalog:")
        if not self.differing_pairs():  # no tree chart to draw: skip importing matplotlib (seconds)
            kwargs.setdefault("charts", False)
        try:
            return super().save(target, overwrite, **kwargs)
        finally:
            self._local_report = False

    def _save_extra(self, folder: Any) -> None:
        if not getattr(self, "_local_report", False):
            return
        import pyarrow as pa
        import pyarrow.parquet as pq

        types = {"string": pa.string(), "int": pa.int32(), "long": pa.int64(), "boolean": pa.bool_()}
        fields = [tuple(f.split()) for f in self._REPORT_SCHEMA.split(", ")]
        rows = self._report_tuples()
        table = pa.table({name: pa.array([r[i] for r in rows], type=types[t]) for i, (name, t) in enumerate(fields)})
        (folder / "report").mkdir()
        pq.write_table(table, folder / "report" / "part-00000.parquet")

    def _report_tuples(self) -> list[tuple]:
        return [(r["pair"], r["level"], json.dumps(r["X"]), json.dumps(r["values"], default=str), r["kind"],
                 json.dumps(r["source"], default=str), json.dumps(r["target"], default=str), r["error_count"],
                 r["job_id"], r["parent_job"], r["reused"]) for r in self.report_rows()]

    def frames(self, **options: Any) -> dict[str, Any]:
        """The report as a Spark DataFrame (for ``catalog:`` targets; a folder's is written by pyarrow)."""
        if getattr(self, "_local_report", False):
            return {}
        from dqkit.runtime.session import get_spark

        spark = self.pool.spark or get_spark()
        return {"report": spark.createDataFrame(self._report_tuples(), self._REPORT_SCHEMA)}

    def inputs(self) -> list[Any]:
        out = []
        for p in self.spec.pairs:
            for s in (p.source, p.target):
                if s.url is None and isinstance(s.table, str) and not s.table.startswith("catalog:"):
                    out.append(s.table)
                out += [t for t in s.tables.values() if isinstance(t, str) and not t.startswith("catalog:")]
        return out

    def close(self) -> None:
        """Close the database connections kept for drill-down."""
        self.pool.close()


def _aggs(names: Sequence[str], values: Sequence[Any] | None) -> dict[str, Any] | None:
    if values is None:
        return None
    return {n: show(v) for n, v in zip(names, values)}


def _first_count(aggs: Sequence[Any], values: Sequence[Any] | None) -> Any:
    if values is None:
        return 0
    for a, v in zip(aggs, values):
        if a.function == "count":
            return v
    return None


def _n(v: Any) -> str:
    return "-" if v is None else str(v)


def _safe(name: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:60]


#: job kinds as a reader understands them (the paper's ERROR job drills below a difference; it is no error)
JOB_KINDS = {"ROOT": "root", "REUSE": "reuse", "ERROR": "drill-down", "HEALTHY": "healthy check"}


def _aggregates_text(value: Any) -> Any:
    """``{'rows': 3, 'salary': 15300}`` as ``rows 3, salary 15300`` (a report shows no Python dict)."""
    if isinstance(value, dict):
        return ", ".join(f"{k} {show(v)}" for k, v in value.items())
    return value


def _readable_report(frame: pd.DataFrame) -> pd.DataFrame:
    """The differing fragments for the page: aggregates as text."""
    out = frame.copy()
    for c in ("source", "target"):
        if c in out.columns:
            out[c] = out[c].map(_aggregates_text)
    return out


def _readable_jobs(frame: pd.DataFrame) -> pd.DataFrame:
    """The jobs for the page: kinds in words, the time with its unit."""
    out = frame.copy()
    out["kind"] = out["kind"].map(lambda k: JOB_KINDS.get(k, k))
    return out.rename(columns={"seconds": "time (s)", "source_bytes": "source bytes", "target_bytes": "target bytes"})
