"""Spark helpers every kernel uses, written once.

* identifiers: ``quote_ident`` (backtick-quoted, backticks doubled) and ``col`` (a Column by its exact
  name), so a user's column named ``a.b`` or ``na`me`` is never parsed as a path or an expression;
  ``map_in_pandas``, ``apply_in_pandas`` and ``cogroup_in_pandas`` pass such columns to pandas too;
* small frames built on the driver: ``local_frame`` (no Python workers when Spark reads them);
* planner settings: ``scoped_conf`` sets SQL options for the queries planned inside a block;
* observed metrics: ``observed`` reads an ``Observation`` that Spark may not have reported;
* cancellation: ``cancellable`` / ``cancelled_from`` turn a Spark job cancelled through its job tag
  (``dqkit.runtime.progress``) into ``dqkit.errors.CancelledError``;
* plan inspection: ``spark_plan``, ``executed_plan`` and ``estimated_bytes``;
* lineage cuts: ``checkpoint`` (reliable on a cluster or when a checkpoint folder is set, local
  otherwise; the folders' lifecycle is ``dqkit.runtime.checkpoints``).
"""
from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Callable, Iterator
from typing import Any

from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.runtime.checkpoints import CHECKPOINT_ENV, created, fallback_folder, history, local_path
from dqkit.errors import CancelledError, DqkitError

__all__ = ["quote_ident", "col", "local_frame", "map_in_pandas", "apply_in_pandas", "cogroup_in_pandas", "scoped_conf", "observed", "cancelled_from", "cancellable", "spark_plan",
           "executed_plan", "estimated_bytes", "checkpoint", "checkpoint_folder"]


# ------------------------------------------------------------------------------------- identifiers
def quote_ident(name: str) -> str:
    """``name`` as a Spark SQL identifier: in backticks, with each backtick inside doubled."""
    return "`" + name.replace("`", "``") + "`"


def col(name: str) -> Column:
    """The column called exactly ``name`` (dots, spaces and backticks in it are part of the name)."""
    return F.col(quote_ident(name))


def local_frame(spark: SparkSession, rows: list[tuple], schema: T.StructType) -> DataFrame:
    """A small table built on the driver (``rows`` in ``schema``'s field order) whose scans stay in the JVM.

    ``spark.createDataFrame(list, schema)`` is a Python RDD: every job that reads it, through a union or a
    broadcast, runs Python worker tasks to re-pickle its rows (an empty one too, one task per default
    partition). No rows give an empty one-partition range with typed null columns; rows go through Arrow,
    which Spark decodes itself (a local relation over Spark Connect as well).
    """
    if not rows:
        return spark.range(0, 0, 1, 1).select(*[F.lit(None).cast(f.dataType).alias(f.name) for f in schema.fields])
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    arrow = to_arrow_schema(schema)
    columns = list(zip(*rows))
    table = pa.Table.from_arrays([pa.array(list(c), type=arrow.field(i).type) for i, c in enumerate(columns)],
                                 schema=arrow)
    return spark.createDataFrame(table, schema)


def _pandas_safe(df: DataFrame) -> tuple[DataFrame, Callable[[Any], Any] | None]:
    """``df`` with the columns PySpark cannot hand to a pandas function renamed, and the function that
    gives a pandas batch their names back (None when no column needed it).

    PySpark's ``mapInPandas``/``applyInPandas`` pass every column by parsing its name, so a name with a
    backtick or a dot fails to resolve; such columns travel under positional names ``_dq_p{i}``.
    """
    back = {f"_dq_p{i}": c for i, c in enumerate(df.columns) if "`" in c or "." in c}
    if not back:
        return df, None
    safe = {c: s for s, c in back.items()}
    renamed = df.select(*[col(c).alias(safe[c]) if c in safe else col(c) for c in df.columns])
    return renamed, lambda pdf: pdf.rename(columns=back)


