"""``dqkit detect TABLE --rules FILE``: violations of FDs and denial constraints (BigDansing).

Exit 0 when no rule is violated, 1 when some are, 2 on error.
"""
from __future__ import annotations

import argparse

from dqkit.cli._emit import (add_output_options, add_table_and_rules, emit, load_rule_files, start_session,
                             terminal_progress)
from dqkit.errors import ParameterError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "detect", help="detect violations of FDs and denial constraints",
        description="Detect violations of rules (FDs, denial constraints) in a table. "
                    "Exit 0: no violation; 1: violations; 2: error.")
    add_table_and_rules(p)
    p.add_argument("--count-only", action="store_true", help="count violations without materialising them")
    p.add_argument("--sample", type=int, metavar="N", help="keep at most N violations per rule")
    add_output_options(p, "summary, plan, violations and candidate fixes")
    p.add_argument("--explain", action="store_true", help="print the logical, consolidated and physical plans")
    p.add_argument("--nb-parts", type=int, help="OCJoin range partitions (default 16)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.count_only and args.sample is not None:
        raise ParameterError("--count-only and --sample exclude each other")
    if args.sample is not None and args.sample < 1:
        raise ParameterError("--sample needs N >= 1")
    rules = load_rule_files(args, **{"--nb-parts": (args.nb_parts, {"low": 1, "integer": True})})
    start_session(args)
    from dqkit.detect import detect

    mode = "count" if args.count_only else ("sample" if args.sample is not None else "violations")
    progress = terminal_progress("detect", "rules")
    result = detect(args.table, rules, key=args.key, mode=mode, sample=args.sample, nb_parts=args.nb_parts,
                    name=str(args.table), progress=progress)
    explain = result.explain() if args.explain else None
    return emit(result, args, sample_rows=0 if args.count_only else min(args.sample or 10, 10),
                extra={"explain": explain} if explain else None,
                text_suffix=f"\n\n{explain}" if explain else "")

