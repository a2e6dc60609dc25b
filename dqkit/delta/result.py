"""The outcome of a delta: ``TableDelta`` per table and ``DeltaResult`` (the ``Result`` contract)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.contract import render
from dqkit.delta._names import COLUMN_STAT_NAMES, NULL_CHANGES, ROW_COUNT, ROW_STAT_NAMES, STATUS
from dqkit.delta.calc import diff_unit
from dqkit.delta.kernel import dedup_frame
from dqkit.delta.plan import TablePlan
from dqkit.delta.schema import SchemaDelta
from dqkit.errors import ParameterError, UnknownTableError
from dqkit.contract.result import Chart, Facts, Notes, Result, Table, Verdict
from dqkit.runtime.sparkutil import quote_ident as _q

#: the titles of the schema delta's blocks (the first blocks after the verdict)
SCHEMA_TITLE = "Schema changes"
PROPOSED_TITLE = "Proposed renames"


@dataclass(frozen=True)
class TableDelta:
    """Everything computed for one table. DataFrames are lazy; the statistics are computed values."""

    name: str
    plan: TablePlan
    row_stats: dict[str, Any]
    changed_fingerprints: DataFrame | None = field(repr=False, default=None)
    row_delta: DataFrame | None = field(repr=False, default=None)
    col_delta: DataFrame | None = field(repr=False, default=None)
    updates: DataFrame | None = field(repr=False, default=None)
    column_stats: dict[str, dict[str, Any]] | None = None
    pairing: dict[str, int] | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    cached: tuple[DataFrame, ...] = field(repr=False, default=())


@dataclass(frozen=True, repr=False)
class DeltaResult(Result):
    """The outcome of ``delta``: per-table statistics and lazily evaluated delta DataFrames.

    It follows ``dqkit.contract.result.Result``: ``to_dict``, ``sections`` and ``frames`` are defined here;
    ``to_text``, ``to_html``, ``save`` and ``figures`` come from the base, so the CLI, the widgets and
    the report templates render this same object and never recompute the comparison.
    """

    system = "dqkit delta"

    tables: dict[str, TableDelta]
    only_in_old: list[str]
    only_in_new: list[str]
    stages: tuple[str, ...]
    messages: list[str]
    parameters: dict[str, Any]
    seconds: dict[str, float]
    schema: SchemaDelta = field(default_factory=SchemaDelta)

    # ----- summaries
    @property
    def identical(self) -> bool:
        """True when no compared table differs, no table is on one side only and no schema changed."""
        return (not self.only_in_old and not self.only_in_new and not self.schema.changed
                and all(t.row_stats.get("differences", 0) == 0 and t.row_stats.get("dedup_abs_diff", 0) == 0
                        and t.row_stats.get("rows_abs_diff", 0) == 0 for t in self.tables.values()))

    @property
    def row_stats(self) -> pd.DataFrame:
        """Row statistics (1)-(8), one row per table, in the paper's order."""
        rows = [{"table": n, **{k: t.row_stats.get(k) for k in ROW_STAT_NAMES}} for n, t in self.tables.items()]
        return pd.DataFrame(rows, columns=["table", *ROW_STAT_NAMES])

    def column_stats(self, table: str) -> pd.DataFrame:
        """Column statistics (9)-(14) for ``table`` (plus ``null_changes``), one row per column."""
        stats = self._table(table).column_stats
        if stats is None:
            return pd.DataFrame(columns=["column", *COLUMN_STAT_NAMES, NULL_CHANGES])
        rows = [{"column": c, **s} for c, s in stats.items()]
        # object dtype keeps integer deltas integers next to NULLs (pandas would upcast to float)
        frame = pd.DataFrame(rows, columns=["column", *COLUMN_STAT_NAMES, NULL_CHANGES], dtype=object)
        return frame.astype({"count": "int64", NULL_CHANGES: "int64"})

    def differing_tables(self) -> list[str]:
        """Tables with at least one row difference, in name order."""
        return [n for n, t in self.tables.items() if t.row_stats.get("differences", 0) > 0]

    def row_delta(self, table: str) -> DataFrame:
        """``<table>_row_delta``: the table's columns, ``row_count`` and ``validation_status``."""
        return self._needs(table, "row_delta", "row")

    def col_delta(self, table: str) -> DataFrame:
        """``<table>_col_delta``: the key, one ``calc_diff`` per column, and ``null_changes``."""
        return self._needs(table, "col_delta", "column")

    def updates(self, table: str) -> DataFrame:
        """The UPDATE view: each key-paired DELETE/INSERT with ``changed_columns``, ``old`` and ``new``."""
        return self._needs(table, "updates", "column")

    def dedup(self, table: str, side: str = "new") -> DataFrame:
        """DDB1 (``side='old'``) or DDB2 (``'new'``): each distinct row once, with ``row_count``."""
        t = self._table(table)
        if t.changed_fingerprints is None:
            raise ParameterError(f"table {table} has no dedup stage output in this result")
        if side not in ("old", "new"):
            raise ParameterError(f"side must be 'old' or 'new', not {side!r}")
        return dedup_frame(self.parameters["_sources"][side][table], t.plan)

    def _table(self, table: str) -> TableDelta:
        if table not in self.tables:
            raise UnknownTableError(f"table {table!r} is not in this result",
                                    hint=f"compared tables: {', '.join(self.tables) or 'none'}")
        return self.tables[table]

    def _needs(self, table: str, attr: str, stage: str) -> DataFrame:
        frame = getattr(self._table(table), attr)
        if frame is None:
            why = "has no key" if stage == "column" and self._table(table).plan.key is None else "was not computed"
            raise ParameterError(f"the {stage} stage for table {table} {why}",
                                 hint="run delta(...) with that stage" + (" and a key" if "key" in why else ""))
        return frame

    def unpersist(self) -> None:
        """Release what this result cached: the changed fingerprints and the fetched changed rows."""
        for t in self.tables.values():
            for frame in t.cached:
                frame.unpersist()

    def metrics(self) -> dict[str, float]:
        """Per table ``TABLE.STAT``: row statistics (1)-(8), pairing counts and ``TABLE.COLUMN.STAT``
        column statistics (9)-(14); ``tables_only_in_old``/``_new``."""
        from dqkit.contract.metrics import flatten, pick

        out = {"tables_only_in_old": float(len(self.only_in_old)), "tables_only_in_new": float(len(self.only_in_new))}
        for name, t in self.tables.items():
            out.update(pick(t.row_stats, ROW_STAT_NAMES, f"{name}."))
            out.update(flatten(t.pairing or {}, f"{name}."))
            for column, stats in (t.column_stats or {}).items():
                out.update(flatten(stats, f"{name}.{column}."))
        return out

    # ----- the result contract (dqkit.contract.result.Result)
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary: per-table row and column statistics and the one-sided tables."""
        tables = {}
        for name, t in self.tables.items():
            entry: dict[str, Any] = {"row_stats": {k: t.row_stats.get(k) for k in ROW_STAT_NAMES
                                                   if k in t.row_stats}}
            if t.column_stats is not None:
                entry["column_stats"] = t.column_stats
            if t.pairing is not None:
                entry["pairing"] = t.pairing
            if t.plan.key:
                entry["key"] = list(t.plan.key)
            entry["seconds"] = t.seconds
            tables[name] = entry
        return render.to_jsonable({
            "schema": self.schema.to_dict(),
            "identical": self.identical,
            "verdict": self.verdict_block().label,
            "summary": self.verdict_block().summary,
            "tables": tables,
            "only_in_old": self.only_in_old,
            "only_in_new": self.only_in_new,
            "stages": list(self.stages),
            "messages": self.messages,
            "parameters": self.public_parameters(),
            "seconds": self.seconds,
        })

    def public_parameters(self) -> dict[str, Any]:
        """The parameters of the run as given (sources described, never their data)."""
        return {k: v for k, v in self.parameters.items() if not k.startswith("_")}

    def verdict_block(self) -> Verdict:
        """IDENTICAL or DIFFERENT, with a one-line summary of what differs."""
        if self.identical:
            n = len(self.tables)
            return Verdict(True, "IDENTICAL", f"the two versions hold the same rows in "
                                              f"{n} table{'s' if n != 1 else ''}")
        parts = []
        for name, t in self.tables.items():
            d = t.row_stats.get("differences")
            if d:
                parts.append(f"{name}: {d} difference record{'s' if d != 1 else ''}"
                             + (f" ({render.plain(t.row_stats['percent'])} %)" if "percent" in t.row_stats else ""))
            elif t.row_stats.get("rows_abs_diff") or t.row_stats.get("dedup_abs_diff"):
                parts.append(f"{name}: row counts differ")
        changed = [t.name for t in self.schema.changed_tables() if t.status == "changed"]
        if changed:
            parts.append(f"schema changed: {', '.join(changed)}")
        if self.only_in_old:
            parts.append(f"only in old: {', '.join(self.only_in_old)}")
        if self.only_in_new:
            parts.append(f"only in new: {', '.join(self.only_in_new)}")
        differing = len([n for n, t in self.tables.items() if t.row_stats.get("differences")
                         or t.row_stats.get("rows_abs_diff") or t.row_stats.get("dedup_abs_diff")
                         or (n in self.schema.tables and self.schema.tables[n].changed)])
        head = (f"{differing} of {len(self.tables)} table{'s' if len(self.tables) != 1 else ''} "
                f"differ{'s' if differing == 1 else ''}")
        return Verdict(False, "DIFFERENT", head + ("; " + "; ".join(parts) if parts else ""))

    def sections(self, sample_rows: int = 10) -> list[Any]:
        """Verdict, what was compared, row statistics, column statistics with quartile charts, then
        per differing table its changes (``column: old -> new`` beside the key) and a row-delta sample."""
        p = self.public_parameters()
        facts = {"old": p.get("old"), "new": p.get("new"),
                 "tables compared": ", ".join(self.tables) or "none",
                 "keys": "; ".join(f"{t}={','.join(c)}" for t, c in (p.get("keys") or {}).items()) or "none",
                 "excluded": ", ".join(p.get("exclude") or []) or "nothing",
                 "stages": ", ".join(self.stages)}
        if p.get("abs_tol") or p.get("rel_tol"):
            facts["float tolerance"] = f"abs {render.plain(p.get('abs_tol'))}, rel {render.plain(p.get('rel_tol'))}"
        if p.get("renames"):
            facts["renamed"] = "; ".join(f"{t}.{o}={n}" for t, m in p["renames"].items() for o, n in m.items())
        if p.get("tolerances"):
            facts["column tolerance"] = "; ".join(f"{t}.{c}={v}" for t, m in p["tolerances"].items()
                                                  for c, v in m.items())
        blocks: list[Any] = [self.verdict_block(), *self.schema_sections(), Facts("What was compared", facts)]
        if self.tables and ("row" in self.stages or "dedup" in self.stages):
            blocks.append(Table("Row statistics", self.row_stats))
            blocks.append(Chart("Difference count per table", "difference_count", self.plot_difference_count))
            if "row" in self.stages:
                blocks.append(Chart("Difference percentage per table", "difference_percent",
                                    self.plot_difference_percent))
        for name, t in self.tables.items():
            if t.column_stats:
                blocks.append(Table(f"Column statistics: {name}", self.column_stats(name),
                                    note="count: changed key-paired rows; min to max: the size of each change "
                                         f"({'; '.join(f'{c}: {u}' for c, u in self.units(name).items())})"))
                blocks.append(Chart(f"Differences per column of {name}", f"{name}_column_differences",
                                    lambda name=name: self.plot_column_differences(name)))
                blocks.append(Chart(f"Quartiles of {name}", f"{name}_quartiles",
                                    lambda name=name: self.plot_quartiles(name)))
        if sample_rows:
            for name, t in self.tables.items():
                if t.updates is not None and (t.pairing or {}).get("paired", 0) > 0:
                    frame = self.changes(name, sample_rows)
                    if len(frame):  # every change may lie within tolerance
                        blocks.append(Table(f"Changes: {name}", frame,
                                            note=f"first {sample_rows} changed rows in key order, each changed "
                                                 "column as old -> new; whole rows: result.updates(table)"))
                if t.row_delta is not None and t.row_stats.get("differences", 0) > 0:
                    frame, note = self.row_delta_sample(name, sample_rows)
                    blocks.append(Table(f"Row delta sample: {name}", frame, note=note))
        if self.messages:
            blocks.append(Notes("Notes", self.messages))
        return blocks

    def schema_frame(self) -> pd.DataFrame:
        """The schema delta as a table: one row per change (table, change, column, old, new, compared)."""
        rows = []
        for t in self.schema.changed_tables():
            if t.status in ("dropped", "added"):
                rows.append({"table": t.name, "change": f"table {t.status}", "column": "", "old": "", "new": "",
                             "compared": "not compared"})
                continue
            rows += [{"table": t.name, "change": "added", "column": c, "old": "", "new": ty or "",
                      "compared": "not compared"} for c, ty in t.added]
            rows += [{"table": t.name, "change": "dropped", "column": c, "old": ty or "", "new": "",
                      "compared": "not compared"} for c, ty in t.dropped]
            rows += [{"table": t.name, "change": "retyped", "column": c, "old": o or "", "new": n or "",
                      "compared": "as text" if k == "text" else "by value"} for c, o, n, k in t.retyped]
            rows += [{"table": t.name, "change": "renamed", "column": n, "old": o, "new": n,
                      "compared": "by value"} for o, n in t.renamed]
        return pd.DataFrame(rows, columns=["table", "change", "column", "old", "new", "compared"])

    def proposed_renames(self) -> pd.DataFrame:
        """The renames dqkit proposes (never applied): table, old and new column, the share of values
        agreeing, the evidence, and the ``--rename`` that accepts it."""
        rows = [{"table": t.name, **p} for t in self.schema.tables.values() for p in t.proposed]
        return pd.DataFrame(rows, columns=["table", "old", "new", "agreeing", "evidence", "accept"])

    def schema_sections(self) -> list[Any]:
        """The schema delta blocks, first after the verdict: the changes, then the proposed renames."""
        if not self.schema.changed:
            return [Notes(SCHEMA_TITLE, ["no schema change: every compared table has the same columns and "
                                         "types in both versions"])]
        blocks: list[Any] = [Table(SCHEMA_TITLE, self.schema_frame(),
                                   note="columns only in one version are reported, not compared; the common "
                                        "columns are compared (widened numbers by value, other type changes "
                                        "as text)")]
        proposed = self.proposed_renames()
        if len(proposed):
            blocks.append(Table(PROPOSED_TITLE, proposed,
                                note="never applied: accept one by running again with its --rename"))
        return blocks

    def frames(self, include_dedup: bool = False) -> dict[str, DataFrame]:
        """The validation namespace: ``<T>_row_delta``, ``<T>_col_delta``, ``<T>_updates`` (and with
        ``include_dedup`` ``ddb_old/<T>``, ``ddb_new/<T>``)."""
        frames: dict[str, DataFrame] = {}
        for name, t in self.tables.items():
            if t.row_delta is not None:
                frames[f"{name}_row_delta"] = t.row_delta
            if t.col_delta is not None:
                frames[f"{name}_col_delta"] = t.col_delta
                frames[f"{name}_updates"] = t.updates  # type: ignore[assignment]
            if include_dedup and t.changed_fingerprints is not None:
                frames[f"ddb_old/{name}"] = self.dedup(name, "old")
                frames[f"ddb_new/{name}"] = self.dedup(name, "new")
        return frames

    def inputs(self) -> list[Any]:
        return [self.parameters.get("_old_source"), self.parameters.get("_new_source")]

    def _save_extra(self, folder: Path) -> None:
        self.row_stats.to_csv(folder / "row_stats.csv", index=False)
        col = [self.column_stats(n).assign(table=n) for n, t in self.tables.items() if t.column_stats]
        if col:
            pd.concat(col)[["table", "column", *COLUMN_STAT_NAMES, NULL_CHANGES]].to_csv(
                folder / "column_stats.csv", index=False)

    def units(self, table: str) -> dict[str, str]:
        """The unit of ``calc_diff`` per column: what a difference of 1 means."""
        t = self._table(table)
        return {c: diff_unit(t.plan.types[c]) if c in t.plan.types else "rows"
                for c in (t.column_stats or {})}

    def sample(self, table: str, what: str = "row_delta", n: int = 10) -> pd.DataFrame:
        """A bounded, deterministic sample as pandas: the first ``n`` rows ordered by the key, then
        by every column, so the same inputs give the same sample whatever the partitioning."""
        frame = {"row_delta": self.row_delta, "col_delta": self.col_delta, "updates": self.updates}[what](table)
        flat = frame.select(*[_displayable(f) for f in frame.schema.fields])
        key = list(self._table(table).plan.key or [])
        order = key + [c for c in flat.columns if c not in key]
        rows = self.first_rows(("sample", table, what), n, lambda k: flat.orderBy(*[F.col(_q(c)) for c in order])
                           .limit(k).collect())
        return pd.DataFrame([r.asDict() for r in rows], columns=flat.columns)

    def changes(self, table: str, n: int = 10) -> pd.DataFrame:
        """The UPDATE view as people read it: per changed key-paired row (first ``n`` in key order),
        one line per changed column with the key, ``column`` and ``old -> new``."""
        t = self._table(table)
        key = list(t.plan.key or [])
        upd = self.updates(table)
        rows = self.first_rows(("changes", table), n, lambda k: upd.orderBy(*[F.col(_q(c)) for c in key]).limit(k)
                           .select(*[F.col(_q(c)) for c in key], "changed_columns",
                                   F.to_json("old").alias("_o"), F.to_json("new").alias("_n")).collect())
        import json as _json

        out = []
        for r in rows:
            old, new = _json.loads(r["_o"]), _json.loads(r["_n"])
            for c in r["changed_columns"]:
                out.append({**{k: r[k] for k in key}, "column": c,
                            "change": f"{render.plain(old.get(c))} \u2192 {render.plain(new.get(c))}"})
        return pd.DataFrame(out, columns=[*key, "column", "change"])

    def row_delta_sample(self, table: str, n: int = 10, max_columns: int = 8) -> tuple[pd.DataFrame, str]:
        """A row-delta sample bounded for a screen: key, status and changed columns first, at most
        ``max_columns`` data columns; returns the frame and a note on what was left out."""
        t = self._table(table)
        frame = self.sample(table, "row_delta", n)
        key = list(t.plan.key or [])
        changed_cols = [c for c, s in (t.column_stats or {}).items()
                        if s.get("count") and c in frame.columns and c not in (STATUS, ROW_COUNT)]
        rest = [c for c in frame.columns if c not in key and c not in changed_cols and c not in (STATUS, ROW_COUNT)]
        data_cols = (changed_cols + rest)[:max(max_columns - len(key), 1)]
        shown = [*key, STATUS, ROW_COUNT, *data_cols]
        hidden = len(frame.columns) - len(shown)
        note = f"first {n} records in key order; changed columns first"
        if hidden > 0:
            note += f"; {hidden} more column{'s' if hidden != 1 else ''} not shown (result.row_delta(table))"
        return frame[shown], note

    def plot_difference_count(self):
        """Row chart: difference count (7) per table (paper Fig. 11)."""
        from dqkit.contract import charts as ch

        return ch.barh({n: t.row_stats.get("differences", 0) for n, t in self.tables.items()},
                       "Row validation: difference count", "Difference count (records)", "Table", integer=True)

    def plot_difference_percent(self):
        """Row chart: difference percentage (8) per table (paper Fig. 12)."""
        from dqkit.contract import charts as ch

        return ch.barh({n: t.row_stats.get("percent", 0.0) for n, t in self.tables.items()},
                       "Row validation: difference percentage", "Difference percentage (%)", "Table")

    def plot_column_differences(self, table: str):
        """Column chart: difference count (9) per column of ``table`` (paper Fig. 13)."""
        from dqkit.contract import charts as ch

        stats = self._table(table).column_stats or {}
        return ch.barh({c: s["count"] for c, s in stats.items()},
                       f"Column validation: {table}", "Difference count (rows)", "Column", integer=True)

    def plot_quartiles(self, table: str):
        """Quartile chart of ``table``: a box per column from min/Q1/median/Q3/max (Figs. 14-15)."""
        from dqkit.contract import charts as ch

        return ch.quartile_chart(self._table(table).column_stats or {}, f"Column statistics: {table}",
                                 units=self.units(table))


def _displayable(f: T.StructField) -> Column:
    """A column as people read it (and as it sorts): nested values as JSON, binary as hex."""
    col = F.col(_q(f.name))
    if isinstance(f.dataType, T.BinaryType):
        return F.hex(col).alias(f.name)
    if isinstance(f.dataType, (T.StructType, T.ArrayType, T.MapType)):
        return F.to_json(col).alias(f.name)
    return col
