"""QualityTimeline: pick a table, a column and a metric of a history; see its line, its band and its
flagged runs. A thin presentation: ``TimelineController`` (plain Python) reads the history once with
the history declaration (``dqkit.systems.history``) and draws through its ``timeline``/``plot_timeline``, the functions the
``dqkit history`` result and its report use, so the widget and the report show the same band."""
from __future__ import annotations

from typing import Any

import ipywidgets as W

from dqkit.contract.result import Table, sections_html
from dqkit.systems.history import DEFAULT_FPR, MIN_RUNS, plot_timeline, read_series, split_metric, timeline

TABLE_LEVEL = "(table)"


class TimelineController:
    """The series of a history by label; ``columns(label)``, ``metrics(label, column)`` and
    ``timeline(label, column, metric)`` (a frame: as_of, value, expected, low, high, method, runs, anomalous)."""

    def __init__(self, history: str, fpr: float = DEFAULT_FPR, min_runs: int = MIN_RUNS) -> None:
        self.fpr, self.min_runs = fpr, min_runs
        found = read_series(history)
        digests: dict[tuple[str, str], int] = {}
        for system, table, _ in found:
            digests[(system, table)] = digests.get((system, table), 0) + 1
        self.series = {(f"{t} ({s})" if digests[(s, t)] == 1 else f"{t} ({s}, {d})"): v
                       for (s, t, d), v in found.items()}

    def labels(self) -> list[str]:
        return sorted(self.series)

    def _names(self, label: str) -> set[str]:
        return {n for *_, m in self.series[label].runs for n in m}

    def columns(self, label: str) -> list[str]:
        cols = {split_metric(n)[0] or TABLE_LEVEL for n in self._names(label)}
        return sorted(cols, key=lambda c: (c != TABLE_LEVEL, c))

    def metrics(self, label: str, column: str) -> list[str]:
        col = "" if column == TABLE_LEVEL else column
        return sorted(split_metric(n)[1] for n in self._names(label) if split_metric(n)[0] == col)

    def metric_name(self, column: str, metric: str) -> str:
        if column == TABLE_LEVEL:
            return metric
        return f"{column}.{metric}"

    def timeline(self, label: str, column: str, metric: str) -> Any:
        return timeline(self.series[label], self.metric_name(column, metric), self.fpr, self.min_runs)

    def figure(self, label: str, column: str, metric: str) -> Any:
        return plot_timeline(self.timeline(label, column, metric), f"{self.metric_name(column, metric)} ({label})")


class QualityTimeline(W.VBox):
    """Three pickers (table, column, metric), the chart, and the flagged runs."""

    def __init__(self, history: str, fpr: float = DEFAULT_FPR, min_runs: int = MIN_RUNS) -> None:
        self.controller = TimelineController(history, fpr, min_runs)
        c = self.controller
        self.table = W.Dropdown(description="table", options=c.labels())
        self.column = W.Dropdown(description="column")
        self.metric = W.Dropdown(description="metric")
        self.chart = W.Image(format="png")
        self.flagged = W.HTML()
        self.table.observe(lambda _: self._columns(), "value")
        self.column.observe(lambda _: self._metrics(), "value")
        self.metric.observe(lambda _: self.draw(), "value")
        super().__init__([W.HBox([self.table, self.column, self.metric]), self.chart, self.flagged])
        self._columns()

    def _columns(self) -> None:
        self.column.options = self.controller.columns(self.table.value) if self.table.value else []
        self._metrics()

    def _metrics(self) -> None:
        if self.table.value and self.column.value is not None:
            self.metric.options = self.controller.metrics(self.table.value, self.column.value)
        else:
            self.metric.options = []
        self.draw()

    def draw(self) -> None:
        """The chart and the flagged runs of the picked metric (nothing picked: empty)."""
        from dqkit.contract.charts import png_bytes

        if not (self.table.value and self.column.value is not None and self.metric.value):
            self.chart.value, self.flagged.value = b"", "<p>nothing to show</p>"
            return
        args = (self.table.value, self.column.value, self.metric.value)
        frame = self.controller.timeline(*args)
        self.chart.value = png_bytes(self.controller.figure(*args))
        bad = frame[frame["anomalous"]]
        self.flagged.value = ("<p>no anomalous run</p>" if bad.empty else
                              sections_html([Table("Anomalous runs", bad.reset_index(drop=True))]))
