"""The profile of a table (``ProfileResult``, the ``Result`` contract): column statistics, top values,
quartile box plots drawn with ``Axes.bxp`` from the computed quantiles, and every column metric."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from dqkit.contract.result import Chart, Facts, Result, Table, Verdict, keyed
from dqkit.profile.kernel import PNAMES, ColumnProfile

_STATS = ("min", "max", "mean", "stddev", "len_min", "len_mean", "len_max")


@dataclass(frozen=True, repr=False)
class ProfileResult(Result):
    """Rows, exact duplicate rows and one ``ColumnProfile`` per column; the numbers are computed."""

    system = "dqkit profile"

    table: str
    rows: int
    duplicate_rows: int
    columns: list[ColumnProfile]
    top_k: int = 10
    top_max_distinct: int = 1000
    accuracy: int = 10000
    rsd: float = 0.02
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def column(self, name: str) -> ColumnProfile:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)

    # ----- the result contract
    def metrics(self) -> dict[str, float]:
        """``rows``, ``duplicate_rows`` and every column metric as ``COLUMN.STAT``: nulls, null_share,
        distinct, min, max, mean, stddev, p05..p95, len_min/len_mean/len_max, len_p05..len_p95,
        type_share, and ``COLUMN.top[VALUE]``, the share of non-NULL rows holding each top value."""
        out = {"rows": float(self.rows), "duplicate_rows": float(self.duplicate_rows)}
        for c in self.columns:
            p = f"{c.name}."
            out[p + "nulls"] = float(c.nulls)
            out[p + "null_share"] = c.null_share
            values = {"distinct": c.distinct, "type_share": c.type_share, **{k: getattr(c, k) for k in _STATS},
                      **c.quantiles, **{f"len_{k}": v for k, v in c.len_quantiles.items()}}
            out.update({p + k: float(v) for k, v in values.items() if v is not None and math.isfinite(float(v))})
            nonnull = c.rows - c.nulls
            out.update({f"{c.name}.top[{v}]": n / nonnull for v, n in c.top if nonnull})
        return out

    def to_dict(self) -> dict[str, Any]:
        v = self.verdict_block()
        return {"table": self.table, "verdict": v.label, "summary": v.summary, "rows": self.rows,
                "duplicate_rows": self.duplicate_rows, "accuracy": self.error_note(),
                "columns": {c.name: {"type": c.dtype, "nulls": c.nulls, "null_share": c.null_share,
                                     "distinct": c.distinct, **{k: getattr(c, k) for k in _STATS},
                                     "quantiles": c.quantiles, "length_quantiles": c.len_quantiles,
                                     "apparent_type": c.apparent_type, "type_share": c.type_share,
                                     "top": [{"value": v, "count": n} for v, n in c.top]}
                            for c in self.columns}}

    def error_note(self) -> str:
        return (f"distinct values are HyperLogLog++ estimates (relative standard deviation {self.rsd:g}); "
                f"quantiles are percentile_approx with accuracy {self.accuracy} (rank error at most "
                f"{1 / self.accuracy:.2%} of the rows); counts, min, max, mean, stddev, lengths and duplicate "
                f"rows are exact")

    def verdict_block(self) -> Verdict:
        return Verdict(True, "PROFILED", f"{self.rows:,} rows, {len(self.columns)} column(s), "
                                         f"{self.duplicate_rows:,} exact duplicate row(s)")

    def column_table(self) -> pd.DataFrame:
        rows = []
        for c in self.columns:
            q = c.quantiles
            rows.append({"column": c.name, "type": c.dtype, "nulls": c.nulls, "null %": round(100 * c.null_share, 2),
                         "distinct (approx)": c.distinct, "min": c.min, "p25": q.get("p25"), "median": q.get("p50"),
                         "p75": q.get("p75"), "max": c.max, "mean": c.mean, "stddev": c.stddev,
                         "length min/mean/max": ("" if c.len_min is None else
                                                 f"{c.len_min:g} / {c.len_mean:.3g} / {c.len_max:g}"),
                         "apparent type": c.apparent_type,
                         "parses %": None if c.type_share is None else round(100 * c.type_share, 2)})
        return pd.DataFrame(rows)

    def top_table(self) -> pd.DataFrame:
        rows = [{"column": c.name, "value": v, "count": n, "share %": round(100 * n / max(1, c.rows - c.nulls), 2)}
                for c in self.columns for v, n in c.top]
        return pd.DataFrame(rows, columns=["column", "value", "count", "share %"])

    def quartile_stats(self) -> dict[str, dict[str, float]]:
        """min / q1 / median / q3 / max per numeric, date or timestamp column (the box plots' input)."""
        out = {}
        for c in self.columns:
            q = c.quantiles
            if c.min is not None and all(k in q for k in ("p25", "p50", "p75")):
                out[c.name] = {"count": c.rows - c.nulls, "min": c.min, "q1": q["p25"], "median": q["p50"],
                               "q3": q["p75"], "max": c.max}
        return out

    def plot_quartiles(self) -> Any:
        from dqkit.contract.charts import quartile_chart

        units = {c.name: {"date": "days since 1970-01-01", "timestamp": "seconds since 1970"}.get(c.kind, "value")
                 for c in self.columns}
        return quartile_chart(self.quartile_stats(), "Quartiles per column (approximate quantiles)", "value", units)

    def sections(self, sample_rows: int = 10) -> list[Any]:
        skipped = [f"{c.name}: {c.top_skipped}" for c in self.columns if c.top_skipped]
        blocks: list[Any] = [keyed("summary", self.verdict_block()),
                             Facts("What was profiled", {"table": self.table, "rows": self.rows,
                                                         "exact duplicate rows": self.duplicate_rows,
                                                         "columns": len(self.columns), "accuracy": self.error_note()}, key="summary"),
                             Table("Columns", self.column_table(), key="columns"),
                             Table("Top values", self.top_table(),
                                   note=f"the {self.top_k} most frequent values of columns with at most "
                                        f"{self.top_max_distinct:,} distinct values"
                                        + (f"; {'; '.join(skipped)}" if skipped else ""), key="top_values")]
        if self.quartile_stats():
            blocks.append(Chart("Quartiles", "quartiles", self.plot_quartiles, key="charts"))
        return blocks

    def frames(self, **options: Any) -> dict[str, Any]:
        return {}

    def inputs(self) -> list[Any]:
        return [self.table] if isinstance(self.table, str) else []

    def _save_extra(self, folder: Path) -> None:
        self.column_table().to_csv(folder / "columns.csv", index=False)
        self.top_table().to_csv(folder / "top_values.csv", index=False)


__all__ = ["ProfileResult", "PNAMES"]
