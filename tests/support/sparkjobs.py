"""Counting the Spark jobs a piece of code starts, in its own job group: the job-bound tests' one helper."""
from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager


class Jobs:
    """The Spark jobs started so far in one job group (``n``, live while the block runs)."""

    def __init__(self, sc, group: str) -> None:
        self._sc, self.group = sc, group

    @property
    def n(self) -> int:
        return len(self._sc.statusTracker().getJobIdsForGroup(self.group))


@contextmanager
def spark_jobs(spark, label: str = "job bound") -> Iterator[Jobs]:
    """Runs the block in a fresh job group of this thread and yields its job count. A job another test's
    leftover thread starts in the same worker is not counted; the group is cleared afterwards."""
    sc = spark.sparkContext
    jobs = Jobs(sc, f"dqkit-jobs-{uuid.uuid4().hex}")
    sc.setJobGroup(jobs.group, label)
    try:
        yield jobs
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
