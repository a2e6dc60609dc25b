"""The history of runs: an append-only Parquet dataset (one file per run) or a catalog table.

A record is one run: ``format``, ``run_id``, ``run_time`` (UTC), ``as_of`` (the date the data is of),
``system``, ``table``, ``params_digest``, ``dqkit_version``, and the run's metrics, stored long (one row
per metric: ``metric``, ``value``). A folder history holds a marker file (``_dqkit_history``) and one
``run-*.parquet`` file per append, written beside its name and renamed into place
(``dqkit.runtime.atomic.atomic_file``): a killed run leaves the history as it was, two concurrent appends
write two files and both land, and old files are never rewritten. ``compact`` bounds the number of
files: it writes every record into one new file, then removes the files it holds (a reader drops the
duplicates of a run seen twice, so a compaction killed between the two steps loses nothing).
Reading needs no Spark (pyarrow); a ``catalog:DB.TABLE`` history is read and appended through Spark.
"""
from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

from dqkit.errors import DqkitError

#: the record format this dqkit writes; a record of a higher format was written by a newer dqkit
FORMAT = 1
MARKER = "_dqkit_history"
CATALOG = "catalog:"
COLUMNS = ("format", "run_id", "run_time", "as_of", "system", "table", "params_digest", "dqkit_version",
           "metric", "value")


class HistoryError(DqkitError):
    """A history that cannot be read or written as one (exit 2; the history is left as it was)."""


@dataclass(frozen=True)
class Run:
    """One record: a run's identity and its metrics."""

    run_id: str
    run_time: datetime
    as_of: date
    system: str
    table: str
    params_digest: str
    metrics: dict[str, float]
    dqkit_version: str = ""
    format: int = FORMAT


def _schema() -> Any:
    import pyarrow as pa

    return pa.schema([("format", pa.int32()), ("run_id", pa.string()), ("run_time", pa.timestamp("us", tz="UTC")),
                      ("as_of", pa.date32()), ("system", pa.string()), ("table", pa.string()),
                      ("params_digest", pa.string()), ("dqkit_version", pa.string()), ("metric", pa.string()),
                      ("value", pa.float64())])


def new_run(system: str, table: str, params_digest: str, metrics: dict[str, float], as_of: date,
            run_time: datetime | None = None) -> Run:
    """A record of a run made now (its id unique)."""
    from dqkit import __version__

    return Run(uuid.uuid4().hex, run_time or datetime.now(timezone.utc), as_of, system, table, params_digest,
               {str(k): float(v) for k, v in metrics.items()}, __version__)


