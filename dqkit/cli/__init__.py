"""The ``dqkit`` command line.

Each subcommand lives in its own module exposing ``register(subparsers)``, which adds its parser and
sets ``func`` to a callable ``(args) -> int``. Exit codes follow ``diff``: 0 = no difference / no
violation, 1 = differences / violations found, 2 = error.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import signal
import sys
import threading
from collections.abc import Iterator, Sequence

from dqkit.errors import DqkitError

# Subcommand modules, in the order `dqkit --help` lists them.
SUBCOMMANDS = ("dqkit.cli.delta", "dqkit.cli.detect", "dqkit.cli.repair", "dqkit.cli.dedup", "dqkit.cli.tcfc",
               "dqkit.cli.lake", "dqkit.cli.query", "dqkit.cli.report")

EXIT_SAME, EXIT_DIFFERENT, EXIT_ERROR = 0, 1, 2
_terminated = False  # set by SIGTERM (see _sigterm_as_interrupt)


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every available subcommand registered."""
    from dqkit import __version__

    parser = argparse.ArgumentParser(prog="dqkit", description="Data-quality checks on Apache Spark.")
    parser.add_argument("--version", action="version", version=f"dqkit {__version__}")
    parser.add_argument("--master", help="Spark master URL (default: local[*], or DQKIT_SPARK_MASTER)")
    parser.add_argument("--remote", help="Spark Connect address, e.g. sc://host:15002 (default: SPARK_REMOTE)")
    parser.add_argument("--debug", action="store_true", help="print the full traceback of an unexpected error")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # a subcommand not built yet
                continue
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dqkit`` console script; returns the process exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: usage errors are exit 2 already
        return int(exc.code or 0)
    try:
        with _sigterm_as_interrupt():
            return _run(args)
    except KeyboardInterrupt:  # a SIGTERM that arrived after the run
        print("dqkit: cancelled", file=sys.stderr)
        return EXIT_ERROR


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (a shell's ``kill``, a scheduler's timeout) cancels like Ctrl-C: the atomic writes' clean-up
    runs and, as the process ends, Spark is stopped before the temporary folders are removed. Main thread
    only; restored after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        global _terminated
        _terminated = True
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run(args: argparse.Namespace) -> int:
    try:
        if args.master or args.remote:  # the session starts on first use, the report kernel inherits it
            from dqkit.session import use_backend

            use_backend(master=args.master, remote=args.remote)
        return int(args.func(args))
    except DqkitError as exc:
        print(f"dqkit: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        if _terminated:  # the process ends: stop Spark, then remove what cancelled writes left
            from dqkit.render import remove_abandoned
            from dqkit.session import end_spark_for_exit

            end_spark_for_exit()
            remove_abandoned()
        print("dqkit: cancelled", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # noqa: BLE001 - any unexpected failure is an error (2), never "different" (1)
        return _unexpected(exc, args)


def _unexpected(exc: Exception, args: argparse.Namespace) -> int:
    """Exit 2 with a one-line cause; the traceback goes to a log file, or to stderr with ``--debug``."""
    import os
    import tempfile
    import traceback

    from dqkit.errors import describe_error
    from dqkit.session import explain_failure

    trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    mapped = explain_failure(exc)  # the cluster lacks dqkit, the Connect server went away
    print(f"dqkit: error: {mapped if mapped is not None else describe_error(exc)}", file=sys.stderr)
    if getattr(args, "debug", False):
        print(trace, file=sys.stderr)
        return EXIT_ERROR
    log = os.path.join(tempfile.gettempdir(), "dqkit-cli-errors.log")
    try:
        with open(log, "a", encoding="utf-8") as f:
            f.write(trace + "\n")
        print(f"dqkit: the traceback is in {log} (or rerun with --debug)", file=sys.stderr)
    except OSError:
        print("dqkit: rerun with --debug for the traceback", file=sys.stderr)
    return EXIT_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
