"""One output path for every subcommand: ``--format``, ``--out``, ``--overwrite`` and the exit code.

A subcommand adds these options with ``add_output_options``, checks ``--out`` against its inputs with
``check_out`` before any work, and ends with ``emit(result, args)``, which saves (when asked), prints
the result in the chosen format and returns the result's exit code (0 clean, 1 findings).
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import Any

from dqkit import render
from dqkit.result import Result, check_output_target

FORMATS = ("text", "json", "html")


def add_output_options(p: argparse.ArgumentParser, what: str) -> None:
    """Add ``--format``, ``--out`` and ``--overwrite``; ``what`` says what ``--out`` persists."""
    p.add_argument("--format", choices=FORMATS, default="text",
                   help="what to print: a text summary, JSON, or a self-contained HTML page")
    p.add_argument("--out", metavar="DIR|catalog:DB",
                   help=f"save {what} here, atomically; refused if it exists (see --overwrite) or "
                        "overlaps an input")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out target")


def add_list_option(p: argparse.ArgumentParser, flag: str, metavar: str, help: str) -> None:
    """A multi-valued option given once per value (``--key a=x --key b=y``); repeats accumulate.

    One value per occurrence keeps positional arguments after the option unambiguous
    (``--key users=id OLD NEW``). Comma-separated values are split by the subcommand where a comma
    cannot be part of a value.
    """
    p.add_argument(flag, action="append", default=[], metavar=metavar, help=help + " (repeat for more)")


def add_table_and_rules(p: argparse.ArgumentParser) -> None:
    """The arguments every rules subcommand takes: ``TABLE``, ``--rules FILE`` (repeatable), ``--key``."""
    p.add_argument("table", help="Parquet/CSV/JSON path or catalog:db.table")
    add_list_option(p, "--rules", "FILE", "rules file: YAML or text, one rule per line")
    p.add_argument("--key", help="column identifying tuples (default: a deterministic content id)")


def load_rule_files(args: argparse.Namespace) -> list[Any]:
    """The rules of every ``--rules`` file, after checking ``--out`` against the inputs (before any work)."""
    from dqkit.errors import ParameterError
    from dqkit.rules import load_rules

    if not args.rules:
        raise ParameterError("no rules given", hint="pass --rules FILE (repeat for several files)")
    check_out(args, [args.table, *args.rules])
    return [r for path in args.rules for r in load_rules(path)]


def terminal_progress(command: str, unit: str):
    """A kernel progress callback printing ``done/total UNIT done`` on one stderr line, when it is a
    terminal (None otherwise, so logs and pipes stay clean)."""
    if not sys.stderr.isatty():
        return None

    def show(stage: str, item: str, done: int, total: int) -> None:
        end = "\n" if done == total else ""
        print(f"\rdqkit {command}: {done}/{total} {unit} done (last: {item})".ljust(60), end=end,
              file=sys.stderr, flush=True)

    return show


def check_out(args: argparse.Namespace, inputs: Iterable[Any]) -> None:
    """Refuse a bad ``--out`` before any work: overlapping an input, existing, or under a file."""
    if getattr(args, "out", None):
        check_output_target(args.out, inputs, overwrite=args.overwrite)


def emit(result: Result, args: argparse.Namespace, *, sample_rows: int = 10,
         extra: dict[str, Any] | None = None, text_suffix: str = "") -> int:
    """Save (with ``--out``), print in ``--format`` and return the result's exit code."""
    if getattr(args, "out", None):
        where = result.save(args.out, overwrite=args.overwrite)
        print(f"dqkit: saved to {where}", file=sys.stderr)
    if args.format == "json":
        print(render.dumps({**result.to_dict(), **(extra or {})}))
    elif args.format == "html":
        print(result.to_page(sample_rows=sample_rows))
    else:
        print(result.to_text(sample_rows=sample_rows) + text_suffix)
    return result.exit_code
