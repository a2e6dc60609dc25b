"""The result of a detection run: lazy DataFrames plus small computed summaries."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dqkit.errors import RuleError
from dqkit.contract.result import SAMPLE_PREFETCH, Chart, Facts, Result, Table, Verdict, keyed
from dqkit.detect._names import FIX_SAMPLE_COLUMNS
from dqkit.detect.since_manifest import FINGERPRINTS, MANIFEST, make_manifest, pairs_unique


#: the columns of a sample of candidate fixes (``DetectionResult.first_fixes``)


def of_violations(rows: DataFrame, violations: DataFrame) -> DataFrame:
    """The rows of ``rows`` (with ``rule, t1, t2``) that belong to one of ``violations`` (NULL ``t2``
    matching NULL: one-tuple rules)."""
    v = violations.select(F.col("rule").alias("_dq_vr"), F.col("t1").alias("_dq_v1"), F.col("t2").alias("_dq_v2"))
    on = (F.col("rule") == F.col("_dq_vr")) & (F.col("t1") == F.col("_dq_v1")) & F.col("t2").eqNullSafe(F.col("_dq_v2"))
    return rows.join(v, on=on, how="left_semi")


@dataclass(frozen=True)
class RuleSummary:
    """Per-rule outcome: violation count, physical operator, wall time, candidate pairs if known."""

    name: str
    kind: str
    rule: str
    operator: str
    violations: int
    seconds: float
    candidates: int | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = {"violations": self.violations, "operator": self.operator, "seconds": round(self.seconds, 4),
             "kind": self.kind, "rule": self.rule}
        if self.candidates is not None:
            d["candidates"] = self.candidates
        d.update({k: v for k, v in self.details.items() if not k.startswith("_")
                  and isinstance(v, (int, float, str, bool))})
        return d


@dataclass(frozen=True, repr=False)
class DetectionResult(Result):
    """Violations of a set of rules on one table (BigDansing's Detect + GenFix output).

    ``violations``: DataFrame ``rule, t1, t2`` (``t2`` NULL for one-tuple rules); for symmetric rules
    each unordered pair once with ``t1 < t2``. ``candidate_fixes``: DataFrame of fixes
    ``tid[attr] op (rhs_tid[rhs_attr] | constant)`` per violation. Both are lazy; the per-rule
    counts in ``summaries`` are already computed. Rendering and saving come from
    ``dqkit.contract.result.Result``.
    """

    system = "dqkit detect"

    table: str
    mode: str
    sample: int | None
    rules: tuple[Any, ...]
    summaries: tuple[RuleSummary, ...]
    violations_builder: Any  # () -> DataFrame, called once on first access of ``violations``
    fixes_builder: Any  # () -> DataFrame, called once on first access of ``candidate_fixes``
    logical_plan: str
    consolidated_plan: str
    physical_plan: str
    scan_seconds: float = 0.0
    shared_scope: DataFrame | None = None
    #: the key, the column types and (with a key, all violations kept) each row's fingerprint over the
    #: rules' columns: what a saved result needs to stand for this table in a later ``detect --since``
    key: str | None = None
    schema: dict[str, str] = field(default_factory=dict)
    fingerprints: DataFrame | None = None
    #: (violations) -> DataFrame: GenFix over some of this result's violations (see ``fixes_for``)
    fixes_for_builder: Any = None

    # ----------------------------------------------------------------- accessors
    @functools.cached_property
    def violations(self) -> DataFrame:
        """Violations ``rule, t1, t2`` (built on first access; count-only runs never need it)."""
        return self.violations_builder()

    @functools.cached_property
    def candidate_fixes(self) -> DataFrame:
        """GenFix output: one row per candidate fix ``tid[attr] op (rhs_tid[rhs_attr] | constant)``."""
        return self.fixes_builder()

    @property
    def total_violations(self) -> int:
        return sum(s.violations for s in self.summaries)

    @property
    def counts(self) -> dict[str, int]:
        return {s.name: s.violations for s in self.summaries}

    def summary(self, rule: str) -> RuleSummary:
        for s in self.summaries:
            if s.name == rule:
                return s
        raise RuleError(f"no rule named {rule!r} in this result", hint=", ".join(s.name for s in self.summaries))

    def violations_of(self, rule: str) -> DataFrame:
        """The violations of one rule."""
        self.summary(rule)
        return self.violations.where(F.col("rule") == rule)

    def fixes_for(self, violations: DataFrame) -> DataFrame:
        """The candidate fixes of the given violations (``rule, t1, t2``: some of this result's, such as
        its first ones, fetched for display), as ``candidate_fixes`` has them, computed for those
        violations only: a sample of fixes need not build every fix. Lazy."""
        if self.mode == "count":
            raise RuleError("a count-only detection has no candidate fixes", hint="detect with mode='violations'")
        if self.fixes_for_builder is None:  # a result built without it: filter the full fixes
            return of_violations(self.candidate_fixes, violations)
        return self.fixes_for_builder(violations)

    def fixes_of(self, rule: str) -> DataFrame:
        self.summary(rule)
        return self.candidate_fixes.where(F.col("rule") == rule)

    def explain(self) -> str:
        """Logical plan, consolidated plan and physical plan with the operator chosen per rule."""
        return ("== Logical plan ==\n" + self.logical_plan + "\n\n== Consolidated plan ==\n" +
                self.consolidated_plan + "\n\n== Physical plan ==\n" + self.physical_plan + "\n")

    def unpersist(self) -> None:
        """Release the cached shared scan (multi-rule runs); the DataFrames stay valid (recomputed)."""
        if self.shared_scope is not None:
            self.shared_scope.unpersist()

    def metrics(self) -> dict[str, float]:
        """``violations`` in total and ``rule.NAME.violations`` per rule."""
        out = {"violations": float(self.total_violations)}
        out.update({f"rule.{s.name}.violations": float(s.violations) for s in self.summaries})
        return out

    # ----------------------------------------------------------------- the result contract
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``{"rules": {NAME: {"violations", "operator", "seconds", ...}}, ...}``."""
        v = self.verdict_block()
        return {"table": self.table, "mode": self.mode, "sample": self.sample,
                "verdict": v.label, "summary": v.summary,
                "total_violations": self.total_violations, "scan_seconds": round(self.scan_seconds, 4),
                "rules": {s.name: s.to_dict() for s in self.summaries}}

    def sample_rows(self, n: int = 20) -> list[tuple[str, Any, Any]]:
        """At most ``n`` violations per rule (the smallest tuple ids), for display; each rule's sample is
        fetched once and kept (``Result.first_rows``): a later page runs no Spark job."""
        out: list[tuple[str, Any, Any]] = []
        for s in self.summaries:
            if s.violations == 0:
                continue
            rows = self.first_rows(("violations", s.name), n, lambda k, name=s.name: [
                (r["rule"], r["t1"], r["t2"]) for r in self.violations_of(name).orderBy("t1", "t2").limit(k).collect()])
            out.extend(rows)
        return out

    def first_fixes(self, n: int = 10) -> pd.DataFrame:
        """At most ``n`` candidate fixes per rule: the first ones by ``(t1, t2, tid, attr, fix)``
        (``FIX_SAMPLE_COLUMNS``), for display.

        Every violation of an FD or a denial constraint has at least one candidate fix, so the first ``n``
        fixes of a rule belong to its first ``n`` violations by ``(t1, t2)``: those are fetched (the
        violation sample "First violations" shows, fetched once) and only their fixes are built
        (``fixes_for``), not every fix of every violation. A UDF rule may have violations without fixes:
        with one, the fixes of all violations are ranked instead. The sample is fetched once for at least
        ``SAMPLE_PREFETCH`` fixes per rule and kept, so a later page runs no Spark job.
        """
        if n <= 0 or not self.total_violations or self.mode == "count":
            return pd.DataFrame(columns=FIX_SAMPLE_COLUMNS)
        kept = self.__dict__.setdefault("_dq_first_fixes", {})  # also on this frozen dataclass
        if kept.get("limit", 0) < n:
            limit = max(int(n), SAMPLE_PREFETCH)
            kept.update(limit=limit, frame=self._rank_fixes(limit))
        frame = kept["frame"]
        return frame.groupby("rule", sort=False).head(n).reset_index(drop=True)

    def _rank_fixes(self, n: int) -> pd.DataFrame:
        from pyspark.sql.window import Window

        from dqkit.rules import UDFRule

        if any(isinstance(r, UDFRule) for r in self.rules):
            f = self.candidate_fixes
        else:
            first = self.sample_rows(n)
            if not first:
                return pd.DataFrame(columns=FIX_SAMPLE_COLUMNS)
            f = self.fixes_for(self.violations.sparkSession.createDataFrame(first, self.violations.schema))
        order = Window.partitionBy("rule").orderBy("t1", "t2", "tid", "attr", "fix")
        rows = (f.withColumn("_n", F.row_number().over(order)).where(F.col("_n") <= n)
                .orderBy("rule", "_n").collect())
        return pd.DataFrame([{"rule": r["rule"], "t1": r["t1"], "t2": r["t2"], "cell": f"{r['tid']}[{r['attr']}]",
                              "value": r["value"], "fix": r["fix"],
                              "other value": r["rhs_value"] if r["rhs_tid"] is not None else r["constant"]}
                             for r in rows], columns=FIX_SAMPLE_COLUMNS)

    def verdict_block(self) -> Verdict:
        """NO VIOLATIONS or VIOLATIONS, with the count per violated rule."""
        n = self.total_violations
        rules = len(self.summaries)
        if n == 0:
            return Verdict(True, "NO VIOLATIONS", f"{rules} rule{'s' if rules != 1 else ''} hold on {self.table}")
        broken = [f"{s.name} {s.violations}" for s in self.summaries if s.violations]
        return Verdict(False, "VIOLATIONS", f"{n} violation{'s' if n != 1 else ''} of {len(broken)} of {rules} "
                                            f"rule{'s' if rules != 1 else ''} on {self.table}: {', '.join(broken)}")

    def sections(self, sample_rows: int = 10) -> list[Any]:
        """Verdict, what was checked, violations per rule with a chart, the first violations and the first
        candidate fixes (BigDansing's GenFix: how one cell could change so that a violation disappears)."""
        blocks: list[Any] = [keyed("summary", self.verdict_block()),
                             Facts("What was checked", {"table": self.table, "rules": len(self.summaries),
                                                        "mode": self.mode if self.sample is None
                                                        else f"{self.mode} (at most {self.sample} per rule)"},
                                   key="summary")]
        per_rule = pd.DataFrame([{"rule": s.name, "definition": s.rule, "operator": s.operator,
                                  "violations": s.violations, "seconds": round(s.seconds, 2)}
                                 for s in self.summaries], columns=["rule", "definition", "operator", "violations",
                                                                    "seconds"])
        blocks.append(Table("Violations per rule", per_rule, key="violations"))
        if len(self.summaries) > 1 or self.total_violations:
            blocks.append(Chart("Violations per rule", "violations_per_rule", self.plot_counts, key="charts"))
        if self.mode != "count" and sample_rows and self.total_violations:
            rows = self.sample_rows(sample_rows)
            blocks.append(Table("First violations", pd.DataFrame(rows, columns=["rule", "t1", "t2"]),
                                note=f"at most {sample_rows} per rule, smallest tuple ids first; "
                                     "t2 is NULL for one-tuple rules", key="violations"))
            fixes = self.first_fixes(sample_rows)
            if len(fixes):
                blocks.append(Table("First candidate fixes", fixes,
                                    note=f"at most {sample_rows} per rule: the cell tid[attr] with its value, the "
                                         "fix, and the other value or constant the fix names", key="fixes"))
        return blocks

    def frames(self, **_: Any) -> dict[str, DataFrame]:
        """``violations`` and ``candidate_fixes`` (none for count-only runs)."""
        if self.mode == "count":
            return {}
        out = {"violations": self.violations, "candidate_fixes": self.candidate_fixes}
        if self.fingerprints is not None and self.mode == "violations":
            out[FINGERPRINTS] = self.fingerprints
        return out

    def inputs(self) -> list[Any]:
        return [self.table] if isinstance(self.table, str) else []

    def frame_rows(self, **_: Any) -> dict[str, int]:
        """The violations are counted already (``summaries``); the file sizes follow them."""
        return {"violations": self.total_violations}

    def _save_extra(self, folder) -> None:
        from dqkit.contract import render

        (folder / "plan.txt").write_text(self.explain(), encoding="utf-8")
        counts = {s.name: s.violations for r, s in zip(self.rules, self.summaries) if pairs_unique(r)}
        manifest = make_manifest(self.rules, self.key, self.table, self.mode, self.schema, counts)
        (folder / MANIFEST).write_text(render.dumps(manifest), encoding="utf-8")

    def plot_violation_graph(self, rule: str | None = None, max_edges: int = 200):
        """The violation graph (tuples as nodes, violations as edges) of a bounded sample, drawn with
        networkx/matplotlib; returns the figure."""
        import networkx as nx
        from matplotlib.figure import Figure

        v = self.violations if rule is None else self.violations_of(rule)
        rows = v.where(F.col("t2").isNotNull()).orderBy("rule", "t1", "t2").limit(max_edges).collect()
        g = nx.Graph()
        for r in rows:
            g.add_edge(str(r["t1"]), str(r["t2"]), rule=r["rule"])
        fig = Figure(figsize=(6, 5), layout="constrained")  # object API: no global backend switch
        ax = fig.subplots()
        if g.number_of_nodes():
            pos = nx.spring_layout(g, seed=7)
            nx.draw_networkx(g, pos, ax=ax, node_size=300, font_size=7, node_color="#f4a261")
        ax.set_title(f"violation graph ({g.number_of_edges()} edge(s) shown)")
        ax.set_axis_off()
        return fig

    def plot_counts(self):
        """Bar chart of violations per rule."""
        from dqkit.contract import charts as ch

        return ch.barh({s.name: s.violations for s in self.summaries}, "Violations per rule",
                       "Violations", "Rule", integer=True)
