"""Column profiles, declared once (``dqkit.profile``): one scan, sketches, every column metric."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dqkit.systems.base import Params, System, param


@dataclass(frozen=True)
class ProfileParams(Params):
    """What ``dqkit profile``, ``dqkit report profile`` and the profile widget take."""

    table: str = param(help="the table: a Parquet/CSV/JSON file or folder, or catalog:DB.TABLE", positional=True,
                       input=True)
    columns: tuple[str, ...] = param((), help="profile only these columns (default: all)", repeat=True,
                                     metavar="COL[,COL]")
    top_k: int = param(10, help="most frequent values shown per column", low=0, high=1000, metavar="K")
    top_max_distinct: int = param(1000, help="columns with more distinct values get no top values", low=1,
                                  metavar="N")
    accuracy: int = param(10000, help="percentile_approx accuracy: quantile rank error at most 1/accuracy",
                          low=10, high=10_000_000, metavar="A")
    rsd: float = param(0.02, help="relative standard deviation of the distinct-count sketch", low=0.005,
                       high=0.3)
    sample_rows: int = param(10, help="rows shown per table (text, html, report)", low=0, metavar="N")

    def validate(self) -> None:
        """The table exists and is readable; the columns are in it (footer or header); no Spark."""
        from dqkit.checks import preflight

        path = preflight.check_table(self.table)
        preflight.check_columns(self.columns, preflight.table_columns(path), "--columns")


def run(params: ProfileParams, *, spark: Any = None, progress: Any = None, cancel: Any = None) -> Any:
    """The profile of ``params`` (``dqkit.profile.profile``)."""
    from dqkit.profile import profile

    return profile(params.table, list(params.columns) or None, top_k=params.top_k,
                   top_max_distinct=params.top_max_distinct, accuracy=params.accuracy, rsd=params.rsd,
                   spark=spark, progress=progress)


PROFILE = System(
    name="profile",
    summary="profile a table's columns in one scan: NULLs, distinct values, quantiles, top values, lengths",
    description="Profile a table in one aggregation job: per column rows, NULLs, distinct values (a sketch, its "
                "error stated), min, max, mean, stddev, quantiles (percentile_approx, its error stated), string "
                "lengths and the share of values parsing as the column's apparent type; per table the rows and "
                "exact duplicate rows. The top values take a second, small job. With --history, every column "
                "metric is judged against its own past runs.",
    params=ProfileParams,
    run=run,
    template="system_report",
    tabs=(("Summary", ("summary",)), ("Columns", ("columns", "top_values")), ("Charts", ("charts",))),
    exit_codes={0: "profiled (and no anomaly with --history)", 1: "an anomalous metric (--history)", 2: "error"},
    output="the profile (summary.json, columns.csv, top_values.csv, quartiles.png, report.html)",
    example={"table": "data/users/new/users.csv"},
    progress_unit="jobs",
)