def map_in_pandas(df: DataFrame, fn: Callable[[Iterator[Any]], Iterator[Any]], schema: Any) -> DataFrame:
    """``df.mapInPandas(fn, schema)`` for columns of any name (``fn`` sees the real names)."""
    safe, restore = _pandas_safe(df)
    if restore is None:
        return df.mapInPandas(fn, schema)
    return safe.mapInPandas(lambda it: fn(restore(p) for p in it), schema)


def apply_in_pandas(df: DataFrame, key: str, fn: Callable[[Any], Any], schema: Any) -> DataFrame:
    """``df.groupBy(key).applyInPandas(fn, schema)`` for columns of any name (``key`` is dqkit's own)."""
    safe, restore = _pandas_safe(df)
    if restore is None:
        return df.groupBy(key).applyInPandas(fn, schema)
    return safe.groupBy(key).applyInPandas(lambda p: fn(restore(p)), schema)


def cogroup_in_pandas(left: DataFrame, right: DataFrame, key: str, fn: Callable[[Any, Any], Any],
                      schema: Any) -> DataFrame:
    """``left.groupBy(key).cogroup(right.groupBy(key)).applyInPandas(fn, schema)`` for columns of any name."""
    lsafe, lrestore = _pandas_safe(left)
    rsafe, rrestore = _pandas_safe(right)
    same = lambda p: p  # noqa: E731
    lr, rr = lrestore or same, rrestore or same
    grouped = lsafe.groupBy(key).cogroup(rsafe.groupBy(key))
    if lrestore is None and rrestore is None:
        return grouped.applyInPandas(fn, schema)
    return grouped.applyInPandas(lambda a, b: fn(lr(a), rr(b)), schema)


