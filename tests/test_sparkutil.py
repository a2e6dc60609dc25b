"""Shared Spark helpers (dqkit.runtime.sparkutil) and the predicate compiler of dqkit.primitives.violations."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dqkit.errors import CancelledError, RuleError
from dqkit.runtime.sparkutil import cancellable, cancelled_from, col, local_frame, quote_ident
from dqkit.primitives.violations import conjunction, fix_schema


def test_identifiers_are_backtick_quoted_with_backticks_doubled(spark):
    assert quote_ident("a.b") == "`a.b`"
    assert quote_ident("na`me") == "`na``me`"
    df = spark.createDataFrame([(1, 2, 3)], "`a.b` int, `na``me` int, `x y` int")
    assert df.select(col("a.b"), col("na`me"), col("x y")).first() == (1, 2, 3)


def test_a_cancelled_spark_job_becomes_a_cancelled_error_and_nothing_else_does():
    spark_error = RuntimeError("org.apache.spark.SparkException: Job 3 cancelled part of cancelled job tag dq-1")
    assert "the detection was cancelled" in str(cancelled_from(spark_error, "the detection"))
    assert cancelled_from(RuntimeError("division by zero"), "x") is None
    assert cancelled_from(RuleError("rule 'cancel' is bad"), "x") is None  # dqkit's own errors pass through
    with pytest.raises(CancelledError, match="the comparison was cancelled") as info:
        with cancellable("the comparison"):
            raise spark_error
    assert info.value.__cause__ is spark_error
    with pytest.raises(ZeroDivisionError):
        with cancellable("x"):
            1 / 0


def _depth(text: str) -> int:
    depth = deepest = 0
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        deepest = max(deepest, depth)
    return deepest


def test_conjunctions_are_balanced_trees(spark):
    cols = [F.col(f"c{i}") > i for i in range(1024)]
    assert _depth(str(conjunction(cols))) <= 12  # log2(1024) levels of AND (plus the comparisons)
    assert str(conjunction([])) == str(F.lit(True))


def test_one_candidate_fix_schema_for_every_rule_kind():
    s = fix_schema()
    assert s.names == ["rule", "t1", "t2", "tid", "attr", "value", "op", "rhs_tid", "rhs_attr", "rhs_value",
                       "constant", "kind", "fix"]
    assert {f.dataType.simpleString() for f in fix_schema(T.LongType()).fields if f.name in ("t1", "rhs_tid")} \
        == {"bigint"}



def _reads_a_python_rdd(df) -> bool:
    """Whether Spark needs Python workers to read ``df``'s leaves (a ``createDataFrame(list)`` frame)."""
    return "PythonRDD" in df._jdf.queryExecution().toRdd().toDebugString()


def test_a_local_frame_keeps_its_schema_and_rows_and_is_read_without_python_workers(spark):
    schema = fix_schema(T.LongType())
    rows = [tuple(None if i % 3 == 2 else (7 if f.dataType == T.LongType() else f"v{i}")
                  for i, f in enumerate(schema.fields))]
    full = local_frame(spark, rows, schema)
    empty = local_frame(spark, [], schema)
    for df in (full, empty):
        assert [(f.name, f.dataType) for f in df.schema.fields] == [(f.name, f.dataType) for f in schema.fields]
        assert not _reads_a_python_rdd(df.unionByName(df))
    assert [tuple(r) for r in full.collect()] == rows and empty.count() == 0
    assert _reads_a_python_rdd(spark.createDataFrame(rows, schema))  # what local_frame avoids
    pairs = T.StructType([T.StructField(n, T.IntegerType()) for n in ("p", "i", "j")])
    got = local_frame(spark, [(0, 0, 0), (1, 0, 1), (-1, -1, -1)], pairs).orderBy("p").collect()
    assert [tuple(r) for r in got] == [(-1, -1, -1), (0, 0, 0), (1, 0, 1)]