class History:
    """A history at ``location`` (a folder, or ``catalog:DB.TABLE``). Constructing it checks, without
    Spark for a folder, that the location is a history (or absent, or an empty folder)."""

    def __init__(self, location: str | os.PathLike) -> None:
        text = os.fspath(location)
        self.location = text
        self.catalog = text[len(CATALOG):] if text.startswith(CATALOG) else None
        if self.catalog is not None:
            if self.catalog.count(".") != 1 or not all(self.catalog.split(".")):
                raise HistoryError(f"{text} does not name a catalog table", hint="write catalog:DB.TABLE")
            return
        self.path = Path(text).expanduser().resolve()
        if self.path.exists() and not self.path.is_dir():
            raise HistoryError(f"the history {self.path} is a file, not a folder", hint="name a folder for the history")
        if self.path.is_dir() and not (self.path / MARKER).exists():
            visible = [p.name for p in self.path.iterdir() if not p.name.startswith(".")]
            if visible:
                raise HistoryError(f"{self.path} is not a dqkit history: it holds {', '.join(sorted(visible)[:3])}"
                                   f"{' ...' if len(visible) > 3 else ''} and no {MARKER} marker",
                                   hint="name a new or empty folder, or one that --history wrote")
        if (self.path / MARKER).exists():
            self._check_marker()

    # ------------------------------------------------------------------ reading
    def _check_marker(self) -> None:
        try:
            fmt = int(json.loads((self.path / MARKER).read_text(encoding="utf-8"))["format"])
        except (OSError, ValueError, KeyError, TypeError):
            raise HistoryError(f"the marker {self.path / MARKER} is damaged",
                               hint="restore it from a backup; dqkit wrote it as {\"format\": N}") from None
        if fmt > FORMAT:
            raise HistoryError(f"the history {self.path} was written by a newer dqkit (format {fmt}; this one "
                               f"reads up to {FORMAT})", hint="upgrade dqkit to read or append to it")

    def files(self) -> list[Path]:
        """The visible Parquet files of a folder history, in name order."""
        if self.catalog is not None or not self.path.is_dir():
            return []
        return sorted(p for p in self.path.iterdir() if p.suffix == ".parquet" and not p.name.startswith("."))

    def read(self, spark: Any = None) -> Any:
        """Every record as a pandas frame (long: one row per metric), duplicates of a run dropped; a
        corrupt file or a record of a newer format is a ``HistoryError`` naming it."""
        import pandas as pd

        if self.catalog is not None:
            frame = self._read_catalog(spark)
        else:
            files = self.files()
            if not files:
                return pd.DataFrame({c: pd.Series(dtype=object) for c in COLUMNS})
            frame = _read_files(files)
        if len(frame):
            newest = int(frame["format"].max())
            if newest > FORMAT:
                raise HistoryError(f"the history {self.location} holds a record of format {newest}, written by a "
                                   f"newer dqkit (this one reads up to {FORMAT})",
                                   hint="upgrade dqkit to read or append to it")
        frame = frame.drop_duplicates(["run_id", "metric"], keep="first")
        frame["as_of"] = pd.to_datetime(frame["as_of"]).dt.date
        return frame.reset_index(drop=True)

    def _read_catalog(self, spark: Any) -> Any:
        import pandas as pd

        from dqkit.runtime.session import get_spark

        spark = spark or get_spark()
        if not spark.catalog.tableExists(self.catalog):
            return pd.DataFrame({c: pd.Series(dtype=object) for c in COLUMNS})
        frame = spark.table(self.catalog)
        missing = [c for c in COLUMNS if c not in frame.columns]
        if missing:
            raise HistoryError(f"the table {self.catalog} is not a dqkit history (no {', '.join(missing)})",
                               hint="name a new table, or one that --history wrote")
        return frame.select(*COLUMNS).toPandas()

    # ------------------------------------------------------------------ writing
    def append(self, run: Run, spark: Any = None) -> str:
        """Add ``run`` as one new file (or rows of the catalog table); returns where it went."""
        import pyarrow as pa

        n = len(run.metrics)
        table = pa.table({"format": [run.format] * n, "run_id": [run.run_id] * n, "run_time": [run.run_time] * n,
                          "as_of": [run.as_of] * n, "system": [run.system] * n, "table": [run.table] * n,
                          "params_digest": [run.params_digest] * n, "dqkit_version": [run.dqkit_version] * n,
                          "metric": list(run.metrics), "value": list(run.metrics.values())}, schema=_schema())
        if self.catalog is not None:
            from dqkit.runtime.session import get_spark

            from dqkit.runtime.sparkutil import quote_ident as q

            spark = spark or get_spark()
            db, name = self.catalog.split(".")
            spark.sql(f"CREATE DATABASE IF NOT EXISTS {q(db)}")
            spark.createDataFrame(table.to_pandas()).write.mode("append").saveAsTable(f"{q(db)}.{q(name)}")
            return f"{CATALOG}{self.catalog}"
        from dqkit.runtime.atomic import atomic_file, sweep_folder

        self.path.mkdir(parents=True, exist_ok=True)
        sweep_folder(self.path)  # a killed append's temporary (every append writes a new name) goes now
        if not (self.path / MARKER).exists():
            atomic_file(self.path / MARKER,
                        lambda tmp: tmp.write_text(json.dumps({"format": FORMAT}) + "\n", encoding="utf-8"))
        stamp = run.run_time.strftime("%Y%m%dT%H%M%S%f")
        target = self.path / f"run-{run.as_of.isoformat()}-{stamp}-{run.run_id[:8]}.parquet"
        _write(table, target)
        return str(target)

    def compact(self) -> tuple[int, int]:
        """Rewrite every record of a folder history into one file, then remove the files it holds:
        returns (files before, files after). Records are kept as they were (ids, times, values)."""
        if self.catalog is not None:
            raise HistoryError("a catalog history is compacted by its table format, not by dqkit",
                               hint="run OPTIMIZE (or the catalog's own compaction) on the table")
        import pyarrow as pa

        files = self.files()
        if len(files) <= 1:
            return len(files), len(files)
        frame = self.read()
        table = pa.Table.from_pandas(frame[list(COLUMNS)], schema=_schema(), preserve_index=False)
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%f")
        _write(table, self.path / f"compact-{stamp}-{uuid.uuid4().hex[:8]}.parquet")
        for f in files:
            f.unlink(missing_ok=True)
        return len(files), len(self.files())


def _write(table: Any, target: Path) -> None:
    import pyarrow.parquet as pq

    from dqkit.runtime.atomic import atomic_file

    def write(tmp: Path) -> None:
        pq.write_table(table, tmp)
        with open(tmp, "rb") as f:  # the bytes reach the disk before the name does
            os.fsync(f.fileno())

    atomic_file(target, write)


def _read_files(files: list[Path]) -> Any:
    """The files read as one frame; a file pyarrow cannot read (or that is not a record file) is named."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.dataset as ds

    try:
        table = ds.dataset([str(f) for f in files], format="parquet").to_table()
        if set(COLUMNS) - set(table.column_names):
            raise ValueError("missing columns")
        return table.select(list(COLUMNS)).to_pandas()
    except (pa.ArrowException, OSError, ValueError):
        import pyarrow.parquet as pq

        for f in files:
            try:
                names = pq.read_schema(f).names
                pq.read_table(f)
            except (pa.ArrowException, OSError, ValueError) as exc:
                raise HistoryError(f"the history file {f} is corrupt ({type(exc).__name__})",
                                   hint="move it out of the history folder (its run is lost) and rerun") from None
            if set(COLUMNS) - set(names):
                raise HistoryError(f"the file {f} is not a dqkit history record "
                                   f"(no {', '.join(sorted(set(COLUMNS) - set(names)))})",
                                   hint="keep only files --history wrote in the history folder")
        raise
    return pd.DataFrame()  # pragma: no cover
