"""Plain-Python controllers behind the widgets: state and runs, no ipywidgets.

The views in this package bind ipywidgets to these objects; tests drive the controllers (and the
views) headlessly. Every run is a registered system's ``System.run`` with its declared ``Params``
(``RunController``): a controller holds selections and turns them into those ``Params``, never calling
a kernel itself.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import threading

from pyspark.sql import DataFrame, SparkSession

from dqkit.checks.params import format_keys, parse_keys
from dqkit.errors import DqkitError, ParameterError, describe_error
from dqkit.io.sources import DatabaseSource, describe, read_database
from dqkit.runtime.progress import BackgroundRun, JobProgress
from dqkit.runtime.session import get_spark
from dqkit.systems import Params, System, get
from dqkit.widgets.declared import convert

Listener = Callable[[str], None]


class _Observable:
    """A minimal observer list: ``on_change(fn)``; ``fn(what)`` is called after each change."""

    def __init__(self) -> None:
        self._listeners: list[Listener] = []

    def on_change(self, fn: Listener) -> None:
        self._listeners.append(fn)

    def _changed(self, what: str) -> None:
        for fn in list(self._listeners):
            fn(what)


def error_text(exc: BaseException) -> str:
    """A readable message for an error, without a traceback (see ``dqkit.errors.describe_error``)."""
    return describe_error(exc)


class RunController(_Observable):
    """Start, cancel, wait for and follow one system's run in the background; every explorer uses it.

    The run is ``system.run(params(), spark=..., progress=..., cancel=...)``: a specialisation says which
    system (``system``) and turns its selections into that system's declared ``Params`` (``params()``);
    ``finish(result)`` may keep what its own views need. ``progress(stage, item, done, total)`` is the
    systems' callback; Cancel stops the run's Spark jobs by their job tag and sets ``cancel`` (an Event
    the run may watch). Outcome: ``status`` (idle/running/done/failed/cancelled), ``result``, ``error``
    (readable text), ``progress`` (a ``JobProgress`` of the running Spark jobs), ``step`` (the last
    finished item, counted in the system's declared ``progress_unit``) and ``fraction``.
    """

    #: the registered system whose run this is (its name, or the declaration)
    system: System | str | None = None

    def __init__(self, spark: SparkSession | None = None, system: System | str | None = None) -> None:
        super().__init__()
        if system is not None:
            self.system = system
        if isinstance(self.system, str):
            self.system = get(self.system)
        self.spark = spark or get_spark()
        self.cancel_event = threading.Event()
        self.status = "idle"
        self.result: Any = None
        self.error: str | None = None
        self.progress = JobProgress()
        self.step = ""
        self.steps_done = 0
        self.steps_total = 0
        self._run: BackgroundRun[Any] | None = None

    @property
    def unit(self) -> str:
        """What a step counts, for the status line: the system's declared ``progress_unit`` (the CLI's too)."""
        return self.system.progress_unit if isinstance(self.system, System) else "steps"

    def params(self) -> Params:  # pragma: no cover - abstract
        """The system's checked ``Params`` for the current selections (``System.prepare``)."""
        raise NotImplementedError

    def work(self, progress: Callable[[str, str, int, int], None]) -> Any:
        """The run: ``System.run`` with ``params()``, then ``finish``."""
        assert isinstance(self.system, System), "a RunController needs a system"
        return self.finish(self.run_system(self.system.name, self.params(), progress))

    def finish(self, result: Any) -> Any:
        """What the run gives the views (default: the result as it is)."""
        return result

    def run_system(self, name: str, params: Params, progress: Callable[[str, str, int, int], None]) -> Any:
        """One declared system's ``System.run`` inside this run (the violation explorer runs ``detect``,
        then ``repair``), with this run's session and cancel."""
        system = self.system if isinstance(self.system, System) and self.system.name == name else get(name)
        return system.run(params, spark=self.spark, progress=progress, cancel=self.cancel_event)

    def expected_steps(self) -> int:
        """How many steps the run will report (0 when unknown)."""
        return 0

    def start(self, on_done: Callable[[Any], None] | None = None) -> BackgroundRun[Any]:
        """Start the run in a background thread (so a cancel button stays clickable)."""
        if self.status == "running":
            raise ParameterError("a run is already running", hint="wait for it or cancel it")
        work = self.work  # bound now: the selections are read when the run starts
        self.status, self.error, self.result, self.step = "running", None, None, ""
        self.progress = JobProgress()
        self.cancel_event = threading.Event()
        self.steps_done, self.steps_total = 0, self.expected_steps()
        self._changed("status")
        run: BackgroundRun[Any]

        def on_step(stage: str, item: str, done: int, total: int) -> None:
            run.check_cancelled()
            self.steps_done, self.steps_total = done, total
            self.step = f"{item} done ({done}/{total} {self.unit})"
            self._changed("progress")

        def on_progress(p: JobProgress) -> None:
            self.progress = p
            self._changed("progress")

        def on_finish(r: BackgroundRun[Any]) -> None:
            self.status = r.status
            self.progress = r.progress
            if r.status == "done":
                self.result = r.result
            else:
                self.error = error_text(r.error) if r.error is not None else r.status
            self._changed("status")
            if on_done is not None:
                on_done(self)

        run = BackgroundRun(lambda: work(on_step), spark=self.spark, on_progress=on_progress, on_finish=on_finish)
        self._run = run
        run.start()
        return run

    def run(self, timeout: float | None = None) -> Any:
        """Run with the current selections and wait; returns the result (None on error).

        Errors do not raise: they land in ``error`` (readable text) and ``status``.
        """
        run = self.start()
        run.wait(timeout)
        return self.result

    def cancel(self) -> None:
        """Cancel a running run (its Spark jobs, by their tag); it ends with status ``cancelled`` and no result."""
        self.cancel_event.set()
        if self._run is not None:
            self._run.cancel()

    def wait(self, timeout: float | None = None) -> bool:
        return self._run.wait(timeout) if self._run is not None else True

    @property
    def fraction(self) -> float:
        """Overall progress: finished steps plus the task fraction of the running jobs, over all steps."""
        if self.status == "done":
            return 1.0
        if not self.steps_total:
            return self.progress.fraction
        return min(1.0, (self.steps_done + self.progress.fraction) / self.steps_total)