# ------------------------------------------------------------------------------- planner settings
@contextlib.contextmanager
def scoped_conf(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """Set SQL options for the queries planned inside the block, then restore the previous values.

    Used for planner choices that help one kernel but not every query of a shared session (for
    example skipping the partial aggregation of a group-by whose groups are nearly all distinct).
    Options the running Spark does not know are ignored by it, so older 4.x versions still work.
    The options belong to the session: a query another thread plans inside the block sees them too.
    """
    previous: dict[str, str | None] = {}
    try:
        for key, value in settings.items():
            previous[key] = spark.conf.get(key, None)
            spark.conf.set(key, value)
        yield
    finally:
        for key, value in previous.items():
            try:
                if value is None:
                    spark.conf.unset(key)
                else:
                    spark.conf.set(key, value)
            except Exception:  # pragma: no cover - a session stopped inside the block
                pass


# -------------------------------------------------------------------------------- observed metrics
def observed(observation: Observation) -> dict[str, Any] | None:
    """The metrics of ``observation`` after its query ran, or None when Spark reported none.

    Spark reports nothing (it raises) when the optimiser removed the observed node, for example
    because a join's other side was empty; callers then compute the same values directly.
    """
    try:
        return dict(observation.get)
    except Exception:
        return None


# ---------------------------------------------------------------------------------- cancellation
def cancelled_from(exc: BaseException, what: str) -> CancelledError | None:
    """A ``CancelledError`` saying ``what`` was cancelled when ``exc`` is a cancelled Spark job, else None.

    A job cancelled through its tag fails with a JVM error (classic Spark) or a Connect error whose
    text says it was cancelled or interrupted; dqkit's own errors are never reinterpreted.
    """
    if isinstance(exc, CancelledError):
        return exc
    if isinstance(exc, DqkitError) or not isinstance(exc, Exception):
        return None
    text = str(exc).lower()
    if "cancel" in text or "interrupt" in text:
        return CancelledError(f"{what} was cancelled; nothing was written")
    return None


@contextlib.contextmanager
def cancellable(what: str) -> Iterator[None]:
    """Run the block; a Spark cancellation inside it is raised as ``CancelledError`` (see ``cancelled_from``)."""
    try:
        yield
    except Exception as exc:
        err = cancelled_from(exc, what)
        if err is None or err is exc:
            raise
        raise err from exc


# ------------------------------------------------------------------------------- plan inspection
def spark_plan(df: DataFrame, extended: bool = False) -> str:
    """The text of Spark's physical plan for ``df`` (what ``df.explain()`` prints)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        df.explain(extended=extended)
    return buf.getvalue()


def executed_plan(df: DataFrame) -> str:
    """The executed physical plan of ``df`` as the JVM prints it (classic Spark only), with its join keys."""
    return str(df._jdf.queryExecution().executedPlan().toString())  # type: ignore[attr-defined]


def estimated_bytes(df: DataFrame) -> int | None:
    """Spark's own size estimate of ``df`` (what it uses to choose broadcast joins); None if unknown."""
    try:
        return int(str(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))  # type: ignore[attr-defined]
    except Exception:  # Spark Connect, or no statistics
        return None


# ----------------------------------------------------------------------------------- lineage cuts
_set_here: dict[str, str] = {}  # checkpoint folders dqkit set on a SparkContext (it keeps the last): what was asked


def _still_created(folder: str) -> bool:
    """Whether ``folder`` is (under) a checkpoint folder of the running command, not yet removed."""
    mine = local_path(folder) or folder
    return any(mine == c or mine.startswith(c.rstrip("/") + "/") for c in (local_path(x) or x for x in created))


def _is_local_master(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def checkpoint_folder(spark: SparkSession) -> str | None:
    """The folder reliable checkpoints of ``spark`` go to, or None when a local checkpoint does.

    Classic Spark: ``DQKIT_CHECKPOINT_DIR`` (the CLI's ``--checkpoint-dir``); else the context's own
    folder (``spark.checkpoint.dir`` or ``setCheckpointDir``); else, when the master is not local,
    a folder beside ``--out`` or a temporary one, created now and removed at the end; else None (local
    mode: executors live in the driver, a local checkpoint loses nothing). Spark Connect: the server's
    ``spark.checkpoint.dir`` if it has one, else None.
    """
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        try:
            return spark.conf.get("spark.checkpoint.dir", None) or None
        except Exception:  # noqa: BLE001 - an older server
            return None
    sc = spark.sparkContext
    wanted = os.environ.get(CHECKPOINT_ENV) or None
    current = sc._jsc.sc().getCheckpointDir()  # type: ignore[union-attr]
    if current.isDefined():
        folder = str(current.get())
        asked = _set_here.get(folder)  # what dqkit asked for; None: Spark's own (spark.checkpoint.dir)
        if asked is None and wanted is None:
            return folder
        if asked is not None and asked == (wanted or asked) and _still_created(folder):
            return folder
        # another folder was given, or an earlier command's folder was removed at its end: choose again
    if wanted is None and not _is_local_master(sc.master):
        wanted = fallback_folder()
    if wanted is None:
        return None
    sc.setCheckpointDir(wanted)  # Spark makes a fresh subfolder under it for this application
    made = str(sc._jsc.sc().getCheckpointDir().get())  # type: ignore[union-attr]
    _set_here[made] = wanted
    if wanted not in created:  # a given folder stays; the application's subfolder in it goes at the end
        created.append(made)
        history.append(made)
    return made


def checkpoint(df: DataFrame, eager: bool = True) -> DataFrame:
    """``df`` with its lineage cut, so iterative plans stay small.

    A reliable checkpoint (files in ``checkpoint_folder``) where a lost executor must not lose the data:
    on a cluster, or wherever a checkpoint folder is set; a local checkpoint (executor storage, no
    files) otherwise, which is faster and loses nothing in local mode. The folder must be on storage
    every node sees (see docs/cluster.md).
    """
    if checkpoint_folder(df.sparkSession) is None:
        return df.localCheckpoint(eager=eager)
    return df.checkpoint(eager=eager)


def checkpoint_on_read(df: DataFrame) -> DataFrame:
    """``checkpoint(df)`` materialised by the first job that reads all of ``df``, not by a job of its own.

    For a frame the caller reads whole right away (counts it, scans it): a local checkpoint is lazy, so
    that read computes and keeps it (one job instead of two). A reliable checkpoint stays eager: a lazy
    one would compute ``df`` a second time to write its files.
    """
    return checkpoint(df, eager=checkpoint_folder(df.sparkSession) is not None)
