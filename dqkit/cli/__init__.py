"""The ``dqkit`` command line.

A system declared in the registry (``dqkit.systems``) gets its subcommand derived from the
declaration (``dqkit.cli._derive``); the commands not yet declared there live in their own module
exposing ``register(subparsers)``. Exit codes follow ``diff``: 0 = no difference / no violation,
1 = differences / violations found, 2 = error; a system may add its own (tcfc: 3 = uncompleted).
The global flags (``--master``, ``--remote``, ``--debug``) are accepted before or after the subcommand.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import signal
import sys
import threading
from collections.abc import Iterator, Sequence

from dqkit.errors import DqkitError, DqkitWarning
from dqkit.exitcodes import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK

# Subcommand modules, in the order `dqkit --help` lists them.
SUBCOMMANDS = ("dqkit.cli.report",)

EXIT_SAME, EXIT_DIFFERENT = EXIT_OK, EXIT_FINDINGS  # the names the CLI has always used
_terminated = False  # set by SIGTERM (see _sigterm_as_interrupt)


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every available subcommand registered."""
    from dqkit import __version__

    parser = argparse.ArgumentParser(prog="dqkit", description="Data-quality checks on Apache Spark.")
    parser.add_argument("--version", action="version", version=f"dqkit {__version__}")
    _add_global_flags(parser, None)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    from dqkit.cli._derive import add_system_command
    from dqkit.systems import all_systems

    for system in all_systems():
        add_system_command(sub, system)
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # a subcommand not built yet
                continue
            raise
        module.register(sub)
    for subparser in sub.choices.values():
        _add_global_flags(subparser, argparse.SUPPRESS)
    return parser


def _add_global_flags(parser: argparse.ArgumentParser, default: object) -> None:
    """``--master``, ``--remote`` and ``--debug``; on a subcommand their default is SUPPRESS, so a
    flag given before the subcommand is not overwritten by the subcommand's parser."""
    parser.add_argument("--master", default=default,
                        help="Spark master URL (default: local[*], or DQKIT_SPARK_MASTER)")
    parser.add_argument("--remote", default=default,
                        help="Spark Connect address, e.g. sc://host:15002 (default: SPARK_REMOTE)")
    parser.add_argument("--checkpoint-dir", default=default, metavar="DIR",
                        help="where reliable checkpoints go on a cluster, on storage every node sees "
                             "(default: DQKIT_CHECKPOINT_DIR, else spark.checkpoint.dir, else beside --out or "
                             "a temporary folder, removed at the end)")
    parser.add_argument("--debug", action="store_true", default=default if default is argparse.SUPPRESS else False,
                        help="print the full traceback of an unexpected error")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dqkit`` console script; returns the process exit code."""
    import time

    started = time.monotonic()  # a command's time budget counts from here (tcfc --budget)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: usage errors are exit 2 already
        return int(exc.code or 0)
    args.started = started
    with _plain_warnings():
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
        # --master/--remote reach the session through the environment (the report kernel inherits
        # them); a command starts its session only after its Spark-free checks (dqkit.checks.preflight) passed
        if args.master or args.remote:
            from dqkit.runtime.session import use_backend

            use_backend(master=args.master, remote=args.remote)
        from dqkit.runtime.checkpoints import checkpoint_scope

        with checkpoint_scope(args.checkpoint_dir, getattr(args, "out", None)):
            return int(args.func(args))
    except DqkitError as exc:
        print(f"dqkit: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        if _terminated:  # the process ends: stop Spark, then remove what cancelled writes left
            from dqkit.contract.render import remove_abandoned
            from dqkit.runtime.session import end_spark_for_exit

            end_spark_for_exit()
            remove_abandoned()
        print("dqkit: cancelled", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # noqa: BLE001 - any unexpected failure is an error (2), never "different" (1)
        return _unexpected(exc, args)


class _plain_warnings:
    """While a command runs, a ``DqkitWarning`` is printed as one ``dqkit: warning: ...`` line on stderr."""

    def __enter__(self) -> None:
        import warnings

        self._saved = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None):  # noqa: ANN001
            if issubclass(category, DqkitWarning):
                print(f"dqkit: warning: {message}", file=sys.stderr)
            else:
                self._saved(message, category, filename, lineno, file, line)

        warnings.showwarning = show

    def __exit__(self, *exc: object) -> None:
        import warnings

        warnings.showwarning = self._saved


def _unexpected(exc: Exception, args: argparse.Namespace) -> int:
    """Exit 2 with a one-line cause; the traceback goes to a log file, or to stderr with ``--debug``."""
    import os
    import tempfile
    import traceback

    from dqkit.errors import describe_error
    from dqkit.runtime.session import explain_failure

    trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    full = disk_full_error(exc, args)
    if full is not None:  # a Spark task or Python write that hit ENOSPC outside dqkit's atomic writers
        print(f"dqkit: error: {full}", file=sys.stderr)
        return EXIT_ERROR
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


def disk_full_error(exc: BaseException, args: argparse.Namespace) -> DqkitError | None:
    """A ``DiskFullError`` for ENOSPC (Python's, or a Spark task's "No space left on device") naming the
    path the user gave (``--out``, ``--state``, ``--reuse``), never a temporary one; None otherwise."""
    from dqkit.errors import DiskFullError
    from dqkit.runtime.atomic import disk_full, is_disk_full

    if not is_disk_full(exc):
        return None
    where = next((getattr(args, name) for name in ("out", "state", "reuse", "outdir")
                  if isinstance(getattr(args, name, None), str)), None)
    if where is not None:
        return disk_full(where)
    return DiskFullError("no space left on device (the disk of Spark's local folders, spark.local.dir, is full)",
                         hint="free space there, or point spark.local.dir at a larger disk, then rerun")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
