"""``dqkit query --table NAME=SOURCE --rules NAME=FILE "SELECT ..."``: a query over dirty tables, cleaned
on demand (Daisy). ``--state DIR`` keeps the probabilistic tables between calls (written atomically
after a successful query; a failed query leaves the previous state as it was; a state written for
another version of a table is refused). Exit 0 on success, 2 on error.
"""
from __future__ import annotations

import argparse
import sys

from dqkit.cli._emit import add_list_option, start_session, terminal_progress
from dqkit.errors import ParameterError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "query", help="answer a query over dirty tables, cleaning what it touches (Daisy)",
        description="Run a SELECT over registered tables; the rules' violations in the data the query touches "
                    "are cleaned into candidate values with probabilities. Exit 0: answered; 2: error.")
    add_list_option(p, "--table", "NAME=SOURCE", "a table: Parquet/CSV/JSON path or catalog:db.t")
    add_list_option(p, "--rules", "NAME=FILE", "rules of table NAME: YAML or text, one rule per line")
    add_list_option(p, "--key", "NAME=COL", "the column identifying the tuples of table NAME")
    p.add_argument("--state", metavar="DIR", help="keep the probabilistic tables here between calls")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text: the answer with candidates; json: the long format (tid, attr, world_id, "
                        "candidate, prob, is_original) and the run details")
    p.add_argument("--strategy", choices=("auto", "incremental", "full"), default="auto",
                   help="auto: the cost model switches to full cleaning when cheaper (default)")
    p.add_argument("--cost-units", choices=("seconds", "tuples"), default="seconds",
                   help="the cost model's units: seconds measured on this engine (default) or the paper's tuple counts")
    p.add_argument("--explain", action="store_true", help="print where the cleaning operators go, then exit")
    p.add_argument("query", help='the query, e.g. "SELECT zip FROM cities WHERE city = \'LA\'"')
    p.set_defaults(func=run)


def _pairs(values: list[str], flag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for v in values:
        name, sep, rest = v.partition("=")
        if not sep or not name.strip() or not rest.strip():
            raise ParameterError(f"{flag} {v!r}: expected NAME=VALUE", hint=f"e.g. {flag} cities=data/cities.csv")
        if name.strip() in out:
            raise ParameterError(f"{flag}: {name.strip()!r} given twice")
        out[name.strip()] = rest.strip()
    return out


def run(args: argparse.Namespace) -> int:
    from dqkit import preflight

    tables = _pairs(args.table, "--table")
    rules = _pairs(args.rules, "--rules")
    keys = _pairs(args.key, "--key")
    # a statement that is not one read-only SELECT, a missing table, a bad rule file or an unknown
    # column is refused here, before any table is read or Spark starts
    loaded = preflight.query(tables, rules, keys, args.query)
    if args.state:
        from dqkit.relax.state import check_state_folder

        check_state_folder(args.state)  # a damaged --state is refused before Spark starts
    start_session(args)
    from dqkit import render
    from dqkit.relax import Daisy

    d = Daisy(strategy=args.strategy, cost_units=args.cost_units)
    for name, src in tables.items():
        d.register(name, src, key=keys.get(name))
    for name, rs in loaded.items():
        d.add_rules(name, rs)
    if args.explain:
        print(d.explain(args.query))
        return 0
    d.plan_query(args.query)  # an unsupported query fails before any state is read
    if args.state:
        d.load_state(args.state)
    result = d.query(args.query, progress=terminal_progress("query", "tables"))
    if args.format == "json":
        long_rows = [r.asDict() for r in result.long_format().orderBy("tid", "attr", "world_id", "candidate").toLocalIterator()]
        payload = {**result.to_dict(), "answer": long_rows}
    if args.state:
        where = d.save_state(args.state)
        print(f"dqkit: state saved to {where}", file=sys.stderr)
    if args.format == "json":
        print(render.dumps(payload))
    else:
        print(result.to_text())
    return 0
