"""The result of a repair run: the repaired table, the changes, and how the detect -> repair loop went."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dqkit.contract.result import Chart, Facts, Notes, Result, Table, Verdict
from dqkit.runtime.sparkutil import checkpoint

#: change-list rows the JSON (``to_dict``, ``summary.json``) holds; the rest are counted as hidden
CHANGE_ROWS_IN_JSON = 100


@dataclass(frozen=True, repr=False)
class RepairResult(Result):
    """The outcome of ``repair``: ``repaired`` (same rows, columns and types as the input) and
    ``changes (tid, attr, old, new, rules, iteration)``, both lazy; ``history`` holds one dict per
    repair round (``iteration``, ``violations`` found at its start, ``changed`` cells, ``classes``,
    ``largest_class``; a last round that changed nothing is listed with ``changed`` 0 and not counted
    in ``iterations``); ``detections`` the violations per rule of the input and after each round;
    ``final`` is the last ``DetectionResult`` (what remains). ``changes`` is the log of the rounds (a
    cell changed twice is two rows); ``change_list`` folds it to one row per changed cell
    (``dqkit.repair.changelist``), which is what is saved as ``changes``.
    Rendering and saving come from ``dqkit.contract.result.Result``.
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
    rule_methods: dict[str, str] = field(default_factory=dict)  # rule -> the method that repaired it
    first_detection: Any = None  # DetectionResult on the input (its violation hypergraph)
    dry_run: bool = False  # saving writes the change list only (no repaired table)

    # ----------------------------------------------------------------- summaries
    @property
    def remaining(self) -> int:
        """Violations left in the repaired table."""
        return self.final.total_violations

    @functools.cached_property
    def changed_cells(self) -> int:
        """Cell changes made (a cell changed in two rounds counts twice)."""
        return sum(int(h.get("changed", 0)) for h in self.history)

    @functools.cached_property
    def change_list(self) -> DataFrame:
        """One row per changed cell: ``tid, attr, old, new, rules, violation_id, iteration, method``
        (``dqkit.repair.changelist``), materialised once."""
        from dqkit.repair.changelist import fold_changes

        return fold_changes(self.changes).transform(checkpoint)

    @functools.cached_property
    def change_counts(self) -> dict[str, Any]:
        """``cells`` in the change list, and changed cells ``per_rule`` and ``per_column``."""
        from dqkit.repair.changelist import change_counts

        per_rule, per_column = change_counts(self.change_list)
        return {"cells": sum(per_column.values()), "per_rule": per_rule, "per_column": per_column}

    def change_list_sample(self, n: int = 10) -> pd.DataFrame:
        """The first ``n`` rows of the change list (by tid, attr) as people read them: ``tid, column,
        change (old → new), rules, violation, iteration, method``."""
        rows = self.first_rows("change list", n, lambda k: self.change_list.orderBy("tid", "attr").limit(k).collect()
                               ) if n > 0 else []  # fetched once, kept: a later page runs no Spark job
        return pd.DataFrame([{"tid": r["tid"], "column": r["attr"], "change": f"{r['old']} → {r['new']}",
                              "rules": ", ".join(r["rules"] or []), "violation": r["violation_id"],
                              "iteration": r["iteration"], "method": r["method"]} for r in rows],
                            columns=["tid", "column", "change", "rules", "violation", "iteration", "method"])

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
        dry = " (dry run: only the change list is written)" if self.dry_run else ""
        if self.remaining == 0:
            return Verdict(True, "REPAIRED", f"{self.changed_cells} cell change(s) in {self.iterations} "
                                             f"iteration(s); no violation remains in {self.table}{dry}")
        broken = [f"{s.name} {s.violations}" for s in self.final.summaries if s.violations]
        return Verdict(False, "VIOLATIONS REMAIN", f"{self.remaining} violation(s) remain after "
                                                   f"{self.iterations} iteration(s) ({self.stop_reason}): "
                                                   + ", ".join(broken) + dry)

    def metrics(self) -> dict[str, float]:
        """Cells changed, iterations, violations found first and remaining, per rule too (no Spark job)."""
        out = {"changed_cells": float(self.changed_cells), "iterations": float(self.iterations),
               "remaining_violations": float(self.remaining)}
        if self.detections:
            first = dict(self.detections[0])
            out["violations"] = float(sum(first.values()))
            out.update({f"rule.{r}.violations": float(v) for r, v in first.items()})
        out.update({f"rule.{s.name}.remaining": float(s.violations) for s in self.final.summaries})
        return out

    def to_dict(self) -> dict[str, Any]:
        v = self.verdict_block()
        return {"table": self.table, "method": self.method, "rule_methods": dict(self.rule_methods),
                "key": self.key, "verdict": v.label,
                "summary": v.summary, "iterations": self.iterations, "changed_cells": self.changed_cells,
                "remaining_violations": self.remaining, "stop_reason": self.stop_reason,
                "max_iterations": self.max_iterations, "freeze_after": self.freeze_after,
                "history": [dict(h) for h in self.history],
                "violations_per_rule": [dict(d) for d in self.detections],
                "remaining_per_rule": {s.name: s.violations for s in self.final.summaries},
                "dry_run": self.dry_run, "change_list": self._change_list_dict()}

    def _change_list_dict(self, cap: int = CHANGE_ROWS_IN_JSON) -> dict[str, Any]:
        counts = self.change_counts
        rows = [{k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in r.asDict().items()}
                for r in self.change_list.orderBy("tid", "attr").limit(cap).collect()]
        return {**counts, "rows": rows, "hidden_rows": max(0, counts["cells"] - len(rows))}

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
                                                         "change list rows": self.change_counts["cells"],
                                                         "violations remaining": self.remaining,
                                                         "stopped because": self.stop_reason}),
                             Table("Per iteration", self.per_iteration(),
                                   note="violations found at the start of each round; changed = cells set "
                                        "to their class's target value"),
                             Table("Violations per rule", self.per_rule())]
        if len(self.detections) > 1:
            blocks.append(Chart("Violations per iteration", "violations_per_iteration", self.plot_iterations))
        cells = self.change_counts["cells"]
        if sample_rows and cells:
            shown = min(sample_rows, cells)
            hidden = f"; {cells - shown} more row(s) not shown" if cells > shown else ""
            blocks.append(Table("Change list", self.change_list_sample(sample_rows),
                                note=f"one row per changed cell, old → new as text; {shown} of {cells}{hidden}"
                                     + ("; dry run: the repaired table is not written" if self.dry_run else "")))
        if sample_rows and self.remaining:
            blocks.append(Table("Violations without a fix", pd.DataFrame(self.unfixable(sample_rows),
                                                                         columns=["rule", "t1", "t2"]),
                                note=f"at most {sample_rows} per rule"))
        blocks.append(self.graph_block())
        if self.notes:
            blocks.append(Notes("Notes", list(self.notes)))
        return blocks

    def graph_block(self) -> Chart | Notes:
        """The "Violation graph" section: the input's largest component that fits a readable size
        (``plot_violation_graph``), drawn only when the section is shown with its charts; a note when
        the input had no violation."""
        det = self.first_detection
        if det is None or det.total_violations == 0:
            return Notes("Violation graph", ["the input has no violation"])
        return Chart("Violation graph", "violation_graph", self._draw_graph)

    def _draw_graph(self):
        from dqkit.contract import charts as ch
        from dqkit.errors import DqkitError

        try:
            return self.plot_violation_graph(max_nodes=60)
        except DqkitError as exc:  # every component is too large to draw legibly: say so in the picture
            return ch.message_figure("Violation graph", str(exc))

    def save(self, target: Any, overwrite: bool = False, **options: Any) -> str:
        """Persist the repair atomically; return where it went.

        A target ending in ``.csv`` or ``.parquet`` receives the repaired table itself, as one file with
        the input's columns and rows in the input's order, and the change list goes beside it as
        ``NAME.changes.csv`` / ``NAME.changes.parquet`` (rules joined by ``;`` in CSV). Any other target
        is a folder or ``catalog:DB`` as for every result (``repaired/``, ``changes/``, ``summary.json``,
        ``report.html``). A dry run writes everything but the repaired table.
        """
        import os
        from pathlib import Path

        from dqkit.contract.result import TABLE_FILE_SUFFIXES, save_table_files

        text = os.fspath(target)
        suffix = Path(text).suffix.lower()
        if suffix not in TABLE_FILE_SUFFIXES:
            return super().save(target, overwrite, **options)
        changes = self.change_list.orderBy("tid", "attr")
        if suffix == ".csv":
            changes = changes.withColumn("rules", F.concat_ws(";", "rules"))
        beside = str(Path(text).with_name(Path(text).stem + ".changes" + suffix))
        files = {beside: changes} if self.dry_run else {text: self.repaired, beside: changes}
        save_table_files(files, self.inputs(), overwrite)
        return beside if self.dry_run else text

    def frames(self, **_: Any) -> dict[str, DataFrame]:
        """``repaired`` (not for a dry run) and ``changes``, the change list."""
        changes = self.change_list.orderBy("tid", "attr")
        return {"changes": changes} if self.dry_run else {"repaired": self.repaired, "changes": changes}

    def inputs(self) -> list[Any]:
        return list(self.input_paths)

    def plot_iterations(self):
        """Bar chart of the violations in the input and after each round."""
        from dqkit.contract import charts as ch

        return ch.barh({("input" if i == 0 else f"after {i}"): sum(d.values()) for i, d in enumerate(self.detections)},
                       "Violations per iteration", "Violations", "Round", integer=True)

    def plot_component_sizes(self, max_bars: int = 20):
        """Bar chart of the largest components of the input's violation hypergraph (cells per component)."""
        from dqkit.contract import charts as ch

        stats = self.component_stats(max_bars)
        return ch.barh(dict(zip(stats["component"], stats["cells"])),
                       "Largest components of the violation graph", "Cells", "Component", integer=True)

    def plot_violation_graph(self, component: Any = None, max_nodes: int = 60):
        """The violation graph of one component of the input (by default the largest one within
        ``max_nodes`` cells plus violations), drawn inline:
        cells labelled ``tid.attr = value``, violations coloured by rule. Bounded by ``max_nodes``."""
        from dqkit.contract import charts as ch
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
