"""A system's CLI subcommand, derived from its declaration (``dqkit.systems``): argument names, help,
defaults, required options and the exit-code text all come from ``Params``, and the arguments are
parsed by the same ``System.prepare`` the report and the widget use."""
from __future__ import annotations

import argparse
import contextlib
from typing import Any

from dqkit.cli._emit import add_output_options, check_out, emit, start_session, terminal_progress
from dqkit.systems.base import ParamSpec, System

#: The global flags every subcommand also accepts; no parameter may take their names.
GLOBAL_FLAGS = ("master", "remote", "checkpoint_dir", "debug", "format", "out", "overwrite", "version", "help")


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
    p.set_defaults(func=lambda args: run_system(system, args), system=system.name)
    return p


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
        extra = dict(system.emit_extra(result, params)) if system.emit_extra is not None else {}
        code = emit(result, args, sample_rows=int(getattr(params, "sample_rows", 10) or 0), extra=extra or None,
                    text_suffix="".join(f"\n\n{text}" for text in extra.values()))
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
