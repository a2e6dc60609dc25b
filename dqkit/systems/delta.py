"""Diftong's delta, declared once: two versions of a database compared (``dqkit.delta``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dqkit.delta._names import STAGES
from dqkit.delta.schema import SCHEMA_CHANGES, parse_renames  # noqa: F401 - parse_renames: the widget's accepted renames
from dqkit.systems.base import Params, System, param


@dataclass(frozen=True)
class DeltaParams(Params):
    """What ``dqkit delta``, ``dqkit report delta`` and the delta widget take."""

    old: str = param(help="old version: a folder of tables, a table file, or catalog:DB", positional=True,
                     input=True, accepts="database")
    new: str = param(help="new version: a folder of tables, a table file, or catalog:DB", positional=True,
                     input=True, accepts="database")
    tables: tuple[str, ...] = param((), help="compare only these tables", repeat=True, metavar="TABLE[,TABLE]")
    exclude: tuple[str, ...] = param((), help="exclude a table, or a column (dropped before hashing)", repeat=True,
                                     metavar="TABLE[.COL]")
    key: tuple[str, ...] = param((), help="key of a table for column validation (composite keys with commas). "
                                          "It need not be unique: tables are compared as multisets of rows, "
                                          "and changed rows whose key repeats on one side are left unpaired "
                                          "and counted as ambiguous_key_rows with a warning; NULL keys pair "
                                          "with NULL",
                                 repeat=True, sep=";", metavar="TABLE=COL[,COL]", aliases=("keys",))
    stages: tuple[str, ...] = param(STAGES, help="stages to run", repeat=True,
                                    choices=STAGES, metavar="STAGE[,STAGE]")
    abs_tol: float = param(0.0, help="absolute float tolerance in column validation", low=0)
    rel_tol: float = param(0.0, help="relative float tolerance in column validation", low=0)
    rename: tuple[str, ...] = param((), help="a column renamed from the old version to the new one, compared "
                                             "under its new name (dqkit proposes renames it finds evidence "
                                             "for, and never applies one itself)",
                                    repeat=True, metavar="TABLE.OLD=NEW")
    tolerance: tuple[str, ...] = param((), help="a numeric column's tolerance in column validation, absolute "
                                                "or relative with %: a difference within it counts as equal",
                                       repeat=True, metavar="TABLE.COL=ABS|REL%")
    schema_changes: str = param("report", help="what a schema change (a column added, dropped, renamed or "
                                               "retyped, a table added or dropped) does: report it (exit 1) "
                                               "or fail (exit 2, before Spark starts)",
                                choices=SCHEMA_CHANGES)
    sample_rows: int = param(10, help="rows shown per sample (text, html, report)", low=0, metavar="N")

    def validate(self) -> None:
        """Both versions exist; tables, exclusions and keys name what is there (schemas from file
        footers and headers); the key syntax reads."""
        from dqkit.delta import preflight as schemas
        from dqkit.checks.params import parse_keys
        from dqkit.errors import ParameterError

        if not self.stages:
            raise ParameterError("no stage given", hint=f"--stages takes a comma-separated subset of {','.join(STAGES)}")
        parse_keys(list(self.key))
        if self.in_memory("old") or self.in_memory("new"):
            return  # a {name: table} mapping (a notebook's): its tables, keys and columns are checked when read
        schemas.delta(self.old, self.new, keys=list(self.key), tables=list(self.tables), exclude=list(self.exclude),
                        abs_tol=self.abs_tol, rel_tol=self.rel_tol, sample_rows=self.sample_rows,
                        renames=list(self.rename), tolerances=list(self.tolerance),
                        schema_changes=self.schema_changes)


def run(params: DeltaParams, *, spark: Any = None, progress: Any = None, cancel: Any = None) -> Any:
    """The delta of ``params`` (``dqkit.delta.delta``)."""
    from dqkit.delta import delta
    from dqkit.checks.params import parse_keys

    return delta(params.old, params.new, tables=list(params.tables) or None, exclude=list(params.exclude),
                 keys=parse_keys(list(params.key)), stages=list(params.stages), abs_tol=params.abs_tol,
                 rel_tol=params.rel_tol, renames=list(params.rename), tolerances=list(params.tolerance),
                 schema_changes=params.schema_changes, spark=spark, progress=progress)


DELTA = System(
    name="delta",
    summary="compare two versions of a database (Diftong)",
    description="Compare two versions of a database table by table: duplicates, row delta, column delta and "
                "statistics.",
    params=DeltaParams,
    run=run,
    template="system_report",
    tabs=(("Summary", ("summary", "schema", "notes")), ("Row delta", ("row_stats", "column_stats", "changes", "row_delta")),
          ("Charts", ("charts",))),
    progress_unit="tables",
    exit_codes={0: "identical", 1: "different", 2: "error"},
    output="the validation namespace (delta tables, statistics, charts, report.html)",
    example={"old": "data/users/old", "new": "data/users/new", "key": ["users=id"]},
)