class TableListing(_Observable):
    """The tables of one database source, their schemas and (on demand) their row counts."""

    def __init__(self, source: DatabaseSource, spark: SparkSession | None = None) -> None:
        super().__init__()
        self.source = source
        self.spark = spark
        self.frames: dict[str, DataFrame] = {}
        self.row_counts: dict[str, int] = {}
        self.error: str | None = None
        self.refresh()

    @property
    def label(self) -> str:
        return describe(self.source)

    @property
    def tables(self) -> list[str]:
        return list(self.frames)

    def schema(self, table: str) -> list[tuple[str, str]]:
        """(column, type) pairs of ``table``."""
        return [(f.name, f.dataType.simpleString()) for f in self.frames[table].schema.fields]

    def check(self, table: str | None) -> None:
        """Refuse a table the source does not hold (``None``, no table chosen, is allowed)."""
        if table is not None and table not in self.frames:
            raise ParameterError(f"no table {table!r} in {self.label}",
                                 hint=f"tables: {', '.join(self.tables) or 'none'}")

    def frame(self, table: str | None) -> DataFrame:
        """``table`` as a DataFrame; a clear error when no table is chosen."""
        if table not in self.frames:
            raise ParameterError("no table is chosen", hint=f"tables: {', '.join(self.tables) or 'none'}")
        return self.frames[table]

    def refresh(self) -> None:
        """Re-read the source's table list (new or dropped tables show up); keeps known row counts."""
        try:
            self.frames = read_database(self.source, self.spark or get_spark())
            self.error = None
        except DqkitError as exc:
            self.frames, self.error = {}, error_text(exc)
        self.row_counts = {t: n for t, n in self.row_counts.items() if t in self.frames}
        self._changed("tables")

    def count_rows(self, tables: Iterable[str] | None = None) -> dict[str, int]:
        """Count the rows of ``tables`` (default: all); one Spark job per table."""
        for t in (self.tables if tables is None else tables):
            if t in self.frames:
                self.row_counts[t] = int(self.frames[t].count())
        self._changed("row_counts")
        return dict(self.row_counts)


