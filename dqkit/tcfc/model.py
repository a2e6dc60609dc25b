"""TCFC's job model: jobs, report rows, job records and a run's state, shared by the scheduler
(``algorithm``), the result (``result``) and the stored state (``state``), which all import it from here
so that imports only go downward."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

#: Seconds a run may take beyond its budget: cancelling the running queries (or giving up on a binding
#: still opening connections or starting Spark) and assembling the report. Documented in `dqkit tcfc --help`.
GRACE_S = 1.5
MISSING, EXCESS, DIFF = "MISSING", "EXCESS", "DIFF"
ROOT, REUSE, ERROR, HEALTHY = "ROOT", "REUSE", "ERROR", "HEALTHY"
_GROUP = {ROOT: 0, REUSE: 1, ERROR: 2, HEALTHY: 3}
COMPLETED, UNCOMPLETED = "COMPLETED", "UNCOMPLETED"
#: the job orders a run can take (``dqkit.tcfc.compare.ORDER_FUNCTIONS`` gives each its sort key)
ORDERS: tuple[str, ...] = ("default", "breadth_first")


@dataclass(frozen=True)
class Job:
    """One compare job: a pair at a level, restricted to fragments whose ``filter_cols`` values are listed."""

    job_id: int
    pair: str
    level: int                                 # 1-based
    kind: str                                  # ROOT / REUSE / ERROR / HEALTHY
    filter_cols: tuple[str, ...] = ()
    filter_values: tuple[tuple, ...] = ()
    parent_job: int | None = None
    priority: int = 0
    seq: int = 0

    def describe(self) -> str:
        if not self.filter_cols:
            return f"{self.pair} L{self.level} (whole table)"
        return f"{self.pair} L{self.level} ({len(self.filter_values)} fragment(s) of {', '.join(self.filter_cols)})"


@dataclass(frozen=True)
class Difference:
    """One report row (C5): a fragment at a level, its kind, and both sides' aggregate values."""

    pair: str
    level: int
    X: tuple[str, ...]
    values: tuple
    kind: str
    source: tuple | None                       # aggregate values in the level's A order; None if absent
    target: tuple | None
    job_id: int
    parent_job: int | None
    error_count: int | None                    # |count_r - count_s| (first count aggregate), if any
    reused: bool = False


@dataclass
class JobRecord:
    """Instrumentation of one job (P5)."""

    job_id: int
    pair: str
    level: int
    kind: str
    fragments_in_filter: int
    status: str                                # done / interrupted / failed / pruned
    seconds: float = 0.0
    source_rows: int = 0
    target_rows: int = 0
    source_bytes: int = 0
    target_bytes: int = 0
    differences: int = 0
    parent_job: int | None = None
    filter_cols: tuple[str, ...] = ()
    filter_values: tuple[tuple, ...] = ()
    source_sql: str = ""
    target_sql: str = ""
    queries: int = 2                                     # 1 when both sides were compared inside Spark
    statistics: str = ""                                 # P4: sides answered from exact statistics, and how
    equal_sample: list = field(default_factory=list)   # a few equal fragments (values, aggregates) for trees
    equal_more: int = 0                                  # equal fragments beyond the sample


def project(values: tuple, cols: Sequence[str], onto: Sequence[str]) -> tuple:
    """The values of ``onto`` (a subset of ``cols``) from a fragment's ``values``."""
    pos = {c: i for i, c in enumerate(cols)}
    return tuple(values[pos[c]] for c in onto)


@dataclass
class RunState:
    """Everything a run produced so far (the result is built from it)."""

    report: list[Difference] = field(default_factory=list)
    records: list[JobRecord] = field(default_factory=list)
    pending: list[Job] = field(default_factory=list)
    examined: dict[str, int] = field(default_factory=dict)     # pair -> deepest completed level
    notes: list[str] = field(default_factory=list)
    unrepresentable: list[str] = field(default_factory=list)
    status: str = COMPLETED
    cancelled_by_user: bool = False
    seconds: float = 0.0
    budget: float | None = None
