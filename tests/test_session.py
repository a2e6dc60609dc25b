"""The embedded session's settings, computed before any JVM starts: the driver's memory, the JVM flags of a
tiny input."""
from __future__ import annotations

import pytest

from dqkit.errors import ParameterError
from dqkit.runtime.session import driver_memory

GIB = 1024 ** 3


def test_the_driver_gets_a_quarter_of_the_machine_at_least_1_gib_and_at_most_the_cap():
    assert driver_memory(environ={}, total_bytes=16 * GIB) == "4096m"
    assert driver_memory(environ={}, total_bytes=2 * GIB) == "1024m"  # never below Spark's own default
    assert driver_memory(environ={}, total_bytes=256 * GIB) == "8192m"


def test_dqkit_driver_memory_in_the_environment_overrides_the_share():
    assert driver_memory(environ={"DQKIT_DRIVER_MEMORY": "6g"}, total_bytes=16 * GIB) == "6g"
    assert driver_memory(environ={"DQKIT_DRIVER_MEMORY": "512m"}, total_bytes=16 * GIB) == "512m"


def test_spark_driver_memory_of_the_user_wins_and_dqkit_sets_nothing(tmp_path):
    env = {"DQKIT_DRIVER_MEMORY": "6g"}
    assert driver_memory({"spark.driver.memory": "3g"}, environ=env, total_bytes=16 * GIB) is None
    (tmp_path / "spark-defaults.conf").write_text("spark.master local[2]\nspark.driver.memory   5g\n")
    assert driver_memory(environ={"SPARK_CONF_DIR": str(tmp_path)}, total_bytes=16 * GIB) is None
    assert driver_memory(environ={"PYSPARK_SUBMIT_ARGS": "--driver-memory 2g pyspark-shell"},
                         total_bytes=16 * GIB) is None


def test_a_driver_memory_that_is_not_a_size_is_refused_with_a_hint():
    with pytest.raises(ParameterError, match="not a memory size") as err:
        driver_memory(environ={"DQKIT_DRIVER_MEMORY": "lots"}, total_bytes=16 * GIB)
    assert "4g" in err.value.hint


def test_get_spark_hands_the_driver_memory_to_the_jvm_launch(monkeypatch):
    """The setting goes into the builder's options, which spark-submit reads when it starts the JVM."""
    from pyspark.sql import SparkSession

    from dqkit.runtime.session import get_spark

    seen = {}

    def capture(builder):
        seen.update(builder._options)
        return object()

    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", capture)
    monkeypatch.setenv("DQKIT_DRIVER_MEMORY", "3g")
    get_spark(master="local[1]")
    assert seen["spark.driver.memory"] == "3g"
    seen.clear()
    get_spark(master="local[1]", config={"spark.driver.memory": "2g"})
    assert seen["spark.driver.memory"] == "2g"


def _java_options(monkeypatch, master: str = "local[1]", option: str = "spark.driver.extraJavaOptions") -> str:
    from pyspark.sql import SparkSession

    from dqkit.runtime.session import get_spark

    seen = {}

    def capture(builder):
        seen.update(builder._options)
        return object()

    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", capture)
    get_spark(master=master)
    return seen[option]


def test_a_tiny_input_starts_the_embedded_jvm_for_a_short_life_and_a_large_or_unknown_one_does_not(
        monkeypatch, tmp_path):
    from dqkit.runtime import inputsize
    from dqkit.runtime.inputsize import SMALL_INPUT_BYTES, expect_inputs

    monkeypatch.setattr(inputsize, "_input_bytes", [])  # this process's later sessions are not affected
    monkeypatch.delenv("DQKIT_SMALL_INPUT_JVM", raising=False)
    tiny = tmp_path / "t.csv"
    tiny.write_text("a\n1\n")
    expect_inputs([str(tiny)])
    assert "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC" in _java_options(monkeypatch)
    assert _java_options(monkeypatch, option="spark.sql.adaptive.enabled") == "false"
    assert _java_options(monkeypatch, option="spark.sql.codegen.wholeStage") == "false"
    assert "TieredStopAtLevel" not in _java_options(monkeypatch, master="spark://h:7077")
    assert _java_options(monkeypatch, master="spark://h:7077", option="spark.sql.codegen.wholeStage") == "true"
    assert _java_options(monkeypatch, master="spark://h:7077", option="spark.sql.adaptive.enabled") == "true"
    assert _java_options(monkeypatch, option="spark.buffer.pageSize") == "1m"
    with pytest.raises(KeyError):  # a cluster's executors keep Spark's page size
        _java_options(monkeypatch, master="spark://h:7077", option="spark.buffer.pageSize")
    big = tmp_path / "big"
    big.mkdir()
    with open(big / "part.csv", "wb") as f:  # sparse: its size without writing it
        f.truncate(SMALL_INPUT_BYTES + 1)
    expect_inputs([str(tiny), str(big)])
    assert "TieredStopAtLevel" not in _java_options(monkeypatch)
    assert _java_options(monkeypatch, option="spark.sql.adaptive.enabled") == "true"
    assert _java_options(monkeypatch, option="spark.sql.codegen.wholeStage") == "true"
    with pytest.raises(KeyError):  # a large input keeps Spark's page size
        _java_options(monkeypatch, option="spark.buffer.pageSize")
    expect_inputs(["catalog:db.t"])
    assert "TieredStopAtLevel" not in _java_options(monkeypatch)
    expect_inputs([str(tiny)])
    monkeypatch.setenv("DQKIT_SMALL_INPUT_JVM", "0")
    assert "TieredStopAtLevel" not in _java_options(monkeypatch)
    monkeypatch.setenv("DQKIT_SMALL_INPUT_JVM", "always")  # also before (or without) known inputs
    expect_inputs([str(big)])
    assert "TieredStopAtLevel=1" in _java_options(monkeypatch)
    assert _java_options(monkeypatch, option="spark.sql.adaptive.enabled") == "false"
    assert "TieredStopAtLevel" not in _java_options(monkeypatch, master="spark://h:7077")


