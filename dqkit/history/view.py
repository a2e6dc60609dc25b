"""``dqkit history DIR``: the series of a history read back, each metric's line with its band and its
flagged points (``HistoryResult``), and ``timeline``, the one function the charts, the report and the
``QualityTimeline`` widget draw from."""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from dqkit.contract.result import Chart, Facts, Result, Table, Verdict, keyed
from dqkit.history._defaults import DEFAULT_FPR, MIN_RUNS
from dqkit.history.series import Series, gate, series_of, split_metric
from dqkit.history.store import History

TIMELINE_COLUMNS = ["as_of", "value", "expected", "low", "high", "method", "runs", "anomalous"]


def timeline(series: Series, metric: str, fpr: float = DEFAULT_FPR, min_runs: int = MIN_RUNS,
             last: int | None = 60) -> pd.DataFrame:
    """One row per run of ``series`` holding ``metric`` (the last ``last``): its value and, from the
    ``min_runs``-th run on, the band the gate drew from the runs before it and whether it fell outside
    (the same ``judge`` the gates run, on the same values, drift included)."""
    from dqkit.history.gates import judge

    runs = series.runs if last is None else series.runs[-(last + 56):]
    drifted = Series(series.system, series.table, series.params_digest, runs).with_drift()
    points = [(r[1], m[metric]) for r, m in zip(runs, drifted) if metric in m]
    rows = []
    for i, (day, value) in enumerate(points):
        past = [(d, v) for d, v in points[:i] if d < day]
        j = judge(metric, [d for d, _ in past], [v for _, v in past], day, value, fpr, min_runs) \
            if len(past) >= min_runs else None
        rows.append({"as_of": day, "value": value, "expected": j.expected if j else None,
                     "low": j.low if j else None, "high": j.high if j else None, "method": j.method if j else "",
                     "runs": j.runs if j else len(past), "anomalous": bool(j and j.anomalous)})
    frame = pd.DataFrame(rows, columns=TIMELINE_COLUMNS)
    return frame if last is None else frame.tail(last).reset_index(drop=True)


def plot_timeline(frame: pd.DataFrame, title: str) -> Any:
    """The metric's line, its band (where judged) and its flagged points, with matplotlib."""
    from matplotlib.figure import Figure

    from dqkit.contract.charts import PLAIN

    fig = Figure(figsize=(7, 2.6), layout="constrained")
    ax = fig.subplots()
    x = pd.to_datetime(frame["as_of"])
    judged = frame["low"].notna()
    if judged.any():
        ax.fill_between(x[judged], frame["low"][judged].astype(float), frame["high"][judged].astype(float),
                        color="#4c72b0", alpha=0.18, step="mid", label="expected range")
    ax.plot(x, frame["value"], marker=".", color="#4c72b0", label="value")
    bad = frame["anomalous"].astype(bool)
    if bad.any():
        ax.scatter(x[bad], frame["value"][bad], color="#c44e52", zorder=3, s=40, label="anomalous")
    ax.set_title(title, **PLAIN)
    ax.legend(loc="best", fontsize=8)
    fig.autofmt_xdate()
    return fig


