"""The history of runs, declared once (``dqkit.history``): each metric's series with its band and flagged
points. Reads the history with pyarrow: the command starts no JVM (a ``catalog:`` history starts Spark)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dqkit.history._defaults import DEFAULT_FPR, MIN_RUNS
from dqkit.systems.base import Params, System, param


@dataclass(frozen=True)
class HistoryParams(Params):
    """What ``dqkit history``, ``dqkit report history`` and the history widget take."""

    history: str = param(help="the history: a folder --history wrote, or catalog:DB.TABLE", positional=True,
                         input=True, metavar="DIR")
    table: str | None = param(None, help="show only series whose table contains this text")
    metric: str | None = param(None, help="show only metrics matching this glob (or containing this text)")
    of_system: str | None = param(None, help="show only series of this system (e.g. profile)", metavar="SYSTEM")
    fpr: float = param(DEFAULT_FPR, help="false-positive rate the bands calibrate to, in (0, 0.5)", low=0,
                       high=0.5, low_open=True)
    min_runs: int = param(MIN_RUNS, help="earlier runs a metric needs before it is judged", low=3, metavar="N")
    charts: int = param(8, help="metrics charted (anomalous ones first)", low=0, high=100, metavar="N")
    compact: bool = param(False, help="first rewrite the history's files into one (records kept as they are)")
    sample_rows: int = param(10, help="rows shown per table (text, html, report)", low=0, metavar="N")

    def validate(self) -> None:
        """The folder is a history whose every file reads, of a format this dqkit reads; no Spark."""
        from dqkit.history.record import check_fpr
        from dqkit.history.store import History, HistoryError

        check_fpr(self.fpr)
        h = History(self.history)
        if h.catalog is None:
            if not h.path.is_dir():
                raise HistoryError(f"there is no history at {h.path}",
                                   hint="run a system with --history DIR first")
            h.read()


# -- what the QualityTimeline widget needs beyond a result, through the declaration (no kernel import
# -- in dqkit.widgets): each loads dqkit.history's kernel when called
def read_series(history: str) -> Any:
    """The series of a history folder or catalog table, by (system, table, parameter digest)."""
    from dqkit.history.series import series_of
    from dqkit.history.store import History

    return series_of(History(history).read())


def split_metric(name: str) -> tuple[str, str]:
    """(column, metric) of a metric name (column empty for a table-level metric)."""
    from dqkit.history.series import split_metric as split

    return split(name)


def timeline(series: Any, metric: str, fpr: float, min_runs: int) -> Any:
    """One metric's line with its band and flagged runs (the frame the history result draws)."""
    from dqkit.history.view import timeline as line

    return line(series, metric, fpr, min_runs)


def plot_timeline(frame: Any, title: str) -> Any:
    """The figure of ``timeline``'s frame, as the history result and its report draw it."""
    from dqkit.history.view import plot_timeline as plot

    return plot(frame, title)


def run(params: HistoryParams, *, spark: Any = None, progress: Any = None, cancel: Any = None) -> Any:
    """The history of ``params`` (``dqkit.history.read_history``)."""
    from dqkit.history.view import read_history

    return read_history(params.history, table=params.table, metric=params.metric, system=params.of_system,
                        fpr=params.fpr, min_runs=params.min_runs, charts=params.charts, compact=params.compact,
                        spark=spark)


HISTORY = System(
    name="history",
    summary="read a metrics history: each metric's line, its expected band and its anomalous runs",
    description="Read a history that --history wrote: the series (system, table, parameters), the latest run "
                "of each judged metric by metric against its own past, and charts of the metrics with their "
                "bands and flagged points. --compact rewrites the history's files into one first.",
    params=HistoryParams,
    run=run,
    template="system_report",
    tabs=(("Summary", ("summary",)), ("Metrics", ("latest", "series")), ("Charts", ("charts",))),
    exit_codes={0: "no metric of the latest runs is anomalous", 1: "an anomalous metric", 2: "error"},
    output="latest.csv (the latest runs judged), summary.json, the charts and report.html",
    example={"history": "data/history"},
    session="environment",
)
