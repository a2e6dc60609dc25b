"""Anomaly gates whose thresholds calibrate themselves from each metric's own history.

After Auto-Validate-by-History (Song & He, KDD 2023): no strategy is picked by hand. For every metric a
few predictors of tonight's value are fitted to the series (the level; a robust linear trend; the trend
plus a same-weekday offset once two or more weeks of nights exist) and the one that predicted the
series itself best, one step ahead on rolling origins, is chosen. The band is the prediction plus or
minus ``k`` robust scales of its residuals, ``k`` set for the false-positive rate ``fpr``:

* ``k`` is the two-sided Student-t quantile at ``1 - fpr/2`` with the degrees of freedom a median
  absolute deviation of ``n`` residuals carries (about 0.37 n; 0.3 n is used, a margin for the choice
  among predictors), widened by ``sqrt(1 + 1/n)`` (a
  prediction, not a mean), so a short history gets a wider band;
* the scale is inflated when the rolling-origin errors were larger than the in-sample residuals said
  (the calibration on the series itself), never narrowed;
* the scale has a floor of ``REL_FLOOR`` of the prediction's magnitude, so a metric that is constant or
  almost (a mean moving in its sixth digit) does not alarm on that noise, while a count that was always
  zero still alarms when it moves;
* a count (every value whole) is never judged finer than its resolution (half a unit either side), and a
  count with at most three values seen (a minimum length) accepts the values it has already taken.

Everything is numpy on the series: a judgement needs no Spark.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

import numpy as np

from dqkit.history._defaults import DEFAULT_FPR, MIN_RUNS

#: the most recent runs a judgement rests on (eight weeks of nights)
WINDOW = 56
#: the scale's floor, relative to the predicted value's magnitude
REL_FLOOR = 0.005
#: rolling origins of the one-step-ahead backtest that picks and calibrates the predictor
BACKTEST = 14


@dataclass(frozen=True)
class Judgement:
    """A metric's value tonight against its band: ``anomalous`` when outside ``[low, high]``."""

    metric: str
    value: float
    expected: float
    low: float
    high: float
    method: str
    runs: int

    @property
    def anomalous(self) -> bool:
        return not (self.low <= self.value <= self.high)

    def line(self) -> str:
        """``metric = value, expected low .. high (method, N runs)``."""
        return (f"{self.metric} = {_g(self.value)}, expected {_g(self.low)} .. {_g(self.high)} "
                f"({self.method}, {self.runs} runs)")


def _g(x: float) -> str:
    return f"{x:.6g}"


