"""The result of a detection run: lazy DataFrames plus small computed summaries."""
from __future__ import annotations

import functools
import html
import json
import os
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dqkit.errors import ParameterError, RuleError


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


@dataclass(frozen=True)
class DetectionResult:
    """Violations of a set of rules on one table (BigDansing's Detect + GenFix output).

    ``violations``: DataFrame ``rule, t1, t2`` (``t2`` NULL for one-tuple rules); for symmetric rules
    each unordered pair once with ``t1 < t2``. ``candidate_fixes``: DataFrame of fixes
    ``tid[attr] op (rhs_tid[rhs_attr] | constant)`` per violation. Both are lazy; the per-rule
    counts in ``summaries`` are already computed.
    """

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

    # ----------------------------------------------------------------- rendering
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``{"rules": {NAME: {"violations", "operator", "seconds", ...}}, ...}``."""
        return {"table": self.table, "mode": self.mode, "sample": self.sample,
                "total_violations": self.total_violations, "scan_seconds": round(self.scan_seconds, 4),
                "rules": {s.name: s.to_dict() for s in self.summaries}}

    def sample_rows(self, n: int = 20) -> list[tuple[str, Any, Any]]:
        """At most ``n`` violations per rule (the smallest tuple ids), for display."""
        out: list[tuple[str, Any, Any]] = []
        for s in self.summaries:
            if s.violations == 0:
                continue
            rows = self.violations_of(s.name).orderBy("t1", "t2").limit(n).collect()
            out.extend((r["rule"], r["t1"], r["t2"]) for r in rows)
        return out

    def to_text(self, n: int = 10) -> str:
        lines = [f"{'rule':<20} {'violations':>12} {'operator':<22} {'seconds':>8}"]
        for s in self.summaries:
            lines.append(f"{s.name:<20} {s.violations:>12} {s.operator:<22} {s.seconds:>8.2f}")
        lines.append(f"total: {self.total_violations} violation(s)")
        if self.mode != "count" and n > 0:
            for rule, t1, t2 in self.sample_rows(n):
                lines.append(f"  {rule}: ({t1}, {t2})" if t2 is not None else f"  {rule}: ({t1})")
        return "\n".join(lines)

    def to_html(self, n: int = 10) -> str:
        """A bounded HTML summary; every value is escaped."""
        e = html.escape
        rows = "".join(
            f"<tr><td>{e(s.name)}</td><td><code>{e(s.rule)}</code></td><td>{e(s.operator)}</td>"
            f"<td style='text-align:right'>{s.violations}</td><td style='text-align:right'>{s.seconds:.2f}</td></tr>"
            for s in self.summaries)
        sample = ""
        if self.mode != "count" and n > 0:
            items = "".join(f"<li>{e(str(r))}: ({e(str(a))}{', ' + e(str(b)) if b is not None else ''})</li>"
                            for r, a, b in self.sample_rows(n))
            sample = f"<p>First violations (at most {n} per rule):</p><ul>{items}</ul>" if items else ""
        return (f"<div class='dqkit-detect'><h4>Violations in {e(str(self.table))}: {self.total_violations}</h4>"
                f"<table><tr><th>rule</th><th>definition</th><th>operator</th><th>violations</th>"
                f"<th>seconds</th></tr>{rows}</table>{sample}</div>")

    def _repr_html_(self) -> str:
        return self.to_html(5)

    def save(self, path: str | os.PathLike, overwrite: bool = False) -> str:
        """Write summary.json, plan.txt and (unless count-only) violations/ and candidate_fixes/ as
        Parquet; atomic: written to a temporary folder beside ``path``, then renamed."""
        from dqkit.render import atomic_folder

        target = os.path.abspath(os.fspath(path))
        if os.path.exists(target) and not overwrite:
            raise ParameterError(f"{target} exists", hint="choose a new folder or pass overwrite=True")

        def write(tmp) -> None:
            (tmp / "summary.json").write_text(json.dumps(self.to_dict(), indent=2, default=str), encoding="utf-8")
            (tmp / "plan.txt").write_text(self.explain(), encoding="utf-8")
            if self.mode != "count":
                self.violations.write.parquet((tmp / "violations").as_posix())
                self.candidate_fixes.write.parquet((tmp / "candidate_fixes").as_posix())

        return str(atomic_folder(target, write))

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
        from matplotlib.figure import Figure

        fig = Figure(figsize=(6, 3), layout="constrained")
        ax = fig.subplots()
        ax.bar([s.name for s in self.summaries], [s.violations for s in self.summaries], color="#2a9d8f")
        ax.set_ylabel("violations")
        return fig
