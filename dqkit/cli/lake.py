"""``dqkit lake LAKE``: tables of a lake contained in other tables (R2D2), and which can be deleted.

Prints the containment edges, the edges left after each stage and, with ``--plan``, the deletion plan
(Opt-Ret) and its savings. Exit 0 when no containment is found, 1 when containments are found, 2 on
error (a cost file that does not parse is named with its line and column, before any Spark work) and
when a table could not be read: the verdict is INCOMPLETE, the skipped tables are counted and named.
"""
from __future__ import annotations

import argparse

from dqkit.cli._emit import add_output_options, emit, start_session, terminal_progress
from dqkit.errors import ParameterError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "lake", help="find tables contained in other tables of a lake (R2D2) and plan safe deletions",
        description="Find the tables of a lake (a folder of Parquet/CSV/JSON tables, or catalog:DB) whose rows "
                    "all appear in another table: SGB (schemas) -> MMP (min/max) -> CLP (sampled rows) -> "
                    "optional exact verification; with --plan, which tables to delete (Opt-Ret). "
                    "Exit 0: no containment; 1: containments found; 2: error, or a table could not be read "
                    "(verdict INCOMPLETE: the skipped tables are counted and named).")
    p.add_argument("lake", help="a folder of tables or catalog:DB")
    p.add_argument("--s", type=int, default=4, help="CLP: columns to put predicates on (default 4)")
    p.add_argument("--t", type=int, default=10, help="CLP: rows sampled per child table (default 10)")
    p.add_argument("--seed", type=int, default=0, help="seed of every sampling choice (default 0)")
    p.add_argument("--mode", choices=("paper", "strict"), default="strict",
                   help="CLP comparison: on all the child's columns (strict, the default) or on the search columns only (paper)")
    p.add_argument("--verify", action="store_true", help="verify every surviving edge exactly (CM per edge)")
    p.add_argument("--bag", action="store_true", help="with --verify: bag semantics (row multiplicities count)")
    p.add_argument("--plan", action="store_true", help="compute the deletion plan (Opt-Ret)")
    p.add_argument("--costs", metavar="FILE.yaml", help="with --plan: cost parameters (see dqkit.lake.CostModel)")
    add_output_options(p, "the edges, summary and report")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dqkit import preflight

    if args.costs and not args.plan:
        raise ParameterError("--costs shapes the deletion plan", hint="add --plan")
    if args.bag and not args.verify:
        raise ParameterError("--bag applies to the exact stage", hint="add --verify")
    preflight.lake(args.lake, s=args.s, t=args.t, seed=args.seed, costs=args.costs, out=args.out,
                   overwrite=args.overwrite)
    from dqkit.lake.optret import load_costs

    costs = load_costs(args.costs) if args.costs else None  # line/column errors before any Spark work
    start_session(args)
    from dqkit.lake import find_containment

    result = find_containment(args.lake, s=args.s, t=args.t, seed=args.seed, mode=args.mode, verify=args.verify,
                              bag=args.bag, plan=args.plan, costs=costs,
                              progress=terminal_progress("lake", "edges"))
    return emit(result, args)
