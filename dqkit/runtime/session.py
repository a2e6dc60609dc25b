"""The SparkSession dqkit runs on.

Default: an embedded, quiet local Spark (``local[*]``, no console progress, WARN-free logs, Arrow on,
shuffle partitions sized to the cores). An active session wins; otherwise a master URL or a Spark
Connect address from the arguments or the environment (``SPARK_REMOTE``, ``DQKIT_SPARK_MASTER``) is
honoured, so the same code runs on a laptop, a standalone cluster or a remote Spark Connect server.
"""
from __future__ import annotations

import os
import re
import sys
import tempfile
import threading
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from dqkit.runtime.inputsize import SMALL_INPUT_JVM_OPTIONS, short_lived_jvm
from dqkit.runtime.jvmnames import keep_jvm_names
from dqkit.runtime.sparkutil import scoped_conf  # noqa: F401 - planner settings, defined once in sparkutil

_lock = threading.Lock()
_LOG4J = Path(__file__).with_name("log4j2.properties")
JVM_LOG = os.path.join(tempfile.gettempdir(), f"dqkit-spark-{os.getuid() if hasattr(os, 'getuid') else 0}.log")
_QUIET_JAVA_OPTIONS = f"-Dlog4j2.configurationFile={_LOG4J.as_uri()} -Dlog4j.configurationFile={_LOG4J.as_uri()}"


def _active() -> SparkSession | None:
    try:
        return SparkSession.getActiveSession()
    except Exception:  # pragma: no cover - Connect without an active session
        return None


def is_connect(spark: SparkSession) -> bool:
    """True when ``spark`` is a Spark Connect client session."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def get_spark(
    master: str | None = None,
    remote: str | None = None,
    app_name: str = "dqkit",
    config: dict[str, Any] | None = None,
) -> SparkSession:
    """Return the session dqkit should use, creating a quiet local one if there is none.

    Order: an explicit ``remote`` / ``master``; else the active session; else ``SPARK_REMOTE``; else
    ``DQKIT_SPARK_MASTER``; else ``local[*]``.
    """
    with _lock:
        if master is None and remote is None:
            active = _active()
            if active is not None:
                return active
        remote = remote or (None if master else os.environ.get("SPARK_REMOTE"))
        if remote:
            builder = SparkSession.builder.remote(remote).appName(app_name)
            for key, value in (config or {}).items():
                builder = builder.config(key, value)
            spark = builder.getOrCreate()
            _bounded_retries(spark)
            return spark
        master = master or os.environ.get("DQKIT_SPARK_MASTER") or "local[*]"
        # Python workers must run the interpreter that has dqkit's dependencies (pyarrow, pandas).
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        if master.startswith("local"):
            # A loopback address keeps the JVM from warning about the host name at start-up.
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        cores = os.cpu_count() or 2
        java_options = _QUIET_JAVA_OPTIONS
        small = short_lived_jvm(master)
        if small:
            java_options += " " + SMALL_INPUT_JVM_OPTIONS
        builder = (
            SparkSession.builder.master(master)
            .appName(app_name)
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
            # two per core; on a tiny input one per core (fewer tasks per job: the test suite's Daisy and
            # holistic-repair tests used 13 % less CPU with 2 than with 4 on two cores)
            .config("spark.sql.shuffle.partitions", str(max(2, cores if small else cores * 2)))
            # on a tiny input adaptive execution only splits each query into one job per shuffle stage
            # (a 3-rule detect --since: 111 jobs instead of 47, ~1.3-1.8x the time); results never depend on it
            .config("spark.sql.adaptive.enabled", "false" if small else "true")
            # on a tiny input compiling each plan's whole-stage code costs more than running it (a 6-row
            # Daisy clean_all: 6.8 s -> 5.6 s without it); results never depend on it
            .config("spark.sql.codegen.wholeStage", "false" if small else "true")
            .config("spark.sql.session.timeZone", "UTC")
            # PySpark's DataFrame query context: every Column operation otherwise walks the Python stack and
            # makes ~5 Py4J calls to record its call site (a 6-row two-round repair: 21,000 Py4J calls -> 9,000,
            # 77.7 -> 63.1 CPU s and 64 -> 50 s for four runs); dqkit names its own errors
            .config("spark.python.sql.dataFrameDebugging.enabled", "false")
            .config("spark.driver.extraJavaOptions", java_options)
        )
        if small:
            # Tungsten's memory pages: on a tiny input every hash aggregate and sort task otherwise takes a
            # 16 MiB page (the default follows the heap) for a few rows; in a long-lived session those pages
            # fill the young generation and reach the old one (the test suite's two JVMs: 13 % of their CPU
            # in the collector, 176 s); a larger record still gets a page of its own size
            builder = builder.config("spark.buffer.pageSize", "1m")
        memory = driver_memory(config)
        if memory is not None:  # read by spark-submit when it starts the JVM: set before getOrCreate
            builder = builder.config("spark.driver.memory", memory)
        for key, value in (config or {}).items():
            builder = builder.config(key, value)
        with _jvm_stderr_to_log():
            spark = builder.getOrCreate()
        quiet(spark)
        keep_jvm_names(getattr(getattr(spark, "_sc", None), "_jvm", None))  # else Py4J asks for each name again
        return spark


#: the embedded driver's heap: this share of the machine's memory (or of its container's limit), at least
#: Spark's own default of 1 GiB and at most the cap; DQKIT_DRIVER_MEMORY or spark.driver.memory override it
DRIVER_MEMORY_SHARE = 0.25
DRIVER_MEMORY_MIN_MB = 1024
DRIVER_MEMORY_CAP_MB = 8192
_MEMORY_SIZE = re.compile(r"^\d+[kmgt]?b?$", re.IGNORECASE)


def machine_memory_bytes() -> int | None:
    """The memory this process may use: physical RAM, or the cgroup (container) limit when lower."""
    total = None
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        pass
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(limit_file).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) > 0:
            total = min(total or int(text), int(text))
        break
    return total


def _spark_defaults_memory(environ: dict[str, str]) -> str | None:
    """``spark.driver.memory`` from the user's spark-defaults.conf or PYSPARK_SUBMIT_ARGS, if set there."""
    submit = environ.get("PYSPARK_SUBMIT_ARGS", "")
    if "--driver-memory" in submit or "spark.driver.memory" in submit:
        return submit
    conf_dir = environ.get("SPARK_CONF_DIR") or (
        os.path.join(environ["SPARK_HOME"], "conf") if environ.get("SPARK_HOME") else None)
    if conf_dir:
        try:
            for line in Path(conf_dir, "spark-defaults.conf").read_text().splitlines():
                parts = line.split(None, 1)
                if len(parts) == 2 and parts[0] == "spark.driver.memory":
                    return parts[1].strip()
        except OSError:
            pass
    return None


