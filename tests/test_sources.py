"""Tables and databases in, by name: folders, files, catalog databases, dicts; clear errors."""
from __future__ import annotations

import pytest

from dqkit.errors import SourceError, UnknownTableError
from dqkit.io.sources import read_database, read_table


def test_a_folder_of_csv_parquet_and_parquet_subfolders_is_a_database(spark, tmp_path):
    df = spark.createDataFrame([(1, "a")], "id int, v string")
    df.write.parquet(str(tmp_path / "db" / "alpha"))
    df.toPandas().to_csv(tmp_path / "db" / "beta.csv", index=False)
    df.write.parquet(str(tmp_path / "single.parquet"))
    db = read_database(tmp_path / "db", spark)
    assert sorted(db) == ["alpha", "beta"]
    assert db["beta"].collect()[0].asDict() == {"id": 1, "v": "a"}
    assert list(read_database(tmp_path / "single.parquet", spark)) == ["single"]


@pytest.fixture
def generated_code(spark):
    """Spark's default expression mode for one test: the suite's session runs interpreted expressions
    (tests/conftest.py), in which Spark cannot decode the typed rows of ``spark.catalog.listTables``."""
    before = spark.conf.get("spark.sql.codegen.factoryMode", "FALLBACK")
    spark.conf.set("spark.sql.codegen.factoryMode", "FALLBACK")
    yield
    spark.conf.set("spark.sql.codegen.factoryMode", before)


def test_a_catalog_database_lists_its_tables(spark, generated_code):
    spark.sql("CREATE DATABASE IF NOT EXISTS dq_src_test")
    spark.createDataFrame([(1,)], "id int").write.mode("overwrite").saveAsTable("dq_src_test.t1")
    db = read_database("catalog:dq_src_test", spark)
    assert list(db) == ["t1"] and db["t1"].count() == 1
    assert read_table("catalog:dq_src_test.t1", spark).count() == 1


def test_a_missing_path_is_a_clear_error(spark, tmp_path):
    with pytest.raises(SourceError, match="no such"):
        read_database(tmp_path / "nope", spark)
    with pytest.raises(SourceError, match="no such file"):
        read_table(str(tmp_path / "nope.csv"), spark)


def test_unknown_catalog_names_are_clear_errors(spark):
    with pytest.raises(SourceError, match="does not exist"):
        read_database("catalog:no_such_db_dq", spark)
    with pytest.raises(UnknownTableError, match="does not exist"):
        read_table("catalog:default.no_such_table_dq", spark)


def test_a_dict_of_dataframes_is_a_database_sorted_by_name(spark):
    df = spark.createDataFrame([(1,)], "id int")
    assert list(read_database({"b": df, "a": df}, spark)) == ["a", "b"]


