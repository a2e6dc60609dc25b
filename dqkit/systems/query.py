"""Daisy's query, declared once: a SELECT over dirty tables, cleaned on demand (``dqkit.relax``).

One declaration serves the command and the report. ``dqkit query "SELECT ..."`` answers one query
(a ``QueryResult``: exit 0 when nothing needed cleaning, 1 when cleaning found candidates, and the
JSON keeps the long-format answer); ``--workload FILE`` (or ``-p workload FILE`` in ``dqkit report
query``) runs a workload instead, one query per line, through one Daisy, and reports per-query and
cumulative time and the cost model's switch point (a ``WorkloadResult``, exit 1 when any query needed
cleaning). ``--explain`` shows the plan of one query without running it (a ``PlanResult``, exit 0).
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dqkit.errors import ParameterError, UnknownTableError
from dqkit.systems.base import Params, RuleText, System, is_frame, param

STRATEGIES = ("auto", "incremental", "full")
COST_UNITS = ("seconds", "tuples")


def named_pairs(values: Any, flag: str) -> dict[str, Any]:
    """``NAME=VALUE`` items as {name: value}; a malformed item or a name given twice is refused. A
    mapping (a notebook's ``{name: table}``, ``{name: rules}``, ``{name: key}``) is taken as it is."""
    if isinstance(values, Mapping):
        return {str(k): v for k, v in values.items()}
    out: dict[str, Any] = {}
    for v in values or ():
        name, sep, rest = str(v).partition("=")
        if not sep or not name.strip() or not rest.strip():
            raise ParameterError(f"{flag} {v!r}: expected NAME=VALUE", hint=f"e.g. {flag} cities=data/cities.csv")
        if name.strip() in out:
            raise ParameterError(f"{flag}: {name.strip()!r} given twice")
        out[name.strip()] = rest.strip()
    return out


def check_query(tables: Mapping[str, str], rules: Mapping[str, str], keys: Mapping[str, str], sql: str
                ) -> dict[str, list[Any]]:
    """``dqkit query``: the statement is one read-only SELECT, every table exists, rules parse and
    name its columns, keys are columns, and the query fits Daisy's subset. Returns the rules by table.
    Reads headers and footers only (``dqkit.checks.preflight``): no Spark."""
    from dqkit.checks.preflight import (check_columns, check_table, check_table_columns, check_rule_columns,
                                 table_columns)
    from dqkit.relax.sql import check_read_only_select, parse_query

    check_read_only_select(sql)
    if not tables:
        raise ParameterError("no table given", hint="pass --table NAME=SOURCE (repeat for more)")
    for flag, given in (("--rules", rules), ("--key", keys)):
        for name in given:
            if name not in tables:
                raise UnknownTableError(f"{flag} {name}=...: table {name!r} is not registered",
                                        hint=f"registered with --table: {', '.join(tables)}")
    columns = {name: None if is_frame(src) else table_columns(check_table(src, f"--table {name}"))
               for name, src in tables.items()}  # a DataFrame's columns are checked when it is read
    loaded = {name: load_rules(value) for name, value in rules.items()}
    for name, cols in columns.items():
        if cols is not None:
            check_table_columns(cols, tables[name], "query")
        if name in keys:
            check_columns([keys[name]], cols, f"--key {name}")
        check_rule_columns(loaded.get(name, ()), cols)
    if all(c is not None for c in columns.values()):
        parse_query(sql, {n: list(c) for n, c in columns.items() if c is not None})
    return loaded


def load_rules(value: Any) -> list[Any]:
    """A table's rules: a rules file, rules typed one per line (``RuleText``), or rule objects."""
    from dqkit.checks.preflight import load_rule_file

    if isinstance(value, RuleText):
        from dqkit.rules import parse_rules

        return list(parse_rules(str(value)))
    if isinstance(value, (str, os.PathLike)):
        return load_rule_file(value)
    return list(value) if isinstance(value, (list, tuple)) else [value]


def workload_queries(workload: str) -> list[str]:
    """The queries of a workload: a file with one query per line (``#`` starts a comment line), or
    text with queries separated by ``;``. An empty workload is refused."""
    from dqkit.checks.preflight import read_text_file

    text = str(workload)
    if "\n" not in text and ";" not in text and Path(text).is_file():
        lines = read_text_file(text, "the workload file").splitlines()
        queries = [q.strip() for q in lines if q.strip() and not q.strip().startswith("#")]
    elif "\n" not in text and ";" not in text and text.strip().lower().split(" ", 1)[0] != "select":
        raise ParameterError(f"the workload file {text} does not exist",
                             hint="give a file with one query per line, or queries separated by ';'")
    else:
        queries = [q.strip() for q in text.split(";") if q.strip()]
    if not queries:
        raise ParameterError("the workload holds no query", hint="one query per line, or 'q1; q2'")
    return queries


def check_query_choice(query: str | None, workload: str | None, explain: bool) -> None:
    """Exactly one of a query and a workload; ``--explain`` shows one query's plan. An empty query is
    left to ``dqkit.relax.sql.check_read_only_select``, which says it is empty."""
    if query is None and not workload:
        raise ParameterError("no query given", hint='pass the query, e.g. "SELECT zip FROM cities", or --workload FILE')
    if query is not None and workload:
        raise ParameterError("a query and a workload were both given", hint="give one of them")
    if explain and workload:
        raise ParameterError("--explain shows the plan of one query, not of a workload", hint="pass one query")


@dataclass(frozen=True)
class QueryParams(Params):
    """What ``dqkit query``, ``dqkit report query`` and the query widget take."""

    query: str | None = param(None, help='the query, e.g. "SELECT zip FROM cities WHERE city = \'LA\'"',
                              positional=True)
    table: tuple[str, ...] = param((), help="a table as NAME=SOURCE: a Parquet/CSV/JSON path or catalog:db.t", repeat=True, sep="",
                                   metavar="NAME=SOURCE", accepts="database")
    rules: tuple[str, ...] = param((), help="rules of a table as NAME=FILE: YAML or text, one rule per line", repeat=True,
                                   sep="", metavar="NAME=FILE", accepts="object")
    key: tuple[str, ...] = param((), help="the column identifying the tuples of a table, as NAME=COL", repeat=True, sep="",
                                 metavar="NAME=COL", accepts="object")
    state: str | None = param(None, help="keep the probabilistic tables here between calls (written atomically "
                                         "after a successful query; a state written for another version of a "
                                         "table is refused)", metavar="DIR")
    strategy: str = param("auto", help="auto: the cost model switches to full cleaning when cheaper",
                          choices=STRATEGIES)
    cost_units: str = param("seconds", help="the cost model's units: seconds measured on this engine or the "
                                            "paper's tuple counts", choices=COST_UNITS)
    explain: bool = param(False, help="show where the cleaning operators go, without running the query")
    workload: str | None = param(None, help="instead of one query, a workload: a file with one query per line "
                                            "(or queries separated by ';'), answered in order through one Daisy "
                                            "(per-query and cumulative time, the switch point)",
                                 metavar="FILE", aliases=("queries",))
    sample_rows: int = param(10, help="answer tuples (or workload queries) shown in text and html", low=0,
                             metavar="N")

    def queries(self) -> list[str]:
        """The query, or the workload's queries."""
        return workload_queries(self.workload) if self.workload else [str(self.query)]

    def validate(self) -> None:
        """One query or a workload; every statement is one read-only SELECT of Daisy's subset over
        tables that exist, rules parse and name their columns, keys are columns; a damaged --state
        is refused. No table is read and Spark does not start."""
        from dqkit.relax.state import check_state_folder

        check_query_choice(self.query, self.workload, self.explain)
        tables = named_pairs(self.table, "--table")
        rules = named_pairs(self.rules, "--rules")
        keys = named_pairs(self.key, "--key")
        for q in self.queries():
            check_query(tables, rules, keys, q)
        if self.state:
            from dqkit.runtime.atomic import sweep

            sweep(self.state)  # what a killed query left beside the state goes first
            check_state_folder(self.state)

    def inputs(self) -> list[Any]:
        """The tables, rule files, the workload file and the state folder: ``--out`` touches none."""
        paths = [*named_pairs(self.table, "--table").values(), *named_pairs(self.rules, "--rules").values()]
        if self.workload and Path(self.workload).is_file():
            paths.append(self.workload)
        if self.state:
            paths.append(self.state)
        return [p for p in paths if isinstance(p, str) and not isinstance(p, RuleText) and not p.startswith("catalog:")]

    def absolute(self) -> QueryParams:
        """The paths inside ``NAME=PATH``, the workload file and the state folder made absolute."""
        def fix(items: Any) -> Any:
            if isinstance(items, Mapping):
                return items  # a notebook's mapping: nothing to make absolute
            pairs = named_pairs(items, "")
            return tuple(f"{n}={v if v.startswith('catalog:') else os.path.abspath(v)}" for n, v in pairs.items())

        workload = self.workload
        if workload and Path(workload).is_file():
            workload = os.path.abspath(workload)
        return dataclasses.replace(self, table=fix(self.table), rules=fix(self.rules), workload=workload,
                                   state=os.path.abspath(self.state) if self.state else None)


def run(params: QueryParams, *, spark: Any = None, progress: Any = None, cancel: Any = None) -> Any:
    """The answer of ``params``' query (``QueryResult``), its plan (``PlanResult``, with ``explain``) or
    the workload's timings (``WorkloadResult``). With ``state``, the tables start from the saved state
    and are saved after a successful answer (a failure leaves the state as it was)."""
    from dqkit.relax import Daisy
    from dqkit.relax._result import PlanResult
    from dqkit.relax.workload import run_workload

    tables = named_pairs(params.table, "--table")
    keys = named_pairs(params.key, "--key")
    d = Daisy(spark, strategy=params.strategy, cost_units=params.cost_units)
    for name, src in tables.items():
        d.register(name, src, key=keys.get(name))
    for name, value in named_pairs(params.rules, "--rules").items():
        d.add_rules(name, load_rules(value))
    queries = params.queries()
    if params.explain:
        return PlanResult(queries[0], d.explain(queries[0]))
    for q in queries:
        d.plan_query(q)  # an unsupported query fails before any state is read
    if params.state:
        d.load_state(params.state)
    if params.workload:
        result = run_workload(d, next(iter(tables)), queries, progress=progress)
    else:
        result = d.query(queries[0], progress=progress)
    if params.state:
        if not params.workload:
            result.materialize()  # the answer must not read the state files being replaced
        where = d.save_state(params.state)
        if not params.workload:
            result.state_saved = where
    return result


QUERY = System(
    name="query",
    summary="answer a query over dirty tables, cleaning what it touches (Daisy)",
    description="Run a SELECT over registered tables; the rules' violations in the data the query touches are "
                "cleaned into candidate values with probabilities. With --workload, a workload of queries "
                "answered in order (per-query and cumulative time, the cost model's switch point).",
    params=QueryParams,
    run=run,
    template="system_report",
    tabs=(("Answer", ("summary", "answer", "dirty", "workload")), ("Cost model", ("cost", "charts")),
          ("Relaxation", ("trace",)), ("Plan", ("plan",))),
    progress_unit="tables",
    exit_codes={0: "nothing needed cleaning (or --explain)", 1: "candidates found: cleaning changed the answer",
                2: "error"},
    output="the answer in long format, the dirty answer, summary.json and report.html",
    example={"query": "SELECT city FROM table1 WHERE zipcode = 90210", "table": ["table1=data/bigdansing_table1.csv"],
             "rules": ["table1=data/bigdansing_table1_rules.yaml"], "key": ["table1=tid"]},
)
