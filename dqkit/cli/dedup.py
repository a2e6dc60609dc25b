"""``dqkit dedup TABLE --key COL --config FILE.yaml``: duplicate records found, clustered and merged.

``--out DIR`` receives, atomically, ``pairs/`` (the matching pairs; every candidate pair with
``--all-pairs``), ``clusters/`` (``key, cluster_id``) and ``golden/`` (one record per cluster), as
Parquet or, with ``--csv``, CSV with a header; beside them ``summary.json`` and ``report.html``.
``--example-config`` prints a commented configuration. Exit 0 when no duplicate is found, 1 when
duplicates are found, 2 on error.

``dqkit dedup A --link B --key COL --config FILE.yaml [--sources A,B]`` links two tables (record
linkage): pairs only across them, ``clusters/`` with a ``source`` column; exit 1 when links are found.
"""
from __future__ import annotations

import argparse
import sys

from dqkit.cli._emit import add_output_options, emit, start_session, terminal_progress
from dqkit.errors import ParameterError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "dedup", help="find duplicate records: blocking, match probabilities, clusters, golden records",
        description="Find records that describe the same entity (Fellegi-Sunter match probabilities with "
                    "EM-estimated parameters, no labels needed), cluster them and merge each cluster into a "
                    "golden record. Exit 0: no duplicate; 1: duplicates found; 2: error.")
    p.add_argument("table", nargs="?", help="Parquet/CSV/JSON path or catalog:db.table (CSV columns are read as text)")
    p.add_argument("--key", help="the column identifying records (unique, not NULL)")
    p.add_argument("--link", metavar="TABLE2",
                   help="link TABLE to TABLE2 (record linkage): pairs only across the two tables, which both "
                        "have the key and the compared columns")
    p.add_argument("--sources", metavar="NAME1,NAME2", default="left,right",
                   help="with --link: names of the two tables in the source and cluster_id columns "
                        "(default left,right)")
    p.add_argument("--config", metavar="FILE.yaml", help="blocking rules and comparisons (see --example-config)")
    p.add_argument("--threshold", type=float, metavar="P",
                   help="link pairs with match probability >= P (default: the config's, else 0.9)")
    p.add_argument("--all-pairs", action="store_true", help="with --out: save every candidate pair, not only matches")
    p.add_argument("--csv", action="store_true", help="with --out: write the tables as CSV instead of Parquet")
    p.add_argument("--example-config", action="store_true", help="print a commented example config and exit")
    add_output_options(p, "the pairs, clusters and golden records, summary and report")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dqkit import preflight

    if args.example_config:
        from dqkit.dedup import example_config

        print(example_config(), end="")
        return 0
    missing = [flag for flag, v in (("TABLE", args.table), ("--key", args.key), ("--config", args.config)) if not v]
    if missing:
        raise ParameterError(f"dqkit dedup needs {', '.join(missing)}",
                             hint="dqkit dedup TABLE --key COL --config FILE.yaml; "
                                  "`dqkit dedup --example-config` prints a config")
    if (args.csv or args.all_pairs) and not args.out:
        raise ParameterError("--csv and --all-pairs shape what --out writes", hint="add --out DIR")
    sources = tuple(x.strip() for x in args.sources.split(","))
    if args.link is None and args.sources != "left,right":
        raise ParameterError("--sources names the two tables of --link", hint="add --link TABLE2")
    preflight.dedup(args.table, args.key, args.config, link=args.link, threshold=args.threshold, out=args.out,
                    overwrite=args.overwrite)
    start_session(args)
    from dqkit.dedup import dedup, load_config

    config = load_config(args.config)  # parse errors (with line and column) before any Spark work
    result = dedup(args.table, args.key, config, threshold=args.threshold,
                   name=str(args.table) if args.link is None else f"{args.table} ~ {args.link}",
                   progress=terminal_progress("dedup", "stages"), other=args.link, sources=sources)
    if args.out:
        where = result.save(args.out, overwrite=args.overwrite, format="csv" if args.csv else "parquet",
                            all_pairs=args.all_pairs)
        print(f"dqkit: saved to {where}", file=sys.stderr)
        args = argparse.Namespace(**{**vars(args), "out": None})
    return emit(result, args)
