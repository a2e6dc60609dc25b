"""One output path for every subcommand: ``--format``, ``--out``, ``--overwrite`` and the exit code.

A subcommand adds these options with ``add_output_options``, checks ``--out`` against its inputs with
``check_out`` before any work, and ends with ``emit(result, args)``, which saves (when asked), prints
the result in the chosen format and returns the result's exit code (0 clean, 1 findings).
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pandas and Spark load only once the checks have passed
    from dqkit.contract.result import Result

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


def start_session(args: argparse.Namespace) -> None:
    """Start the SparkSession that ``--master`` / ``--remote`` ask for: called by a command once its
    checks have passed, so a refused command never starts a JVM. Without them the kernel starts the
    default session itself when it first needs one."""
    if getattr(args, "master", None) or getattr(args, "remote", None):
        from dqkit.runtime.session import get_spark

        get_spark(master=args.master, remote=args.remote)


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
    from dqkit.checks.preflight import check_out as check

    if getattr(args, "out", None):
        check(args.out, inputs, overwrite=args.overwrite)


def emit(result: Result, args: argparse.Namespace, *, sample_rows: int = 10,
         extra: dict[str, Any] | None = None, text_suffix: str = "") -> int:
    """Save (with ``--out``), print in ``--format`` and return the result's exit code."""
    from dqkit.contract import render

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
