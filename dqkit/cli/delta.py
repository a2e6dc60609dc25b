"""``dqkit delta OLD NEW``: Diftong's comparison of two database versions, for people and for CI."""
from __future__ import annotations

import argparse

from dqkit.cli._emit import add_list_option, add_output_options, emit, start_session, terminal_progress
from dqkit.params import parse_keys, split_list


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``delta`` subcommand."""
    p = sub.add_parser(
        "delta", help="compare two versions of a database (Diftong)",
        description="Compare two versions of a database table by table: duplicates, row delta, column "
                    "delta and statistics. Exit 0 when identical, 1 when they differ, 2 on error.",
        epilog="Options that take several values are repeated, one value each: "
               "--key users=id --key lineitem=l_orderkey,l_linenumber --exclude orders.o_comment.")
    p.add_argument("old", help="old version: a folder of tables, a table file, or catalog:DB")
    p.add_argument("new", help="new version: a folder of tables, a table file, or catalog:DB")
    add_list_option(p, "--tables", "TABLE[,TABLE]", "compare only these tables")
    add_list_option(p, "--exclude", "TABLE[.COL]", "exclude a table, or a column (dropped before hashing)")
    add_list_option(p, "--key", "TABLE=COL[,COL]", "key of a table for column validation (composite keys "
                                                   "with commas). It need not be unique: tables are compared "
                                                   "as multisets of rows, and changed rows whose key repeats "
                                                   "on one side are left unpaired and counted as "
                                                   "ambiguous_key_rows with a warning; NULL keys pair with "
                                                   "NULL")
    p.add_argument("--stages", default="dedup,row,column", help="comma-separated subset of dedup,row,column")
    p.add_argument("--abs-tol", type=float, default=0.0, help="absolute float tolerance in column validation")
    p.add_argument("--rel-tol", type=float, default=0.0, help="relative float tolerance in column validation")
    p.add_argument("--sample-rows", type=int, default=10, metavar="N", help="rows shown per sample (text, html)")
    add_output_options(p, "the validation namespace (delta tables, statistics, charts, report.html)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the delta and print it; the exit code says identical (0) or different (1)."""
    from dqkit import preflight

    keys = parse_keys(args.key)
    preflight.delta(args.old, args.new, keys=keys, tables=args.tables, exclude=args.exclude, stages=args.stages,
                    abs_tol=args.abs_tol, rel_tol=args.rel_tol, sample_rows=args.sample_rows, out=args.out,
                    overwrite=args.overwrite)
    start_session(args)
    from dqkit.delta import delta

    progress = terminal_progress("delta", "tables")
    result = delta(args.old, args.new, tables=split_list(args.tables) or None, exclude=split_list(args.exclude),
                   keys=keys, stages=args.stages, abs_tol=args.abs_tol, rel_tol=args.rel_tol, progress=progress)
    return emit(result, args, sample_rows=args.sample_rows)

