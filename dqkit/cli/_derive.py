"""A system's CLI subcommand, derived from its declaration (``dqkit.systems``): argument names, help,
defaults, required options and the exit-code text all come from ``Params``, and the arguments are
parsed by the same ``System.prepare`` the report and the widget use."""
from __future__ import annotations

import argparse
import contextlib
from typing import Any

from dqkit.cli._emit import add_output_options, check_out, emit, start_session, terminal_progress
from dqkit.systems.base import GLOBAL_FLAGS, ParamSpec, System

#: The global flags every subcommand also accepts; no parameter may take their names.


def _help(s: ParamSpec) -> str:
    text = s.help
    if s.choices:
        text += f"; one of {', '.join(map(str, s.choices))}"
    if s.repeat:
        text += " (repeat for more)"
    if not s.required and s.default not in (None, (), "", False):
        shown = ",".join(map(str, s.default)) if isinstance(s.default, tuple) else s.default
        text += f" (default: {shown})"
    return text.replace("%", "%%")


def add_system_command(sub: argparse._SubParsersAction, system: System) -> argparse.ArgumentParser:
    """Add ``system``'s subcommand to ``sub``; its ``func`` runs the system and returns the exit code."""
    p = sub.add_parser(system.name, help=system.summary,
                       description=f"{system.description or system.summary} {system.exit_text()}")
    lenient = bool(system.actions)  # an action flag works alone: Params.parse says what is missing
    for s in system.params.specs():
        if s.name in GLOBAL_FLAGS:
            raise TypeError(f"system {system.name!r}: parameter {s.name!r} clashes with a global flag")
        if s.positional:
            p.add_argument(s.name, metavar=s.metavar or s.name.upper(), help=_help(s),
                           nargs=None if s.required and not lenient else "?")
        elif s.kind is bool:
            p.add_argument(s.flag, action=argparse.BooleanOptionalAction, default=None, help=_help(s))
        elif s.repeat:
            p.add_argument(s.flag, action="append", default=None, metavar=s.metavar or s.name.upper(), help=_help(s))
        else:
            p.add_argument(s.flag, default=None, metavar=s.metavar or s.name.upper(), help=_help(s),
                           required=s.required and not lenient)
    for name, (text, _) in system.actions.items():
        if name in GLOBAL_FLAGS or name in {s.name for s in system.params.specs()}:
            raise TypeError(f"system {system.name!r}: action {name!r} clashes with a flag")
        p.add_argument("--" + name.replace("_", "-"), action="store_true", dest=f"_action_{name}",
                       help=text.replace("%", "%%"))
    add_output_options(p, system.output)
    if records_history(system):
        add_history_options(p)
    p.set_defaults(func=lambda args: run_system(system, args), system=system.name)
    return p


def records_history(system: System) -> bool:
    """Every system takes ``--history``, but one whose own parameter is called ``history`` (``dqkit history``)."""
    return "history" not in {s.name for s in system.params.specs()}


def add_history_options(p: argparse.ArgumentParser) -> None:
    """``--history`` and its companions, the same on every system (``dqkit.history.record``)."""
    from dqkit.history._defaults import DEFAULT_FPR, MIN_RUNS

    g = p.add_argument_group("history", "record this run's metrics and judge them against their own past runs "
                                        "(docs/history.md); an anomalous metric makes the exit code 1")
    g.add_argument("--history", metavar="DIR|catalog:DB.TABLE", default=None,
                   help="append this run's metrics to this history (created if absent)")
    g.add_argument("--as-of", metavar="DATE", default=None, help="the date the data is of (default: today)")
    g.add_argument("--fpr", metavar="RATE", default=None,
                   help=f"false-positive rate the gates calibrate to, in (0, 0.5) (default: {DEFAULT_FPR})")
    g.add_argument("--min-runs", metavar="N", default=None,
                   help=f"earlier runs a metric needs before it is judged (default: {MIN_RUNS})")
    g.add_argument("--history-table", metavar="NAME", default=None,
                   help="name of the series in the history (default: the run's input paths)")