def test_a_report_on_a_tiny_bundled_example_starts_its_kernels_jvm_for_a_short_life(monkeypatch):
    """The report's first cell sizes its inputs as the CLI does, before its kernel starts Spark."""
    import os

    from dqkit.runtime import inputsize
    from dqkit.report import prepare_report
    from dqkit.systems import get

    monkeypatch.setattr(inputsize, "_input_bytes", [])
    monkeypatch.delenv("DQKIT_SMALL_INPUT_JVM", raising=False)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    example = {k: ([os.path.join(root, x) for x in v] if k in ("rules",) else
                   os.path.join(root, v) if k == "table" else v) for k, v in get("detect").example.items()}
    assert not inputsize.short_lived_jvm("local[2]")
    prepare_report("detect", example)
    assert inputsize.short_lived_jvm("local[2]") and not inputsize.short_lived_jvm("spark://h:7077")


def test_a_session_dqkit_starts_builds_a_column_expression_in_one_py4j_call_per_operation(spark, monkeypatch):
    # PySpark's DataFrame query context (on by default) walks the Python stack and makes ~5 more Py4J calls
    # per Column operation to record its call site; dqkit's sessions turn it off (dqkit.runtime.session.get_spark)
    import py4j.clientserver as cs
    from pyspark.sql import functions as F

    assert spark.conf.get("spark.python.sql.dataFrameDebugging.enabled") == "false"
    calls = []
    send = cs.ClientServerConnection.send_command
    # Py4J's own "delete this proxy" messages (m/d), sent whenever Python collects garbage, are not lookups
    monkeypatch.setattr(cs.ClientServerConnection, "send_command",
                        lambda self, c: (c.startswith("m\nd\n") or calls.append(c)) or send(self, c))
    a, b = F.col("a"), F.lit(1)
    calls.clear()
    _ = (a + b) * b
    assert len(calls) <= 4, [c.splitlines()[:3] for c in calls]


def test_a_session_dqkit_starts_asks_the_jvm_for_each_class_and_static_method_once(spark, monkeypatch):
    # Py4J resolves jvm.functions, then .col, with a round trip each, every time; the session keeps the
    # references (dqkit.runtime.jvmnames): a repeated F.col is the one call that builds the column
    import py4j.clientserver as cs
    from py4j.protocol import Py4JError
    from pyspark.sql import functions as F

    jvm = spark.sparkContext._jvm
    calls = []
    send = cs.ClientServerConnection.send_command
    monkeypatch.setattr(cs.ClientServerConnection, "send_command",
                        lambda self, c: (c.startswith("m\nd\n") or calls.append(c)) or send(self, c))
    F.col("a")
    calls.clear()
    F.col("b")
    assert [c.split("\n", 1)[0] for c in calls] == ["c"], [c.splitlines()[:3] for c in calls]  # one call, no lookup
    # the same class and method objects, answered from the kept references
    assert jvm.functions is jvm.functions and jvm.functions.col is jvm.functions.col
    assert jvm.java.lang.Integer is jvm.java.lang.Integer
    # a static field's value is asked for every time (it can change); a name that failed is asked again
    calls.clear()
    assert jvm.java.lang.Integer.MAX_VALUE == jvm.java.lang.Integer.MAX_VALUE == 2 ** 31 - 1
    assert len(calls) == 2 and "MAX_VALUE" not in vars(jvm.java.lang.Integer)
    for _ in range(2):
        calls.clear()
        with pytest.raises(Py4JError):
            jvm.java.lang.Integer.noSuchDqkitMember
        assert calls
    # Py4J calls any name it cannot find a package: kept only under a lower-case (package) name, so a
    # class whose jar comes later is still found
    assert "NoSuchDqkitClass" not in vars(jvm.java.lang) and jvm.java.lang.NoSuchDqkitClass is not None
    assert "NoSuchDqkitClass" not in vars(jvm.java.lang) and "lang" in vars(jvm.java)
    # the kept objects still behave as py4j's: a static method call and a constructor
    assert jvm.java.lang.Integer.parseInt("42") == 42
    assert jvm.java.util.ArrayList().size() == 0


def test_a_tiny_input_session_gives_each_task_memory_pages_of_1_mib(spark):
    """On a few rows a hash aggregate or sort task takes one Tungsten page; Spark's default (16 MiB for a 1 GiB
    heap) filled the long-lived test JVMs' young generation with empty pages (13 % of their CPU in the
    collector). The suite's session is a tiny-input one (DQKIT_SMALL_INPUT_JVM=always)."""
    assert spark.sparkContext.getConf().get("spark.buffer.pageSize") == "1m"  # read when the JVM started
    big = spark.range(0, 6, numPartitions=1).selectExpr("repeat(CAST(id % 3 AS STRING), 2000000) AS v")
    counts = big.groupBy("v").count().select("count")  # a 2 MB key: a page of its own; only the counts come back
    assert sorted(r[0] for r in counts.collect()) == [2, 2, 2]
