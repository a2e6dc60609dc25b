"""``dqkit repair TABLE --rules FILE --out DIR``: a repaired table (BigDansing §5) and its changes.

``--out DIR`` receives, atomically, ``repaired/`` (Parquet: the input's rows, columns and types),
``changes/`` (Parquet: ``tid, attr, old, new, rules, iteration``), ``summary.json`` and ``report.html``.
Exit 0 when no violation remains, 1 when violations without an applicable fix remain (listed), 2 on error.
"""
from __future__ import annotations

import argparse
import sys

from dqkit.cli._emit import add_list_option, add_output_options, check_out, emit
from dqkit.errors import ParameterError


def register(subparsers: argparse._SubParsersAction) -> None:
    from dqkit.repair import METHODS

    p = subparsers.add_parser(
        "repair", help="repair violations of FDs and equality denial constraints",
        description="Detect and repair violations of rules until none with a fix remains. "
                    "Exit 0: no violation remains; 1: violations without a fix remain; 2: error.")
    p.add_argument("table", help="Parquet/CSV/JSON path or catalog:db.table")
    add_list_option(p, "--rules", "FILE", "rules file: YAML or text, one rule per line")
    p.add_argument("--key", help="column identifying tuples (default: a deterministic content id)")
    p.add_argument("--method", choices=METHODS, default="auto",
                   help="repair algorithm (auto = equivalence-class; holistic is not available yet)")
    p.add_argument("--max-iterations", type=int, default=10, metavar="N", help="at most N repair rounds")
    p.add_argument("--freeze-after", type=int, default=3, metavar="K",
                   help="a cell changed K times is never changed again")
    add_output_options(p, "the repaired table (repaired/), the changes (changes/), summary and report")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dqkit.repair import repair
    from dqkit.rules import load_rules

    if not args.rules:
        raise ParameterError("no rules given", hint="pass --rules FILE (repeat for several files)")
    check_out(args, [args.table, *args.rules])
    rules = [r for path in args.rules for r in load_rules(path)]
    progress = _terminal_progress() if sys.stderr.isatty() else None
    result = repair(args.table, rules, key=args.key, method=args.method, max_iterations=args.max_iterations,
                    freeze_after=args.freeze_after, name=str(args.table), progress=progress)
    return emit(result, args)


def _terminal_progress():
    def show(stage: str, item: str, done: int, total: int) -> None:
        print(f"\rdqkit repair: {item} done".ljust(60), end="", file=sys.stderr, flush=True)

    return show
