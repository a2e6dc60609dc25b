"""The result of a repair run: the repaired table, the changes, and how the detect -> repair loop went."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dqkit.result import Chart, Facts, Notes, Result, Table, Verdict


@dataclass(frozen=True, repr=False)
class RepairResult(Result):
    """The outcome of ``repair``: ``repaired`` (same rows, columns and types as the input) and
    ``changes (tid, attr, old, new, rules, iteration)``, both lazy; ``history`` holds one dict per
    repair round (``iteration``, ``violations`` found at its start, ``changed`` cells, ``classes``,
    ``largest_class``; a last round that changed nothing is listed with ``changed`` 0 and not counted
    in ``iterations``); ``detections`` the violations per rule of the input and after each round;
    ``final`` is the last ``DetectionResult`` (what remains).
    Rendering and saving come from ``dqkit.result.Result``.
    """

    system = "dqkit repair"

    table: str
    method: str
    key: str | None
    repaired: DataFrame
    changes: DataFrame
    iterations: int
    history: tuple[dict[str, Any], ...]
    detections: tuple[dict[str, int], ...]
    final: Any  # DetectionResult on the repaired table
    max_iterations: int
    freeze_after: int
    stop_reason: str
    input_paths: tuple[Any, ...] = ()
    notes: tuple[str, ...] = field(default=())
    first_fixes: DataFrame | None = None  # candidate fixes of the first detection (class-size chart)
    rule_methods: dict[str, str] = field(default_factory=dict)  # rule -> the method that repaired it
    first_detection: Any = None  # DetectionResult on the input (its violation hypergraph)

    # ----------------------------------------------------------------- summaries
    @property
    def remaining(self) -> int:
        """Violations left in the repaired table."""
        return self.final.total_violations

    @functools.cached_property
    def changed_cells(self) -> int:
        """Cell changes made (a cell changed in two rounds counts twice)."""
        return sum(int(h.get("changed", 0)) for h in self.history)

    def per_iteration(self) -> pd.DataFrame:
        """One row per round: iteration, violations found at its start, cells changed, equivalence
        classes and the largest one, hypergraph components and the largest one (cells), as they apply."""
        cols = ["iteration", "violations", "changed"]
        cols += [c for c in ("classes", "largest_class", "components", "largest_component")
                 if any(c in h for h in self.history)]
        return pd.DataFrame([{c: h.get(c) for c in cols} for h in self.history], columns=cols)

    @functools.cached_property
    def hypergraph(self) -> Any:
        """The violation hypergraph of the input (``ViolationHypergraph``); None when it had no violation."""
        from dqkit.repair.hypergraph import violation_hypergraph

        det = self.first_detection
        if det is None or det.total_violations == 0:
            return None
        return violation_hypergraph(det)

    def component_stats(self, n: int = 20) -> pd.DataFrame:
        """The ``n`` largest components of the input's violation hypergraph: component, cells, violations."""
        hg = self.hypergraph
        if hg is None:
            return pd.DataFrame(columns=["component", "cells", "violations"])
        rows = hg.component_sizes().limit(n).collect()
        return pd.DataFrame([{"component": f"{r['component']['tid']}.{r['component']['attr']}",
                              "cells": r["cells"], "violations": r["violations"]} for r in rows],
                            columns=["component", "cells", "violations"])

    def per_rule(self) -> pd.DataFrame:
        """Violations per rule (rows) in the input and after each round (columns)."""
        data = {("input" if i == 0 else f"after {i}"): d for i, d in enumerate(self.detections)}
        return pd.DataFrame(data).rename_axis("rule").reset_index()

    def unfixable(self, n: int = 20) -> list[tuple[str, Any, Any]]:
        """At most ``n`` remaining violations per rule (they have no fix this method can apply)."""
        return self.final.sample_rows(n) if self.remaining else []

    # ----------------------------------------------------------------- the result contract
    def verdict_block(self) -> Verdict:
        if self.remaining == 0:
            return Verdict(True, "REPAIRED", f"{self.changed_cells} cell change(s) in {self.iterations} "
                                             f"iteration(s); no violation remains in {self.table}")
        broken = [f"{s.name} {s.violations}" for s in self.final.summaries if s.violations]
        return Verdict(False, "VIOLATIONS REMAIN", f"{self.remaining} violation(s) remain after "
                                                   f"{self.iterations} iteration(s) ({self.stop_reason}): "
                                                   + ", ".join(broken))

    def to_dict(self) -> dict[str, Any]:
        v = self.verdict_block()
        return {"table": self.table, "method": self.method, "rule_methods": dict(self.rule_methods),
                "key": self.key, "verdict": v.label,
                "summary": v.summary, "iterations": self.iterations, "changed_cells": self.changed_cells,
                "remaining_violations": self.remaining, "stop_reason": self.stop_reason,
                "max_iterations": self.max_iterations, "freeze_after": self.freeze_after,
                "history": [dict(h) for h in self.history],
                "violations_per_rule": [dict(d) for d in self.detections],
                "remaining_per_rule": {s.name: s.violations for s in self.final.summaries}}

    def change_sample(self, n: int = 10) -> pd.DataFrame:
        """The first ``n`` changes (by iteration, tid, attr) as ``tid, attr, change, rules, iteration``."""
        rows = self.changes.orderBy("iteration", "tid", "attr").limit(n).collect()
        return pd.DataFrame([{"tid": r["tid"], "attr": r["attr"], "change": f"{r['old']} → {r['new']}",
                              "rules": ", ".join(r["rules"] or []), "iteration": r["iteration"]} for r in rows],
                            columns=["tid", "attr", "change", "rules", "iteration"])

    def sections(self, sample_rows: int = 10) -> list[Any]:
        blocks: list[Any] = [self.verdict_block(),
                             Facts("What was repaired", {"table": self.table, "method": self.method,
                                                         "key": self.key or "(content ids)",
                                                         "rules": len(self.final.summaries),
                                                         "iterations": self.iterations,
                                                         "cells changed": self.changed_cells,
                                                         "violations remaining": self.remaining,
                                                         "stopped because": self.stop_reason}),
                             Table("Per iteration", self.per_iteration(),
                                   note="violations found at the start of each round; changed = cells set "
                                        "to their class's target value"),
                             Table("Violations per rule", self.per_rule())]
        if len(self.detections) > 1:
            blocks.append(Chart("Violations per iteration", "violations_per_iteration", self.plot_iterations))
        if sample_rows and self.changed_cells:
            blocks.append(Table("First changes", self.change_sample(sample_rows),
                                note=f"at most {sample_rows}; old → new as text"))
        if sample_rows and self.remaining:
            blocks.append(Table("Violations without a fix", pd.DataFrame(self.unfixable(sample_rows),
                                                                         columns=["rule", "t1", "t2"]),
                                note=f"at most {sample_rows} per rule"))
        if self.notes:
            blocks.append(Notes("Notes", list(self.notes)))
        return blocks

    def save(self, target: Any, overwrite: bool = False, **options: Any) -> str:
        """Persist the repair atomically; return where it went.

        A target ending in ``.csv`` or ``.parquet`` receives the repaired table itself, as one file with
        the input's columns and rows in the input's order, and the changes go beside it as
        ``NAME.changes.csv`` / ``NAME.changes.parquet`` (rules joined by ``;`` in CSV). Any other target
        is a folder or ``catalog:DB`` as for every result (``repaired/``, ``changes/``, ``summary.json``,
        ``report.html``).
        """
        import os
        from pathlib import Path

        from dqkit.result import TABLE_FILE_SUFFIXES, save_table_files

        text = os.fspath(target)
        suffix = Path(text).suffix.lower()
        if suffix not in TABLE_FILE_SUFFIXES:
            return super().save(target, overwrite, **options)
        changes = self.changes.orderBy("iteration", "tid", "attr")
        if suffix == ".csv":
            changes = changes.withColumn("rules", F.concat_ws(";", "rules"))
        beside = str(Path(text).with_name(Path(text).stem + ".changes" + suffix))
        save_table_files({text: self.repaired, beside: changes}, self.inputs(), overwrite)
        return text

    def frames(self, **_: Any) -> dict[str, DataFrame]:
        """``repaired`` and ``changes``."""
        return {"repaired": self.repaired, "changes": self.changes}

    def inputs(self) -> list[Any]:
        return list(self.input_paths)

    def plot_iterations(self):
        """Bar chart of the violations in the input and after each round."""
        from dqkit import charts as ch

        return ch.barh({("input" if i == 0 else f"after {i}"): sum(d.values()) for i, d in enumerate(self.detections)},
                       "Violations per iteration", "Violations", "Round", integer=True)

    def plot_component_sizes(self, max_bars: int = 20):
        """Bar chart of the largest components of the input's violation hypergraph (cells per component)."""
        from dqkit import charts as ch

        stats = self.component_stats(max_bars)
        return ch.barh(dict(zip(stats["component"], stats["cells"])),
                       "Largest components of the violation graph", "Cells", "Component", integer=True)

    def plot_violation_graph(self, component: Any = None, max_nodes: int = 60):
        """The violation graph of one component of the input (by default the largest one within
        ``max_nodes`` cells plus violations), drawn inline:
        cells labelled ``tid.attr = value``, violations coloured by rule. Bounded by ``max_nodes``."""
        from dqkit import charts as ch
        from dqkit.errors import ParameterError

        hg = self.hypergraph
        if hg is None:
            raise ParameterError("the input had no violation, so there is no violation graph to draw")
        if component is None:  # the largest component that fits the bound
            fits = hg.component_sizes().where(F.col("cells") + F.col("violations") <= max_nodes).limit(1).collect()
            if not fits:
                raise ParameterError(f"every component has more than max_nodes={max_nodes} nodes",
                                     hint="raise max_nodes, or pick a component from component_stats()")
            component = fits[0]["component"]
        g = hg.to_networkx(component, max_nodes=max_nodes)
        return ch.violation_graph(g, title=f"Violation graph of component {component[0]}.{component[1]}")
