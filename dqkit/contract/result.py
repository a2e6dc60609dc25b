"""The one result contract every dqkit system follows.

Long because it is the contract in one place: the section blocks, the base every result extends
(render, save, metrics, exit codes) and the saving helpers they share.

A system's result implements three things:

* ``to_dict()``: JSON-ready summary (what ``--format json`` prints and ``summary.json`` holds);
* ``sections()``: the titled parts a person reads, in order: a ``Verdict`` first, then ``Facts``,
  ``Table``, ``Chart``, ``Changes`` and ``Notes`` blocks, each with a stable ``key`` naming its role
  (``summary``, ``charts``...), which ``System.tabs`` names to place it in a widget tab;
* ``frames()``: the Spark DataFrames worth persisting, by relative name.

The base ``Result`` turns those into ``to_text()``, ``to_html()``, ``_repr_html_()``,
``figures()``, ``exit_code`` and ``save(target, overwrite=False)``, once for every system, so the CLI,
the widgets and the report templates show the same words.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from dqkit.contract import render
from dqkit.errors import ParameterError
from dqkit.exitcodes import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK  # noqa: F401 - defined once there, re-exported
from dqkit.checks.preflight import TABLE_FILE_SUFFIXES, check_out
from dqkit.runtime.atomic import fault_point


#: rows a result fetches at least for a sample it shows, and keeps: showing it again, or another page
#: of up to this many rows, runs no Spark job (the widgets' paging)
SAMPLE_PREFETCH = 50


# --------------------------------------------------------------------------------------------
# Section blocks: what a person reads. Each renders itself as text and as escaped HTML.
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Verdict:
    """The outcome in one word (``label``) and one line (``summary``); ``ok`` sets the exit code."""

    ok: bool
    label: str
    summary: str = ""
    title: str = ""
    key: str = field(default="", kw_only=True)

    def to_text(self) -> str:
        return f"{self.label}: {self.summary}" if self.summary else self.label

    def to_html(self, charts: bool = True) -> str:
        cls = "ok" if self.ok else "bad"
        summary = f"<span class='summary'>{render.esc(self.summary)}</span>" if self.summary else ""
        return f"<div class='verdict {cls}'><span class='label'>{render.esc(self.label)}</span>{summary}</div>"

    def _repr_html_(self) -> str:
        return render.wrap(self.to_html())


@dataclass(frozen=True)
class Facts:
    """Name/value pairs, such as what was compared and with which parameters."""

    title: str
    items: Mapping[str, Any]
    key: str = field(default="", kw_only=True)

    def to_text(self) -> str:
        width = max((len(str(k)) for k in self.items), default=0)
        return "\n".join(f"{str(k):<{width}}  {render.plain(v)}" for k, v in self.items.items())

    def to_html(self, charts: bool = True) -> str:
        rows = "".join(f"<tr><th class='l'>{render.esc(k)}</th><td class='l'>{render.esc(render.plain(v))}</td></tr>"
                       for k, v in self.items.items())
        return f"<table class='facts'>{rows}</table>"

    def _repr_html_(self) -> str:
        return render.wrap(_titled(self))


@dataclass(frozen=True)
class Table:
    """A small pandas frame (a statistic table or a bounded sample), with an optional note."""

    title: str
    frame: pd.DataFrame
    note: str = ""
    max_rows: int | None = None
    key: str = field(default="", kw_only=True)

    def to_text(self) -> str:
        text = render.text_table(self.frame if self.max_rows is None else self.frame.head(self.max_rows))
        return text + (f"\n{self.note}" if self.note else "")

    def to_html(self, charts: bool = True) -> str:
        note = f"<p class='muted'>{render.esc(self.note)}</p>" if self.note else ""
        return render.html_table(self.frame, self.max_rows) + note

    def _repr_html_(self) -> str:
        return render.wrap(_titled(self))


@dataclass(frozen=True)
class Chart:
    """A chart drawn on demand (``build()`` returns a matplotlib Figure); ``name`` is its file stem."""

    title: str
    name: str
    build: Callable[[], Any] = field(repr=False, compare=False)
    key: str = field(default="", kw_only=True)

    def to_text(self) -> str:
        return ""  # charts have no text form; the numbers are in the tables beside them

    def png(self) -> bytes:
        """The chart drawn once as PNG bytes, kept: a saved folder's ``NAME.png`` and its report.html
        embed the same drawing (drawing is most of the time a saved result's charts take)."""
        kept = self.__dict__.get("_dq_png")  # also on this frozen dataclass
        if kept is None:
            from dqkit.contract import charts as ch

            kept = self.__dict__["_dq_png"] = ch.png_bytes(self.build())
        return kept

    def to_html(self, charts: bool = True) -> str:
        if not charts:
            return ""
        from dqkit.contract import charts as ch

        return ch.img_tag(self.png(), self.title)

    def _repr_html_(self) -> str:
        return render.wrap(_titled(self))


@dataclass(frozen=True)
class Notes:
    """Messages and warnings, one line each."""

    title: str
    items: Sequence[str]
    key: str = field(default="", kw_only=True)

    def to_text(self) -> str:
        return "\n".join(f"note: {i}" for i in self.items)

    def to_html(self, charts: bool = True) -> str:
        return render.bullet_list(self.items)

    def _repr_html_(self) -> str:
        return render.wrap(_titled(self))


Block = Verdict | Facts | Table | Chart | Notes


def keyed(key: str, blocks: Any) -> Any:
    """``blocks`` (one block or a list) with the stable section ``key`` set on each block that has none.

    A key names a section's role (``summary``, ``row_delta``, ``charts``...): ``System.tabs`` names keys,
    so a widget routes a section by its key, never by its title (rewording a title moves nothing).
    """
    import dataclasses

    if isinstance(blocks, (list, tuple)):
        return [keyed(key, b) for b in blocks]
    return blocks if getattr(blocks, "key", "") else dataclasses.replace(blocks, key=key)


def section_keys(blocks: Iterable[Any]) -> list[str]:
    """The distinct keys of ``blocks``, in order of first appearance."""
    out: list[str] = []
    for b in blocks:
        k = getattr(b, "key", "")
        if k not in out:
            out.append(k)
    return out


def _titled(block: Any, charts: bool = True, level: int = 3) -> str:
    body = block.to_html(charts)
    if not body:
        return ""
    head = f"<h{level}>{render.esc(block.title)}</h{level}>" if getattr(block, "title", "") else ""
    return head + body


def sections_text(blocks: Iterable[Any]) -> str:
    """Plain text of blocks: titles underlined, charts left out."""
    out: list[str] = []
    for b in blocks:
        body = b.to_text()
        if not body:
            continue
        if getattr(b, "title", "") and not isinstance(b, Verdict):
            out += ["", b.title, "-" * len(b.title)]
        out.append(body)
    return "\n".join(out).strip("\n")


def sections_html(blocks: Iterable[Any], charts: bool = True) -> str:
    """HTML of blocks inside one ``dqkit`` div; every value escaped by ``dqkit.contract.render``."""
    return "<div class='dqkit'>" + "".join(_titled(b, charts) for b in blocks) + "</div>"


def result_html(system: str, blocks: Iterable[Any], charts: bool = True) -> str:
    """A result's HTML fragment: the system's name over its blocks (``Result.to_html``, a saved page)."""
    return f"<div class='dqkit'><h2>{render.esc(system)}</h2></div>" + sections_html(blocks, charts)


# --------------------------------------------------------------------------------------------
# Output targets: refused before any work when they would touch an input
# --------------------------------------------------------------------------------------------

CATALOG_PREFIX = "catalog:"


def check_output_target(target: str | os.PathLike, inputs: Iterable[Any] = (), overwrite: bool = False) -> None:
    """Refuse an output target that would destroy data, before any work is done.

    A folder target that is, contains or lies inside an input path is always refused (saving would
    replace the input). An existing target is refused unless ``overwrite``. A target under a regular
    file is refused. ``catalog:DB`` targets are checked when saving (they need a session). The one
    implementation is ``dqkit.checks.preflight.check_out``, which the commands also run before Spark starts.
    """
    check_out(target, inputs, overwrite)




def save_table_files(files: Mapping[str | os.PathLike, Any], inputs: Iterable[Any] = (),
                     overwrite: bool = False) -> list[str]:
    """Write each DataFrame as one file (``.csv`` with a header, or ``.parquet``), rows in order.

    All files are written into a temporary folder beside the first target and only then renamed into
    place, so a failure leaves no file behind. An existing target is refused unless ``overwrite``; a
    target that is a folder, or is or lies inside an input, is always refused.
    """
    import glob
    import shutil

    from dqkit.runtime.atomic import commit_files, disk_full, is_disk_full, sweep, temp_name

    targets = {Path(os.fspath(t)).expanduser().resolve(): df for t, df in files.items()}
    for out in targets:
        sweep(out)  # a killed run's commit is finished (or its temporaries removed) before the checks
    for out in targets:
        if out.suffix.lower() not in TABLE_FILE_SUFFIXES:
            raise ParameterError(f"cannot tell the format of {out}", hint="end the file name in .csv or .parquet")
        for source in inputs:
            if not isinstance(source, (str, os.PathLike)) or os.fspath(source).startswith(CATALOG_PREFIX):
                continue
            inp = Path(os.fspath(source)).expanduser().resolve()
            if out == inp or _inside(out, inp):
                raise ParameterError(f"the output {out} would overwrite the input {inp}",
                                     hint="write the output outside every input")
        if out.is_dir():
            raise ParameterError(f"the output {out} is a folder, not a file", hint="name a .csv or .parquet file")
        if out.exists() and not overwrite:
            raise ParameterError(f"the output {out} exists", hint="choose a new name, or pass overwrite "
                                                                  "(--overwrite) to replace it")
    first = next(iter(targets))
    first.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(first)  # named for this run: a killed run's folder is removed by the next (sweep)
    try:
        tmp.mkdir()
        fault_point("start-write")
        staged = []
        for i, (out, df) in enumerate(targets.items()):
            sub = tmp / str(i)
            writer = df.coalesce(1).write  # one task reads the (sorted) partitions in order
            if out.suffix.lower() == ".csv":
                writer.option("header", True).csv(sub.as_posix())
            else:
                writer.parquet(sub.as_posix())
            fault_point("mid-write")
            parts = sorted(glob.glob((sub / "part-*").as_posix()))
            if len(parts) != 1:
                raise ParameterError(f"Spark wrote {len(parts)} files for {out.name}, expected one")
            staged.append((Path(parts[0]), out))
        commit_files(tmp, staged, overwrite=overwrite)
    except Exception as exc:
        if is_disk_full(exc):
            raise disk_full(first) from None
        raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return [str(t) for t in targets]


#: bytes per saved file: a saved table gets as many files as its size needs at this much each
FILE_BYTES = 128 * 1024 * 1024


def sized_for_files(frame: Any, file_bytes: int = FILE_BYTES, rows: int | None = None) -> Any:
    """``frame`` with at most as many partitions (so files, when written) as its size needs at
    ``file_bytes`` each. The size is Spark's own estimate of its plan, or, when ``rows`` (its row count,
    known to the result) is given and says less, ``rows`` times the width of its schema's values: Spark's
    estimate of a join or of a checkpoint of one is the product of its sides. As it is when neither is
    known (Spark Connect without a row count). ``coalesce`` never adds partitions or a shuffle and keeps
    the rows' order, so a small result is one file whatever the shuffle setting or its batches."""
    from dqkit.runtime.sparkutil import estimated_bytes

    size = estimated_bytes(frame)
    if rows is not None:
        by_rows = max(1, rows) * row_bytes(frame.schema)
        size = by_rows if size is None else min(size, by_rows)
    files = -(-size // file_bytes) if size is not None and size > 0 else 0
    return frame.coalesce(files) if 0 < files < _MAX_FILES else frame


def row_bytes(schema: Any) -> int:
    """The width of a row of ``schema`` as Spark sizes values (8 bytes a number, 20 a string, nested
    types summed), plus 8 bytes of row overhead."""
    from pyspark.sql import types as T

    def width(t: Any) -> int:
        if isinstance(t, T.StructType):
            return sum(width(f.dataType) for f in t.fields)
        if isinstance(t, (T.ArrayType, T.MapType)):
            return 100
        if isinstance(t, (T.StringType, T.BinaryType)):
            return 20
        if isinstance(t, (T.BooleanType, T.ByteType)):
            return 1
        if isinstance(t, (T.ShortType,)):
            return 2
        if isinstance(t, (T.IntegerType, T.FloatType, T.DateType)):
            return 4
        return 8

    return 8 + width(schema)


_MAX_FILES = 100_000  # an estimate beyond this many files is Spark's "unknown" (a join's product): as it is


def _inside(child: Path, parent: Path) -> bool:
    try:
        child.relative_to(parent)
        return child != parent
    except ValueError:
        return False


def save_catalog(database: str, frames: Mapping[str, Any], overwrite: bool = False) -> str:
    """Write frames as managed tables of ``database``: each under a temporary name, then renamed.

    Existing tables of the same names are refused unless ``overwrite``; a failure drops what it wrote.
    """
    import time

    from dqkit.runtime.sparkutil import quote_ident as q

    if not database.strip():
        raise ParameterError("the catalog database name is empty", hint="write catalog:DBNAME")
    if not frames:
        raise ParameterError("nothing to save: the result holds no tables")
    spark = next(iter(frames.values())).sparkSession
    names = {rel: rel.replace("/", "_") for rel in frames}
    if spark.catalog.databaseExists(database) and not overwrite:
        existing = [n for n in names.values() if spark.catalog.tableExists(f"{database}.{n}")]
        if existing:
            raise ParameterError(f"catalog database {database} already has {', '.join(existing)}",
                                 hint="choose another database, or pass overwrite (--overwrite)")
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {q(database)}")
    suffix = f"__dq_tmp_{int(time.time() * 1000)}"
    written: list[str] = []
    try:
        for rel, frame in frames.items():
            name = names[rel]
            frame.write.mode("error").saveAsTable(f"{q(database)}.{q(name + suffix)}")
            written.append(name)
    except BaseException:
        for name in written:
            spark.sql(f"DROP TABLE IF EXISTS {q(database)}.{q(name + suffix)}")
        raise
    for name in written:
        spark.sql(f"DROP TABLE IF EXISTS {q(database)}.{q(name)}")
        spark.sql(f"ALTER TABLE {q(database)}.{q(name + suffix)} RENAME TO {q(database)}.{q(name)}")
    return f"{CATALOG_PREFIX}{database}"


# --------------------------------------------------------------------------------------------
# The base
# --------------------------------------------------------------------------------------------

class Result:
    """Base of every system's result. Subclasses implement ``to_dict``, ``sections`` and ``frames``.

    ``system`` names the system in titles (``dqkit delta``); ``inputs()`` lists the input paths that
    ``save`` must never overwrite; ``_save_extra(folder)`` adds system-specific files to a saved folder.
    """

    system: str = "dqkit"

    # ----- what a system provides
    def to_dict(self) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def sections(self, sample_rows: int = 10) -> list[Any]:  # pragma: no cover - abstract
        """The blocks a person reads, a ``Verdict`` first; samples hold at most ``sample_rows`` rows."""
        raise NotImplementedError

    def frames(self, **options: Any) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def inputs(self) -> list[Any]:
        """Input paths of this run (never overwritten by ``save``)."""
        return []

    def metrics(self) -> dict[str, float]:
        """A flat mapping of named numbers about the data (never timings), which ``--history`` records
        and the anomaly gates judge run after run. The default flattens the numbers of ``to_dict()``;
        a system names its own (``dqkit.contract.metrics``)."""
        from dqkit.contract.metrics import flatten

        return flatten(self.to_dict())

    def frame_rows(self, **options: Any) -> dict[str, int]:
        """The row counts of ``frames()`` the result already knows, by name (``save`` sizes its files by
        them where Spark's estimate cannot bound a frame: a join, a checkpoint of one)."""
        return {}

    def _save_extra(self, folder: Path) -> None:
        """System-specific files of a saved folder (CSV statistics, plans)."""

    # ----- given once
    def first_rows(self, what: Any, n: int, fetch: Callable[[int], Sequence[Any]]) -> list[Any]:
        """The first ``n`` rows of the sample ``what`` (any hashable name): ``fetch(k)`` runs once for
        ``k = max(n, SAMPLE_PREFETCH)`` rows and its rows are kept on the result, so showing it again,
        or another page of up to that many rows, runs no Spark job (the widgets' paging)."""
        kept = self.__dict__.setdefault("_dq_first_rows", {})  # also on frozen dataclasses
        limit, rows = kept.get(what, (0, []))
        if not limit or (len(rows) < n and len(rows) == limit):  # never fetched, or there may be more
            limit = max(int(n), SAMPLE_PREFETCH)
            rows = list(fetch(limit))
            kept[what] = (limit, rows)
        return rows[:n]

    @property
    def verdict(self) -> Verdict:
        """The first ``Verdict`` of ``sections()``."""
        for block in self.sections(sample_rows=0):
            if isinstance(block, Verdict):
                return block
        raise NotImplementedError(f"{type(self).__name__}.sections() has no Verdict")

    def __repr__(self) -> str:
        """One line: the system, its verdict and headline counts (never a dump of the fields)."""
        try:
            verdict = self.verdict.to_text()
        except Exception as exc:  # noqa: BLE001 - a repr must never raise
            verdict = f"(verdict unavailable: {type(exc).__name__})"
        return f"<{type(self).__name__} {self.system}: {' '.join(verdict.split())}>"

    @property
    def exit_code(self) -> int:
        """0 when the verdict is ok (identical, no violation), 1 otherwise; errors exit 2 in the CLI."""
        return EXIT_OK if self.verdict.ok else EXIT_FINDINGS

    def to_text(self, sample_rows: int = 10) -> str:
        """A terminal summary: the verdict line, then every section in order (charts left out)."""
        return f"{self.system}: " + sections_text(self.sections(sample_rows=sample_rows))

    def to_html(self, sample_rows: int = 10, charts: bool = True) -> str:
        """An HTML fragment (one ``div.dqkit``) of every section; every value escaped."""
        return result_html(self.system, self.sections(sample_rows=sample_rows), charts)

    def _repr_html_(self) -> str:
        return render.HTML_STYLE + self.to_html(sample_rows=5, charts=False)

    def to_page(self, sample_rows: int = 10, charts: bool = True) -> str:
        """A self-contained HTML page of ``to_html`` (no external resources)."""
        return render.page(self.system, self.to_html(sample_rows, charts))

    def figures(self) -> list[tuple[str, Any]]:
        """Every chart of the result as (file stem, figure), drawn now."""
        return [(b.name, b.build()) for b in self.sections(sample_rows=0) if isinstance(b, Chart)]

    def save(self, target: str | os.PathLike, overwrite: bool = False, *, charts: bool = True,
             **frame_options: Any) -> str:
        """Persist the result atomically; return where it went.

        ``target`` is a folder or ``catalog:DB``. A folder gets ``summary.json``, ``report.html`` (the
        same sections as ``to_html``), chart PNGs, one Parquet folder per frame and the system's own
        files; it is written beside the target and renamed into place, so a failure leaves nothing
        half-written. An existing target is refused unless ``overwrite``; a target that is, contains
        or lies inside an input is always refused.
        """
        text = os.fspath(target)
        check_output_target(text, self.inputs(), overwrite)
        frames = self.frames(**frame_options)
        if text.startswith(CATALOG_PREFIX):
            return save_catalog(text[len(CATALOG_PREFIX):], frames, overwrite)

        def write(tmp: Path) -> None:
            rows = self.frame_rows(**frame_options)
            for rel, frame in frames.items():  # files sized to the data, not to the partitions
                sized_for_files(frame, rows=rows.get(rel)).write.mode("error").parquet((tmp / rel).as_posix())
                fault_point("mid-write")
            (tmp / "summary.json").write_text(render.dumps(self.to_dict()), encoding="utf-8")
            self._save_extra(tmp)
            blocks = self.sections(sample_rows=10)  # as to_page: each chart drawn once for its PNG and the page
            if charts:
                for chart in (b for b in blocks if isinstance(b, Chart)):
                    (tmp / f"{chart.name}.png").write_bytes(chart.png())
            (tmp / "report.html").write_text(render.page(self.system, result_html(self.system, blocks, charts)), encoding="utf-8")

        return str(render.atomic_folder(text, write, overwrite=overwrite))
