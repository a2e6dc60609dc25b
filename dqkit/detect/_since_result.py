"""The result of ``detect NEW --since OLD``: violations new, resolved and persisting, per rule and in total."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dqkit.contract import render
from dqkit.contract.result import Facts, Result, Table, Verdict, keyed
from dqkit.detect.since_manifest import MANIFEST, make_manifest
from dqkit.primitives.changes import CHANGE_KINDS

LISTS = ("new", "resolved", "persisting")


@dataclass(frozen=True)
class RuleSince:
    """One rule's three lists (``rule, key1, key2`` identities, lazy) and their counts."""

    name: str
    how: str
    frames: dict[str, DataFrame]
    counts: dict[str, int]


@dataclass(frozen=True, repr=False)
class SinceResult(Result):
    """Violations of NEW against those of OLD (a table or a saved result): new, resolved, persisting.

    A violation is identified by its rule and the sorted keys of its rows (``key1 <= key2``; ``key2``
    NULL for a one-tuple rule). Exit 0 when NEW has no violation, 1 otherwise.
    """

    system = "dqkit detect --since"

    table: str
    since: str
    key: str
    reused: bool
    rules: tuple[Any, ...]
    per_rule: tuple[RuleSince, ...]
    changes: dict[str, int]
    rows_new: int
    rows_old: int | None
    share: float
    max_change: float
    full: bool
    seconds: float
    changed: Any = field(default=None, repr=False)
    fingerprints: Any = field(default=None, repr=False)
    cached: tuple[Any, ...] = field(default=(), repr=False)  # what the run persisted (the tagged identities)
    schema: dict[str, str] = field(default_factory=dict)
    lists: dict[str, DataFrame] = field(default_factory=dict, repr=False)  # each list over every rule, lazy
    mode: str = "since"

    # ----------------------------------------------------------------- counts and lists
    def count(self, which: str) -> int:
        """Total violations in one list (new, resolved or persisting)."""
        return sum(r.counts[which] for r in self.per_rule)

    @property
    def total_violations(self) -> int:
        """Violations in NEW: new plus persisting."""
        return self.count("new") + self.count("persisting")

    def violations(self, which: str, sort: bool = True) -> DataFrame:
        """One list over every rule: ``rule, key1, key2``, sorted (``sort=False``: as computed, no shuffle)."""
        out = self.lists[which]  # built at once over every rule (a union per rule re-analyses the plan)
        return out.orderBy("rule", "key1", "key2") if sort else out

    def unpersist(self) -> None:
        """Release what the run cached (changed keys, the per-rule lists)."""
        for r in self.per_rule:
            for f in r.frames.values():
                f.unpersist()
        for f in self.cached:
            if f is not None:
                f.unpersist()
        if self.changed is not None:
            self.changed.unpersist()

    # ----------------------------------------------------------------- the result contract
    def metrics(self) -> dict[str, float]:
        """``violations``, ``new``/``persisting``/``resolved``, the changed share, and the same per rule."""
        from dqkit.contract.metrics import flatten, pick

        d = self.to_dict()
        out = pick(d, ("violations", *LISTS, "changed_share"))
        out.update(flatten(d["changes"], "changes."))
        for rule, counts in d["rules"].items():
            out.update(flatten(counts, f"rule.{rule}."))
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: top-level ``new``, ``resolved``, ``persisting`` and the same per rule."""
        v = self.verdict_block()
        return {"table": self.table, "since": self.since, "key": self.key, "reused_saved_result": self.reused,
                "verdict": v.label, "summary": v.summary,
                **{k: self.count(k) for k in LISTS}, "violations": self.total_violations,
                "changes": {k: self.changes.get(k, 0) for k in CHANGE_KINDS},
                "changed_share": round(self.share, 6), "max_change": self.max_change, "full_detection": self.full,
                "seconds": round(self.seconds, 3),
                "rules": {r.name: {**r.counts, "checked": r.how} for r in self.per_rule}}

    def verdict_block(self) -> Verdict:
        n, new, gone = self.total_violations, self.count("new"), self.count("resolved")
        tail = f"{new} new, {self.count('persisting')} persisting, {gone} resolved since {self.since}"
        if n == 0:
            return Verdict(True, "NO VIOLATIONS", f"no violation in {self.table}; {gone} resolved since {self.since}")
        return Verdict(False, "VIOLATIONS", f"{n} violation{'s' if n != 1 else ''} in {self.table}: {tail}")

    def sections(self, sample_rows: int = 10) -> list[Any]:
        """Verdict, what changed, the three counts per rule, and the first rows of each list (capped)."""
        ch = {k: self.changes.get(k, 0) for k in CHANGE_KINDS}
        facts = {"table": self.table, "since": self.since + (" (saved result, reused)" if self.reused else " (table)"),
                 "key": self.key, "rows changed": f"{sum(ch.values())} ({', '.join(f'{v} {k}' for k, v in ch.items())})",
                 "share changed": f"{100 * self.share:.3f}% of {self.rows_new} rows",
                 "cost rule": (f"full detection (over {100 * self.max_change:g}% changed)" if self.full
                               else f"changed rows and partners (full above {100 * self.max_change:g}% changed)")}
        blocks: list[Any] = [keyed("summary", self.verdict_block()), Facts("Since the last run", facts, key="since")]
        per = pd.DataFrame([{"rule": r.name, **r.counts, "checked": r.how} for r in self.per_rule],
                           columns=["rule", *LISTS, "checked"])
        blocks.append(Table("New, resolved and persisting per rule", per, key="since"))
        for which in LISTS:
            n = self.count(which)
            if not sample_rows or not n:
                continue
            shown = self._first(which, sample_rows)
            hidden = n - len(shown)
            blocks.append(Table(f"{which.capitalize()} violations", shown,
                                note=f"{len(shown)} of {n} shown" + (f"; {hidden} more hidden" if hidden else "")
                                     + "; key2 is NULL for one-tuple rules", key=which))
        return blocks

    def _first(self, which: str, n: int) -> pd.DataFrame:
        """At most ``n`` rows of a list, smallest first per rule's changed part; never more than ``n``."""
        rows: list[Any] = []
        for r in self.per_rule:
            if r.counts[which] and len(rows) < n:
                rows += r.frames[which].limit(n).collect()
        rows = sorted(rows, key=lambda x: (x["rule"], str(x["key1"]), str(x["key2"])))[:n]
        return pd.DataFrame([tuple(x) for x in rows], columns=["rule", "key1", "key2"])

    def frames(self, **_: Any) -> dict[str, DataFrame]:
        """The three lists, plus what makes this folder a saved result of NEW for the next ``--since``:
        ``violations`` (new and persisting, ``rule, t1, t2``) and ``row_fingerprints``.

        New and resolved are sorted; persisting (and ``violations``) is written as computed, e.g. with a
        saved OLD its list streamed past the changed keys then the touched ones still holding: sorting
        it would shuffle every persisting violation, the one cost ``--since`` must not pay."""
        out = {w: self.violations(w, sort=w != "persisting") for w in LISTS}
        both = self.violations("new", sort=False).unionByName(self.violations("persisting", sort=False))
        out["violations"] = both.select("rule", F.col("key1").alias("t1"), F.col("key2").alias("t2"))
        if self.fingerprints is not None:
            out["row_fingerprints"] = self.fingerprints
        return out

    def inputs(self) -> list[Any]:
        return [p for p in (self.table, self.since) if isinstance(p, str)]

    def _save_extra(self, folder: Path) -> None:
        counts = {r.name: r.counts["new"] + r.counts["persisting"] for r in self.per_rule}
        manifest = make_manifest(self.rules, self.key, self.table, "violations", self.schema, counts)
        (folder / MANIFEST).write_text(render.dumps(manifest), encoding="utf-8")
