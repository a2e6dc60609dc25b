"""TCFC, declared once: table pairs compared fragment by fragment within a time budget (``dqkit.tcfc``).

The budget bounds the whole command: its clock starts when ``dqkit`` starts (``clocked``: ``run`` gets
``started``), loading the spec, binding the engines (connections, metadata, starting Spark) and every
job count against it, and ``--master``/``--remote`` reach the binding through the environment
(``session="environment"``) rather than a session started before the clock's budget is spent. The
command returns within the budget plus ``dqkit.tcfc.GRACE_S`` seconds, listing what was proven and
what is still pending (exit 3 when nothing differing was found before it expired). Writing ``--out``
comes after and is not bounded.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
from pathlib import Path
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from dqkit.errors import ParameterError, SourceError
from dqkit.systems.base import Params, System, param
from dqkit.tcfc.model import GRACE_S, ORDERS

#: dqkit.tcfc.GRACE_S as --help states it
GRACE_TEXT = f"{GRACE_S:g} s"


def _budget(raw: Any) -> float | None:
    """A budget in seconds above 0 and finite (``dqkit.tcfc.spec.check_budget``); empty/none: no budget."""
    from dqkit.tcfc.spec import check_budget

    if raw is None or (isinstance(raw, str) and raw.strip().lower() in ("", "none", "null")):
        return None
    return check_budget(raw.strip() if isinstance(raw, str) else raw, "--budget")


def check_tcfc(spec: Any, *, reuse: Any = None, connect_timeout: Any = 10.0, sample_rows: Any = 20, out: Any = None,
         overwrite: bool = False) -> Any:
    """``dqkit tcfc``: the spec is text and parses, every local table and SQLite/DuckDB file it names
    exists, the timeout is positive, ``--out`` is safe. Returns the spec (budgets: dqkit.tcfc.spec)."""
    from dqkit.checks.preflight import check_number, check_out, read_text_file
    from dqkit.tcfc.spec import SpecError, load_spec

    if Path(os.fspath(spec)).is_dir():
        raise SpecError(f"the spec {os.fspath(spec)} is a folder, not a file", hint="pass the spec's YAML or JSON file")
    if not Path(os.fspath(spec)).is_file():
        raise SpecError(f"no such spec file: {os.fspath(spec)}", hint="check the path; pass a YAML or JSON file")
    read_text_file(spec, "the spec", SpecError)
    check_number(connect_timeout, "--connect-timeout", low=0, low_open=True)
    check_number(sample_rows, "--sample-rows", low=0, integer=True)
    loaded = load_spec(spec)
    check_out(out, tcfc_inputs(spec, loaded, reuse), overwrite)
    return loaded


def tcfc_inputs(spec: Any, loaded: Any, reuse: Any = None) -> list[Any]:
    """The local paths a ``tcfc`` run reads (the spec, the ``--reuse`` folder, SQLite/DuckDB files, Spark
    tables of the loaded spec), each checked to exist: what ``--out`` may not overlap."""
    from dqkit.checks.preflight import check_table

    inputs: list[Any] = [spec, *([reuse] if reuse else [])]
    for pair in loaded.pairs:
        for label, side in (("source", pair.source), ("target", pair.target)):
            where = f"pair {pair.name!r}, {label}"
            if side.url and side.url.split(":", 1)[0].lower() in ("sqlite", "duckdb"):
                file = side.url.split(":///", 1)[-1] if ":///" in side.url else ""
                if file and file != ":memory:" and not Path(file).exists():
                    raise SourceError(f"{where}: the database file {file} does not exist",
                                      hint="check the url; dqkit never creates a database to compare")
                inputs.append(file)
            elif side.engine_kind == "spark":
                for name, src in [("table", side.table), *side.tables.items()]:
                    if isinstance(src, str):
                        check_table(src, f"{where}: {name}")
                        inputs.append(src)
    return inputs


@dataclass(frozen=True)
class TcfcParams(Params):
    """What ``dqkit tcfc``, ``dqkit report tcfc`` and a derived tcfc widget take."""

    spec: str = param(help="the TCFC spec (YAML or JSON): pairs, levels, aggregates", metavar="FILE.yaml",
                      input=True)
    budget: float | None = param(None, help="time budget in seconds for the whole command, engine start-up "
                                            f"included; it returns within the budget + {GRACE_TEXT} (GRACE_S) "
                                            "(default: the spec's budget, else run to completion)",
                                 parse=_budget, low=0, low_open=True, metavar="SECONDS")
    reuse: str | None = param(None, help="persist completed leaves and the pending queue here, and reuse them on "
                                         "the next run (prune; see --resume)", metavar="DIR", input=True)
    resume: bool = param(False, help="with --reuse: continue the stored interrupted run")
    order: str = param("default", help="job order (default: roots, then error pursuit, then healthy fragments)",
                       choices=ORDERS)
    connect_timeout: float = param(10.0, help="give up connecting to a database after this long (seconds)",
                                   low=0, low_open=True, metavar="SECONDS")
    statistics: bool | None = param(None, help="let X = [] COUNT roots take counts from exact table statistics "
                                               "(Parquet footers) instead of a query (P4; default: the spec's "
                                               "'statistics', off)")
    sample_rows: int = param(20, help="report rows shown (text, html, report)", low=0, metavar="N")

    def validate(self) -> None:
        """``--resume`` has a ``--reuse`` folder; the spec is a text file that parses, every local table and
        SQLite/DuckDB file it names exists; the stored ``--reuse`` state reads. No engine is bound."""
        from dqkit.tcfc.state import check_state_folder

        if self.resume and not self.reuse:
            raise ParameterError("--resume needs --reuse DIR", hint="name the folder of the interrupted run with --reuse")
        check_tcfc(self.spec, reuse=self.reuse, connect_timeout=self.connect_timeout, sample_rows=self.sample_rows)
        if self.reuse:
            check_state_folder(self.reuse)

    def inputs(self) -> list[Any]:
        """The spec, the reuse folder and every local table or database file the spec names."""
        from dqkit.tcfc.spec import load_spec

        return tcfc_inputs(self.spec, load_spec(self.spec), self.reuse)


def run(params: TcfcParams, *, spark: Any = None, progress: Any = None, cancel: Any = None,
        started: float | None = None) -> Any:
    """The ``TcfcResult`` of ``params`` (``dqkit.tcfc.run_tcfc``); ``started`` is when the budget's clock
    started (a ``time.monotonic()`` value; default: now)."""
    from dqkit.tcfc import run_tcfc

    return run_tcfc(params.spec, params.budget, spark=spark, order=params.order, reuse=params.reuse,
                    reuse_mode="resume" if params.resume else "prune", connect_timeout=params.connect_timeout,
                    progress=progress, cancel=cancel, statistics=params.statistics, started=started)


@contextlib.contextmanager
def keep_stderr() -> Iterator[None]:
    """Keep a copy of file descriptor 2 while the run binds its engines, and put it back after. Starting
    Spark points descriptor 2 at the JVM log while the JVM launches (``dqkit.runtime.session``); when the budget
    expires during that launch, the CLI's own messages must still reach the terminal."""
    fd = _keep_stderr()
    try:
        yield
    finally:
        _restore_stderr(fd)


