"""Tables and databases in, by name: folders, files, catalog databases, dicts; clear errors."""
from __future__ import annotations

import pytest

from dqkit.errors import SourceError, UnknownTableError
from dqkit.sources import read_database, read_table


def test_a_folder_of_csv_parquet_and_parquet_subfolders_is_a_database(spark, tmp_path):
    df = spark.createDataFrame([(1, "a")], "id int, v string")
    df.write.parquet(str(tmp_path / "db" / "alpha"))
    df.toPandas().to_csv(tmp_path / "db" / "beta.csv", index=False)
    df.write.parquet(str(tmp_path / "single.parquet"))
    db = read_database(tmp_path / "db", spark)
    assert sorted(db) == ["alpha", "beta"]
    assert db["beta"].collect()[0].asDict() == {"id": 1, "v": "a"}
    assert list(read_database(tmp_path / "single.parquet", spark)) == ["single"]


def test_a_catalog_database_lists_its_tables(spark):
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