def history_options(args: argparse.Namespace) -> Any:
    """The checked ``HistoryOptions`` of ``args`` (None without ``--history``); refuses, before Spark,
    companions given without ``--history``, a bad date or rate, and a history that cannot be read."""
    companions = [f for f in ("as_of", "fpr", "min_runs", "history_table") if getattr(args, f, None) is not None]
    if getattr(args, "history", None) is None:
        if companions:
            from dqkit.errors import ParameterError

            raise ParameterError(f"--{companions[0].replace('_', '-')} needs --history",
                                 hint="add --history DIR to record and judge the run")
        return None
    from dqkit.history._defaults import DEFAULT_FPR, MIN_RUNS
    from dqkit.history.record import HistoryOptions

    return HistoryOptions.prepare(args.history, args.as_of,
                                  DEFAULT_FPR if args.fpr is None else args.fpr,
                                  MIN_RUNS if args.min_runs is None else args.min_runs, args.history_table)


def run_system(system: System, args: argparse.Namespace) -> int:
    """An action flag prints its text (exit 0); otherwise parse and validate (no Spark), check
    ``--out``, then run and emit (``Result.save`` for ``--out``); returns the exit code.

    The system's CLI hooks (``dqkit.systems.base.System``) apply here: ``actions`` (flags that print a
    text and exit 0), ``check_output`` (Spark-free checks of ``--out`` against the parameters),
    ``session`` (start Spark now, or only export ``--master``/``--remote`` for ``run`` to start it),
    ``clocked`` (``run`` gets ``started=args.started``, set by ``dqkit.cli.main`` when the command
    started), ``cli_guard`` (around ``run``), ``emit_extra`` (texts printed after the result and added
    to its JSON) and ``cli_exit`` (with the exit code, after the output).
    A result with ``close()`` is closed once printed and saved."""
    for name, (_, action) in system.actions.items():
        if getattr(args, f"_action_{name}", False):
            print(action(), end="")
            return 0
    values: dict[str, Any] = {s.name: getattr(args, s.name, None) for s in system.params.specs()}
    params = system.prepare(values)
    history = history_options(args) if records_history(system) else None
    if system.check_output is not None:
        system.check_output(params, getattr(args, "out", None))
    check_out(args, params.inputs())
    from dqkit.runtime.inputsize import expect_inputs  # a tiny input gets a JVM tuned for a short life

    expect_inputs(params.inputs())
    if system.session == "environment":
        export_session(args)
    else:
        start_session(args)
    options: dict[str, Any] = {"started": getattr(args, "started", None)} if system.clocked else {}
    with system.cli_guard() if system.cli_guard is not None else contextlib.nullcontext():
        result = system.run(params, spark=None, progress=terminal_progress(system.name, system.progress_unit),
                            cancel=None, **options)
    try:
        extra: dict[str, Any] = dict(system.emit_extra(result, params)) if system.emit_extra is not None else {}
        recorded = None
        if history is not None:
            from dqkit.history.record import record_run

            recorded = record_run(system.name, params, result, history)
        suffix = "".join(f"\n\n{text}" for text in extra.values())
        if recorded is not None:
            extra["history"] = recorded.to_dict()
            suffix += "\n\n" + recorded.text()
        code = emit(result, args, sample_rows=int(getattr(params, "sample_rows", 10) or 0), extra=extra or None,
                    text_suffix=suffix)
        if recorded is not None and recorded.anomalies:
            from dqkit.exitcodes import EXIT_FINDINGS

            code = EXIT_FINDINGS
    finally:
        close = getattr(result, "close", None)
        if callable(close):
            close()
    if system.cli_exit is not None:
        system.cli_exit(code)
    return code


def export_session(args: argparse.Namespace) -> None:
    """Hand ``--remote`` / ``--master`` to the run through the environment ``dqkit.runtime.session.get_spark``
    reads (``dqkit.runtime.session.use_backend``) instead of starting a session here: the run starts Spark
    when it needs it, e.g. inside its time budget."""
    if getattr(args, "remote", None) or getattr(args, "master", None):
        from dqkit.runtime.session import use_backend

        use_backend(master=getattr(args, "master", None), remote=getattr(args, "remote", None))
