"""``dqkit repair TABLE --rules FILE --out PATH``: a repaired table (BigDansing §5) and its changes.

``--out NAME.csv`` or ``--out NAME.parquet`` receives the repaired table itself (one file: the input's
columns and rows, in the input's order) and the changes beside it, ``NAME.changes.csv`` /
``NAME.changes.parquet`` (``tid, attr, old, new, rules, iteration``). Any other ``--out`` is a folder
receiving ``repaired/`` and ``changes/`` (Parquet), ``summary.json`` and ``report.html``. All of it is
written atomically. Exit 0 when no violation remains, 1 when violations without an applicable fix
remain (listed), 2 on error.
"""
from __future__ import annotations

import argparse

from dqkit.cli._emit import (add_output_options, add_table_and_rules, emit, load_rule_files, start_session,
                             terminal_progress)

#: dqkit.repair.METHODS, spelled here so that ``dqkit --help`` and a refusal load no Spark (a test pins it)
METHODS = ("auto", "equivalence-class", "holistic")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "repair", help="repair violations of FDs and denial constraints",
        description="Detect and repair violations of rules until none with a fix remains. "
                    "Exit 0: no violation remains; 1: violations without a fix remain; 2: error.")
    add_table_and_rules(p)
    p.add_argument("--method", choices=METHODS, default="auto",
                   help="repair algorithm: auto (default) repairs FDs and equality DCs by equivalence "
                        "classes and DCs with <, <=, >, >= holistically (minimum vertex cover, smallest change)")
    p.add_argument("--max-iterations", type=int, default=10, metavar="N", help="at most N repair rounds")
    p.add_argument("--freeze-after", type=int, default=3, metavar="K",
                   help="a cell changed K times is never changed again")
    add_output_options(p, "the repaired table: NAME.csv or NAME.parquet (changes beside it as "
                          "NAME.changes.csv/.parquet), or a folder (repaired/, changes/, summary, report)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    rules = load_rule_files(args, **{"--max-iterations": (args.max_iterations, {"low": 1, "integer": True}),
                                     "--freeze-after": (args.freeze_after, {"low": 1, "integer": True})})
    start_session(args)
    from dqkit.repair import repair

    result = repair(args.table, rules, key=args.key, method=args.method, max_iterations=args.max_iterations,
                    freeze_after=args.freeze_after, name=str(args.table),
                    progress=terminal_progress("repair", "iterations"))
    return emit(result, args)
