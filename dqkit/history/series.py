"""Series out of a history, drift metrics derived from stored quantiles and top-k shares, and the
judgement of one new run against its series (``gate``)."""
from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import numpy as np

from dqkit.history.gates import DEFAULT_FPR, MIN_RUNS, Judgement, judge

#: the quantile metrics of a profiled column, by probability (min and max are the 0 and 1 quantiles)
QUANTILES = {"min": 0.0, "p05": 0.05, "p25": 0.25, "p50": 0.5, "p75": 0.75, "p95": 0.95, "max": 1.0}
_TOP = re.compile(r"^(?P<col>.*)\.top\[(?P<value>.*)\]$")
PSI, TOPK = "drift_psi", "drift_topk"


def split_metric(name: str) -> tuple[str, str]:
    """(column, statistic) of a profile metric ``COLUMN.STAT`` / ``COLUMN.top[VALUE]``; ("", name) else."""
    m = _TOP.match(name)
    if m:
        return m["col"], f"top[{m['value']}]"
    col, dot, stat = name.rpartition(".")
    return (col, stat) if dot else ("", name)


def psi_from_quantiles(ref: Mapping[float, float], new: Mapping[float, float], eps: float = 1e-4) -> float:
    """Population stability index of ``new`` against ``ref``, both given by quantiles (probability ->
    value): the reference's quantiles cut the bins (plus one below and one above its range), tonight's
    mass in each bin comes from its piecewise-linear CDF."""
    probs = sorted(set(ref) & set(new))
    if len(probs) < 3:
        return float("nan")
    rq = np.array([ref[p] for p in probs], dtype=float)
    nq = np.maximum.accumulate(np.array([new[p] for p in probs], dtype=float))
    nq = nq + np.arange(len(nq)) * 1e-12 * (1 + np.abs(nq).max())  # strictly increasing for interp
    cdf = lambda x: np.interp(x, nq, probs, left=0.0, right=1.0)  # noqa: E731
    edges_mass = np.diff(cdf(rq))
    expected = np.diff(np.array(probs, dtype=float))
    actual = np.concatenate([[cdf(rq[0]) if probs[0] == 0 else 0.0], edges_mass, [1.0 - cdf(rq[-1])]])
    expected = np.concatenate([[0.0], expected, [0.0]])
    a, e = np.maximum(actual, eps), np.maximum(expected, eps)
    return float(np.sum((a - e) * np.log(a / e)))


def topk_distance(ref: Mapping[str, float], new: Mapping[str, float]) -> float:
    """Total variation distance of two top-k share vectors (a value absent from one side counts 0)."""
    keys = set(ref) | set(new)
    return 0.5 * float(sum(abs(ref.get(k, 0.0) - new.get(k, 0.0)) for k in keys))


def drift(prev: Mapping[str, float], cur: Mapping[str, float]) -> dict[str, float]:
    """``COLUMN.drift_psi`` and ``COLUMN.drift_topk`` of ``cur`` against ``prev`` (one run each)."""
    qs: dict[str, dict[str, dict[float, float]]] = {}
    tops: dict[str, dict[str, dict[str, float]]] = {}
    for side, m in (("prev", prev), ("cur", cur)):
        for name, v in m.items():
            col, stat = split_metric(name)
            if not col:
                continue
            if stat in QUANTILES:
                qs.setdefault(col, {}).setdefault(side, {})[QUANTILES[stat]] = v
            elif stat.startswith("top["):
                tops.setdefault(col, {}).setdefault(side, {})[stat[4:-1]] = v
    out: dict[str, float] = {}
    for col, sides in qs.items():
        if len(sides) == 2:
            v = psi_from_quantiles(sides["prev"], sides["cur"])
            if math.isfinite(v):
                out[f"{col}.{PSI}"] = v
    for col, sides in tops.items():
        if len(sides) == 2:
            out[f"{col}.{TOPK}"] = topk_distance(sides["prev"], sides["cur"])
    return out


@dataclass
class Series:
    """The runs of one (system, table, parameter digest), oldest first: dates and metrics per run."""

    system: str
    table: str
    params_digest: str
    runs: list[tuple[str, date, Any, dict[str, float]]] = field(default_factory=list)  # (run_id, as_of, run_time, metrics)

    def with_drift(self) -> list[dict[str, float]]:
        """Each run's metrics plus its drift against the run before."""
        out, prev = [], None
        for _, _, _, m in self.runs:
            out.append({**m, **(drift(prev, m) if prev is not None else {})})
            prev = m
        return out


def series_of(frame: Any) -> dict[tuple[str, str, str], Series]:
    """The history frame (``History.read()``) grouped into series, runs ordered by as-of date and time."""
    out: dict[tuple[str, str, str], Series] = {}
    if frame is None or not len(frame):
        return out
    runs = frame.sort_values(["as_of", "run_time", "run_id"], kind="stable")
    for (system, table, digest), part in runs.groupby(["system", "table", "params_digest"], sort=False):
        s = out.setdefault((system, table, digest), Series(system, table, digest))
        for run_id, rows in part.groupby("run_id", sort=False):
            first = rows.iloc[0]
            s.runs.append((run_id, first["as_of"], first["run_time"],
                           dict(zip(rows["metric"].astype(str), rows["value"].astype(float)))))
        s.runs.sort(key=lambda r: (r[1], str(r[2]), r[0]))
    return out


def gate(series: Series | None, metrics: Mapping[str, float], as_of: date, fpr: float = DEFAULT_FPR,
         min_runs: int = MIN_RUNS, only: Any = None) -> list[Judgement]:
    """Every metric of a new run (and its drift against the last run) judged against the runs of
    ``series`` dated before ``as_of``; a metric with fewer than ``min_runs`` earlier values is not judged.
    ``only``: a predicate on metric names, to judge a few of them."""
    if series is None:
        return []
    past = [(d, m) for (_, d, _, _), m in zip(series.runs, series.with_drift()) if d < as_of]
    if len(past) < min_runs:
        return []
    current = dict(metrics)
    current.update(drift(series.runs[[i for i, r in enumerate(series.runs) if r[1] < as_of][-1]][3], metrics))
    out = []
    for name in sorted(current):
        if only is not None and not only(name):
            continue
        pts = [(d, m[name]) for d, m in past if name in m and math.isfinite(m[name])]
        if len(pts) < min_runs:
            continue
        j = judge(name, [d for d, _ in pts], [v for _, v in pts], as_of, current[name], fpr, min_runs)
        if j is not None:
            out.append(j)
    return out