@dataclass(frozen=True, repr=False)
class HistoryResult(Result):
    """The series of a history (filtered), the latest run of each judged, and charts of a few metrics."""

    system = "dqkit history"

    location: str
    series: dict[tuple[str, str, str], Series]
    latest: pd.DataFrame
    charted: list[tuple[tuple[str, str, str], str]]
    files: int
    fpr: float = DEFAULT_FPR
    min_runs: int = MIN_RUNS
    notes: list[str] = field(default_factory=list)

    @property
    def anomalies(self) -> pd.DataFrame:
        return self.latest[self.latest["anomalous"]] if len(self.latest) else self.latest

    def metrics(self) -> dict[str, float]:
        return {"series": float(len(self.series)), "runs": float(sum(len(s.runs) for s in self.series.values())),
                "anomalous_metrics": float(len(self.anomalies))}

    def series_table(self) -> pd.DataFrame:
        rows = [{"system": s.system, "table": s.table, "parameters": s.params_digest, "runs": len(s.runs),
                 "first": s.runs[0][1] if s.runs else None, "last": s.runs[-1][1] if s.runs else None}
                for s in self.series.values()]
        return pd.DataFrame(rows, columns=["system", "table", "parameters", "runs", "first", "last"])

    def verdict_block(self) -> Verdict:
        n, runs = len(self.series), sum(len(s.runs) for s in self.series.values())
        k = len(self.anomalies)
        head = f"{n} series, {runs} run(s); "
        if k:
            return Verdict(False, "ANOMALIES", head + f"{k} anomalous metric(s) in the latest runs")
        return Verdict(True, "IN RANGE", head + f"{len(self.latest)} metric(s) of the latest runs judged, none "
                                                "anomalous")

    def to_dict(self) -> dict[str, Any]:
        v = self.verdict_block()
        return {"history": self.location, "verdict": v.label, "summary": v.summary, "files": self.files,
                "fpr": self.fpr, "min_runs": self.min_runs,
                "series": self.series_table().astype({"first": str, "last": str}).to_dict(orient="records"),
                "anomalies": self.anomalies.to_dict(orient="records")}

    def chart(self, key: tuple[str, str, str], metric: str) -> Any:
        s = self.series[key]
        return plot_timeline(timeline(s, metric, self.fpr, self.min_runs), f"{metric} ({s.system}: {s.table})")

    def sections(self, sample_rows: int = 10) -> list[Any]:
        blocks: list[Any] = [keyed("summary", self.verdict_block()),
                             Facts("What was read", {"history": self.location, "files": self.files,
                                                     "false-positive rate": self.fpr,
                                                     "runs before a metric is judged": self.min_runs}, key="summary"),
                             Table("Series", self.series_table(), key="series"),
                             Table("Latest runs, judged", self.latest.drop(columns=["key"], errors="ignore"),
                                   note="; ".join([*self.notes, "anomalous metrics first; a metric is judged against its own earlier "
                                        "runs (docs/history.md)"]), max_rows=max(sample_rows, 1) * 5, key="latest")]
        for i, (key, metric) in enumerate(self.charted):
            blocks.append(Chart(f"{metric} ({key[1]})", f"timeline_{i}", lambda k=key, m=metric: self.chart(k, m), key="charts"))
        return blocks

    def frames(self, **options: Any) -> dict[str, Any]:
        return {}

    def inputs(self) -> list[Any]:
        return [self.location]

    def _save_extra(self, folder: Path) -> None:
        self.latest.drop(columns=["key"], errors="ignore").to_csv(folder / "latest.csv", index=False)


def read_history(location: str, *, table: str | None = None, metric: str | None = None, system: str | None = None,
                 fpr: float = DEFAULT_FPR, min_runs: int = MIN_RUNS, charts: int = 8, compact: bool = False,
                 spark: Any = None) -> HistoryResult:
    """The history at ``location`` read (compacted first with ``compact``): series filtered by ``table``
    and ``system`` (substrings) and metrics by ``metric`` (a glob, or a substring), the latest run of
    each series judged, and the ``charts`` metrics to chart (anomalous ones first)."""
    h = History(location)
    notes = []
    if compact:
        before, after = h.compact()
        notes.append(f"compacted: {before} file(s) -> {after}")
    allseries = series_of(h.read(spark))
    chosen = {k: s for k, s in allseries.items()
              if (not table or table in s.table) and (not system or system == s.system)}

    def wanted(name: str) -> bool:
        return not metric or fnmatch.fnmatchcase(name, metric) or metric in name

    rows = []
    for key, s in chosen.items():
        if not s.runs:
            continue
        *_, day, _, last = s.runs[-1]
        past = Series(s.system, s.table, s.params_digest, s.runs[:-1])
        for j in gate(past, last, day, fpr, min_runs, only=wanted):
            rows.append({"key": key, "table": s.table, "metric": j.metric, "as_of": day, "value": j.value,
                         "expected": j.expected, "low": j.low, "high": j.high, "method": j.method,
                         "runs": j.runs, "anomalous": j.anomalous})
    latest = pd.DataFrame(rows, columns=["key", "table", "metric", "as_of", "value", "expected", "low", "high",
                                         "method", "runs", "anomalous"])
    if len(latest):
        latest = latest.sort_values(["anomalous", "table", "metric"], ascending=[False, True, True],
                                    kind="stable").reset_index(drop=True)
    charted = [(r.key, r.metric) for r in latest.head(charts).itertuples()]
    if not charted:  # nothing judged yet: chart the first metrics of each series
        for key, s in chosen.items():
            names = sorted(n for n in (s.runs[-1][3] if s.runs else {}) if wanted(n))
            charted += [(key, n) for n in names[:max(0, charts - len(charted))]]
    return HistoryResult(h.location, chosen, latest, charted, len(h.files()), fpr, min_runs, notes)


__all__ = ["HistoryResult", "read_history", "timeline", "plot_timeline", "split_metric"]
