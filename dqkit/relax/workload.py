"""A workload of queries run through one ``Daisy`` (the query report and the benchmark share it).

``run_workload`` answers each query in order and records its time, the cumulative time, the answer size
and the cost model's decision; ``WorkloadResult`` shows them on the common result contract with the
switch point (the first query the cost model answered by cleaning the remaining dirty part, Fig. 7).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from dqkit.contract.result import Chart, Facts, Notes, Result, Table, Verdict, keyed


class WorkloadResult(Result):
    """Per-query and cumulative time of a workload, and where the cost model switched."""

    system = "dqkit query workload"

    def __init__(self, table: str, strategy: str, rows: list[dict[str, Any]]) -> None:
        self.table = table
        self.strategy = strategy
        self.rows = rows

    @property
    def switch_point(self) -> int | None:
        for r in self.rows:
            if r["decision"] == "full":
                return int(r["query"])
        return None

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=["query", "sql", "seconds", "cumulative_seconds", "answer_rows",
                                                "candidate_cells", "decision", "incremental_cost", "full_cost"])

    @property
    def cleaned_queries(self) -> int:
        """How many queries' answers needed cleaning (a cell with candidates, or other tuples)."""
        return sum(1 for r in self.rows if r.get("needed_cleaning"))

    def to_dict(self) -> dict[str, Any]:
        return {"system": "daisy-workload", "table": self.table, "strategy": self.strategy,
                "verdict": self.verdict.label, "queries": len(self.rows), "cleaned_queries": self.cleaned_queries,
                "switch_point": self.switch_point,
                "total_seconds": self.rows[-1]["cumulative_seconds"] if self.rows else 0.0, "per_query": self.rows}

    def sections(self, sample_rows: int = 10) -> list[Any]:
        total = self.rows[-1]["cumulative_seconds"] if self.rows else 0.0
        sw = self.switch_point
        blocks: list[Any] = [
            keyed("summary", Verdict(self.cleaned_queries == 0, "CANDIDATES" if self.cleaned_queries else "CLEAN",
                    f"{len(self.rows)} queries in {total:.2f}s, {self.cleaned_queries} needed cleaning; "
                    + (f"the cost model switched to full cleaning at query {sw}" if sw else "no switch to full cleaning"))),
            Facts("Workload", {"table": self.table, "strategy": self.strategy, "queries": len(self.rows),
                               "total seconds": f"{total:.2f}", "switch point": sw or "none"}, key="summary"),
            Table("Per query", self.frame().drop(columns=["sql"]), max_rows=None, key="workload"),
        ]
        if self.rows:
            blocks.append(Chart("Cumulative time", "cumulative_time", self._chart, key="charts"))
        blocks.append(Notes("Queries", [f"{r['query']}: {r['sql']}" for r in self.rows[:max(sample_rows, 1)]],
                            key="workload"))
        return blocks

    def _chart(self) -> Any:
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3))
        f = self.frame()
        ax.plot(f["query"], f["cumulative_seconds"], marker="o", ms=3)
        if self.switch_point:
            ax.axvline(self.switch_point, ls="--", color="grey")
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))  # queries are counted: no 1.5
        ax.set_xlabel("Query")
        ax.set_ylabel("Cumulative time (s)")
        fig.tight_layout()
        plt.close(fig)
        return fig

    def frames(self, **options: Any) -> dict[str, Any]:
        return {}


def run_workload(daisy: Any, table: str, queries: Sequence[str],
                 progress: Callable[[str, str, int, int], None] | None = None) -> WorkloadResult:
    """Answer ``queries`` in order on ``daisy``; the answers are counted (so each query runs whole)."""
    rows: list[dict[str, Any]] = []
    cumulative = 0.0
    for i, q in enumerate(queries, 1):
        t0 = time.perf_counter()
        res = daisy.query(q)
        n = res.tuple_counts()["answer"]
        dt = time.perf_counter() - t0
        counts = res.counts()  # what cleaning found, counted outside the query's time
        cumulative += dt
        dec = next((d for d in res.decisions if d.get("table") == table and "full_cost" in d), {})
        rows.append({"query": i, "sql": q, "seconds": round(dt, 3), "cumulative_seconds": round(cumulative, 3),
                     "answer_rows": n, "candidate_cells": counts["candidate_cells"],
                     "needed_cleaning": res.needed_cleaning, "decision": dec.get("decision", "no cleaning"),
                     "incremental_cost": dec.get("cumulative_incremental"), "full_cost": dec.get("full_cost")})
        if progress is not None:
            progress("query", q, i, len(queries))
    return WorkloadResult(table, daisy.strategy, rows)

