"""``DiscoverResult``: the ranked rules a discovery found, with the bounds it searched within."""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from dqkit.contract.result import Facts, Notes, Result, Table, Verdict, check_output_target
from dqkit.discover.rulesfile import rule_entries, rules_yaml, write_rules

RULE_FILE_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True, eq=False, repr=False)
class DiscoverResult(Result):
    """What ``discover`` found: ``rules`` ranked by score (the first ``top`` of ``found``), each an FD
    (``DiscoveredFD``) or a DC (``DiscoveredDC``); ``complete`` is False when a bound stopped the search
    (``notes`` say which). ``rules_yaml()`` is the rules file; ``save("x.yaml")`` writes it."""

    system = "dqkit discover"

    table: str
    rows: int
    columns: tuple[str, ...]
    error: float
    route: str
    rules: tuple[Any, ...]
    found: int
    complete: bool
    notes: tuple[str, ...] = ()
    facts: Mapping[str, Any] = field(default_factory=dict)
    input_paths: tuple[Any, ...] = ()

    # -------------------------------------------------------------------------------- views
    @property
    def fds(self) -> list[Any]:
        return [r for r in self.rules if r.kind == "fd"]

    @property
    def dcs(self) -> list[Any]:
        return [r for r in self.rules if r.kind == "dc"]

    def rules_frame(self) -> pd.DataFrame:
        """One row per ranked rule: rank, name, kind, rule, error, violations, support, score."""
        rows = [{"rank": i + 1, **e} for i, e in enumerate(rule_entries(self.rules))]
        return pd.DataFrame(rows, columns=["rank", "name", "kind", "rule", "error", "violations", "support", "score"])

    def rules_yaml(self) -> str:
        """The rules file ``dqkit detect --rules`` and ``dqkit repair --rules`` read unchanged."""
        head = [f"dqkit discover {os.path.basename(str(self.table))}: {len(self.rules)} rule(s) of {self.found} "
                f"found, ranked by score; error at most {self.error:g}"]
        return rules_yaml(self.rules, head + [f"note: {n}" for n in self.notes])

    # -------------------------------------------------------------------------------- contract
    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict.label, "table": self.table, "rows": self.rows, "columns": list(self.columns),
                "error": self.error, "route": self.route, "found": self.found, "shown": len(self.rules),
                "complete": self.complete, "notes": list(self.notes), "rules": rule_entries(self.rules),
                **{k: v for k, v in self.facts.items() if k not in ("seconds",)}}

    def sections(self, sample_rows: int = 10) -> list[Any]:
        fds, dcs = self.fds, self.dcs
        exact = sum(1 for r in fds if r.violations == 0)
        label = "RULES" if self.rules else "NO RULES"
        parts = [f"{len(fds)} FD(s) ({exact} exact, {len(fds) - exact} approximate)"]
        if dcs or self.facts.get("denial constraints searched"):
            parts.append(f"{len(dcs)} DC(s)")
        shown = "" if len(self.rules) == self.found else f", the top {len(self.rules)} of {self.found}"
        summary = f"{' and '.join(parts)} with error at most {self.error:g} on {self.rows:,} rows{shown}"
        if not self.complete:
            summary += " (the search was bounded: see the notes)"
        blocks: list[Any] = [Verdict(True, label, summary, key="summary"),
                             Facts("Search", {"table": self.table, "rows": self.rows,
                                              "columns searched": len(self.columns), "error at most": self.error,
                                              "route": self.route, "complete": self.complete,
                                              **dict(self.facts)}, key="summary")]
        frame = self.rules_frame()
        blocks.append(Table("Rules", frame, note="error: g3 for an FD, the violating share of ordered pairs for a DC; "
                                                 "support: rows in left-hand-side groups of two or more (FD), "
                                                 "pairs checked (DC); score: (support - violations) / rows (FD)",
                            max_rows=max(sample_rows, 0), key="rules"))
        if self.notes:
            blocks.append(Notes("Notes", list(self.notes), key="notes"))
        return blocks

    def frames(self, **options: Any) -> dict[str, Any]:
        return {}

    def inputs(self) -> list[Any]:
        return list(self.input_paths)

    def _save_extra(self, folder: Path) -> None:
        (folder / "rules.yaml").write_text(self.rules_yaml(), encoding="utf-8")
        self.rules_frame().to_csv(folder / "rules.csv", index=False)

    def save(self, target: str | os.PathLike, overwrite: bool = False, **options: Any) -> str:
        """``RULES.yaml`` (or ``.yml``): the rules file alone, written atomically; any other target: the
        result folder (summary.json, report.html, rules.yaml, rules.csv)."""
        if os.fspath(target).lower().endswith(RULE_FILE_SUFFIXES):
            check_output_target(target, self.inputs(), overwrite)
            return str(write_rules(target, self.rules_yaml()))
        return super().save(target, overwrite, **options)
