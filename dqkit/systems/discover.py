"""Rules from the data, declared once: minimal FDs (exact or approximate by g3) and two-tuple denial
constraints discovered in a table, ranked, written as a rules file ``detect`` and ``repair`` read
(``dqkit.discover``)."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from dqkit.errors import ParameterError
from dqkit.systems._rules import blank_to_none
from dqkit.systems.base import Params, System, param

ROUTES = ("auto", "driver", "spark")  # dqkit.discover.api.ROUTES, spelled here so a refusal loads no Spark
RULE_FILE_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class DiscoverParams(Params):
    """What ``dqkit discover``, ``dqkit report discover`` and the discover widget take."""

    table: str = param(help="the table: a Parquet, CSV or JSON path, or catalog:db.table", positional=True,
                       input=True, accepts="table")
    key: str | None = param(None, help="a column identifying rows: left out of the search (a key determines "
                                       "every column, which says nothing)", parse=blank_to_none, metavar="COL")
    columns: tuple[str, ...] = param((), help="search only these columns (default: every column but --key)",
                                     repeat=True, metavar="C1,C2")
    error: float = param(0.0, help="the largest error a rule may have: g3 for an FD (the share of rows to delete so "
                                   "it holds), the violating share of ordered tuple pairs for a DC; 0 = exact rules",
                         low=0, metavar="E")
    max_lhs: int | None = param(None, help="search left-hand sides of at most N attributes (default: no bound); "
                                           "a search that stops there says so", low=1, metavar="N")
    dc: bool = param(False, help="also discover two-tuple denial constraints")
    dc_predicates: int = param(2, help="with --dc, at most K predicates per denial constraint", low=1, high=3,
                               metavar="K")
    top: int | None = param(None, help="keep the N best rules by score (default: all)", low=1, metavar="N")
    route: str = param("auto", choices=ROUTES, help="where the search runs: on the driver (Arrow and NumPy), on "
                                                     "Spark, or auto (the driver when rows x columns fit)")
    sample_rows: int = param(20, help="rules shown (text, html, report)", low=0, metavar="N")

    def validate(self) -> None:
        """The table exists with two columns or more and rows (CSV header, Parquet footer); --columns and
        --key name its columns; --error lies in [0, 1). No Spark."""
        from dqkit.checks import preflight

        if not self.error < 1:
            raise ParameterError(f"--error must be at least 0 and below 1, not {self.error!r}",
                                 hint="an error of 1 lets every rule hold: give a share such as 0.05")
        if self.in_memory("table"):  # a notebook's DataFrame: its columns are checked when it is read
            return
        path = preflight.check_table(self.table, "the table")
        columns = preflight.table_columns(path)
        if columns is not None:
            preflight.check_columns(list(self.columns), columns, "--columns")
            if self.key is not None:
                preflight.check_columns([self.key], columns, "--key")
        searched = list(dict.fromkeys(self.columns)) if self.columns else (
            None if columns is None else [c for c in columns if c != self.key])
        if searched is not None and len(searched) < 2:
            what = f"the table {self.table} has" if not self.columns else "--columns names"
            raise ParameterError(f"{what} {len(searched)} column(s) to search"
                                 + (f" ({', '.join(map(repr, searched))})" if searched else "")
                                 + ": a rule relates two columns at least",
                                 hint="give a table (or --columns) of two columns or more")
        if path is not None and columns is not None and known_rows(path) == 0:
            raise ParameterError(f"the table {self.table} has no rows: there is nothing to discover rules from",
                                 hint="give a table with rows")


def known_rows(path: Any) -> int | None:
    """The rows of a table read without Spark: Parquet footers, or a CSV's lines less its header
    (an upper bound); None when it cannot be known so."""
    from dqkit.checks.preflight import file_format, record_bound

    bound = record_bound(path)
    if bound is None:
        return None
    files = [path] if os.path.isfile(path) else [p for p in path.rglob("*") if p.is_file()]
    csv_files = [f for f in files if file_format(f.name) == "csv" and not f.name.startswith((".", "_"))]
    return max(bound - len(csv_files), 0)


def check_output(params: Params, out: str | None) -> None:
    """``--out`` is a rules file (``.yaml``/``.yml``) or a result folder, never a table file."""
    if out and os.fspath(out).lower().endswith((".csv", ".parquet")):
        raise ParameterError(f"--out {out}: discover writes a rules file (RULES.yaml) or a result folder, not a table",
                             hint="name the output RULES.yaml, or a folder")


def run(params: DiscoverParams, *, spark: Any = None, progress: Any = None, cancel: Any = None) -> Any:
    """The rules of ``params`` (``dqkit.discover.discover``)."""
    from dqkit.discover import discover

    return discover(params.table, key=params.key, columns=list(params.columns) or None, error=params.error,
                    max_lhs=params.max_lhs, dc=params.dc, dc_predicates=params.dc_predicates, top=params.top,
                    route=params.route, spark=spark, progress=progress,
                    name="table" if params.in_memory("table") else str(params.table))


DISCOVER = System(
    name="discover",
    summary="discover FDs, approximate FDs (g3) and denial constraints from the data",
    description="Discover the minimal functional dependencies of a table, exact or approximate by the g3 error, "
                "and (with --dc) two-tuple denial constraints; ranked by how many rows support them; --out "
                "RULES.yaml writes a rules file that detect and repair read unchanged.",
    params=DiscoverParams,
    run=run,
    tabs=(("Summary", ("summary", "notes")), ("Rules", ("rules",))),
    exit_codes={0: "the search ran (the verdict says whether rules were found)", 2: "error"},
    output="the rules: RULES.yaml (a rules file detect and repair read), or a folder (rules.yaml, rules.csv, "
           "summary.json, report.html)",
    example={"table": "data/bigdansing_table1.csv", "key": "tid"},
    check_output=check_output,
    progress_unit="lattice levels",
)
