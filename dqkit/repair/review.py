"""Review before repair: apply the accepted changes of a change list to the dirty table (issue #26).

``repair --dry-run`` writes a change list (``dqkit.repair.changelist``) instead of a repaired table.
A person reviews it and accepts or rejects changes, per rule on the command line (``dqkit review``)
or per cell in a notebook (``accept`` a function of the change), and ``apply_changes`` applies the
accepted ones. A fix lands only on the row it was computed for: every change's ``old`` value must
still equal the table's current value at (key, column), else nothing is applied and the stale
changes are listed (``StaleChangeListError``). A change whose rules are several is applied only when
all of them are accepted (a class's target value was computed from all of them).
"""
from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.errors import DqkitError, ParameterError, UnknownColumnError
from dqkit.primitives.keys import check_key
from dqkit.repair.changelist import CHANGE_LIST_COLUMNS, read_change_list
from dqkit.repair.equivalence import apply_changes as _apply_by_tid
from dqkit.contract.result import TABLE_FILE_SUFFIXES, Facts, Result, Table, Verdict, save_table_files
from dqkit.repair.review_manifest import accepted_rules, check_review_key, inspect_change_list
from dqkit.runtime.session import get_spark
from dqkit.io.sources import read_table
from dqkit.runtime.sparkutil import checkpoint, col
from dqkit.primitives.violations import row_position

__all__ = ["StaleChangeListError", "apply_changes", "accepted_rules", "review", "ReviewResult", "MISMATCHES_SHOWN"]

#: stale changes named in a refusal
MISMATCHES_SHOWN = 10

Accept = Callable[[Mapping[str, Any]], bool] | Collection[str] | None


class StaleChangeListError(DqkitError):
    """A change's old value is not the table's current value: the change list was computed on another
    version of the table (or for other rows), so applying it could put a fix on the wrong row."""


def _accepted(changes: DataFrame, accept: Accept) -> DataFrame:
    """The rows of ``changes`` that ``accept`` takes (a set of rule names: every rule of the change
    among them; a function: true for the change as a dict; None: all)."""
    if accept is None:
        return changes
    if callable(accept):
        fn = accept
        names = changes.columns
        keep = F.udf(lambda r: bool(fn(dict(zip(names, r)))), T.BooleanType())
        return changes.where(keep(F.struct(*[F.col(c) for c in names])))
    allowed = F.array(*[F.lit(r) for r in sorted(set(accept))]) if accept else F.array().cast("array<string>")
    return changes.where(F.size(F.array_except(F.col("rules"), allowed)) == 0)


#: the hidden column that carries a row's place in the input through the join of ``apply_changes``
_POSITION = "_dq_review_pos"


def apply_changes(spark: SparkSession | None, dirty: DataFrame, changes: DataFrame, key: str,
                  accept: Accept = None, order: Column | None = None) -> tuple[DataFrame, DataFrame]:
    """``(table, applied)``: ``dirty`` with the accepted ``changes`` applied, and those changes.

    ``changes``: a change list (``CHANGE_LIST_COLUMNS``; ``tid`` holds ``key`` values). ``accept``:
    None (all), a collection of rule names, or a function of one change (a dict of its columns)
    returning whether to apply it. The key must be unique and non-NULL (``check_key``); every
    change, accepted or not, is checked against ``dirty`` first: its row must exist and its ``old``
    value equal the current value (as text), else ``StaleChangeListError`` lists the mismatches and
    nothing is applied. The result has ``dirty``'s rows, columns (in their order) and types, the
    rows ordered by ``order`` (an expression over ``dirty``, e.g. its ``row_position``), else in no particular
    order: a join keeps its input's order only when it happens to broadcast. ``dirty`` is not modified.
    """
    del spark  # the frames carry their session; kept so a widget calls it like every kernel
    missing = [c for c in CHANGE_LIST_COLUMNS if c not in changes.columns]
    if missing:
        raise ParameterError(f"not a change list: no column(s) {', '.join(missing)}",
                             hint="pass RepairResult.change_list or a saved change list (read_change_list)")
    if key not in dirty.columns:
        raise UnknownColumnError(f"the key {key!r} is not a column of the table",
                                 hint=f"columns: {', '.join(dirty.columns)}")
    check_key(dirty, key, table="the table", command="review")
    attrs = [a for a in dirty.columns if a != key]
    changes = changes.select(*CHANGE_LIST_COLUMNS).transform(checkpoint)
    _check_current(dirty, changes, key, attrs)
    taken = _accepted(changes, accept).transform(checkpoint)
    types = {f.name: f.dataType for f in dirty.schema.fields}
    by_key = taken.withColumn("tid", F.col("tid").cast(types[key]))
    if order is None:
        return _apply_by_tid(dirty, key, by_key, attrs, types), taken
    placed = dirty.select("*", order.alias(_POSITION))
    return _apply_by_tid(placed, key, by_key, attrs, types).orderBy(_POSITION).drop(_POSITION), taken


