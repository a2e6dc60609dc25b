"""SparkProgress: a progress bar over the running Spark jobs of a run, with a cancel button."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import ipywidgets as W
from pyspark.sql import SparkSession

from dqkit.runtime.progress import BackgroundRun, JobProgress

T = TypeVar("T")


class SparkProgress(W.HBox):
    """Tasks done / tasks known of the run's active Spark jobs, a status line and a Cancel button.

    Works with classic Spark (status tracker) and Spark Connect (progress handler) through
    ``dqkit.runtime.progress.BackgroundRun``. Use ``start(fn)`` to run any function with it, or ``track(run)``
    and ``show(...)`` when a controller owns the run.
    """

    def __init__(self) -> None:
        self.bar = W.IntProgress(value=0, min=0, max=100, description="", layout=W.Layout(width="260px"))
        self.label = W.Label("")
        # neutral and disabled until a run starts; ``begin`` arms it, ``finish`` makes it neutral again
        self.cancel_button = W.Button(description="Cancel", icon="stop", button_style="",
                                      disabled=True, tooltip="cancel the running Spark jobs")
        self.cancel_button.on_click(lambda _: self.cancel())
        self.run: BackgroundRun[Any] | None = None
        #: what Cancel does when an explorer owns the run (it clears its view, then stops the run)
        self.on_cancel: Callable[[], None] | None = None
        super().__init__([self.bar, self.cancel_button, self.label])

    def start(self, fn: Callable[[], T], *, spark: SparkSession | None = None) -> BackgroundRun[T]:
        """Run ``fn()`` in the background with tagged, cancellable Spark jobs and live progress."""
        run: BackgroundRun[T] = BackgroundRun(fn, spark=spark, on_progress=lambda p: self.show(p),
                                              on_finish=lambda r: self.finish(r.status))
        self.track(run)
        run.start()
        return run

    def track(self, run: BackgroundRun[Any]) -> None:
        """Bind the Cancel button to ``run`` and arm it (unless the run has already ended)."""
        self.run = run
        if run.status in ("idle", "running"):
            self.begin()

    def begin(self) -> None:
        """Show a starting run: an empty bar, Cancel enabled and coloured (the only time it is)."""
        self.bar.value, self.bar.bar_style = 0, ""
        self.cancel_button.disabled, self.cancel_button.button_style = False, "warning"
        self.label.value = "starting"

    def cancelling(self) -> None:
        """Show that a cancel was asked for: Cancel cannot be pressed twice; the run ends by itself."""
        self.cancel_button.disabled = True
        self.label.value = "cancelling"

    def cancel(self) -> None:
        if self.on_cancel is not None:
            self.on_cancel()
        elif self.run is not None and self.run.running:
            self.cancelling()
            self.run.cancel()

    def show(self, progress: JobProgress, step: str = "", fraction: float | None = None) -> None:
        """Show a progress snapshot, the last finished step and, if known, the overall fraction."""
        self.bar.value = int(round(100 * (progress.fraction if fraction is None else fraction)))
        tasks = f"{progress.completed_tasks}/{progress.total_tasks} tasks" if progress.total_tasks else "working"
        self.label.value = f"{step + '; ' if step else ''}{tasks}"

    def finish(self, status: str, message: str = "") -> None:
        """Show the end of a run: done, failed or cancelled."""
        self.cancel_button.disabled, self.cancel_button.button_style = True, ""
        self.bar.value = 100 if status == "done" else self.bar.value
        self.bar.bar_style = {"done": "success", "failed": "danger", "cancelled": "warning"}.get(status, "")
        self.label.value = message or status
