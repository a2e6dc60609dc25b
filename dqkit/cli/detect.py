"""``dqkit detect TABLE --rules FILE``: violations of FDs and denial constraints (BigDansing).

Exit 0 when no rule is violated, 1 when some are, 2 on error.
"""
from __future__ import annotations

import argparse
import json

from dqkit.cli import EXIT_DIFFERENT, EXIT_SAME
from dqkit.errors import ParameterError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "detect", help="detect violations of FDs and denial constraints",
        description="Detect violations of rules (FDs, denial constraints) in a table. "
                    "Exit 0: no violation; 1: violations; 2: error.")
    p.add_argument("table", help="Parquet/CSV/JSON path or catalog:db.table")
    p.add_argument("--rules", required=True, help="rules file: YAML or text, one rule per line")
    p.add_argument("--key", help="column identifying tuples (default: a deterministic content id)")
    p.add_argument("--count-only", action="store_true", help="count violations without materialising them")
    p.add_argument("--sample", type=int, metavar="N", help="keep at most N violations per rule")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--out", metavar="DIR", help="write summary, plan and violations to DIR (atomic)")
    p.add_argument("--explain", action="store_true", help="print the logical, consolidated and physical plans")
    p.add_argument("--nb-parts", type=int, help="OCJoin range partitions (default 16)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dqkit.detect import detect
    from dqkit.rules import load_rules

    if args.count_only and args.sample is not None:
        raise ParameterError("--count-only and --sample exclude each other")
    if args.sample is not None and args.sample < 1:
        raise ParameterError("--sample needs N >= 1")
    rules = load_rules(args.rules)
    mode = "count" if args.count_only else ("sample" if args.sample is not None else "violations")
    result = detect(args.table, rules, key=args.key, mode=mode, sample=args.sample, nb_parts=args.nb_parts,
                    name=str(args.table))
    if args.out:
        result.save(args.out, overwrite=True)
    if args.format == "json":
        doc = result.to_dict()
        if args.explain:
            doc["explain"] = result.explain()
        print(json.dumps(doc, indent=2, default=str))
    else:
        print(result.to_text(0 if args.count_only else min(args.sample or 10, 10)))
        if args.explain:
            print()
            print(result.explain())
    return EXIT_DIFFERENT if result.total_violations else EXIT_SAME