def _check_current(dirty: DataFrame, changes: DataFrame, key: str, attrs: list[str]) -> None:
    """Refuse unless every change's row exists and its ``old`` equals the current value (as text)."""
    # one join of the changes with the table by key, the current value picked by column: no unpivot
    current = dirty.select(col(key).cast("string").alias("_dq_k"),
                           *[col(a).cast("string").alias(f"_dq_c{i}") for i, a in enumerate(attrs)])
    value = F.lit(None).cast("string")
    for i, a in reversed(list(enumerate(attrs))):
        value = F.when(F.col("attr") == F.lit(a), F.col(f"_dq_c{i}")).otherwise(value)
    joined = changes.join(current, changes["tid"].cast("string") == current["_dq_k"], "left")
    bad = joined.select("tid", "attr", "old", "_dq_k", F.col("attr").isin(attrs).alias("_dq_known"),
                        value.alias("_dq_v")).where(
        F.col("_dq_k").isNull() | ~F.col("_dq_known") | ~F.col("old").eqNullSafe(F.col("_dq_v")))
    rows = bad.orderBy(F.col("tid").cast("string"), "attr").limit(MISMATCHES_SHOWN + 1).collect()
    if not rows:
        return
    n = bad.count()
    shown = [f"{r['tid']}.{r['attr']}: expected {r['old']!r}, found "
             + ("no such row" if r["_dq_k"] is None else "no such column" if not r["_dq_known"]
                 else repr(r["_dq_v"])) for r in rows[:MISMATCHES_SHOWN]]
    more = f" (and {n - len(shown)} more)" if n > len(shown) else ""
    hint = ("the change list was computed on another version of the table: rerun `dqkit repair --dry-run` on "
            "this one, or pass the table it was computed on")
    if bad.where(F.col("_dq_k").isNotNull()).limit(1).count() == 0 and n == changes.count():
        hint = f"no change names a row of the table by {key!r}: pass the --key the repair used"
    raise StaleChangeListError(f"{n} change(s) do not match the table's current values, so none was applied: "
                               + "; ".join(shown) + more, hint=hint)