# ------------------------------------------------------------------------------------- predictors
def _med(a: np.ndarray) -> float:
    """The median of a small array (numpy's general median costs more than the sort it needs)."""
    a = np.sort(np.asarray(a, dtype=float), axis=None)
    n = len(a)
    return float(a[(n - 1) // 2] + a[n // 2]) / 2.0


def _pair_slopes(t: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every pairwise slope of the series and the later index of its pair (for prefixes of it)."""
    i, j = np.triu_indices(len(t), 1)
    dt = t[j] - t[i]
    ok = dt != 0
    return (y[j] - y[i])[ok] / dt[ok], j[ok]


def _theil_sen(t: np.ndarray, y: np.ndarray, pairs: tuple[np.ndarray, np.ndarray]) -> tuple[float, float]:
    """Theil-Sen line over the first ``len(t)`` points (median of pairwise slopes, median intercept):
    robust to a few past incidents."""
    slopes, later = pairs
    mine = slopes[later < len(t)]
    slope = float(_med(mine)) if len(mine) else 0.0
    return slope, float(_med(y - slope * t))


def _fit(method: str, t: np.ndarray, wd: np.ndarray, y: np.ndarray, t_new: float, wd_new: int,
         pairs: tuple[np.ndarray, np.ndarray]) -> tuple[float, np.ndarray] | None:
    """(prediction at ``t_new``, in-sample residuals) of ``method``, or None when it cannot be fitted."""
    if method == "level":
        m = float(_med(y))
        return m, y - m
    if method == "weekly" and ((wd == wd_new).sum() < 2 or t[-1] - t[0] < 13):
        return None
    slope, icept = _theil_sen(t, y, pairs)
    trend = icept + slope * t
    if method == "trend":
        return icept + slope * t_new, y - trend
    # weekly: the trend plus the median residual of the same weekday (>= 2 nights of that weekday)
    r = y - trend
    same = wd == wd_new
    offsets = np.zeros_like(y)
    for d in np.unique(wd):
        sel = wd == d
        offsets[sel] = _med(r[sel]) if sel.sum() >= 2 else 0.0
    return icept + slope * t_new + float(_med(r[same])), r - offsets


METHODS = ("level", "trend", "weekly")
#: the fewest points each predictor is fitted on (in the backtest too)
_MIN_FIT = {"level": 3, "trend": 5, "weekly": 14}


def _scale(resid: np.ndarray) -> float:
    mad = float(_med(np.abs(resid - _med(resid))))
    if mad > 0:
        return 1.4826 * mad
    return 1.2533 * float(np.abs(resid - _med(resid)).sum() / len(resid))


@functools.lru_cache(maxsize=1024)
def _k(n: int, fpr: float) -> float:
    from scipy.special import stdtrit  # the Student-t quantile

    df = max(2.0, 0.3 * (n - 1))
    return float(stdtrit(df, 1 - fpr / 2)) * math.sqrt(1 + 1 / n)


def judge(metric: str, dates: Sequence[date], values: Sequence[float], new_date: date, new_value: float,
          fpr: float = DEFAULT_FPR, min_runs: int = MIN_RUNS) -> Judgement | None:
    """``new_value`` (of ``new_date``) against the series ``values`` of ``dates`` (earlier runs); None
    while the series has fewer than ``min_runs`` runs."""
    y = np.asarray(values, dtype=float)[-WINDOW:]
    ds = list(dates)[-WINDOW:]
    n = len(y)
    if n < max(min_runs, 3):
        return None
    t = np.array([d.toordinal() for d in ds], dtype=float)
    wd = np.array([d.weekday() for d in ds])
    t_new, wd_new = float(new_date.toordinal()), new_date.weekday()
    floor_of = lambda pred: max(REL_FLOOR * abs(pred), 1e-9 * (1.0 + float(np.max(np.abs(y)))))  # noqa: E731

    pairs = _pair_slopes(t, y)
    best: tuple[float, str, list[float]] | None = None
    for method in METHODS:
        start = max(_MIN_FIT[method], n - BACKTEST)
        if n - start < 3 or _fit(method, t, wd, y, t_new, wd_new, pairs) is None:
            continue
        errors, zs = [], []
        for o in range(start, n):
            fit = _fit(method, t[:o], wd[:o], y[:o], t[o], int(wd[o]), pairs)
            if fit is None:
                continue
            pred, resid = fit
            err = abs(y[o] - pred)
            errors.append(err)
            zs.append(err / max(_scale(resid), floor_of(pred)))
        if len(errors) < 3:
            continue
        score = float(np.mean(errors))
        if best is None or score < best[0] * 0.95:  # a richer predictor must earn its place
            best = (score, method, zs)
    if best is None:
        best = (0.0, "level", [])
    method, zs = best[1], best[2]
    pred, resid = _fit(method, t, wd, y, t_new, wd_new, pairs)  # type: ignore[misc]
    inflate = max(1.0, float(_med(zs)) / 0.6745) if zs else 1.0
    half = _k(n, fpr) * max(_scale(resid) * inflate, floor_of(pred))
    low, high = pred - half, pred + half
    if np.all(y == np.round(y)) and np.abs(y).max() >= 1:  # a count: its resolution is 1, and a few values seen recur (a minimum length)
        low, high = min(low, pred - 0.5), max(high, pred + 0.5)
        if len(np.unique(y)) <= 3:
            low, high = min(low, float(y.min())), max(high, float(y.max()))
    return Judgement(metric, float(new_value), float(pred), float(low), float(high), method, n)
