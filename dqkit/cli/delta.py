"""``dqkit delta OLD NEW``: Diftong's comparison of two database versions, for people and for CI."""
from __future__ import annotations

import argparse
import json
import sys

from dqkit.cli import EXIT_DIFFERENT, EXIT_SAME
from dqkit.errors import ParameterError


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``delta`` subcommand."""
    p = sub.add_parser(
        "delta", help="compare two versions of a database (Diftong)",
        description="Compare two versions of a database table by table: duplicates, row delta, column "
                    "delta and statistics. Exit 0 when identical, 1 when they differ, 2 on error.")
    p.add_argument("old", help="old version: a folder of tables, a table file, or catalog:DB")
    p.add_argument("new", help="new version: a folder of tables, a table file, or catalog:DB")
    p.add_argument("--tables", nargs="+", metavar="TABLE", help="compare only these tables")
    p.add_argument("--exclude", nargs="+", default=[], metavar="TABLE[.COL]",
                   help="exclude a table, or a column (dropped before hashing)")
    p.add_argument("--key", nargs="+", default=[], metavar="TABLE=COL[,COL...]",
                   help="key of a table for column validation (composite keys with commas)")
    p.add_argument("--stages", default="dedup,row,column", help="comma-separated subset of dedup,row,column")
    p.add_argument("--abs-tol", type=float, default=0.0, help="absolute float tolerance in column validation")
    p.add_argument("--rel-tol", type=float, default=0.0, help="relative float tolerance in column validation")
    p.add_argument("--out", metavar="DIR", help="persist the validation namespace here (folder or catalog:DB)")
    p.add_argument("--format", choices=("text", "json", "html"), default="text", help="what to print")
    p.set_defaults(func=run)


def parse_keys(items: list[str]) -> dict[str, list[str]]:
    """``['users=id', 'lineitem=l_orderkey,l_linenumber']`` -> {table: [columns]}."""
    keys: dict[str, list[str]] = {}
    for item in items:
        table, sep, cols = item.partition("=")
        names = [c.strip() for c in cols.split(",") if c.strip()]
        if not sep or not table.strip() or not names:
            raise ParameterError(f"cannot read the key {item!r}", hint="write TABLE=COL or TABLE=COL1,COL2")
        keys[table.strip()] = names
    return keys


def run(args: argparse.Namespace) -> int:
    """Run the delta and print it; the exit code says identical (0) or different (1)."""
    from dqkit.delta import delta

    progress = _terminal_progress() if sys.stderr.isatty() else None
    result = delta(args.old, args.new, tables=args.tables, exclude=args.exclude, keys=parse_keys(args.key),
                   stages=args.stages, abs_tol=args.abs_tol, rel_tol=args.rel_tol, progress=progress)
    if args.out:
        where = result.save(args.out)
        print(f"dqkit: validation outputs written to {where}", file=sys.stderr)
    if args.format == "json":
        print(json.dumps(result.to_dict(), indent=2))
    elif args.format == "html":
        from dqkit.render import page

        print(page("dqkit delta", result.to_html()))
    else:
        print(result.to_text())
    return EXIT_SAME if result.identical else EXIT_DIFFERENT


def _terminal_progress():
    def show(stage: str, table: str, done: int, total: int) -> None:
        end = "\n" if done == total else ""
        print(f"\rdqkit delta: {done}/{total} tables done (last: {table})".ljust(60), end=end,
              file=sys.stderr, flush=True)

    return show