def driver_memory(config: dict[str, Any] | None = None, environ: dict[str, str] | None = None,
                  total_bytes: int | None = None) -> str | None:
    """The ``spark.driver.memory`` dqkit starts its own driver JVM with, or None to leave the user's.

    Spark's default driver heap is 1 GiB whatever the machine, and a repair on a small table once ran out
    of it under load. dqkit sizes it to ``DRIVER_MEMORY_SHARE`` of ``total_bytes`` (default: the
    machine's or container's memory), between 1 GiB and ``DRIVER_MEMORY_CAP_MB``. The user's setting wins:
    ``spark.driver.memory`` in ``config`` or in spark-defaults.conf / PYSPARK_SUBMIT_ARGS (None: theirs
    stands), else ``DQKIT_DRIVER_MEMORY`` (a JVM size such as ``6g``). No JVM is needed to compute it.
    """
    from dqkit.errors import ParameterError

    environ = os.environ if environ is None else environ
    if config and "spark.driver.memory" in config:
        return None
    wanted = environ.get("DQKIT_DRIVER_MEMORY", "").strip()
    if wanted:
        if not _MEMORY_SIZE.match(wanted):
            raise ParameterError(f"DQKIT_DRIVER_MEMORY={wanted!r} is not a memory size",
                                 hint="give a JVM size such as 4g or 2048m, or unset it for a share of the RAM")
        return wanted
    if _spark_defaults_memory(environ) is not None:
        return None
    total = machine_memory_bytes() if total_bytes is None else total_bytes
    if not total:
        return None
    mb = int(total * DRIVER_MEMORY_SHARE) // (1024 * 1024)
    return f"{max(DRIVER_MEMORY_MIN_MB, min(DRIVER_MEMORY_CAP_MB, mb))}m"


def use_backend(master: str | None = None, remote: str | None = None) -> None:
    """Make ``master`` (or the Spark Connect address ``remote``) the backend of every session started
    from now on, without starting one: ``get_spark()`` reads it from ``DQKIT_SPARK_MASTER`` /
    ``SPARK_REMOTE``, and so does a child process (a report's notebook kernel).

    ``remote`` wins over ``master`` (as in ``get_spark``); the other variable is removed so an
    inherited value cannot take over.
    """
    if remote:
        os.environ["SPARK_REMOTE"] = remote
        os.environ.pop("DQKIT_SPARK_MASTER", None)
    elif master:
        os.environ["DQKIT_SPARK_MASTER"] = master
        os.environ.pop("SPARK_REMOTE", None)
        # a Connect session of this process marks the environment as Connect-only; a child must not
        # inherit that mark without an address
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)


