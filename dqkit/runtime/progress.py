"""Progress and cancellation of long Spark runs, for the widgets and any other front end.

``BackgroundRun(fn)`` calls ``fn()`` in a worker thread whose Spark jobs carry a unique job tag, polls
their progress (classic Spark: the status tracker; Spark Connect: a progress handler) and cancels
them on request (classic: ``SparkContext.cancelJobsWithTag``; Connect: ``SparkSession.interruptTag``).

Why SparkContext job tags on classic Spark: ``SparkSession.addTag`` tags are private to the thread
that added them (the real tag includes a per-thread id), so another thread, such as a widget's
cancel button, cannot interrupt them. SparkContext job tags are plain strings visible to every
thread. A cancelled run raises ``dqkit.errors.CancelledError`` in the worker and ends with status
``cancelled``; cancelling keeps interrupting the tag until the worker stops, so a job that starts
between two others is stopped too.
"""
from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pyspark.sql import SparkSession

from dqkit.errors import CancelledError, DqkitError
from dqkit.runtime.session import get_spark, is_connect

T = TypeVar("T")

STATUSES = ("idle", "running", "done", "failed", "cancelled")

ProgressCallback = Callable[[str, str, int, int], None]
"""``progress(stage, item, done, total)``: what every kernel calls as it finishes one item of a stage
(``delta``: a table of its last stage; ``detect``: a rule), so front ends show one kind of progress."""


@dataclass(frozen=True)
class JobProgress:
    """A snapshot of the Spark work of one run: tasks done out of the tasks known so far."""

    active_jobs: int = 0
    total_tasks: int = 0
    completed_tasks: int = 0
    running: bool = False

    @property
    def fraction(self) -> float:
        """Completed tasks over known tasks (0.0 when no task is known yet)."""
        return self.completed_tasks / self.total_tasks if self.total_tasks else 0.0