class DeltaController(RunController):
    """State and actions of the delta explorer: what to compare, how, and the outcome.

    State: ``old``/``new`` listings, ``selected_tables`` (empty = every table), ``keys`` and
    ``excluded`` ({table: [columns]}), ``stages``, ``abs_tol``/``rel_tol``. Running and its outcome
    come from ``RunController``; ``tables_done``/``tables_total`` count the compared tables.
    """

    system = "delta"

    def __init__(self, old: DatabaseSource, new: DatabaseSource, *, spark: SparkSession | None = None) -> None:
        super().__init__(spark)
        self.old = TableListing(old, self.spark)
        self.new = TableListing(new, self.spark)
        self.selected_tables: list[str] = []
        self.keys: dict[str, list[str]] = {}
        self.excluded: dict[str, list[str]] = {}
        self.stages: list[str] = list(STAGE_CHOICES())
        self.abs_tol = 0.0
        self.rel_tol = 0.0
        #: accepted renames, {table: {old column: new column}} (``--rename TABLE.OLD=NEW``)
        self.renames: dict[str, dict[str, str]] = {}
        self._prune()

    @property
    def tables_done(self) -> int:
        return self.steps_done

    @property
    def tables_total(self) -> int:
        return self.steps_total

    # ----- what can be chosen
    @property
    def tables(self) -> list[str]:
        """Tables of either version, in name order (one-sided ones are reported, not compared)."""
        return sorted(set(self.old.tables) | set(self.new.tables))

    @property
    def one_sided(self) -> list[str]:
        return sorted(set(self.old.tables) ^ set(self.new.tables))

    def columns(self, table: str) -> list[tuple[str, str]]:
        """(column, type) pairs of ``table`` in the old version (the compared schema)."""
        listing = self.old if table in self.old.frames else self.new
        return listing.schema(table) if table in listing.frames else []

    # ----- selections
    def select_tables(self, tables: Sequence[str]) -> None:
        unknown = [t for t in tables if t not in self.tables]
        if unknown:
            raise ParameterError(f"not a table of either version: {', '.join(unknown)}",
                                 hint=f"tables: {', '.join(self.tables) or 'none'}")
        self.selected_tables = [t for t in self.tables if t in tables]
        self._changed("selection")

    def set_key(self, table: str, columns: Sequence[str]) -> None:
        self._set_columns(self.keys, table, columns)

    def set_excluded(self, table: str, columns: Sequence[str]) -> None:
        self._set_columns(self.excluded, table, columns)

    def _set_columns(self, target: dict[str, list[str]], table: str, columns: Sequence[str]) -> None:
        known = [c for c, _ in self.columns(table)]
        unknown = [c for c in columns if c not in known]
        if unknown:
            raise ParameterError(f"no column {', '.join(unknown)} in table {table}",
                                 hint=f"columns: {', '.join(known)}")
        if columns:
            target[table] = [c for c in known if c in columns]
        else:
            target.pop(table, None)
        self._changed("selection")

    def set_stages(self, stages: Sequence[str]) -> None:
        """The stages to run, as ``delta`` declares ``stages`` (its choices), in the kernel's order."""
        chosen = convert("delta", "stages", list(stages))
        self.stages = [s for s in STAGE_CHOICES() if s in chosen]
        self._changed("selection")

    def set_tolerance(self, abs_tol: float = 0.0, rel_tol: float = 0.0) -> None:
        """The float tolerances, as ``delta`` declares ``abs_tol`` and ``rel_tol`` (numbers >= 0)."""
        self.abs_tol, self.rel_tol = convert("delta", "abs_tol", abs_tol), convert("delta", "rel_tol", rel_tol)
        self._changed("selection")

    def accept_rename(self, table: str, old: str, new: str) -> None:
        """Compare ``table``'s old column ``old`` as its new column ``new`` from the next run on (a
        proposed rename accepted; the same check as ``--rename``)."""
        from dqkit.systems.delta import parse_renames

        merged = {t: dict(m) for t, m in self.renames.items()}
        merged.setdefault(table, {})[old] = new
        self.renames = parse_renames({t: m for t, m in merged.items()})
        self._changed("selection")

    def refresh_tables(self) -> None:
        """Re-read both table lists; selections that still exist are kept, the others dropped."""
        self.old.refresh()
        self.new.refresh()
        self._prune()
        self._changed("tables")

    def _prune(self) -> None:
        tables = set(self.tables)
        self.selected_tables = [t for t in self.selected_tables if t in tables]
        for target in (self.keys, self.excluded):
            for table in list(target):
                known = {c for c, _ in self.columns(table)} if table in tables else set()
                kept = [c for c in target[table] if c in known]
                if kept:
                    target[table] = kept
                else:
                    del target[table]
        listing_error = self.old.error or self.new.error
        if listing_error:
            self.error = listing_error

    # ----- running
    def params(self, listed: bool = True) -> Params:
        """``delta``'s checked ``Params`` for the current selections. ``listed``: compare the listings'
        DataFrames, read once (a ``{name: table}`` mapping), so a warm re-run reads no folder and infers no
        schema again (``refresh_tables`` re-reads them); else the sources as given (what a report or the
        command line would take: ``params(listed=False).to_parameters()``). A listing that failed is
        read from its source, which says why."""
        use_listing = listed and not (self.old.error or self.new.error)
        return get("delta").prepare(
            old=self.old.frames if use_listing else self.old.source,
            new=self.new.frames if use_listing else self.new.source,
            tables=list(self.selected_tables), key=[format_keys({t: cols}) for t, cols in sorted(self.keys.items())],
            exclude=[f"{t}.{c}" for t, cols in sorted(self.excluded.items()) for c in cols],
            stages=list(self.stages), abs_tol=self.abs_tol, rel_tol=self.rel_tol,
            rename=[f"{t}.{o}={n}" for t, m in sorted(self.renames.items()) for o, n in sorted(m.items())])

    def expected_steps(self) -> int:
        chosen = self.selected_tables or self.tables
        return len([t for t in chosen if t in self.old.tables and t in self.new.tables])

    def finish(self, result: Any) -> Any:
        """The result names the sources as given (and ``save`` still refuses to write into them), though
        it compared the listed tables."""
        result.parameters.update(old=describe(self.old.source), new=describe(self.new.source),
                                 _old_source=self.old.source, _new_source=self.new.source)
        return result


def STAGE_CHOICES() -> tuple[str, ...]:  # noqa: N802 - a declared constant, read when needed
    """``delta``'s stages, in the kernel's order, as its ``stages`` parameter declares them."""
    return tuple(get("delta").params.spec("stages").choices or ())


def keys_from_mapping(keys: Mapping[str, str | Sequence[str]] | None) -> dict[str, list[str]]:
    """Normalise {table: "a,b" | [a, b]} to {table: [a, b]} (``dqkit.checks.params.parse_keys``)."""
    return parse_keys(dict(keys or {}))