#: how long a Spark Connect client keeps retrying an unreachable server (pyspark's default is 10+ minutes,
#: which looks like a hang): 6 tries, 0.25 s doubling to 5 s, about 13 s per call
CONNECT_RETRIES = {"max_retries": 6, "backoff_multiplier": 2.0, "initial_backoff": 250, "max_backoff": 5000}


def _bounded_retries(spark: SparkSession) -> None:
    """Give a Connect session ``CONNECT_RETRIES``, so a server that went away ends the run in about 13 s
    per call (``dqkit.errors.cluster_error`` then says so) instead of retrying for ten minutes."""
    import warnings

    # the client also warns on stderr when it gives up; the error that follows says it in a sentence
    warnings.filterwarnings("ignore", message=r"\[RETRIES_EXCEEDED\]")
    try:
        from pyspark.sql.connect.client.retries import DefaultPolicy

        spark.client.set_retry_policies([DefaultPolicy(**CONNECT_RETRIES)])
    except Exception:  # noqa: BLE001 - another client version: keep its policy
        pass


@contextlib.contextmanager
def _jvm_stderr_to_log() -> Iterator[None]:
    """Start the JVM with its stderr in ``JVM_LOG``; ``DQKIT_JVM_STDERR=inherit`` turns this off.

    The JVM writes start-up notices straight to its stderr; in Jupyter that descriptor is captured
    into cells.
    """
    if os.environ.get("DQKIT_JVM_STDERR") == "inherit":
        yield
        return
    with redirect_stderr_fd(JVM_LOG):
        yield


@contextlib.contextmanager
def redirect_stderr_fd(log_path: str) -> Iterator[None]:
    """Point file descriptor 2 at ``log_path`` (appending) for the block, then restore it.

    A child process started inside the block (a JVM, a notebook kernel) inherits the log file as its
    stderr for good, so its start-up notices never reach a notebook cell or a terminal.
    """
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no real descriptor 2 (embedded interpreters)
        yield
        return
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.dup2(log, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(log)


def python_workers_problem(spark: SparkSession | None = None) -> str | None:
    """Whether the cluster's Python workers can import dqkit: a one-row Python UDF tries (pickled by value,
    so it runs where dqkit is missing). The error text when they cannot, None when they can."""
    from pyspark.sql import functions as F

    def probe(_):
        try:
            import dqkit  # noqa: F401
            return ""
        except Exception as exc:  # noqa: BLE001
            return f"{type(exc).__name__}: {exc}"

    spark = spark or _active()
    if spark is None:
        return None
    try:
        found = spark.range(1).select(F.udf(probe, "string")("id")).first()[0]
    except Exception as exc:  # noqa: BLE001 - the worker could not even start
        found = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return found or None


def explain_failure(exc: BaseException) -> Exception | None:
    """A ``ClusterError`` saying what to do for a failure caused by the deployment (see
    ``dqkit.errors.cluster_error``); an opaque Python-worker failure is checked with a probe UDF."""
    from dqkit.errors import WORKERS_LACK_DQKIT, WORKERS_LACK_DQKIT_HINT, ClusterError, cluster_error

    mapped = cluster_error(exc)
    if mapped is not None or not ("PythonException" in type(exc).__name__ or "PYTHON_EXCEPTION" in str(exc)):
        return mapped
    try:
        problem = python_workers_problem()
    except Exception:  # noqa: BLE001 - diagnosis must not hide the original error
        return None
    if problem and "dqkit" in problem:
        return ClusterError(WORKERS_LACK_DQKIT, hint=WORKERS_LACK_DQKIT_HINT)
    return None


def end_spark_for_exit() -> None:
    """Stop this process's Spark before it exits on a signal: the session, then (classic Spark) the
    driver JVM, so no cancelled write can still create files. Best effort; for the CLI only."""
    spark = _active()
    if spark is None:
        return
    try:
        if is_connect(spark):
            spark.interruptAll()
            return
        from pyspark import SparkContext

        gateway = SparkContext._gateway
        spark.stop()
        proc = getattr(gateway, "proc", None)
        if proc is not None:
            proc.kill()
            proc.wait(30)
    except Exception:  # noqa: BLE001 - the session may already be going down
        pass


def quiet(spark: SparkSession) -> None:
    """Silence JVM log output below ERROR (classic Spark only; Connect servers log on their side)."""
    if is_connect(spark):
        return
    try:
        spark.sparkContext.setLogLevel("ERROR")
    except Exception:  # pragma: no cover - not every deployment exposes a context
        pass