@dataclass(frozen=True, repr=False)
class ReviewResult(Result):
    """The outcome of a review: ``table`` (the dirty table with the accepted changes), ``applied``
    (those changes) and counts of the change list's rows applied and held back, per rule."""

    system = "dqkit review"

    source: str
    key: str
    table: DataFrame
    applied: DataFrame
    total: int
    applied_count: int
    accepted: tuple[str, ...]
    rejected: tuple[str, ...]
    per_rule: dict[str, dict[str, int]] = field(default_factory=dict)
    input_paths: tuple[Any, ...] = ()

    @property
    def held(self) -> int:
        """Changes of the list not applied (rejected)."""
        return self.total - self.applied_count

    def verdict_block(self) -> Verdict:
        text = f"{self.applied_count} of {self.total} change(s) applied to {self.source}"
        if self.held == 0:
            return Verdict(True, "APPLIED", text)
        return Verdict(False, "CHANGES HELD", f"{text}; {self.held} rejected (rules {', '.join(self.rejected)})")

    def metrics(self) -> dict[str, float]:
        """Changes proposed, applied and held, in total and per rule."""
        out = {"changes": float(self.total), "applied": float(self.applied_count), "held": float(self.held)}
        for rule, counts in self.per_rule.items():
            out.update({f"rule.{rule}.{k}": float(v) for k, v in dict(counts).items()})
        return out

    def to_dict(self) -> dict[str, Any]:
        v = self.verdict_block()
        return {"table": self.source, "key": self.key, "verdict": v.label, "summary": v.summary,
                "changes": self.total, "applied": self.applied_count, "held": self.held,
                "accepted_rules": list(self.accepted), "rejected_rules": list(self.rejected),
                "per_rule": {r: dict(c) for r, c in self.per_rule.items()}}

    def sample(self, n: int = 10) -> pd.DataFrame:
        """The first ``n`` applied changes (by tid, column) as ``tid, column, change, rules``."""
        rows = self.applied.orderBy(F.col("tid").cast("string"), "attr").limit(n).collect() if n > 0 else []
        return pd.DataFrame([{"tid": r["tid"], "column": r["attr"], "change": f"{r['old']} → {r['new']}",
                              "rules": ", ".join(r["rules"] or [])} for r in rows],
                            columns=["tid", "column", "change", "rules"])

    def sections(self, sample_rows: int = 10) -> list[Any]:
        blocks: list[Any] = [
            self.verdict_block(),
            Facts("What was applied", {"table": self.source, "key": self.key, "changes in the list": self.total,
                                       "applied": self.applied_count, "rejected": self.held,
                                       "accepted rules": ", ".join(self.accepted) or "(none)",
                                       "rejected rules": ", ".join(self.rejected) or "(none)"}),
            Table("Per rule", pd.DataFrame([{"rule": r, **c} for r, c in sorted(self.per_rule.items())],
                                           columns=["rule", "changes", "applied"]),
                  note="a change of several rules is applied only when all of them are accepted")]
        if sample_rows and self.applied_count:
            shown = min(sample_rows, self.applied_count)
            more = f"; {self.applied_count - shown} more row(s) not shown" if self.applied_count > shown else ""
            blocks.append(Table("Applied changes", self.sample(sample_rows), note=f"{shown} of {self.applied_count}{more}"))
        return blocks

    def frames(self, **_: Any) -> dict[str, DataFrame]:
        """``reviewed`` (the table with the accepted changes) and ``applied`` (those changes)."""
        return {"reviewed": self.table, "applied": self.applied}

    def inputs(self) -> list[Any]:
        return list(self.input_paths)

    def save(self, target: Any, overwrite: bool = False, **options: Any) -> str:
        """A ``.csv``/``.parquet`` target receives the table itself (one file, the input's rows in
        order); any other target is a folder or ``catalog:DB`` (``reviewed/``, ``applied/``, summary)."""
        text = os.fspath(target)
        if Path(text).suffix.lower() not in TABLE_FILE_SUFFIXES:
            return super().save(target, overwrite, **options)
        save_table_files({text: self.table}, self.inputs(), overwrite)
        return text


def review(changes: Any, table: Any, *, key: str, accept: Collection[str] = (), reject: Collection[str] = (),
           spark: SparkSession | None = None) -> ReviewResult:
    """Apply a saved change list (a ``repair --out`` folder, or a ``NAME.changes.csv/.parquet`` file)
    to ``table`` (a path or DataFrame), keeping the changes of the accepted rules (``accepted_rules``)."""
    info = inspect_change_list(changes)
    check_review_key(info.key, key)
    names = accepted_rules(info.rules, accept, reject)
    spark = spark or get_spark()
    dirty = read_table(table, spark)
    chg = read_change_list(info, spark)
    # saved in the input's row order: a file's rows by their place in it, a DataFrame's by the key
    place = row_position(dirty)
    out, applied = apply_changes(spark, dirty, chg, key, accept=names, order=col(key) if place is None else place)
    per = {r["rule"]: {"changes": int(r["changes"]), "applied": int(r["applied"])} for r in
           chg.join(applied.select("tid", "attr", F.lit(1).alias("_dq_in")), ["tid", "attr"], "left")
           .select(F.explode("rules").alias("rule"), "_dq_in").groupBy("rule")
           .agg(F.count(F.lit(1)).alias("changes"), F.count("_dq_in").alias("applied")).collect()}
    total, n_applied = chg.count(), applied.count()
    label = os.fspath(table) if isinstance(table, (str, os.PathLike)) else "table"
    inputs = tuple(p for p in (table, changes) if isinstance(p, (str, os.PathLike)))
    return ReviewResult(source=label, key=key, table=out, applied=applied, total=total, applied_count=n_applied,
                        accepted=tuple(sorted(names)), rejected=tuple(sorted(set(info.rules) - names)),
                        per_rule=per, input_paths=inputs)
