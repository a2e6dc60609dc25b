"""Plain-Python controllers behind the widgets: state and calls into dqkit, no ipywidgets.

The views in this package bind ipywidgets to these objects; tests drive the controllers (and the
views) headlessly. Controllers call dqkit's public API only.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from dqkit.delta import STAGES, DeltaResult, delta
from dqkit.errors import DqkitError, ParameterError, describe_error
from dqkit.checks.params import format_keys, parse_keys
from dqkit.runtime.progress import BackgroundRun, JobProgress
from dqkit.runtime.session import get_spark
from dqkit.io.sources import DatabaseSource, describe, read_database
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
    """Start, cancel, wait for and follow one kernel run in the background; every explorer uses it.

    A subclass implements ``work(progress)``: call the kernel with ``progress`` (the kernels' callback
    ``progress(stage, item, done, total)``) and return its result. Outcome: ``status``
    (idle/running/done/failed/cancelled), ``result``, ``error`` (readable text), ``progress`` (a
    ``JobProgress`` of the running Spark jobs), ``step`` (the last finished item) and ``fraction``.
    """

    #: what a step counts, for the status line ("tables", "rules")
    unit = "steps"

    def __init__(self, spark: SparkSession | None = None) -> None:
        super().__init__()
        self.spark = spark or get_spark()
        self.status = "idle"
        self.result: Any = None
        self.error: str | None = None
        self.progress = JobProgress()
        self.step = ""
        self.steps_done = 0
        self.steps_total = 0
        self._run: BackgroundRun[Any] | None = None

    def work(self, progress: Callable[[str, str, int, int], None]) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

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
        """Cancel a running run; it ends with status ``cancelled`` and no result."""
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

    unit = "tables"

    def __init__(self, old: DatabaseSource, new: DatabaseSource, *, spark: SparkSession | None = None) -> None:
        super().__init__(spark)
        self.old = TableListing(old, self.spark)
        self.new = TableListing(new, self.spark)
        self.selected_tables: list[str] = []
        self.keys: dict[str, list[str]] = {}
        self.excluded: dict[str, list[str]] = {}
        self.stages: list[str] = list(STAGES)
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
        self.stages = [s for s in STAGES if s in chosen]
        self._changed("selection")

    def set_tolerance(self, abs_tol: float = 0.0, rel_tol: float = 0.0) -> None:
        """The float tolerances, as ``delta`` declares ``abs_tol`` and ``rel_tol`` (numbers >= 0)."""
        self.abs_tol, self.rel_tol = convert("delta", "abs_tol", abs_tol), convert("delta", "rel_tol", rel_tol)
        self._changed("selection")

    def accept_rename(self, table: str, old: str, new: str) -> None:
        """Compare ``table``'s old column ``old`` as its new column ``new`` from the next run on (a
        proposed rename accepted; the same check as ``--rename``)."""
        from dqkit.delta.schema import parse_renames

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
    def arguments(self) -> dict[str, Any]:
        """The keyword arguments ``dqkit.delta.delta`` gets for the current selections."""
        return {"tables": list(self.selected_tables) or None,
                "exclude": [f"{t}.{c}" for t, cols in sorted(self.excluded.items()) for c in cols],
                "keys": {t: list(cols) for t, cols in sorted(self.keys.items())},
                "stages": list(self.stages), "abs_tol": self.abs_tol, "rel_tol": self.rel_tol,
                **({"renames": {t: dict(m) for t, m in sorted(self.renames.items())}} if self.renames else {})}

    def expected_steps(self) -> int:
        args = self.arguments()
        return len([t for t in (args["tables"] or self.tables) if t in self.old.tables and t in self.new.tables])

    def work(self, progress: Callable[[str, str, int, int], None]) -> DeltaResult:
        """Compare the tables as listed: the listings' DataFrames, read once, so a warm re-run reads no
        folder and infers no schema again (``refresh_tables`` re-reads them). The result names the
        sources as given, and ``save`` still refuses to write into them."""
        args = self.arguments()
        if self.old.error or self.new.error:  # a listing failed: reading the source says why, as before
            return delta(self.old.source, self.new.source, spark=self.spark, progress=progress, **args)
        result = delta(self.old.frames, self.new.frames, spark=self.spark, progress=progress, **args)
        result.parameters.update(old=describe(self.old.source), new=describe(self.new.source),
                                 _old_source=self.old.source, _new_source=self.new.source)
        return result

    def as_parameters(self) -> dict[str, str]:
        """The selections as ``dqkit report delta`` parameters (strings), to reproduce the run."""
        args = self.arguments()
        return {"old": describe(self.old.source), "new": describe(self.new.source),
                "tables": ",".join(args["tables"] or []),
                "keys": format_keys(args["keys"]),
                "exclude": ",".join(args["exclude"]), "stages": ",".join(args["stages"]),
                "abs_tol": str(self.abs_tol), "rel_tol": str(self.rel_tol),
                **({"rename": ",".join(f"{t}.{o}={n}" for t, m in sorted(self.renames.items())
                                       for o, n in m.items())} if self.renames else {})}


def keys_from_mapping(keys: Mapping[str, str | Sequence[str]] | None) -> dict[str, list[str]]:
    """Normalise {table: "a,b" | [a, b]} to {table: [a, b]} (``dqkit.checks.params.parse_keys``)."""
    return parse_keys(dict(keys or {}))
