"""A saved result writes what was computed, in files sized to the data: a tiny run's tables are one file
each whatever the shuffle setting or the batches the frames were built from, and each saved table holds
exactly the rows of the in-memory one (``dqkit.contract.result.sized_for_files``, the dedup driver
route's pairs read from a file: ``dqkit.runtime.arrowframe``)."""
from __future__ import annotations

import gc
from pathlib import Path

import pytest

from dqkit.contract.result import sized_for_files
from dqkit.runtime.sparkutil import scoped_conf

PEOPLE, CONFIG = "data/dedup/people.csv", "data/dedup/dedup.yaml"


def _rows(df) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _parts(folder: Path) -> int:
    return len(list(folder.glob("part-*")))


@pytest.mark.parametrize("route", ["driver", "spark"])
def test_a_saved_tiny_dedup_writes_one_file_per_table_holding_the_in_memory_rows(spark, tmp_path, monkeypatch, route):
    from dqkit.checks.preflight import DEDUP_DRIVER_PAIRS_ENV
    from dqkit.dedup import dedup

    if route == "spark":
        monkeypatch.setenv(DEDUP_DRIVER_PAIRS_ENV, "0")
    # one Arrow batch per 2 rows and 7 shuffle partitions: neither may decide how many files are written
    with scoped_conf(spark, {"spark.sql.execution.arrow.maxRecordsPerBatch": "2", "spark.sql.shuffle.partitions": "7"}):
        result = dedup(PEOPLE, "rec_id", CONFIG, spark=spark).saving(all_pairs=True)
        assert (result.driver_pairs is not None) == (route == "driver")
        out = Path(result.save(tmp_path / "run"))
        frames = result.frames()
    assert set(frames) == {"pairs", "clusters", "golden", "fingerprints"}
    for name, frame in frames.items():
        assert _parts(out / name) == 1, name
        assert _rows(spark.read.parquet((out / name).as_posix())) == _rows(frame), name
    assert result.n_pairs == spark.read.parquet((out / "pairs").as_posix()).count() > 0


def test_the_driver_routes_matches_are_the_matching_pairs_at_the_threshold(spark):
    from pyspark.sql import functions as F

    from dqkit.dedup import dedup

    result = dedup(PEOPLE, "rec_id", CONFIG, spark=spark)
    assert result.driver_pairs is not None and result.n_matching_pairs > 0
    from dqkit.dedup._charts import probability_to_weight

    expected = result.pairs.where(F.col("match_weight") >= probability_to_weight(result.threshold))  # Spark's
    assert _rows(result.matches) == _rows(expected)
    assert result.matches.count() == result.n_matching_pairs
    n, pairs = result.n_pairs, result.pairs
    del result, expected
    gc.collect()  # the frames outlive their result: the file Spark reads them from stays while Python runs
    assert pairs.count() == n


def test_a_frame_of_many_small_partitions_is_written_as_one_file(spark, tmp_path):
    frame = spark.range(0, 1000, 1, 50).selectExpr("id", "id * 2 AS twice")
    sized_for_files(frame).write.parquet((tmp_path / "t").as_posix())
    assert _parts(tmp_path / "t") == 1
    assert _rows(spark.read.parquet((tmp_path / "t").as_posix())) == _rows(frame)


def test_a_saved_detection_writes_bounded_files_holding_its_violations(spark, tmp_path):
    from dqkit.detect import detect

    result = detect("data/bigdansing_table1.csv", "data/bigdansing_table1_rules.yaml", spark=spark)
    out = Path(result.save(tmp_path / "run"))
    assert result.total_violations > 0 and _parts(out / "violations") == 1  # sized by its counted rows
    for name, frame in result.frames().items():
        assert 1 <= _parts(out / name) <= frame.rdd.getNumPartitions(), name  # never beyond their plan's
        assert _rows(spark.read.parquet((out / name).as_posix())) == _rows(frame), name
