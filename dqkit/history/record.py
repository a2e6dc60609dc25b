"""``--history DIR`` on every system: the options, their Spark-free checks, and ``record_run``, which
the CLI (``dqkit.cli._derive``), the reports and the widgets call alike: it judges a run's metrics
against their own series, then appends the run to the history."""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from dqkit.history.gates import DEFAULT_FPR, MIN_RUNS, Judgement
from dqkit.history.store import History, HistoryError, new_run

#: parameters that never change a run's metrics: left out of the parameter digest
PRESENTATION = frozenset({"sample_rows", "format", "out", "overwrite"})


def parse_as_of(text: str | date | None, today: date | None = None) -> date:
    """``--as-of``: an ISO date (YYYY-MM-DD), not in the future; today when not given."""
    today = today or date.today()
    if text is None or text == "":
        return today
    if isinstance(text, date):
        value = text
    else:
        try:
            value = date.fromisoformat(str(text).strip())
        except ValueError:
            raise HistoryError(f"--as-of {text!r} is not a date", hint="write YYYY-MM-DD, e.g. 2026-11-27") from None
    if value > today:
        raise HistoryError(f"--as-of {value.isoformat()} is in the future (today is {today.isoformat()})",
                           hint="give the date the data is of: today or earlier")
    return value


def check_fpr(value: Any) -> float:
    """``--fpr``: a false-positive rate strictly between 0 and 0.5."""
    try:
        fpr = float(value)
    except (TypeError, ValueError):
        raise HistoryError(f"--fpr must be a number, not {value!r}", hint="e.g. --fpr 0.01") from None
    if not (0.0 < fpr < 0.5):
        raise HistoryError(f"--fpr must be above 0 and below 0.5, not {value!r}",
                           hint="the share of clean runs allowed to alarm, e.g. --fpr 0.01")
    return fpr


def params_digest(params: Any) -> str:
    """A digest of the parameters that shape the metrics: the inputs (which move night after night)
    and presentation options are left out, so a nightly run of the same check keeps one series."""
    values = {}
    for s in params.specs():
        if s.input or s.name in PRESENTATION:
            continue
        values[s.name] = s.format(getattr(params, s.name))
    text = json.dumps(values, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def subject(params: Any) -> str:
    """What the series is of (the ``table`` of a record): the run's inputs, made absolute."""
    parts: list[str] = []
    for s in params.specs():
        if not s.input:
            continue
        value = getattr(params, s.name)
        for v in (value if isinstance(value, (list, tuple)) else [value]):
            if v:
                v = str(v)
                parts.append(v if v.startswith("catalog:") or "=" in v else os.path.abspath(v))
    return " ".join(parts) or "-"


@dataclass(frozen=True)
class HistoryOptions:
    """``--history``, ``--as-of``, ``--fpr``, ``--min-runs`` and ``--history-table``, checked."""

    history: History
    as_of: date
    fpr: float = DEFAULT_FPR
    min_runs: int = MIN_RUNS
    table: str | None = None
    frame: Any = field(default=None, repr=False, compare=False)

    @classmethod
    def prepare(cls, history: str, as_of: Any = None, fpr: Any = DEFAULT_FPR, min_runs: Any = MIN_RUNS,
                table: str | None = None, today: date | None = None) -> HistoryOptions:
        """Every check that needs no Spark: the options, and the history read in full (a folder that is
        not a history, a corrupt file or a newer record is refused here, before the run)."""
        day = parse_as_of(as_of, today)
        rate = check_fpr(fpr)
        try:
            runs = int(min_runs)
        except (TypeError, ValueError):
            raise HistoryError(f"--min-runs must be a whole number, not {min_runs!r}") from None
        if runs < 3:
            raise HistoryError(f"--min-runs must be at least 3, not {runs}", hint=f"the default is {MIN_RUNS}")
        h = History(history)
        frame = h.read() if h.catalog is None else None
        return cls(h, day, rate, runs, table or None, frame)


@dataclass(frozen=True)
class Recorded:
    """What ``record_run`` did: where the record went and each metric judged (anomalies first)."""

    where: str
    system: str
    table: str
    runs_before: int
    judgements: list[Judgement]

    @property
    def anomalies(self) -> list[Judgement]:
        return [j for j in self.judgements if j.anomalous]

    def text(self) -> str:
        head = (f"history: {len(self.anomalies)} anomalous metric(s) of {len(self.judgements)} judged"
                if self.judgements else
                f"history: recorded; {self.runs_before} earlier run(s), metrics are judged from the "
                f"{MIN_RUNS}th on")
        return "\n".join([head, *(f"anomaly: {j.line()}" for j in self.anomalies)])

    def to_dict(self) -> dict[str, Any]:
        return {"where": self.where, "system": self.system, "table": self.table, "runs_before": self.runs_before,
                "judged": len(self.judgements),
                "anomalies": [{"metric": j.metric, "value": j.value, "expected": j.expected, "low": j.low,
                               "high": j.high, "method": j.method, "runs": j.runs} for j in self.anomalies]}


def record_metrics(history: str | History, system: str, table: str, metrics: dict[str, float], as_of: Any = None, *,
           fpr: float = DEFAULT_FPR, min_runs: int = MIN_RUNS, params_digest: str = "-", frame: Any = None,
           spark: Any = None) -> Recorded:
    """Judge ``metrics`` against the series (system, table, params_digest) of ``history``, then append
    them as one run dated ``as_of`` (default today). The notebook-facing form of ``record_run``."""
    from dqkit.history.series import gate, series_of

    h = history if isinstance(history, History) else History(history)
    day = parse_as_of(as_of)
    rate = check_fpr(fpr)
    frame = frame if frame is not None else h.read(spark)
    series = series_of(frame).get((system, table, params_digest))
    judgements = gate(series, metrics, day, rate, min_runs)
    judgements.sort(key=lambda j: (not j.anomalous, j.metric))
    where = h.append(new_run(system, table, params_digest, metrics, day), spark)
    before = len([r for r in series.runs if r[1] < day]) if series else 0
    return Recorded(where, system, table, before, judgements)


def record_run(system: str, params: Any, result: Any, options: HistoryOptions, spark: Any = None) -> Recorded:
    """Judge ``result.metrics()`` against the series of (system, table, parameter digest), then append
    the run to the history (atomically). The gates see only runs dated before ``options.as_of``."""
    return record_metrics(options.history, system, options.table or subject(params), result.metrics(), options.as_of,
                  fpr=options.fpr, min_runs=options.min_runs, params_digest=params_digest(params),
                  frame=options.frame, spark=spark)