def test_an_empty_folder_is_not_a_database(spark, tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(SourceError, match="holds no tables"):
        read_database(tmp_path / "empty", spark)


# ---------------------------------------------------------------- folders: one table per file, or one Spark table

def _pandas_parquet(path, frame):
    import pandas as pd

    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(frame).to_parquet(path, index=False)


def test_a_folder_of_parquet_files_is_one_table_per_file(spark, tmp_path):
    _pandas_parquet(tmp_path / "old" / "users.parquet", {"id": [1, 2]})
    _pandas_parquet(tmp_path / "old" / "orders.parquet", {"oid": [7], "id": [1]})
    db = read_database(tmp_path / "old", spark)
    assert sorted(db) == ["orders", "users"]
    assert sorted(r.id for r in db["users"].collect()) == [1, 2]
    assert db["orders"].columns == ["oid", "id"]


def test_a_spark_written_folder_is_one_table(spark, tmp_path):
    spark.createDataFrame([(1,), (2,)], "id int").repartition(2).write.parquet(str(tmp_path / "users"))
    names = {p.name for p in (tmp_path / "users").iterdir()}
    assert "_SUCCESS" in names and any(n.startswith("part-") for n in names)
    db = read_database(tmp_path / "users", spark)
    assert list(db) == ["users"] and db["users"].count() == 2


def test_a_folder_of_part_files_without_success_is_one_table(spark, tmp_path):
    # pyarrow.dataset.write_dataset names its files part-0.parquet, part-1.parquet, ... and writes no marker
    _pandas_parquet(tmp_path / "users" / "part-0.parquet", {"id": [1]})
    _pandas_parquet(tmp_path / "users" / "part-1.parquet", {"id": [2]})
    db = read_database(tmp_path / "users", spark)
    assert list(db) == ["users"] and db["users"].count() == 2


def test_a_hive_partitioned_folder_is_one_table(spark, tmp_path):
    spark.createDataFrame([(1, "a"), (2, "b")], "id int, k string").write.partitionBy("k").parquet(
        str(tmp_path / "events"))
    db = read_database(tmp_path / "events", spark)
    assert list(db) == ["events"] and sorted(db["events"].columns) == ["id", "k"]


def test_a_database_folder_may_hold_spark_table_subfolders_beside_files(spark, tmp_path):
    spark.createDataFrame([(1,)], "id int").write.parquet(str(tmp_path / "db" / "orders"))
    _pandas_parquet(tmp_path / "db" / "users.parquet", {"id": [1]})
    assert sorted(read_database(tmp_path / "db", spark)) == ["orders", "users"]


def test_a_folder_mixing_part_files_and_named_tables_is_refused_with_a_hint(spark, tmp_path):
    spark.createDataFrame([(1,)], "id int").write.parquet(str(tmp_path / "mixed"))
    _pandas_parquet(tmp_path / "mixed" / "users.parquet", {"id": [1]})
    with pytest.raises(SourceError, match="ambiguous") as info:
        read_database(tmp_path / "mixed", spark)
    assert "users.parquet" in str(info.value) and "part-" in str(info.value) and info.value.hint


def test_a_folder_mixing_formats_is_not_one_table(spark, tmp_path):
    _pandas_parquet(tmp_path / "t" / "part-0.parquet", {"id": [1]})
    (tmp_path / "t" / "part-1.csv").write_text("id\n2\n")
    with pytest.raises(SourceError, match="mixes formats"):
        read_database(tmp_path / "t", spark)


# ---------------------------------------------------------------- bad files: named, never guessed at

def test_a_corrupt_parquet_file_is_a_source_error_naming_it(spark, tmp_path):
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "users.parquet").write_bytes(b"PAR1 this is not parquet at all")
    with pytest.raises(SourceError, match="users.parquet"):
        read_database(tmp_path / "db", spark)


def test_a_json_file_spark_reads_as_only_corrupt_records_is_a_source_error(spark, tmp_path):
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "users.json").write_text('[\n  {"id": 1},\n  {"id": 2}\n]\n')
    with pytest.raises(SourceError, match="users.json") as info:
        read_database(tmp_path / "db", spark)
    assert "JSON Lines" in info.value.hint


def test_file_names_with_glob_characters_or_a_colon_are_read_literally(spark, tmp_path):
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "users[1].csv").write_text("id,v\n1,a\n")
    (tmp_path / "db" / "users1.csv").write_text("id,v\n9,z\n")  # what the glob [1] would match
    (tmp_path / "db" / "a:b.csv").write_text("id,v\n2,b\n")
    db = read_database(tmp_path / "db", spark)
    assert sorted(db) == ["a:b", "users1", "users[1]"]
    assert [tuple(r) for r in db["users[1]"].collect()] == [(1, "a")]
    assert [tuple(r) for r in db["a:b"].collect()] == [(2, "b")]
    assert [tuple(r) for r in read_table(str(tmp_path / "db" / "users[1].csv"), spark).collect()] == [(1, "a")]


def test_a_parquet_null_typed_column_is_read_as_void(spark, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": [1, 2], "x": pa.array([None, None], pa.null())}), tmp_path / "t.parquet")
    df = read_table(str(tmp_path / "t.parquet"), spark)
    assert df.schema["x"].dataType.typeName() == "void"
    assert [tuple(r) for r in df.orderBy("id").collect()] == [(1, None), (2, None)]
