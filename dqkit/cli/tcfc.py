"""``dqkit tcfc --spec FILE``: a time-budgeted, fragment-by-fragment comparison of table pairs (TCFC).

Exit codes: 0 = COMPLETED and no difference; 1 = differences found (completed or not); 3 = UNCOMPLETED
with no difference found so far (the budget expired first); 2 = error (bad spec, unreachable database).
"""
from __future__ import annotations

import argparse

from dqkit.cli._emit import add_output_options, emit, start_session, terminal_progress


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``tcfc`` subcommand."""
    p = sub.add_parser(
        "tcfc", help="time-budgeted fragment-by-fragment comparison of table pairs across engines (TCFC)",
        description="Compare the table pairs of a spec (Spark, PostgreSQL, SQLite, DuckDB) level by level "
                    "within a time budget. Exit 0 when completed without difference, 1 when differences were "
                    "found, 3 when the budget expired before any difference was found, 2 on error.")
    p.add_argument("--spec", required=True, metavar="FILE.yaml", help="the TCFC spec (YAML or JSON)")
    p.add_argument("--budget", type=float, metavar="SECONDS",
                   help="time budget in seconds (default: the spec's budget, else run to completion)")
    p.add_argument("--reuse", metavar="DIR", help="persist completed leaves and the pending queue here, and "
                                                  "reuse them on the next run (prune; see --resume)")
    p.add_argument("--resume", action="store_true", help="with --reuse: continue the stored interrupted run")
    p.add_argument("--order", choices=("default", "breadth_first"), default="default", help="job order")
    p.add_argument("--connect-timeout", type=float, default=10.0, metavar="SECONDS",
                   help="give up connecting to a database after this long")
    p.add_argument("--statistics", action="store_true", default=None,
                   help="let X = [] COUNT roots take counts from exact table statistics (Parquet footers) "
                        "instead of a query (P4; default: the spec's 'statistics', off)")
    p.add_argument("--sample-rows", type=int, default=20, metavar="N", help="report rows shown (text, html)")
    add_output_options(p, "the report (summary.json, report.html, tree charts, report table)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run TCFC and print the report; the exit code says identical (0), different (1), uncompleted (3)."""
    from dqkit import preflight
    from dqkit.tcfc.spec import check_budget

    check_budget(args.budget)
    spec = preflight.tcfc(args.spec, reuse=args.reuse, connect_timeout=args.connect_timeout,
                          sample_rows=args.sample_rows, out=args.out, overwrite=args.overwrite)
    start_session(args)
    from dqkit.tcfc import run_tcfc

    result = run_tcfc(spec, args.budget, order=args.order, reuse=args.reuse,
                      reuse_mode="resume" if args.resume else "prune", connect_timeout=args.connect_timeout,
                      progress=terminal_progress("tcfc", "jobs"), statistics=args.statistics)
    try:
        return emit(result, args, sample_rows=args.sample_rows)
    finally:
        result.close()
