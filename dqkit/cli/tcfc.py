"""``dqkit tcfc --spec FILE``: a time-budgeted, fragment-by-fragment comparison of table pairs (TCFC).

Exit codes: 0 = COMPLETED and no difference; 1 = differences found (completed or not); 3 = UNCOMPLETED
with no difference found so far (the budget expired first); 2 = error (bad spec, unreachable database).

Budget: the clock starts when the command starts; loading the spec, binding the engines (connections,
metadata, starting Spark) and every job count against it. The command returns within the budget plus
``dqkit.tcfc.GRACE_S`` seconds (cancelling running queries, assembling the report), listing what was
proven and what is still pending. Writing ``--out`` comes after and is not bounded.
"""
from __future__ import annotations

import argparse
import time

from dqkit.cli._emit import add_output_options, emit, terminal_progress


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``tcfc`` subcommand."""
    p = sub.add_parser(
        "tcfc", help="time-budgeted fragment-by-fragment comparison of table pairs across engines (TCFC)",
        description="Compare the table pairs of a spec (Spark, PostgreSQL, SQLite, DuckDB) level by level "
                    "within a time budget. Exit 0 when completed without difference, 1 when differences were "
                    "found, 3 when the budget expired before any difference was found, 2 on error.")
    p.add_argument("--spec", required=True, metavar="FILE.yaml", help="the TCFC spec (YAML or JSON)")
    p.add_argument("--budget", type=float, metavar="SECONDS",
                   help="time budget in seconds for the whole command, engine start-up included; it returns "
                        "within the budget + 1.5 s (GRACE_S) (default: the spec's budget, else run to completion)")
    p.add_argument("--reuse", metavar="DIR", help="persist completed leaves and the pending queue here, and "
                                                  "reuse them on the next run (prune; see --resume)")
    p.add_argument("--resume", action="store_true", help="with --reuse: continue the stored interrupted run")
    p.add_argument("--order", choices=("default", "breadth_first"), default="default", help="job order")
    p.add_argument("--connect-timeout", type=float, default=10.0, metavar="SECONDS",
                   help="give up connecting to a database after this long")
    p.add_argument("--statistics", action="store_true", default=None,
                   help="let X = [] COUNT roots take counts from exact table statistics (Parquet footers) "
                        "instead of a query (P4; default: the spec's 'statistics', off)")
    p.add_argument("--sample-rows", type=int, default=20, metavar="N", help="report rows shown (text, html)")
    add_output_options(p, "the report (summary.json, report.html, tree charts, report table)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run TCFC and print the report; the exit code says identical (0), different (1), uncompleted (3).

    The budget's clock starts when the command starts (``dqkit.cli.main``): loading the spec, binding the engines
    (connections, metadata, starting Spark) and the jobs all count against it. Every check that needs
    no engine (numbers, the spec, the --reuse state, --out) runs first and refuses with exit 2."""
    started = getattr(args, "started", None) or time.monotonic()  # set by dqkit.cli.main at the command's start
    from dqkit import preflight
    from dqkit.tcfc.spec import check_budget
    from dqkit.tcfc.state import check_state_folder

    check_budget(args.budget, "--budget")
    if args.resume and not args.reuse:
        from dqkit.errors import ParameterError

        raise ParameterError("--resume needs --reuse DIR", hint="name the folder of the interrupted run with --reuse")
    spec = preflight.tcfc(args.spec, reuse=args.reuse, connect_timeout=args.connect_timeout,
                          sample_rows=args.sample_rows, out=args.out, overwrite=args.overwrite)
    if args.reuse:
        check_state_folder(args.reuse)
    _session_inside_the_budget(args)
    from dqkit.tcfc import run_tcfc

    stderr = _keep_stderr()
    try:
        result = run_tcfc(spec, args.budget, order=args.order, reuse=args.reuse,
                          reuse_mode="resume" if args.resume else "prune", connect_timeout=args.connect_timeout,
                          progress=terminal_progress("tcfc", "jobs"), statistics=args.statistics, started=started)
    finally:
        _restore_stderr(stderr)
    try:
        code = emit(result, args, sample_rows=args.sample_rows)
    finally:
        result.close()
    _exit_without_waiting_for_binding(code)
    return code


def _session_inside_the_budget(args: argparse.Namespace) -> None:
    """``--master`` / ``--remote`` reach the engines' binding (which starts Spark inside the budget)
    through the environment that ``dqkit.session.get_spark`` reads, instead of a session started here."""
    import os

    if getattr(args, "remote", None):
        os.environ["SPARK_REMOTE"] = args.remote
    elif getattr(args, "master", None):
        os.environ["DQKIT_SPARK_MASTER"] = args.master


def _exit_without_waiting_for_binding(code: int) -> None:
    """When the budget expired while a binding was still under way (typically a JVM being launched), the
    ``dqkit`` process must not wait for it at exit: interpreter shutdown with that worker alive took
    seconds. Only in the ``dqkit`` process itself (never when ``main`` is called from Python), an exit
    handler flushes the output and ends the process with ``code``; a half-started JVM exits on its own
    when its parent's pipe closes."""
    import atexit
    import os
    import sys
    import threading

    script = os.path.basename(sys.argv[0] or "")
    as_cli = script == "dqkit" or sys.argv[0].endswith(os.path.join("dqkit", "cli", "__main__.py"))
    if not as_cli or not any(t.name == "dqkit-tcfc-bind" and t.is_alive() for t in threading.enumerate()):
        return

    def leave() -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)

    atexit.register(leave)


def _keep_stderr() -> int | None:
    """A copy of file descriptor 2. Starting Spark points descriptor 2 at the JVM log while the JVM
    launches (``dqkit.session``); when the budget expires during that launch, the CLI's own messages
    must still reach the terminal."""
    import os

    try:
        return os.dup(2)
    except OSError:
        return None


def _restore_stderr(fd: int | None) -> None:
    import os
    import sys

    if fd is None:
        return
    try:
        sys.stderr.flush()
        os.dup2(fd, 2)
    except (OSError, ValueError):
        pass
    finally:
        os.close(fd)
