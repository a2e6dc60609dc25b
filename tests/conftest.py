"""One SparkSession for the whole test run (local[2], quiet), and small helpers."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ("support.snapshot_plugin",)  # --update-snapshots and the shared example results
# Every JVM the suite starts (this session, report kernels, CLI subprocesses, the matrix runners) keeps
# Spark's 1 GiB driver heap instead of dqkit's share of the machine (dqkit.runtime.session.driver_memory): tiny
# test data needs no more, and a dozen JVMs each free to grow to a quarter of the RAM get OOM-killed.
os.environ.setdefault("DQKIT_DRIVER_MEMORY", "1g")



@pytest.fixture(scope="session")
def spark():
    from dqkit.runtime.session import get_spark
    from support.session_config import test_session_config

    # Adaptive execution off for the in-process tests: on a few rows it only splits each query into one
    # job per shuffle stage (111 jobs instead of 47 for a 3-rule detect --since) and costs ~1.3x the
    # time; results never depend on it (the CLI, report and cluster tests keep dqkit's own setting).
    # DQKIT_TEST_AQE=true runs the suite with it on.
    # Two shuffle partitions, one per core of local[2]: still more than one partition everywhere (tests that
    # need a given partitioning set it themselves), and on a few rows fewer tasks per job: Daisy's and
    # holistic repair's tests took 221 s of CPU instead of 254 s with four (DQKIT_TEST_PARTITIONS overrides).
    # No broadcast joins but those dqkit asks for (F.broadcast): on a few rows every automatic broadcast is a
    # job of its own, a hash table and a torrent broadcast where a sort-merge join is two more stages of the
    # same job (three test files: 290.6 -> 278.2 and 320.7 -> 303.2 CPU s in two alternating pairs); the
    # joins are then the ones a large input gets (DQKIT_TEST_BROADCAST=10MB restores Spark's default).
    # Interpreted expressions instead of generated code (DQKIT_TEST_CODEGEN=true turns code generation back
    # on): on a few rows compiling each new plan's code is most of a job's time (Daisy tests: 218 s -> 168 s).
    # dqkit's own tiny-input mode turns only whole-stage code off: in this mode Spark cannot decode typed
    # rows such as spark.catalog.listTables' (tests/test_sources.py switches it back for that test).
    config = test_session_config()
    session = get_spark(master="local[2]", config=config)
    yield session
    # Left running until the interpreter exits: stopping it here races with nbval/papermill kernels.


@pytest.fixture(scope="session")
def table1(spark):
    """BigDansing's Table 1 (data/bigdansing_table1.csv), the papers' running example, as a DataFrame."""
    path = Path(__file__).resolve().parent.parent / "data" / "bigdansing_table1.csv"
    return spark.read.option("header", True).option("inferSchema", True).csv(str(path))


@pytest.fixture(params=["behaviour", pytest.param("wall-clock", marks=pytest.mark.perf)])
def wall_clock(request):
    """``with wall_clock.within(seconds):`` a time bound a test promises, asserted only in its ``wall-clock``
    variant (marked ``perf``: ``make test-perf``); ``make test`` runs the ``behaviour`` variant, which
    asserts everything else (tests/support/perf.py)."""
    from support.perf import WallClock

    return WallClock(enforced=request.param == "wall-clock")


@pytest.fixture
def spark_calls(monkeypatch):
    """Calls to ``get_spark`` during the test (each one refused, so nothing starts a JVM)."""
    calls: list[tuple] = []

    def fake(*args, **kwargs):
        calls.append((args, kwargs))
        raise RuntimeError("test: Spark must not start here")

    monkeypatch.setattr("dqkit.runtime.session.get_spark", fake)
    return calls


def pytest_collection_modifyitems(config, items):
    """The longest test files first (tests/support/schedule.py): with ``--dist loadfile --no-loadscope-reorder``
    (``make test``) the two workers end together instead of one running the cluster file alone."""
    from support.schedule import load_weights, longest_first

    items[:] = longest_first(items, lambda item: item.nodeid, load_weights())


def _wait(predicate, timeout: float = 60.0) -> bool:
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def wait_for():
    """``wait_for(predicate, timeout=60)``: poll until ``predicate()`` is true; False on timeout."""
    return _wait


@pytest.fixture
def slow_ids(spark):
    """``slow_ids(seconds=0.05, rows=240)``: ``id`` and ``v`` (= id) over two partitions, where each ``v``
    costs ``seconds`` in a Python UDF, so a run on it stays busy long enough to be cancelled."""
    from pyspark.sql import functions as F

    def make(seconds: float = 0.05, rows: int = 240):
        @F.udf("long")
        def slow(x):
            import time as _t

            _t.sleep(seconds)
            return x

        return spark.range(0, rows, numPartitions=2).withColumn("v", slow("id"))

    return make


@pytest.fixture(scope="module")
def cluster():
    """A standalone master with two 1-core workers (``cluster.master_url``) and, on demand, Spark Connect
    servers (``cluster.connect()``), started from the installed pyspark; stopped (only what it started)
    after the module's tests (only test_cluster.py uses it; its idle JVMs must not run on beside the rest of
    the suite). Skipped, with the reason, where they cannot start."""
    from support.cluster import Cluster, ClusterUnavailable

    c = Cluster()
    try:
        c.start()
    except ClusterUnavailable as exc:
        c.stop()
        print(f"\ncluster tests skipped: {exc}")
        pytest.skip(f"the test cluster could not start: {exc}")
    try:
        yield c
    finally:
        c.stop()


@pytest.fixture(autouse=True)
def _environment_restored():
    """Each test ends with the environment it started with. A command run in-process sets variables for
    its later sessions and report kernels (``--master``/``--remote`` through ``dqkit.runtime.session.use_backend``);
    leaked into the next test, a notebook kernel started a session on a master that was never there."""
    before = dict(os.environ)
    yield
    if os.environ != before:
        os.environ.clear()
        os.environ.update(before)