def _keep_stderr() -> int | None:
    try:
        return os.dup(2)
    except OSError:
        return None


def _restore_stderr(fd: int | None) -> None:
    if fd is None:
        return
    try:
        sys.stderr.flush()
        os.dup2(fd, 2)
    except (OSError, ValueError):
        pass
    finally:
        os.close(fd)


def _exit_without_waiting_for_binding(code: int) -> None:
    """When the budget expired while a binding was still under way (typically a JVM being launched), the
    ``dqkit`` process must not wait for it at exit: interpreter shutdown with that worker alive took
    seconds. Only in the ``dqkit`` process itself (never when ``main`` is called from Python), an exit
    handler flushes the output and ends the process with ``code``; a half-started JVM exits on its own
    when its parent's pipe closes."""
    import atexit

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


TCFC = System(
    name="tcfc",
    summary="time-budgeted fragment-by-fragment comparison of table pairs across engines (TCFC)",
    description="Compare the table pairs of a spec (Spark, PostgreSQL, SQLite, DuckDB) level by level within a "
                "time budget; each side's GROUP BY runs in its own engine and only aggregated rows cross.",
    params=TcfcParams,
    run=run,
    template="system_report",
    tabs=(("Summary", ("Verdict", "Facts", "Notes")), ("Fragments", ("Table",)), ("Drill-down", ("Chart",))),
    exit_codes={0: "completed, no difference", 1: "differences found (completed or not)",
                2: "error", 3: "uncompleted: the budget expired before any difference was found"},
    output="the report (summary.json, report.html, tree charts, report table)",
    example={"spec": "data/users_tcfc.yaml", "budget": 600},
    progress_unit="jobs",
    session="environment",
    clocked=True,
    cli_guard=keep_stderr,
    cli_exit=_exit_without_waiting_for_binding,
)
