"""``LakeResult``: the containment graph of a lake, stage by stage, with the deletion plan."""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from dqkit.lake.graph import STAGES, EdgeState
from dqkit.lake.optret import DeletionPlan
from dqkit.lake.sgb import Edge
from dqkit.contract.result import EXIT_ERROR, Chart, Facts, Notes, Result, Table, Verdict, keyed

#: exit code of a lake run that skipped unreadable tables (its verdict covers only the tables read)
EXIT_INCOMPLETE = EXIT_ERROR

STAGE_LABEL = {"SGB": "after SGB", "MMP": "after MMP", "CLP": "after CLP", "verify": "after verification"}


@dataclass(frozen=True, eq=False, repr=False)
class LakeResult(Result):
    """The outcome of ``find_containment``.

    * ``edges``: every candidate edge (parent, child) with the stage that last kept it, the stage that
      removed it (empty when it survived), and after verification CM(child, parent) and its row count;
    * ``contained``: the edges that survived every stage run (the containment graph);
    * ``stage_counts`` / ``timings``: edges and seconds per stage (Tables 2 and 5);
    * ``metrics()``: correct / incorrect / not detected per stage against a ground truth (Tables 1–2);
    * ``plan``: the deletion plan (Opt-Ret), when asked for;
    * ``plot_containment_graph()`` and ``plot_stage_funnel()``.
    """

    system = "dqkit lake"

    lake: str
    tables: pd.DataFrame
    skipped: tuple[tuple[str, str], ...]
    edge_states: Mapping[Edge, EdgeState]
    stages_run: tuple[str, ...]
    timings: Mapping[str, float]
    params: Mapping[str, Any]
    sgb_info: Mapping[str, Any]
    clp_operations: int = 0
    plan: DeletionPlan | None = None
    truth: Mapping[Edge, tuple[float, int]] | None = None
    truth_seconds: float | None = None
    notes: tuple[str, ...] = ()
    input_paths: tuple[Any, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    def replan(self, costs: Any) -> LakeResult:
        """This result with its deletion plan recomputed for ``costs`` (a ``CostModel``): Opt-Ret only,
        no stage runs again (what a front end does when a cost parameter changes)."""
        import dataclasses

        from dqkit.lake.optret import AssumeKnown, lineage_provider, opt_ret

        sizes = {n: float(b or 0) for n, b in zip(self.tables["name"], self.tables["bytes"])}
        provider = lineage_provider(self.lake) or AssumeKnown()
        return dataclasses.replace(self, plan=opt_ret(sizes, sorted(self.contained), costs, provider))

    # -------------------------------------------------------------------------------- views
    def stage_edges(self, stage: str) -> frozenset[Edge]:
        k = STAGES.index(stage)
        return frozenset(e for e, s in self.edge_states.items()
                         if s.removed_by is None or STAGES.index(s.removed_by) > k)

    @property
    def contained(self) -> frozenset[Edge]:
        return frozenset(e for e, s in self.edge_states.items() if s.removed_by is None)

    @property
    def duplicates(self) -> list[tuple[str, str]]:
        """Pairs contained in each other (mutual containment), each once."""
        c = self.contained
        return sorted((a, b) for a, b in c if a < b and (b, a) in c)

    @property
    def stage_counts(self) -> dict[str, int]:
        return {s: len(self.stage_edges(s)) for s in self.stages_run}

    @property
    def edges(self) -> pd.DataFrame:
        """One row per candidate edge, survivors first."""
        rows = [{"parent": s.parent, "child": s.child, "kept_by": s.kept_by, "removed_by": s.removed_by or "",
                 "cm": s.cm, "rows": s.rows, "reason": s.reason} for s in self.edge_states.values()]
        df = pd.DataFrame(rows, columns=["parent", "child", "kept_by", "removed_by", "cm", "rows", "reason"])
        if len(df):
            df = df.assign(_o=df["removed_by"] != "").sort_values(["_o", "parent", "child"]).drop(columns="_o")
        return df.reset_index(drop=True)

    def components(self) -> list[list[str]]:
        """Weakly connected components of the containment graph, largest first (ties by first name)."""
        import networkx as nx

        g = nx.DiGraph(list(self.contained))
        return sorted((sorted(c) for c in nx.weakly_connected_components(g)), key=lambda c: (-len(c), c[0]))

    # -------------------------------------------------------------------------------- metrics
    def accuracy(self) -> pd.DataFrame:
        """Correct / Incorrect (<1) / Not detected per stage, precision and recall (Tables 1–2 layout);
        needs the ground truth (``truth=True``)."""
        if self.truth is None:
            raise ValueError("this result has no ground truth: run find_containment(..., truth=True)")
        true = {e for e, (cm, _) in self.truth.items() if cm == 1.0}
        out = {}
        for s in self.stages_run:
            got = self.stage_edges(s)
            correct = len(got & true)
            incorrect = len(got - true)
            missed = len(true - got)
            out[STAGE_LABEL[s]] = {"Correct": correct, "Incorrect (<1)": incorrect, "Not detected": missed,
                                   "Precision": round(correct / len(got), 4) if got else 1.0,
                                   "Recall": round(correct / len(true), 4) if true else 1.0}
        return pd.DataFrame(out)

    def time_table(self) -> pd.DataFrame:
        """Seconds per stage and the total (Table 5 layout), with the ground truth when it was run."""
        rows = []
        if self.truth_seconds is not None:
            rows.append(("Ground truth (anti-join)", self.truth_seconds))
        for s in self.stages_run:
            rows.append((s, self.timings.get(s, 0.0)))
        rows.append(("Ours (total)", sum(self.timings.get(s, 0.0) for s in self.stages_run)))
        return pd.DataFrame([{"method": m, "seconds": round(v, 3)} for m, v in rows])

    def operation_counts(self) -> pd.DataFrame:
        """Table 3's counts: C(N,2) vs SGB's, and the CLP rows checked (Σ sampled rows per edge)."""
        n = self.sgb_info["n"]
        rows = [("Ground truth schema: C(N,2)", math.comb(n, 2)),
                ("SGB: N log N + K(N-K) + Σ C(K_i,2)", round(self.sgb_info["table3_operations"], 1)),
                ("SGB subset checks made", self.sgb_info["subset_checks"]),
                ("MMP: E1 (edges checked)", len(self.stage_edges("SGB"))),
                ("CLP: sampled rows checked", self.clp_operations)]
        return pd.DataFrame([{"method": m, "operations": v} for m, v in rows])

    # -------------------------------------------------------------------------------- charts
    def plot_stage_funnel(self):
        """Edges left after each stage (correct and incorrect when the ground truth is known)."""
        from matplotlib.figure import Figure

        from dqkit.contract.charts import PLAIN

        labels = [STAGE_LABEL[s] for s in self.stages_run]
        fig = Figure(figsize=(6.5, 3.2), layout="constrained")
        ax = fig.subplots()
        if self.truth is not None:
            m = self.accuracy()
            good = [int(m[label]["Correct"]) for label in labels]
            bad = [int(m[label]["Incorrect (<1)"]) for label in labels]
            ax.bar(labels, good, color="#2da44e", label="correct")
            b = ax.bar(labels, bad, bottom=good, color="#cf222e", label="incorrect (<1)")
            ax.bar_label(b, labels=[f"{g + x:,}" for g, x in zip(good, bad)], padding=2, fontsize=8, **PLAIN)
            ax.legend(fontsize=8)
        else:
            counts = [len(self.stage_edges(s)) for s in self.stages_run]
            b = ax.bar(labels, counts, color="#4c72b0")
            ax.bar_label(b, labels=[f"{c:,}" for c in counts], padding=2, fontsize=8, **PLAIN)
        from matplotlib.ticker import MaxNLocator

        ax.yaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))  # edges are counted: no 0.5 ticks
        ax.set_ylabel("candidate edges", **PLAIN)
        ax.set_title("Containment candidates through the stages", **PLAIN)
        ax.margins(y=0.15)
        return fig

    def plot_containment_graph(self, component: int | str | None = None, max_nodes: int = 40):
        """The containment graph (parent -> child), nodes sized by table size and coloured by the plan
        (retain / delete / no plan). ``component``: an index into ``components()`` or a table name
        (default: the largest); at most ``max_nodes`` nodes are drawn (the largest tables kept)."""
        import networkx as nx
        from matplotlib.figure import Figure

        from dqkit.contract.charts import PLAIN
        from dqkit.lake._draw import drawn_edges, layered_layout

        comps = self.components()
        if not comps:
            fig = Figure(figsize=(7, 2), layout="constrained")
            ax = fig.subplots()
            ax.set_axis_off()
            ax.text(0.5, 0.5, "no containment found", ha="center", va="center", transform=ax.transAxes)
            return fig
        if component is None:
            nodes = comps[0]
        elif isinstance(component, int):
            if not 0 <= component < len(comps):
                raise IndexError(f"component {component} out of range: there are {len(comps)}")
            nodes = comps[component]
        else:
            nodes = next((c for c in comps if component in c), None)
            if nodes is None:
                raise KeyError(f"table {component!r} is in no containment edge")
        size = dict(zip(self.tables["name"], self.tables["bytes"])) if len(self.tables) else {}
        shown = sorted(nodes, key=lambda n: (-size.get(n, 0), n))[:max_nodes]
        g = nx.DiGraph()
        g.add_nodes_from(sorted(shown))
        g.add_edges_from(e for e in sorted(self.contained) if e[0] in g and e[1] in g)
        big = max((size.get(n, 0) or 0 for n in g), default=1) or 1
        area = {n: 200 + 1800 * math.sqrt((size.get(n, 0) or 0) / big) for n in g}  # points², as scatter sizes
        # parents above their children, each label in a slot of its own width: labels never overlap
        pos, width, height = layered_layout(g, {n: math.sqrt(a) for n, a in area.items()})
        title_pt = 40.0  # two title lines
        fig = Figure(figsize=(width / 72, (height + title_pt) / 72))
        ax = fig.add_axes((0, 0, 1, height / (height + title_pt)))
        ax.set_axis_off()
        ax.set_xlim(0, width)  # one data unit = one point: the layout's spacing is what is drawn
        ax.set_ylim(0, height)
        sizes = [area[n] for n in g]
        deleted = set(self.plan.delete) if self.plan else set()
        colors = [("#cf222e" if n in deleted else "#2da44e") if self.plan else "#8c959f" for n in g]
        nx.draw_networkx_nodes(g, pos, ax=ax, node_size=sizes, node_color=colors, alpha=0.85)
        implied = g.number_of_edges() - len(edges := drawn_edges(g))
        nx.draw_networkx_edges(g, pos, edgelist=edges, ax=ax, arrows=True, arrowsize=12, node_size=sizes,
                               edge_color="#57606a")
        nx.draw_networkx_labels(g, pos, ax=ax, font_size=8)
        more = f" ({len(nodes) - len(shown)} more not drawn)" if len(nodes) > len(shown) else ""
        legend = "green retain, red delete" if self.plan else "grey: no plan"
        implied_text = f"; {implied} edges implied by others not drawn" if implied else ""
        ax.set_title(f"Containment graph: component of {len(nodes)} tables{more}; {legend}\n"
                     f"parents above children{implied_text}", fontsize=9, **PLAIN)
        return fig

    # -------------------------------------------------------------------------------- contract
    @property
    def complete(self) -> bool:
        """True when every table of the lake was read; a skipped table leaves the verdict incomplete."""
        return not self.skipped

    @property
    def exit_code(self) -> int:
        """0 no containment, 1 containment found, 2 (``EXIT_INCOMPLETE``) when a table was skipped:
        the lake was not checked whole, whatever was found among the tables that were read."""
        if not self.complete:
            return EXIT_INCOMPLETE
        return super().exit_code

    def verdict_block(self) -> Verdict:
        n = len(self.contained)
        last = STAGE_LABEL[self.stages_run[-1]]
        tables = len(self.tables)
        if self.skipped:
            k = len(self.skipped)
            found = (f"{n} containment edge(s) among the {tables} read ({last})" if n
                     else f"no containment among the {tables} read ({last})")
            return Verdict(False, "INCOMPLETE", f"{k} of {tables + k} tables skipped (unreadable, not checked); "
                                                f"{found}")
        if n == 0:
            return Verdict(True, "NO CONTAINMENT", f"{tables} tables, no table contained in another ({last})")
        d = len(self.duplicates)
        plan = (f"; the plan deletes {len(self.plan.delete)} table(s), saving {money(self.plan.savings)}"
                if self.plan else "")
        return Verdict(False, "CONTAINMENT", f"{n} containment edge(s) among {tables} tables ({last}), "
                                             f"{d} duplicate pair(s){plan}")

    def metrics(self) -> dict[str, float]:
        """Tables, containment edges (after every stage run, and per stage), duplicate pairs, tables the
        plan deletes; ``edge.PARENT>CHILD`` is 1 for each containment edge kept."""
        out = {"tables": float(len(self.tables)), "skipped": float(len(self.skipped)),
               "edges": float(len(self.contained)), "duplicates": float(len(self.duplicates))}
        out.update({f"stage.{s}.edges": float(n) for s, n in self.stage_counts.items()})
        out.update({f"edge.{p}>{c}": 1.0 for p, c in sorted(self.contained)})
        if self.plan is not None:
            out["plan.deleted_tables"] = float(len(self.plan.to_dict().get("delete", [])))
        return out

    def to_dict(self) -> dict[str, Any]:
        v = self.verdict_block()
        edges = self.edges
        out: dict[str, Any] = {
            "lake": self.lake, "verdict": v.label, "summary": v.summary, "complete": self.complete,
            "exit_code": self.exit_code, "params": dict(self.params),
            "tables": self.tables.to_dict(orient="records"), "skipped_count": len(self.skipped),
            "skipped": [{"table": n, "reason": r} for n, r in self.skipped],
            "stage_counts": self.stage_counts, "seconds": {s: self.timings.get(s, 0.0) for s in self.stages_run},
            "sgb": dict(self.sgb_info), "clp_sampled_rows": self.clp_operations,
            "contained": [{"parent": p, "child": c, "kept_by": self.edge_states[(p, c)].kept_by,
                           "cm": self.edge_states[(p, c)].cm, "rows": self.edge_states[(p, c)].rows}
                          for p, c in sorted(self.contained)],
            "duplicates": [list(d) for d in self.duplicates],
            "edges": edges.to_dict(orient="records"),
            "notes": list(self.notes)}
        if self.truth is not None:
            out["metrics"] = self.accuracy().to_dict()
            out["ground_truth_seconds"] = self.truth_seconds
        if self.plan is not None:
            out["plan"] = self.plan.to_dict()
        return out

    def sections(self, sample_rows: int = 10) -> list[Any]:
        p = self.params
        blocks: list[Any] = [keyed("summary", self.verdict_block()), Facts("What was analysed", key="summary", items={
            "lake": self.lake, "tables": len(self.tables), "skipped (unreadable)": len(self.skipped),
            "total bytes": int(self.tables["bytes"].sum()) if len(self.tables) else 0,
            "CLP": f"s={p.get('s')}, t={p.get('t')}, seed={p.get('seed')}, mode={p.get('mode')}",
            "verification": ("exact, " + ("bag" if p.get("bag") else "set") + " semantics") if p.get("verify") else "off",
            "SGB clusters (K)": self.sgb_info.get("K"), "containment edges": len(self.contained)})]
        if self.skipped:
            blocks.append(Notes("Skipped tables", [f"{n}: {r}" for n, r in self.skipped], key="summary"))
        counts = pd.DataFrame([{"stage": STAGE_LABEL[s], "edges": len(self.stage_edges(s)),
                                "seconds": round(self.timings.get(s, 0.0), 3)} for s in self.stages_run])
        blocks.append(Table("Edges and time per stage", counts,
                            note="each stage only removes edges; SGB's edges are every schema containment",
                            key="stages"))
        blocks.append(Table("Operation counts (Table 3)", self.operation_counts(),
                            note="the containment checks each method makes: all schema pairs, SGB's bound "
                                 "and the checks it made, the edges MMP checked, the rows CLP sampled",
                            key="stages"))
        if self.truth is not None:
            blocks.append(Table("Against the ground truth (Tables 1–2 layout)", self.accuracy().reset_index()
                                .rename(columns={"index": "edges"}), key="stages"))
            blocks.append(Table("Time per stage (Table 5 layout)", self.time_table(), key="stages"))
        blocks.append(Chart("Stage funnel", "stage_funnel", self.plot_stage_funnel, key="charts"))
        edges = self.edges
        kept = edges[edges["removed_by"] == ""]
        blocks.append(Table("Containment edges", kept.drop(columns=["removed_by", "reason"]),
                            note="parent contains child; kept_by = the last stage that checked the edge"
                                 + (f"; first {sample_rows} shown" if sample_rows and len(kept) > sample_rows else ""),
                            max_rows=sample_rows or None, key="edges"))
        if len(self.contained):
            blocks.append(Chart("Containment graph", "containment_graph", self.plot_containment_graph, key="graph"))
        if self.plan is not None:
            pl = self.plan
            blocks.append(Facts("Deletion plan (Opt-Ret)", key="plan", items={
                "retain": len(pl.retain), "delete": ", ".join(pl.delete) or "nothing",
                **{k: money(v) for k, v in (("storage", pl.storage), ("maintenance", pl.maintenance),
                                            ("expected reconstruction", pl.reconstruction), ("total", pl.total),
                                            ("retain everything", pl.retain_all), ("savings", pl.savings))},
                "solvers": ", ".join(f"{s}×{n}" for s, n, _ in pl.components) or "none needed"}))
            if pl.delete:
                blocks.append(Table("Deleted tables and their rebuild parents", pd.DataFrame(
                    [{"delete": v, "rebuild from": pl.rebuild_from[v]} for v in pl.delete]), key="plan"))
            if pl.notes:
                blocks.append(Notes("Plan notes", list(pl.notes), key="plan"))
        if self.notes:
            blocks.append(Notes("Notes", list(self.notes), key="notes"))
        return blocks

    def frames(self, **_: Any) -> dict[str, Any]:
        """``edges`` (every candidate with its stages) and ``tables`` as small Spark DataFrames."""
        from pyspark.sql import types as T

        from dqkit.runtime.session import get_spark

        spark = get_spark()
        e = self.edges
        schema = T.StructType([T.StructField("parent", T.StringType()), T.StructField("child", T.StringType()),
                               T.StructField("kept_by", T.StringType()), T.StructField("removed_by", T.StringType()),
                               T.StructField("cm", T.DoubleType()), T.StructField("rows", T.LongType()),
                               T.StructField("reason", T.StringType())])
        rows = [(r.parent, r.child, r.kept_by, r.removed_by, None if pd.isna(r.cm) else float(r.cm),
                 None if pd.isna(r.rows) else int(r.rows), r.reason) for r in e.itertuples()]
        return {"edges": spark.createDataFrame(rows, schema)}

    def inputs(self) -> list[Any]:
        return list(self.input_paths)


def money(value: float) -> str:
    """A cost of the plan with its unit: the cost model's prices are money per GB, costs are per period."""
    return f"{value:.3g} per period (cost-model money units)"