def new_tag(prefix: str = "dqkit") -> str:
    """A fresh job tag (tags cannot contain commas)."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@contextlib.contextmanager
def tagged(spark: SparkSession, tag: str) -> Iterator[None]:
    """Tag every Spark job started by the current thread inside the block with ``tag``."""
    if is_connect(spark):
        spark.addTag(tag)
        try:
            yield
        finally:
            spark.removeTag(tag)
        return
    sc = spark.sparkContext
    sc.addJobTag(tag)
    try:
        yield
    finally:
        sc.removeJobTag(tag)


def cancel_tag(spark: SparkSession, tag: str) -> None:
    """Cancel the running Spark jobs that carry ``tag`` (from any thread)."""
    if is_connect(spark):
        spark.interruptTag(tag)
    else:
        spark.sparkContext.cancelJobsWithTag(tag)


def classic_progress(spark: SparkSession, tag: str | None = None) -> JobProgress:
    """Progress of the active jobs of a classic session (those tagged ``tag`` when Spark can tell)."""
    tracker = spark.sparkContext.statusTracker()
    job_ids = tracker.getActiveJobsIds()
    if tag is not None:
        try:  # the JVM tracker knows job tags; PySpark's wrapper does not expose them
            tagged_ids = set(spark.sparkContext._jsc.sc().statusTracker().getJobIdsForTag(tag))
            if tagged_ids:
                job_ids = [j for j in job_ids if j in tagged_ids]
        except Exception:  # pragma: no cover - older JVM side
            pass
    total = completed = 0
    for job_id in job_ids:
        info = tracker.getJobInfo(job_id)
        if info is None:
            continue
        for stage_id in list(info.stageIds):
            stage = tracker.getStageInfo(stage_id)
            if stage is not None:
                total += stage.numTasks
                completed += stage.numCompletedTasks
    return JobProgress(len(job_ids), total, completed, bool(job_ids))


class _ConnectHandler:
    """A Spark Connect progress handler that keeps the latest snapshot of its operations."""

    def __init__(self) -> None:
        self.latest = JobProgress()

    def __call__(self, stages: Any = None, inflight_tasks: int = 0, operation_id: str | None = None,
                 done: bool = False, **_: Any) -> None:
        stages = list(stages or [])
        self.latest = JobProgress(0 if done else 1, sum(s.num_tasks for s in stages),
                                  sum(s.num_completed_tasks for s in stages), not done)


class BackgroundRun(Generic[T]):
    """Run ``fn()`` in a worker thread with tagged Spark jobs, progress polling and cancellation.

    ``on_progress(JobProgress)`` is called from a poller thread every ``interval`` seconds while the
    run is alive; ``on_finish(run)`` once, from the worker, when it ends. ``status`` is one of
    idle/running/done/failed/cancelled; ``result`` and ``error`` hold the outcome.
    """

    def __init__(self, fn: Callable[[], T], *, spark: SparkSession | None = None, tag: str | None = None,
                 on_progress: Callable[[JobProgress], None] | None = None,
                 on_finish: Callable[[BackgroundRun[T]], None] | None = None, interval: float = 0.2) -> None:
        self.fn = fn
        self.spark = spark or get_spark()
        self.tag = tag or new_tag()
        self.on_progress = on_progress
        self.on_finish = on_finish
        self.interval = interval
        self.status = "idle"
        self.result: T | None = None
        self.error: BaseException | None = None
        self.progress = JobProgress()
        self._cancel = threading.Event()
        self._done = threading.Event()
        self._worker: threading.Thread | None = None
        self._handler = _ConnectHandler() if is_connect(self.spark) else None

    # ----- control
    def start(self) -> BackgroundRun[T]:
        """Start the worker and the poller; returns at once."""
        if self.status == "running":
            raise DqkitError("this run is already running")
        self.status = "running"
        if self._handler is not None:
            self.spark.registerProgressHandler(self._handler)
        self._worker = threading.Thread(target=self._work, name=f"dqkit-run-{self.tag}", daemon=True)
        self._worker.start()
        threading.Thread(target=self._poll, name=f"dqkit-poll-{self.tag}", daemon=True).start()
        return self

    def cancel(self) -> None:
        """Ask the run to stop: its running and future Spark jobs are cancelled."""
        if self.status != "running":
            return
        self._cancel.set()
        self._interrupt()

    @property
    def cancel_requested(self) -> bool:
        return self._cancel.is_set()

    def check_cancelled(self) -> None:
        """Raise ``CancelledError`` if a cancel was requested (call between steps of ``fn``)."""
        if self._cancel.is_set():
            raise CancelledError("the run was cancelled; nothing was written")

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the run to end; True when it has ended."""
        return self._done.wait(timeout)

    def outcome(self, timeout: float | None = None) -> T:
        """Wait, then return the result or raise the run's error."""
        if not self.wait(timeout):
            raise TimeoutError("the run has not finished")
        if self.error is not None:
            raise self.error
        return self.result  # type: ignore[return-value]

    @property
    def running(self) -> bool:
        return self.status == "running"

    # ----- threads
    def _interrupt(self) -> None:
        try:
            cancel_tag(self.spark, self.tag)
        except Exception:  # the session may be gone; the worker reports its own error
            pass

    def _work(self) -> None:
        try:
            with tagged(self.spark, self.tag):
                self.check_cancelled()
                value = self.fn()
            if self._cancel.is_set():
                raise CancelledError("the run was cancelled; nothing was written")
            self.result = value
            self.status = "done"
        except BaseException as exc:  # noqa: BLE001 - reported through .error and .status
            if self._cancel.is_set() or isinstance(exc, CancelledError):
                self.error = exc if isinstance(exc, CancelledError) else CancelledError(
                    "the run was cancelled; nothing was written")
                self.status = "cancelled"
            else:
                self.error = exc
                self.status = "failed"
        finally:
            if self._handler is not None:
                try:
                    self.spark.removeProgressHandler(self._handler)
                except Exception:
                    pass
            self.progress = JobProgress(0, self.progress.total_tasks,
                                        self.progress.total_tasks if self.status == "done"
                                        else self.progress.completed_tasks, False)
            try:
                if self.on_finish is not None:
                    self.on_finish(self)
            finally:
                self._done.set()

    def _poll(self) -> None:
        while not self._done.wait(self.interval):
            if self._cancel.is_set():
                self._interrupt()  # jobs started after the first cancel are stopped too
            try:
                snap = self._handler.latest if self._handler is not None else classic_progress(self.spark, self.tag)
            except Exception:
                continue
            if snap.total_tasks or snap.active_jobs:
                self.progress = snap
            if self.on_progress is not None and not self._done.is_set():
                self.on_progress(self.progress)
